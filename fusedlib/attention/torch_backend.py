"""Reference attention over the paged cache, from plain PyTorch ops.

Slow and simple on purpose: it gathers each request's keys and values from its block
table and runs dense masked attention in fp32. The Triton kernels are checked against it.
"""
from __future__ import annotations

import torch

from .base import DecodeMeta, PrefillMeta, chunk_spans


def _gather(cache: torch.Tensor, block_table: torch.Tensor, length: int) -> torch.Tensor:
    """The first `length` positions of one request: [length, kv_heads, head_dim]."""
    block_size = cache.shape[1]
    n_blocks = (length + block_size - 1) // block_size
    # [n_blocks, block_size, kvh, d] -> [n_blocks * block_size, kvh, d] -> the first `length`
    return cache[block_table[:n_blocks].long()].reshape(-1, *cache.shape[2:])[:length]


def _attend(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_table: torch.Tensor,
            length: int, q_pos: torch.Tensor, scale: float) -> torch.Tensor:
    """q [m, h, d] at absolute positions q_pos against the first `length` keys and values of
    one request (its `block_table`); causal by position."""
    group = q.shape[1] // k_cache.shape[2]
    k = _gather(k_cache, block_table, length).float().repeat_interleave(group, dim=1)
    v = _gather(v_cache, block_table, length).float().repeat_interleave(group, dim=1)
    scores = torch.einsum("mhd,lhd->hml", q.float(), k) * scale
    key_pos = torch.arange(k.shape[0], device=q.device)
    scores.masked_fill_(key_pos[None, None, :] > q_pos[None, :, None], float("-inf"))
    return torch.einsum("hml,lhd->mhd", scores.softmax(-1), v).to(q.dtype)


class TorchAttention:
    def prefill(self, q, k_cache, v_cache, meta: PrefillMeta, scale: float,
                out: torch.Tensor | None = None) -> torch.Tensor:
        out = torch.empty_like(q) if out is None else out
        for s, e in chunk_spans(meta):
            positions = meta.positions[s:e].long()
            out[s:e] = _attend(q[s:e], k_cache, v_cache, meta.block_tables[meta.token_seq[s]],
                               int(positions[-1]) + 1, positions, scale)
        return out

    def decode(self, q, k_cache, v_cache, meta: DecodeMeta, scale: float,
               out: torch.Tensor | None = None) -> torch.Tensor:
        out = torch.empty_like(q) if out is None else out
        for i, length in enumerate(meta.context_lens.tolist()):
            out[i : i + 1] = _attend(q[i : i + 1], k_cache, v_cache, meta.block_tables[i], length,
                                     torch.tensor([length - 1], device=q.device), scale)
        return out

    def side_stream(self, device: torch.device) -> None:
        return None  # the reference runs everything in order
