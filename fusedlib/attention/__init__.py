"""Attention backends behind one interface (see base.py). `make_backend` resolves a name."""
from __future__ import annotations

from .base import AttentionBackend, AttentionMetadata, DecodeMeta, PrefillMeta
from .torch_backend import TorchAttention

# Each Triton backend's decode kernel (see triton_backend.py); prefill is the same for all.
TRITON_DECODE = {"triton": "rows", "triton-splitkv": "splitkv", "triton-balanced": "balanced"}
BACKENDS = ("torch", *TRITON_DECODE)


def make_backend(name: str) -> AttentionBackend:
    if name == "torch":
        return TorchAttention()
    if name in TRITON_DECODE:
        from .triton_backend import TritonAttention

        return TritonAttention(decode_kernel=TRITON_DECODE[name])
    raise ValueError(f"unknown attention backend {name!r}; choose one of {BACKENDS}")


__all__ = ["AttentionBackend", "AttentionMetadata", "DecodeMeta", "PrefillMeta",
           "TorchAttention", "make_backend", "BACKENDS"]
