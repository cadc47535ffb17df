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
# # Capacity: open-loop arrivals
#
# Mixed requests arriving as a Poisson process while the engine works, per configuration and
# engine: a sweep of offered rates around the configuration's capacity estimate (round 0; the
# eager parts 7-9 sweep their fused engine only), then the paired comparison at the top rate, past capacity, fused and chunked alternating
# ABBA, a new workload draw each pair. A run's capacity is its steady rate (completions per
# second while the queue stays non-empty and the batch full, `metrics.steady`); the served
# rate beside it is the drain rate (first arrival to last completion).
# Rows: `<out_dir>/capacity.jsonl`; the runs: `plans.capacity` in `fusedlib/bench/plans.py`.

# %% tags=["parameters"]
backend = "local"  # "modal": a Modal GPU of type `gpu`; "local": this machine's GPU, else its CPU
gpu = "H100"  # Modal's GPU type: the card of the rows in data/ ("A10": the reference's)
profile = "smoke"  # "full": Qwen2.5-1.5B fp16 on a GPU; "smoke": the tiny model on the CPU
out_dir = "data-smoke"  # rows go to <out_dir>/capacity.jsonl (relative to the repository root)
rounds = None  # pairs at the top rate, seed = round (None: the profile's, full: 5 at part10 and part12, 3 at part7-9)
time_limit_s = 0  # start no run after this many seconds (0: no limit); the next call resumes
configs = None  # None: part7..part10 and part12
rates = None  # None: multiples of each configuration's capacity estimate (plans.DEFAULTS; a list: for all)
n_requests = None  # None: the profile's (full: 400 a run; part 12, at 256 rows: 2,000)

# %%
from fusedlib.bench import plans, runner

print(runner.where(backend, gpu), profile)
specs = plans.capacity(profile, rounds=rounds, configs=configs, rates=rates, n_requests=n_requests)
new_rows = runner.execute(specs, out_dir, backend=backend, gpu=gpu, time_limit_s=time_limit_s)

# %%
runner.table(out_dir, "capacity", profile, ["config", "engine", "rate", "round", "steady_rate", "saturated",
                                            "steady_fraction", "served_rate", "goodput_rate", "ttft_p50_s",
                                            "itl_p99_s"])
