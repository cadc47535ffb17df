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
import pandas as pd

from fusedlib.bench import remote, use_interpreter_without_gpu
from fusedlib.bench.spec import RESULT_SETS, RunSpec

use_interpreter_without_gpu()  # no GPU here: Triton kernels run on CPU tensors
run = dict(backend=backend, gpu=gpu)

# %%
rows = remote.run(RunSpec.build("gates", profile=profile), **run)
remote.save(rows, RESULT_SETS["gates"], out_dir)
table = pd.DataFrame(rows)
table[["gate", "attention", "passed"]]

# %%
assert table["passed"].all(), table[~table["passed"]]
