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
# # Correctness gates
#
# Every gate (fusedlib/bench/gates.py) per configuration: fused and chunked token for token
# (a flip only at a logit tie), one mixed step equal to its two parts, a tiny pool, freed
# blocks poisoned with NaN; in fp32 also both engines against transformers' greedy output.
# In the full profile also part11 (max_batch 256, chunk_tokens 8192) and part12 (256, 2048).
# Rows: `<out_dir>/gates.jsonl`; the runs: `plans.gates` in `fusedlib/bench/plans.py`.

# %% tags=["parameters"]
backend = "local"  # "modal": a Modal GPU of type `gpu`; "local": this machine's GPU, else its CPU
gpu = "H100"  # Modal's GPU type: the card of the rows in data/ ("A10": the reference's)
profile = "smoke"  # "full": Qwen2.5-1.5B fp16 on a GPU; "smoke": the tiny model on the CPU
out_dir = "data-smoke"  # rows go to <out_dir>/gates.jsonl (relative to the repository root)
rounds = 5  # not used here: the gates run once per configuration
time_limit_s = 0  # start no run after this many seconds (0: no limit); the next call resumes
configs = None  # None: part7..part10 (and part11, part12 in the full profile)

# %%
from fusedlib.bench import plans, runner

print(runner.where(backend, gpu), profile)
specs = plans.gates(profile, configs=configs)
new_rows = runner.execute(specs, out_dir, backend=backend, gpu=gpu, time_limit_s=time_limit_s)

# %%
runner.table(out_dir, "gates", profile, ["config", "gate", "passed", "max_batch", "chunk_tokens", "detail"])
