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
# # The engine's kernels beside the card's anchors
#
# Prompt attention on fresh 2,048-, 4,096- and 8,192-token prompts and a 2,048-token chunk
# after a 2,048-token prefix (Qwen2.5-1.5B's 12:2 heads, head_dim 128, fp16), beside
# `scaled_dot_product_attention`'s flash, cuDNN and efficient backends on the same causal
# shape in the same run; the engine's decode attention at 32 and 256 rows (and 256 at the mixed
# workload's uneven contexts) beside a copy of its bytes; each linear layer at a mixed step's rows
# (2,048 chunk tokens beside 255 decode rows) through the engine's call beside `torch.matmul`.
# Rows: `<out_dir>/kernels.jsonl`; the runs: `plans.kernels` and `fusedlib/bench/kernels.py`.

# %% tags=["parameters"]
backend = "local"  # "modal": a Modal GPU of type `gpu`; "local": this machine's GPU, else its CPU
gpu = "H100"  # Modal's GPU type: the card of the rows in data/ ("A10": the reference's)
profile = "smoke"  # "full": Qwen2.5-1.5B fp16 on a GPU; "smoke": the tiny model on the CPU
out_dir = "data-smoke"  # rows go to <out_dir>/kernels.jsonl (relative to the repository root)
rounds = 5  # not used here: each case is a median of many calls
time_limit_s = 0  # start no run after this many seconds (0: no limit); the next call resumes
kernels = None  # None: prompt, decode and gemm

# %%
from fusedlib.bench import plans, runner

print(runner.where(backend, gpu), profile)
specs = plans.kernels(profile, kernels=kernels)
new_rows = runner.execute(specs, out_dir, backend=backend, gpu=gpu, time_limit_s=time_limit_s)

# %%
runner.table(out_dir, "kernels", profile, ["kernel", "tiles", "context", "prefix", "tflops", "sdpa_tflops",
                                           "sdpa_backend", "max_abs_err"], kernel="prompt")

# %%
runner.table(out_dir, "kernels", profile, ["rows", "contexts", "context_mean", "gpu_us", "copy_us", "fraction_of_copy"],
             kernel="decode")

# %%
runner.table(out_dir, "kernels", profile, ["layer", "m", "n", "k", "calls_cublas", "tflops", "matmul_tflops",
                                           "fraction_of_matmul"], kernel="gemm")
