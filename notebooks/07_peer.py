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
# # Peer: transformers' continuous batching
#
# The same mixed requests as the closed batch-64 run, through transformers' own
# continuous-batching manager with our weights copied in. Rows: `<out_dir>/peer/`.

# %% tags=["parameters"]
backend = "local"
gpu = "A10"
profile = "smoke"
batch_size = 64
workload = "mixed"
seed = 0
rates = [40.0]  # open loop, the arrivals experiment's requests; [] skips it
n_requests = 0  # open loop: 0 means 400 at full size, 60 at smoke size
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
rows = remote.run(remote.peer, batch_size=batch_size, workload=workload, seed=seed, profile=profile, **run)
remote.save(rows, "peer", "runs", out_dir)
pd.DataFrame(rows)[["engine", "stat", "wall_s", "output_throughput", "gpu"]]

# %%
n_requests = n_requests or (400 if profile == "full" else 60)
if rates:
    rows = remote.run_map(remote.peer_arrival_rate, rates, n_requests=n_requests, seed=seed, profile=profile, **run)
    remote.save(rows, "peer", "arrivals", out_dir)
    display(pd.DataFrame(rows)[["engine", "rate", "n_requests", "served_rate", "queue_wait_median_s", "gpu"]])
