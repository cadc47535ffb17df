"""Run Triton kernels on the CPU interpreter unless GPU tests are asked for.

TRITON_INTERPRET must be set before any module defining @triton.jit functions is imported,
which is why this sits in the root conftest.
"""
import os

if os.environ.get("FUSEDLIB_GPU_TESTS") != "1":
    os.environ.setdefault("TRITON_INTERPRET", "1")
