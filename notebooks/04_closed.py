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
# # Closed runs
#
# The whole batch handed to the engine at time zero and timed to its last token, after
# discarded warm-up runs: the mixed draw at batch 8, 32 and 64 and the uniform p256
# control at 8 and 32, for each engine. Rows: `<out_dir>/closed/`.

# %% tags=["parameters"]
backend = "local"
gpu = "A10"
profile = "smoke"
engines = ["chunked", "fused"]
runs = [["mixed", 8], ["mixed", 32], ["mixed", 64], ["p256", 8], ["p256", 32]]  # [workload, batch size]
seed = 0
max_batch = 32
chunk_tokens = 0  # 0: the profile's chunk budget (512 at full size)
warmups = 2
repeats = 5
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
rows = []
for engine in engines:
    for workload, batch_size in runs:
        rows += remote.run(remote.closed, engine, workload, batch_size, seed=seed, max_batch=max_batch,
                           chunk_tokens=chunk_tokens, warmups=warmups, repeats=repeats,
                           profile=profile, **run)
remote.save(rows, "closed", "runs", out_dir)
medians = pd.DataFrame([r for r in rows if r["stat"] == "median"])
medians.pivot_table(index=["workload", "batch_size"], columns="engine", values="wall_s")
