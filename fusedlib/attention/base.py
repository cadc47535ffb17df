"""The attention interface: explicit per-step metadata (never a global) and the backends' protocol.
The packed sequence holds chunk (prefill) positions first, decode positions (one per request) last."""
# This step's keys and values are in the cache before attention runs, so both paths read every
# key they need from the cache alone.
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


@dataclass
class DecodeMeta:
    num_tokens: int  # one per decoding request
    context_lens: torch.Tensor  # int32 [n]: KV length including the token being decoded
    block_tables: torch.Tensor  # int32 [n, max_blocks]
    max_context_len: int


@dataclass
class AttentionMetadata:
    slot_mapping: torch.Tensor  # int64 [T]: cache slot for every packed position's K/V
    prefill: PrefillMeta | None
    decode: DecodeMeta | None


class AttentionBackend(Protocol):
    """q is [n, num_heads, head_dim]; returns `out` (a view the caller owns), or a new tensor, like q."""
    hopper_shapes: bool  # part 12's launch shapes: attention's (Triton) and gate_up's large-batch GEMM (model.py)

    def prefill(self, q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                meta: PrefillMeta, scale: float, out: torch.Tensor | None = None) -> torch.Tensor: ...

    def decode(self, q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
               meta: DecodeMeta, scale: float, out: torch.Tensor | None = None) -> torch.Tensor: ...

    def side_stream(self, device: torch.device) -> "torch.cuda.Stream | None":
        """The stream for a mixed step's decode attention, beside its prefill (None: in order)."""
