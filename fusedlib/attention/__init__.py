"""Attention backends behind one interface (base.py); `make_backend` builds one by name."""
# The names are plain data and the backends' modules load on first use, so `fusedlib.config`
# reads the names without importing torch or triton.
from importlib import import_module

# Each Triton backend's decode kernel (see triton_backend.py) and whether a mixed step's decode
# rows run on a second stream beside its prompt chunks; prefill is the same kernel for all.
TRITON = {"triton": ("rows", False), "triton-splitkv": ("splitkv", False), "triton-parallel": ("balanced", True)}
BACKENDS = ("torch", *TRITON)


def make_backend(name: str):
    if name not in BACKENDS:
        raise ValueError(f"unknown attention backend {name!r}; choose one of {BACKENDS}")
    if name == "torch":
        return import_module(".torch_backend", __name__).TorchAttention()
    decode_kernel, concurrent = TRITON[name]
    return import_module(".triton_backend", __name__).TritonAttention(decode_kernel, concurrent=concurrent)
