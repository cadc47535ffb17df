# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Step census
#
# What one step costs, per configuration and engine: a decode step (32 rows at ~1k context)
# and a mixed step (a 512-token chunk beside 31 decode rows). Wall, GPU (CUDA events) and
# host time per step, kernels per step (torch.profiler), GPU time per kernel class beside
# its bytes and FLOPs, and the device's copy bandwidth and GEMM rate in the same run.
# Part 11's census is a saturated run instead (its best setting, 256 rows x 2,048-token
# chunks, offered past capacity): GPU time by kernel class over a profiler window in the
# run's middle, with its share of the window's wall time, the GPU idle between kernels, and
# each class's rate where its FLOPs or bytes are known.
# Rows: `<out_dir>/census.jsonl`; the runs: `plans.census` in `fusedlib/bench/plans.py`.

# %% tags=["parameters"]
backend = "local"  # "modal": a Modal GPU of type `gpu`; "local": this machine's GPU, else its CPU
gpu = "H100"  # Modal's GPU type: the card of the rows in data/ ("A10": the reference's)
profile = "smoke"  # "full": Qwen2.5-1.5B fp16 on a GPU; "smoke": the tiny model on the CPU
out_dir = "data-smoke"  # rows go to <out_dir>/census.jsonl (relative to the repository root)
rounds = 5  # not used here: each run times n steps
time_limit_s = 0  # start no run after this many seconds (0: no limit); the next call resumes
configs = None  # None: part7..part10 (step census), part11 and part12 (saturated)
engines = None  # None: fused and chunked (part11, part12: fused)

# %%
from fusedlib.bench import plans, runner

print(runner.where(backend, gpu), profile)
specs = plans.census(profile, configs=configs, engines=engines)
new_rows = runner.execute(specs, out_dir, backend=backend, gpu=gpu, time_limit_s=time_limit_s)

# %%
runner.table(out_dir, "census", profile, ["config", "engine", "step", "n", "wall_ms", "gpu_ms", "host_ms",
                                          "n_kernels"], record="step")

# %%
runner.table(out_dir, "census", profile, ["config", "engine", "kernel_class", "gpu_s", "share", "window_s",
                                          "tflops", "tb_s"], record="steady_class")
