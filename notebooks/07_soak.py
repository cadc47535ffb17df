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
# # Soak: nothing lost at scale
#
# One long run of part 12 (part 11's best setting, 256 rows and 2,048-token chunks, the fused engine):
# 10,000 requests of the mixed workload offered at twice the setting's capacity estimate, on
# an engine of its own. Its row: the requests lost (admitted but not finished with their whole
# budget), whether the KV pool is wholly free after, peak GPU memory after 1,000 completions
# and at the end, and the kernels compiled after the engine's construction.
# Rows: `<out_dir>/soak.jsonl`; the run: `plans.soak` in `fusedlib/bench/plans.py`.

# %% tags=["parameters"]
backend = "local"  # "modal": a Modal GPU of type `gpu`; "local": this machine's GPU, else its CPU
gpu = "H100"  # Modal's GPU type: the card of the rows in data/ ("A10": the reference's)
profile = "smoke"  # "full": Qwen2.5-1.5B fp16 on a GPU; "smoke": the tiny model on the CPU
out_dir = "data-smoke"  # rows go to <out_dir>/soak.jsonl (relative to the repository root)
rounds = 5  # not used here: one run
time_limit_s = 0  # start no run after this many seconds (0: no limit); the next call resumes
n_requests = None  # None: the profile's (full: 10,000)
rate = None  # None: twice the setting's capacity estimate (plans.DEFAULTS), past capacity

# %%
from fusedlib.bench import plans, runner

print(runner.where(backend, gpu), profile)
specs = plans.soak(profile, n_requests=n_requests, rate=rate)
new_rows = runner.execute(specs, out_dir, backend=backend, gpu=gpu, time_limit_s=time_limit_s)

# %%
runner.table(out_dir, "soak", profile, ["max_batch", "chunk_tokens", "rate", "n_requests", "n_lost",
                                        "pool_free_after", "peak_mem_1k_bytes", "peak_mem_end_bytes",
                                        "kernels_compiled_after_construction", "steady_rate"])
