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
# # Arrival sweeps
#
# Requests delivered one at a time as a Poisson process while the engine works, the same
# seeded requests at every rate; served rate and queue wait per rate and engine. The top
# rate, past both engines' capacity, runs `capacity_runs` times per engine, the engines
# alternating, so the capacity comes with its run-to-run spread. Then the small-pool control:
# a KV pool capped so it binds, at the two lowest rates.
# Rows: `<out_dir>/arrivals/`.

# %% tags=["parameters"]
backend = "local"
gpu = "A10"
profile = "smoke"
engines = ["chunked", "fused"]
rates = []  # empty: the profile's sweep (4..40 requests/s at full size, the published grid)
n_requests = None  # None: the profile's, 400 at full size, 60 at smoke size
seed = 0
capacity_runs = 3  # runs per engine at the top rate
max_batch = 32
chunk_tokens = None  # None: the profile's chunk budget
small_pool_gib = None  # None: the profile's, 0.5 GiB at full size, the same share of the tiny model's KV at smoke
small_pool_rates = []  # empty: the sweep's two lowest rates
out_dir = "../data-smoke"

# %%
import pandas as pd

from fusedlib.bench import remote, use_interpreter_without_gpu
from fusedlib.bench.spec import PROFILES, RESULT_SETS, RunSpec

use_interpreter_without_gpu()  # no GPU here: Triton kernels run on CPU tensors
run = dict(backend=backend, gpu=gpu)

# %%
rates = list(rates) or list(PROFILES[profile].rates)
small_pool_gib = small_pool_gib or PROFILES[profile].small_pool_gib
small_pool_rates = list(small_pool_rates) or sorted(rates)[:2]
base = RunSpec.build("arrivals", profile=profile, rate=max(rates), n_requests=n_requests, seed=seed,
                     max_batch=max_batch, chunk_tokens=chunk_tokens)

# %%
rows = []
for engine in engines:
    rows += remote.run_map([base.but(engine=engine, rate=r) for r in rates], **run)
# The extra capacity runs, engines alternating run by run (a slow stretch lands on both).
rows += remote.run([base.but(engine=engine, repeat=k) for k in range(1, capacity_runs) for engine in engines], **run)
for engine in engines:
    rows += remote.run_map([base.but(engine=engine, rate=r, pool_gib=small_pool_gib) for r in small_pool_rates],
                           **run)
remote.save(rows, RESULT_SETS["arrivals"], out_dir)
pd.DataFrame(rows)[["engine", "pool_gib", "rate", "served_rate", "queue_wait_median_s", "itl_max_s"]]
