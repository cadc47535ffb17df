"""Reference attention over the paged cache, slow and simple on purpose."""
# Each request's keys and values gathered through its block table, dense masked attention in fp32.
from __future__ import annotations

import torch

from .base import DecodeMeta, PrefillMeta


def _gather(cache: torch.Tensor, block_table: torch.Tensor, length: int) -> torch.Tensor:
    """The first `length` positions of one request: [length, kv_heads, head_dim]."""
    n_blocks = -(-length // cache.shape[1])
    return cache[block_table[:n_blocks].long()].reshape(-1, *cache.shape[2:])[:length]


def _attend(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_table: torch.Tensor,
            length: int, q_pos: torch.Tensor, scale: float) -> torch.Tensor:
    """q [m, h, d] at positions q_pos over one request's first `length` keys, causal by position."""
    group = q.shape[1] // k_cache.shape[2]
    k = _gather(k_cache, block_table, length).float().repeat_interleave(group, dim=1)
    v = _gather(v_cache, block_table, length).float().repeat_interleave(group, dim=1)
    scores = torch.einsum("mhd,lhd->hml", q.float(), k) * scale
    key_pos = torch.arange(k.shape[0], device=q.device)
    scores.masked_fill_(key_pos[None, None, :] > q_pos[None, :, None], float("-inf"))
    return torch.einsum("hml,lhd->mhd", scores.softmax(-1), v).to(q.dtype)


class TorchAttention:
    hopper_shapes = False  # the eager reference has no launch shapes to choose

    def prefill(self, q, k_cache, v_cache, meta: PrefillMeta, scale: float,
                out: torch.Tensor | None = None) -> torch.Tensor:
        out = torch.empty_like(q) if out is None else out
        seq = meta.token_seq.tolist()  # each chunk is a run of one value
        starts = [i for i in range(len(seq)) if i == 0 or seq[i] != seq[i - 1]]
        for s, e in zip(starts, starts[1:] + [len(seq)]):
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
