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
import pandas as pd

from fusedlib.bench import remote, use_interpreter_without_gpu
from fusedlib.bench.spec import RESULT_SETS, RunSpec

use_interpreter_without_gpu()  # no GPU here: Triton kernels run on CPU tensors
run = dict(backend=backend, gpu=gpu)

# %%
rows = remote.run_map([RunSpec.build("step_trace", engine=e, profile=profile) for e in engines], **run)
remote.save(rows, RESULT_SETS["step_trace"], out_dir)
summary = pd.DataFrame([r for r in rows if r["record"] == "summary"])
summary[["engine", "n_steps", "n_decode_steps", "n_mixed_steps", "n_chunk_steps",
         "median_decode_step_s", "median_mixed_step_s", "gap_median_s", "gap_max_s"]]
