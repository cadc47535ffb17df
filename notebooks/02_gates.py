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
# # Correctness gates
#
# Both engines token for token against each other and against transformers, the fused
# mixed step against its parts, a tiny pool, and poisoned freed blocks, under each
# attention backend the profile runs. Rows: `<out_dir>/gates/`.

# %% tags=["parameters"]
backend = "local"  # "local" or "modal"
gpu = "A10"
profile = "smoke"
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
rows = remote.run(remote.gate_remote, profile=profile, **run)
remote.save(rows, "gates", "runs", out_dir)
table = pd.DataFrame(rows)
table[["gate", "attention", "passed"]]

# %%
assert table["passed"].all(), table[~table["passed"]]
