"""Attention backends behind one interface (see base.py). `make_backend` resolves a name."""
from __future__ import annotations

from .base import AttentionBackend, AttentionMetadata, DecodeMeta, PrefillMeta
from .torch_backend import TorchAttention

BACKENDS = ("torch", "triton", "triton-splitkv", "triton-balanced")


def make_backend(name: str) -> AttentionBackend:
    if name == "torch":
        return TorchAttention()
    if name == "triton":
        from .triton_backend import TritonAttention

        return TritonAttention(decode_kernel="rows")
    if name == "triton-splitkv":
        from .triton_backend import TritonAttention

        return TritonAttention(decode_kernel="splitkv")
    if name == "triton-balanced":
        from .triton_backend import TritonAttention

        return TritonAttention(decode_kernel="balanced")
    raise ValueError(f"unknown attention backend {name!r}; choose one of {BACKENDS}")


__all__ = ["AttentionBackend", "AttentionMetadata", "DecodeMeta", "PrefillMeta",
           "TorchAttention", "make_backend", "BACKENDS"]
