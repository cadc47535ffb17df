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
# # Part 11: the engine at a Hopper GPU's size
#
# Configuration part11 (part 10's engine) over max_batch x chunk_tokens, the fused engine at
# an offered rate past each cell's capacity estimate, each cell's capacity its steady rate
# (`metrics.steady`); then, at the best cell, the chunked engine at that rate, the paired
# comparison (fused and chunked alternating ABBA, a new workload draw each pair) and the
# sweep of offered rates around the cell's estimate.
# Rows: `<out_dir>/scale.jsonl` (the plan: `fusedlib/bench/plans.py`).

# %% tags=["parameters"]
backend = "local"  # "modal": a Modal GPU of type `gpu`; "local": this machine's GPU, else its CPU
gpu = "H100"  # Modal's GPU type: the card of the rows in data/ ("A10": the reference's)
profile = "smoke"  # "full": Qwen2.5-1.5B fp16 on a GPU; "smoke": the tiny model on the CPU
out_dir = "data-smoke"  # rows go to <out_dir>/scale.jsonl (relative to the repository root)
rounds = None  # pairs at the best setting, seed = round (None: the profile's, full: 5)
time_limit_s = 0  # start no run after this many seconds (0: no limit); the next call resumes
batches = None  # None: the profile's max_batch values (full: 256, 128, 64, 32)
chunks = None  # None: the profile's chunk_tokens values (full: 2048, 8192, 512)
rate = None  # None: per cell, 2x its capacity estimate (plans.DEFAULTS), past capacity
n_requests = None  # None: the profile's (full: 600 at 32 rows, 1,500 at 64 and 128, 2,000 at 256)
sweep_rates = None  # None: multiples of the best cell's capacity estimate

# %%
import time

from fusedlib.bench import plans, runner

print(runner.where(backend, gpu), profile)
deadline = time.monotonic() + time_limit_s
for stage in ("the grid", "the best setting"):  # the second stage is planned from the first one's rows
    have = runner.current(out_dir, "scale", profile)
    specs = plans.scale(profile, rounds=rounds, batches=batches, chunks=chunks, rate=rate, n_requests=n_requests,
                        sweep_rates=sweep_rates, rows=have)
    left = max(deadline - time.monotonic(), 1e-9) if time_limit_s else 0
    new_rows = runner.execute(specs, out_dir, backend=backend, gpu=gpu, time_limit_s=left)

# %%
runner.table(out_dir, "scale", profile, ["engine", "max_batch", "chunk_tokens", "rate", "round", "steady_rate",
                                         "saturated", "steady_fraction", "served_rate", "goodput_rate",
                                         "host_ms_per_step_p50", "step_gpu_ms_p50"])
