# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
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
n_requests = 0  # 0: 400 at full size, 60 at smoke size
seed = 0
capacity_runs = 3  # runs per engine at the top rate
max_batch = 32
chunk_tokens = 0  # 0: the profile's chunk budget
small_pool_gib = 0.0  # 0: 0.5 GiB at full size; smoke scales it to the tiny model's KV
small_pool_rates = []  # empty: the sweep's two lowest rates
out_dir = "../data-smoke"

# %%
import os

import torch

if backend == "local" and not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels on CPU tensors

import pandas as pd

from fusedlib.bench import remote

run = dict(backend=backend, gpu=gpu)

# %%
from fusedlib.bench import runs as experiments

spec = experiments.PROFILES[profile]
rates = list(rates) or list(spec.rates)
n_requests = n_requests or (400 if profile == "full" else 60)
# The reference's 0.5 GiB holds ~4.5 of its longest prompts' KV (28 KiB/token at full size);
# at smoke size the same number of longest prompts is ~0.2 MB.
small_pool_gib = small_pool_gib or (0.5 if profile == "full" else 2e-4)
small_pool_rates = list(small_pool_rates) or sorted(rates)[:2]
common = dict(n_requests=n_requests, seed=seed, max_batch=max_batch, chunk_tokens=chunk_tokens,
              profile=profile, **run)

# %%
rows = []
for engine in engines:
    rows += remote.run_map(remote.arrival_rate, rates, engine=engine, **common)
# The extra capacity runs, engines alternating run by run (a slow stretch lands on both).
for k in range(1, capacity_runs):
    for engine in engines:
        rows += remote.run(remote.arrival_rate, max(rates), engine=engine, repeat=k, **common)
for engine in engines:
    rows += remote.run_map(remote.arrival_rate, small_pool_rates, engine=engine, pool_gib=small_pool_gib,
                           **common)
remote.save(rows, "arrivals", "runs", out_dir)
pd.DataFrame(rows)[["engine", "pool_gib", "rate", "served_rate", "queue_wait_median_s", "itl_max_s"]]
