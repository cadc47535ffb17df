"""The decode step a reader would write instead: plain PyTorch over a dense cache.

Part 10 sets our decode step beside what someone who needs a fast 32-row decode step would
reach for first: the model written out in plain PyTorch, its KV cache one dense tensor per
layer, attention through `scaled_dot_product_attention`, the step put under `torch.compile`
and replayed as one CUDA graph (gpt-fast's recipe). `PlainDecode` is that step for our
`Qwen2Model`'s own weights, with one position per row, so it runs exactly the step our engine
runs for the same requests: `fill` copies each request's cached keys and values out of the
paged pool, and `step` then computes the logits ours computes.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..model import Qwen2Model


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    h = x.float()
    return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class PlainDecode:
    """One decode step of `rows` requests over a dense cache of `cache_len` positions a row."""

    def __init__(self, model: Qwen2Model, rows: int, cache_len: int):
        cfg, w = model.config, model.embed_tokens.weight
        self.model, self.cfg = model, cfg
        # One cache tensor per layer, as gpt-fast keeps them: written through one tensor for
        # all layers, torch.compile copied the whole cache at every layer's write (18.4 ms a
        # step on the H200, data/roofline/anchors_first).
        shape = (rows, cfg.num_kv_heads, cache_len, cfg.head_dim)
        self.k = [torch.zeros(shape, dtype=w.dtype, device=w.device) for _ in range(cfg.num_layers)]
        self.v = [torch.zeros_like(k) for k in self.k]
        self.cache_positions = torch.arange(cache_len, device=w.device)
        self.rows = torch.arange(rows, device=w.device)

    def fill(self, kv: torch.Tensor, blocks: list[list[int]], lengths: list[int]) -> None:
        """Row b's first lengths[b] positions from the paged pool `kv` ([layers, 2, blocks,
        block size, KV heads, head_dim]) through its block list blocks[b]."""
        rows, _, cache_len, _ = self.k[0].shape
        if len(blocks) != rows or len(lengths) != len(blocks):
            raise ValueError(f"fill needs one block list and one length per row ({rows}), "
                             f"got {len(blocks)} and {len(lengths)}")
        if max(lengths) >= cache_len:
            raise ValueError(f"a row of {max(lengths)} cached positions leaves no room for its new one "
                             f"in a cache of {cache_len}")
        size = kv.shape[3]
        for b, (row, n) in enumerate(zip(blocks, lengths)):
            pages = torch.tensor(row[:-(-n // size)], device=kv.device)
            for cache, which in ((self.k, 0), (self.v, 1)):
                dense = kv[:, which, pages].flatten(1, 2)[:, :n].transpose(1, 2)  # [layers, KV heads, n, head_dim]
                for layer, c in enumerate(cache):
                    c[b, :, :n] = dense[layer]

    @torch.no_grad()  # the weights are Parameters: without this, torch.compile plans a backward
    def step(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """fp32 logits [rows, vocab] of one new token a row (`tokens`, int64 [rows]) at
        `positions` (int64 [rows]), writing its keys and values into the cache there."""
        model, cfg = self.model, self.cfg
        heads, kv_heads, dim = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        rows = tokens.shape[0]
        cos, sin = model.rotary(positions, model.embed_tokens.weight.dtype)  # [rows, 1, head_dim]
        # A row sees its cache up to and including its own position.
        visible = (self.cache_positions[None, :] <= positions[:, None])[:, None, None, :]
        h = model.embed_tokens.weight[tokens]
        for i, layer in enumerate(model.layers):
            attn, mlp = layer.self_attn, layer.mlp
            x = _rms(h, layer.input_layernorm.weight, layer.input_layernorm.eps)
            q, k, v = F.linear(x, attn.qkv_proj.weight, attn.qkv_proj.bias).split(
                [heads * dim, kv_heads * dim, kv_heads * dim], dim=-1)
            q, k = ((t.view(rows, -1, dim) * cos + _rotate_half(t.view(rows, -1, dim)) * sin) for t in (q, k))
            self.k[i][self.rows, :, positions] = k
            self.v[i][self.rows, :, positions] = v.view(rows, kv_heads, dim)
            o = F.scaled_dot_product_attention(q[:, :, None], self.k[i], self.v[i], attn_mask=visible,
                                               enable_gqa=True)
            h = h + F.linear(o.reshape(rows, heads * dim), attn.o_proj.weight)
            x = _rms(h, layer.post_attention_layernorm.weight, layer.post_attention_layernorm.eps)
            gate, up = F.linear(x, mlp.gate_up_proj.weight).chunk(2, dim=-1)
            h = h + F.linear(F.silu(gate) * up, mlp.down_proj.weight)
        x = _rms(h, model.norm.weight, model.norm.eps)
        head = model.embed_tokens.weight if model.lm_head is None else model.lm_head.weight
        return F.linear(x, head).float()
