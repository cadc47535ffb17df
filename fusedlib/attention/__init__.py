"""Attention backends behind one interface (base.py); `make_backend` builds one by name."""
# The names are plain data and the backends' modules load on first use, so `fusedlib.config`
# reads the names without importing torch or triton.
from importlib import import_module

# Each Triton backend's decode kernel (see triton_backend.py), whether a mixed step's decode rows
# run on a second stream beside its prompt chunks, and whether it takes part 12's launch shapes
# (Hopper-sized prompt tiles, a deeper split-KV pipeline, and in the fused ops gate_up's TMA
# epilogue GEMM for large batches) or the earlier ones parts 7-11 ran; prefill is the same
# kernel for all. A part's rows then mean the same kernels on any later main.
TRITON = {"triton": ("rows", False, False), "triton-splitkv": ("splitkv", False, False),
          "triton-parallel": ("balanced", True, False), "triton-hopper": ("balanced", True, True)}
BACKENDS = ("torch", *TRITON)


def make_backend(name: str):
    if name not in BACKENDS:
        raise ValueError(f"unknown attention backend {name!r}; choose one of {BACKENDS}")
    if name == "torch":
        return import_module(".torch_backend", __name__).TorchAttention()
    kernel, concurrent, hopper = TRITON[name]
    return import_module(".triton_backend", __name__).TritonAttention(kernel, concurrent=concurrent, hopper_shapes=hopper)
