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
# # Beyond the reference: CUDA graphs and split-KV decode
#
# The step trace of `03_step_trace` under other engine configurations: CUDA graphs for
# decode-only forwards, split-KV decode attention, and both; then the capacity (a Poisson
# rate above it) with decode graphs and split-KV, and with every forward graphed, each
# `capacity_runs` times per engine, the engines alternating. Rows:
# `<out_dir>/beyond/step_trace` and `<out_dir>/beyond/arrivals`.
# CUDA graphs need a GPU: on a CPU (the smoke profile) only the variants without them run.

# %% tags=["parameters"]
backend = "local"
gpu = "A10"
profile = "smoke"
engines = ["chunked", "fused"]
# [attention, cuda_graphs, graph_chunks]
variants = [["triton", True, False], ["triton-splitkv", False, False], ["triton-splitkv", True, False],
            ["triton-splitkv", True, True]]
# [attention, cuda_graphs, graph_chunks] profiled step by step
profile_variants = [["triton", False, False], ["triton-splitkv", False, False], ["triton-splitkv", True, False]]
profiled_steps = 120  # steps of each profiled run: the admission waves
capacity_rate = 40.0  # requests/s, above both engines' capacity; 0 skips the capacity runs
capacity_n = 400
capacity_runs = 3  # runs per engine and configuration
capacity_graph_chunks = [False, True]  # decode graphs only; every forward graphed
out_dir = "../data-smoke"

# %%
import pandas as pd
import torch

from fusedlib.bench import remote, use_interpreter_without_gpu
from fusedlib.bench.spec import RunSpec

use_interpreter_without_gpu()  # no GPU here: Triton kernels run on CPU tensors
run = dict(backend=backend, gpu=gpu)
on_gpu = backend == "modal" or torch.cuda.is_available()
if not on_gpu:
    skipped = [v for v in variants if v[1]]
    variants = [v for v in variants if not v[1]]
    print(f"no GPU here: skipping the CUDA-graph variants {skipped}")

# %%
rows = remote.run_map([RunSpec.build("step_trace", engine=e, profile=profile, attention=attention,
                                     cuda_graphs=graphs, graph_chunks=chunks)
                       for attention, graphs, chunks in variants for e in engines], **run)
remote.save(rows, "beyond/step_trace", out_dir)
summary = pd.DataFrame([r for r in rows if r["record"] == "summary"])
summary[["engine", "attention", "cuda_graphs", "median_decode_step_s", "median_mixed_step_s", "wall_s"]]

# %% [markdown]
# The same workload under torch.profiler, eager and with decode graphs: kernels, copies and
# host ops per step (the profiler slows every step, so these rows count, they do not time).

# %%
profiled = remote.run_map([RunSpec.build("step_profile", engine=e, profile=profile, attention=attention,
                                         cuda_graphs=graphs, graph_chunks=chunks, profiled_steps=profiled_steps)
                           for attention, graphs, chunks in profile_variants if on_gpu or not graphs
                           for e in engines], **run)
remote.save(profiled, "beyond/step_profile", out_dir)
pd.DataFrame([r for r in profiled if r["record"] == "step"]).groupby(
    ["engine", "attention", "cuda_graphs", "kind"])[["n_kernels", "profiled_wall_s"]].median()

# %%
if capacity_rate and on_gpu:
    capacity = RunSpec.build("arrivals", profile=profile, rate=capacity_rate, n_requests=capacity_n,
                             attention="triton-splitkv", cuda_graphs=True)
    # engines alternate, so a slow spell of the machine hits both
    cap = remote.run([capacity.but(engine=engine, graph_chunks=chunks, repeat=k) for chunks in capacity_graph_chunks
                      for k in range(capacity_runs) for engine in engines], **run)
    remote.save(cap, "beyond/arrivals", out_dir)
    display(pd.DataFrame(cap)[["engine", "graph_chunks", "repeat", "served_rate", "median_decode_step_s"]])
