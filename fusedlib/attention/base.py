"""The attention interface: explicit per-step metadata and the backend protocol.

The model never reads a global context. Each step's `AttentionMetadata` is built by
`fusedlib.batch.pack` and passed down `Model.forward` to every layer. The packed sequence
holds chunk (prefill) positions first and decode positions last; `prefill` describes the
first `prefill.num_tokens` positions, `decode` the remaining ones (one per request).

Cache layout, per layer: k_cache and v_cache are [num_blocks, BLOCK_SIZE, num_kv_heads,
head_dim]. A token's slot is block_id * BLOCK_SIZE + offset. Keys/values of the current
step are written to the cache *before* attention runs, so both paths read every key they
need (earlier chunks and the current one) from the cache alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch


@dataclass
class PrefillMeta:
    # A chunk is a run of consecutive positions of one request; its keys end at its last position.
    num_tokens: int  # chunk positions at the head of the packed sequence
    block_tables: torch.Tensor  # int32 [n, max_blocks]: the request's blocks, in order
    token_seq: torch.Tensor  # int32 [num_tokens]: which chunk (0..n-1) each position is in
    positions: torch.Tensor  # int32 [num_tokens]: absolute position (= its key index)


def chunk_spans(meta: PrefillMeta) -> list[tuple[int, int]]:
    """[start, end) of each chunk in the packed positions: the runs of one `token_seq` value."""
    seq = meta.token_seq.tolist()
    starts = [i for i in range(len(seq)) if i == 0 or seq[i] != seq[i - 1]]
    return list(zip(starts, starts[1:] + [len(seq)]))


@dataclass
class DecodeMeta:
    num_tokens: int  # one per decoding request
    context_lens: torch.Tensor  # int32 [n]: KV length including the token being decoded
    block_tables: torch.Tensor  # int32 [n, max_blocks]
    max_context_len: int


@dataclass
class DecodeRotary:
    """The qkv projection's epilogue, for a backend whose decode attention applies it itself
    (`decode(..., rotary=...)`): q is then the first num_heads heads of the raw projection,
    viewed [n, num_heads + 2 * num_kv_heads, head_dim][:, :num_heads], with k and v after
    them; the backend adds `bias`, rotates q and k by `cos`/`sin` (rows [n, head_dim], or
    [n, 1, head_dim], at each row's position) and writes k and v to the cache at
    `slot_mapping` (what `fusedlib.ops.rotary_to_cache` does in a kernel of its own)."""
    bias: torch.Tensor | None
    cos: torch.Tensor
    sin: torch.Tensor
    slot_mapping: torch.Tensor

    def check(self, q: torch.Tensor, k_cache: torch.Tensor) -> None:
        n, heads, head_dim = q.shape
        width = (heads + 2 * k_cache.shape[2]) * head_dim
        rows = (self.cos, self.sin)
        if q.stride(1) != head_dim or (n > 1 and q.stride(0) < width):
            raise ValueError(f"q must be the first {heads} heads of a [n, {width}] qkv projection, "
                             f"got strides {q.stride()}")
        if any(t.shape[0] != n or t.shape[-1] != head_dim or t.stride(-1) != 1 or t.dtype != q.dtype
               or t.stride(0) != self.cos.stride(0) for t in rows) or self.slot_mapping.shape != (n,):
            raise ValueError(f"cos, sin and slot_mapping must be rows of {n} ({head_dim} wide, {q.dtype}, one "
                             f"row stride), got {[tuple(t.shape) for t in (*rows, self.slot_mapping)]}")
        if self.bias is not None and (self.bias.shape != (width,) or not self.bias.is_contiguous()):
            raise ValueError(f"bias must be a contiguous [{width}], got {tuple(self.bias.shape)}")


@dataclass
class AttentionMetadata:
    slot_mapping: torch.Tensor  # int64 [T]: cache slot for every packed position's K/V
    prefill: PrefillMeta | None
    decode: DecodeMeta | None


class AttentionBackend(Protocol):
    """q is [n, num_heads, head_dim]; returns the same shape, dtype of q: `out` when given
    (a view the caller owns, e.g. its rows of a packed output), else a new tensor."""

    def prefill(self, q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                meta: PrefillMeta, scale: float, out: torch.Tensor | None = None) -> torch.Tensor: ...

    def decode(self, q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
               meta: DecodeMeta, scale: float, out: torch.Tensor | None = None) -> torch.Tensor: ...
