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
n_requests = None  # open loop: None means the profile's, 400 at full size, 60 at smoke size
out_dir = "../data-smoke"

# %%
import pandas as pd

from fusedlib.bench import remote, use_interpreter_without_gpu
from fusedlib.bench.spec import RESULT_SETS, RunSpec

use_interpreter_without_gpu()  # no GPU here: Triton kernels run on CPU tensors
run = dict(backend=backend, gpu=gpu)

# %%
rows = remote.run(RunSpec.build("peer", batch_size=batch_size, workload=workload, seed=seed, profile=profile), **run)
remote.save(rows, RESULT_SETS["peer"], out_dir)
pd.DataFrame(rows)[["engine", "stat", "wall_s", "output_throughput", "gpu"]]

# %%
if rates:
    rows = remote.run_map([RunSpec.build("peer_arrivals", rate=r, n_requests=n_requests, seed=seed, profile=profile)
                           for r in rates], **run)
    remote.save(rows, RESULT_SETS["peer_arrivals"], out_dir)
    display(pd.DataFrame(rows)[["engine", "rate", "n_requests", "served_rate", "queue_wait_median_s", "gpu"]])
