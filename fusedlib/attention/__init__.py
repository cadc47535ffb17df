"""Attention backends behind one interface (see base.py). `make_backend` resolves a name.

The backends' names are plain data and their classes load on first use, so `fusedlib.config`
and the harness's options read the names without importing torch (a book page that only reads
rows does not pay for it)."""
from importlib import import_module

# Each Triton backend's decode kernel (see triton_backend.py); prefill is the same for all.
# "triton-parallel" is "triton-balanced" with a mixed step's decode rows attended on a second
# stream, beside its prompt chunks (TritonAttention.concurrent).
TRITON_DECODE = {"triton": "rows", "triton-splitkv": "splitkv", "triton-balanced": "balanced",
                 "triton-parallel": "balanced"}
BACKENDS = ("torch", *TRITON_DECODE)
# Exported classes -> the module defining them.
_CLASSES = {"AttentionBackend": "base", "AttentionMetadata": "base", "DecodeMeta": "base", "PrefillMeta": "base",
            "TorchAttention": "torch_backend"}


def __getattr__(name: str):
    if name not in _CLASSES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_CLASSES[name]}", __name__), name)


def make_backend(name: str) -> "AttentionBackend":
    if name not in BACKENDS:
        raise ValueError(f"unknown attention backend {name!r}; choose one of {BACKENDS}")
    if name == "torch":
        return __getattr__("TorchAttention")()
    return import_module(".triton_backend", __name__).TritonAttention(decode_kernel=TRITON_DECODE[name],
                                                                      concurrent=name == "triton-parallel")


__all__ = [*_CLASSES, "make_backend", "BACKENDS"]
