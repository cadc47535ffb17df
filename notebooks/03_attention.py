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
# # Decode attention beside a copy
#
# Decode attention alone (32 rows at 1k, 2k and 4k context) for part 7's per-row kernel,
# part 8's split-KV and part 10's, each call after an L2 flush, beside a device copy moving
# the same number of bytes in the same run.
# Rows: `<out_dir>/attention.jsonl`; the runs: `plans.attention` in `fusedlib/bench/plans.py`.

# %% tags=["parameters"]
backend = "local"  # "modal": a Modal GPU of type `gpu`; "local": this machine's GPU, else its CPU
gpu = "H100"  # Modal's GPU type: the card of the rows in data/ ("A10": the reference's)
profile = "smoke"  # "full": Qwen2.5-1.5B fp16 on a GPU; "smoke": the tiny model on the CPU
out_dir = "data-smoke"  # rows go to <out_dir>/attention.jsonl (relative to the repository root)
rounds = 5  # not used here: each run times n calls
time_limit_s = 0  # start no run after this many seconds (0: no limit); the next call resumes
backends = None  # None: triton (part 7), triton-splitkv (part 8), triton-parallel (part 10)

# %%
from fusedlib.bench import plans, runner

print(runner.where(backend, gpu), profile)
specs = plans.attention(profile, backends=backends)
new_rows = runner.execute(specs, out_dir, backend=backend, gpu=gpu, time_limit_s=time_limit_s)

# %%
runner.table(out_dir, "attention", profile, ["backend", "context", "gpu_us", "copy_us", "fraction_of_copy"])
