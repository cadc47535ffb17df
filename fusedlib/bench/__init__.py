"""fusedlib's measuring harness. It imports the engine; the engine never imports it.

  spec.py       the two profiles, one run's options (checked once); its settings: a part of
                fusedlib.config.PARTS
  plans.py      each experiment's planned runs, one function per notebook
  runner.py     what a notebook calls: the missing runs, here or on Modal, rows appended
  measure.py    one run here, by its experiment's module
  engines.py    what the experiment modules share: the model, engines, pool size, draws, the open
                loop, row settings
  experiment modules (each `run(spec) -> rows`; they import engines.py, never one another):
  runs.py       the open loop (capacity, scale, soak)
  census.py     what a step costs (census); decode attention beside a copy of its bytes (attention)
  kernels.py    prompt attention beside SDPA, decode beside a copy, GEMMs beside matmul (kernels)
  timing.py     how the kernel experiments time a call (CUDA events after an L2 flush, anchors)
  gates.py      correctness gates;  peer.py  the closed workload, ours and transformers'
  hf.py         our weights in transformers' Qwen2 (gates and peer)
  workloads.py  requests;  metrics.py  serving metrics;  rows.py  rows on disk;  telemetry.py  the device
  remote.py     the Modal app;  cli.py  `python -m fusedlib.bench`;  runall.py  `make run-all`
  figures/      the book's side: one module per page (rows -> tables and glued values), with
                stats.py (intervals), text.py (numbers as words), plots.py, predictions.py
"""
from __future__ import annotations

import os
import sys


def use_interpreter_without_gpu(always: bool = False) -> bool:
    """Run Triton kernels in Triton's CPU interpreter (TRITON_INTERPRET=1) where there is
    no CUDA GPU, or `always` (the tests, whose tensors live on the CPU). Triton reads the
    variable when a kernel is defined, so call this before fusedlib's Triton kernels are
    first imported; a call after that raises instead of silently compiling for a GPU.
    Returns whether kernels run in the interpreter. An explicit TRITON_INTERPRET wins."""
    import torch

    if always or not torch.cuda.is_available():
        if os.environ.get("TRITON_INTERPRET") is None and _triton_kernels_defined():
            raise RuntimeError("use_interpreter_without_gpu() came after fusedlib's Triton kernels were "
                               "imported; call it first")
        os.environ.setdefault("TRITON_INTERPRET", "1")
    return os.environ.get("TRITON_INTERPRET") == "1"


def _triton_kernels_defined() -> bool:
    jit = sys.modules.get("triton.runtime.jit")
    if jit is None:
        return False
    return any(isinstance(value, jit.JITFunction)
               for name, module in list(sys.modules.items()) if name.startswith("fusedlib.") and module
               for value in vars(module).values())
