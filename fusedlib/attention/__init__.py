"""Attention backends behind one interface (see base.py). `make_backend` resolves a name.

The backends' names are plain data and the classes load on first use, so that
`fusedlib.config` (which checks a backend name) and the harness's option table read the
names without importing torch: a book page that only reads rows starts faster."""
from __future__ import annotations

from importlib import import_module

# Each Triton backend's decode kernel (see triton_backend.py); prefill is the same for all.
TRITON_DECODE = {"triton": "rows", "triton-splitkv": "splitkv", "triton-balanced": "balanced"}
BACKENDS = ("torch", *TRITON_DECODE)

_EXPORTS = {"AttentionBackend": "base", "AttentionMetadata": "base", "DecodeMeta": "base", "PrefillMeta": "base",
            "TorchAttention": "torch_backend"}


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)


def make_backend(name: str) -> AttentionBackend:
    if name == "torch":
        from .torch_backend import TorchAttention

        return TorchAttention()
    if name in TRITON_DECODE:
        from .triton_backend import TritonAttention

        return TritonAttention(decode_kernel=TRITON_DECODE[name])
    raise ValueError(f"unknown attention backend {name!r}; choose one of {BACKENDS}")


__all__ = ["AttentionBackend", "AttentionMetadata", "DecodeMeta", "PrefillMeta",
           "TorchAttention", "make_backend", "BACKENDS"]
