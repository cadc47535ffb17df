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
n_requests = None  # None: the profile's, 400 at full size, 60 at smoke size
out_dir = "../data-smoke"

# %%
import pandas as pd

from fusedlib.bench import remote, use_interpreter_without_gpu
from fusedlib.bench.spec import RESULT_SETS, RunSpec

use_interpreter_without_gpu()  # no GPU here: Triton kernels run on CPU tensors
run = dict(backend=backend, gpu=gpu)

# %%
base = RunSpec.build("sensitivity", profile=profile, n_requests=n_requests)
rows = []
for engine in engines:  # one engine serves every draw of one call
    rows += remote.run([base.but(engine=engine, seed=s) for s in seeds]
                       + [base.but(engine=engine, long_share=share) for share in long_shares], **run)
remote.save(rows, RESULT_SETS["sensitivity"], out_dir)
pd.DataFrame(rows)[["engine", "seed", "long_share", "n_long_prompts", "served_rate"]]
