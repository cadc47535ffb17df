"""fusedlib's measuring harness: workloads, metrics, rows, machine telemetry, the
experiments, gates, kernel bench, the Modal app and the command line
(`python -m fusedlib.bench`). It imports the engine; the engine never imports it."""
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
