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
# # Kernel gate and decode layout bench
#
# Every Triton attention path against the PyTorch reference at the model's attention
# shape, then one decode attention call over 32 requests' tokens as one-row tiles, as one
# packed tile and as split-KV, on the same cache state; then split-KV launch shapes. Rows: `<out_dir>/kernels/`.

# %% tags=["parameters"]
backend = "local"  # "local" (this machine) or "modal"
gpu = "A10"  # the Modal GPU, for backend "modal"
profile = "smoke"  # "smoke" (tiny shapes, CPU) or "full"
splitkv_sweep = True  # also time the split-KV launch shapes
out_dir = "../data-smoke"

# %%
import pandas as pd

from fusedlib.bench import remote, use_interpreter_without_gpu
from fusedlib.bench.spec import RESULT_SETS, RunSpec

use_interpreter_without_gpu()  # no GPU here: Triton kernels run on CPU tensors
run = dict(backend=backend, gpu=gpu)

# %%
gate = remote.run(RunSpec.build("kernel_gate", profile=profile), **run)
remote.save(gate, RESULT_SETS["kernel_gate"], out_dir)
pd.DataFrame(gate)[["case", "kernel", "passed", "rel_err", "max_abs_err"]]

# %%
bench = remote.run(RunSpec.build("layout_bench", profile=profile), **run)
remote.save(bench, RESULT_SETS["layout_bench"], out_dir)
pd.DataFrame(bench)[["kernel", "median_ms", "ratio_vs_rows", "kv_bytes_floor_ms", "gpu"]]

# %%
if splitkv_sweep:
    sweep = remote.run(RunSpec.build("splitkv_sweep", profile=profile), **run)
    remote.save(sweep, RESULT_SETS["splitkv_sweep"], out_dir)
    display(pd.DataFrame(sweep).sort_values("median_ms").head(8))
