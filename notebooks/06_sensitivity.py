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
# # Sensitivity to the workload draw
#
# The capacity gain rests on one seeded mixed draw. Here the served rate above capacity
# is measured for several draw seeds of the plain mixed workload, and for draws with a
# fixed share of the longest prompts. Rows: `<out_dir>/sensitivity/`.

# %% tags=["parameters"]
backend = "local"
gpu = "A10"
profile = "smoke"
engines = ["chunked", "fused"]
seeds = [0, 1, 2, 3, 4]  # plain mixed draws
long_shares = [0.0, 0.2, 0.4]  # share of longest-length prompts, at seed 0
n_requests = 0  # 0: 400 at full size, 60 at smoke size
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
n_requests = n_requests or (400 if profile == "full" else 60)
rows = []
for engine in engines:
    rows += remote.run(remote.sensitivity, engine, seeds=seeds, long_shares=[None],
                       n_requests=n_requests, profile=profile, **run)
    rows += remote.run(remote.sensitivity, engine, seeds=[0], long_shares=long_shares,
                       n_requests=n_requests, profile=profile, **run)
remote.save(rows, "sensitivity", "runs", out_dir)
pd.DataFrame(rows)[["engine", "seed", "long_share", "n_long_prompts", "served_rate"]]
