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
# # Step traces
#
# The disturbance workload (64 mixed requests through 32 rows, all queued at once) with
# sync-accurate timing of every step, for each engine: step kind, tokens, forwards,
# duration, and every request's token gaps. Rows: `<out_dir>/step_trace/`.

# %% tags=["parameters"]
backend = "local"
gpu = "A10"
profile = "smoke"
engines = ["chunked", "fused"]
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
rows = remote.run_map(remote.step_trace, engines, profile=profile, **run)
remote.save(rows, "step_trace", "runs", out_dir)
summary = pd.DataFrame([r for r in rows if r["record"] == "summary"])
summary[["engine", "n_steps", "n_decode_steps", "n_mixed_steps", "n_chunk_steps",
         "median_decode_step_s", "median_mixed_step_s", "gap_median_s", "gap_max_s"]]
