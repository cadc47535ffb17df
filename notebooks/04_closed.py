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
chunk_tokens = None  # None: the profile's chunk budget (512 at full size)
warmups = 2
repeats = 5
out_dir = "../data-smoke"

# %%
import pandas as pd

from fusedlib.bench import remote, use_interpreter_without_gpu
from fusedlib.bench.spec import RESULT_SETS, RunSpec

use_interpreter_without_gpu()  # no GPU here: Triton kernels run on CPU tensors
run = dict(backend=backend, gpu=gpu)

# %%
closed = RunSpec.build("closed", profile=profile, seed=seed, max_batch=max_batch, chunk_tokens=chunk_tokens,
                       warmups=warmups, repeats=repeats)
rows = remote.run([closed.but(engine=engine, workload=workload, batch_size=batch_size)
                   for engine in engines for workload, batch_size in runs], **run)
remote.save(rows, RESULT_SETS["closed"], out_dir)
medians = pd.DataFrame([r for r in rows if r["stat"] == "median"])
medians.pivot_table(index=["workload", "batch_size"], columns="engine", values="wall_s")
