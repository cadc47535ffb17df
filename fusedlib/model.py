"""Qwen2, read top to bottom: embedding, decoder layers, final norm, tied head.

The model runs one *packed, unpadded* sequence: `input_ids` and `positions` are [T] and the
step's `AttentionMetadata` (built by `fusedlib.batch.pack`) says which positions are prompt
chunks (the first `meta.prefill.num_tokens`) and which are decode tokens (the rest). Every
linear, norm and MLP sees all T positions at once; only attention splits (see
`Attention.forward`). That is the whole difference between one forward per step and two.

Two deliberate performance choices, as in gpt-fast: q/k/v are one matmul (`qkv_proj`) and
gate/up are one matmul (`gate_up_proj`), so a layer launches 4 GEMMs instead of 7. The
loader in weights.py concatenates the checkpoint's separate projections.

The residual stream travels as two tensors, `hidden` (the last sub-layer's output) and
`residual` (the sum so far, None before the first layer), so the add that merges them can
happen inside the norm that reads them next. `Qwen2Model.fused_ops` picks how each layer
piece runs: the fused Triton ops of `fusedlib.ops` (a handful of kernels between the
GEMMs; the default on CUDA) or the plain PyTorch reference (dozens of small kernels, as in
parts 7-9 of the series; the default on CPU). Both do the same arithmetic. On the fused
path `Qwen2Model.gate_up_silu` (named for the first of its kernels, part 10) runs a batch of
at most 64 rows (a decode step) through Triton GEMMs: gate_up with SiLU(gate) * up in its
epilogue, and qkv, o_proj and down split over K, their fp32 partials summed by the kernel
that reads them next (rotary, add + RMSNorm); larger batches stay on cuBLAS, with the
activation kernel between.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import ops
from .attention.base import AttentionBackend, AttentionMetadata
from .config import ModelConfig


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Variance in fp32, as transformers does, so fp16 runs match it.
        x32 = x.float()
        return self.weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class RotaryEmbedding(nn.Module):
    """Non-interleaved (rotate-half) RoPE with a cos/sin table for every position.

    cos and sin sit side by side in one table, [positions, 2, head_dim], so a forward
    gathers its positions' rows in one kernel (two gathers and two casts when they were
    separate fp32 tables: 3 us more per decode step on the H200). The table is computed in
    fp32 and takes the model's dtype with the model, so no cast runs per forward: its rows
    are the values a cast per use gave.
    A rotary kernel reading the table at each position itself was slower still (+15 us a
    step: the position, then the row, a dependent load in every layer; book/last_kernels.md)."""

    def __init__(self, head_dim: int, max_positions: int, theta: float):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        freqs = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        self.register_buffer("cos_sin", torch.stack([emb.cos(), emb.sin()], dim=1), persistent=False)

    def forward(self, positions: torch.Tensor, dtype: torch.dtype):
        """(cos, sin) rows of `positions` in `dtype`, each [tokens, 1, head_dim] (views of one tensor)."""
        return self.cos_sin[positions].to(dtype).split(1, dim=1)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        self.q_size = cfg.num_heads * cfg.head_dim
        self.qkv_proj = nn.Linear(cfg.hidden_size, (cfg.num_heads + 2 * cfg.num_kv_heads) * cfg.head_dim, bias=True)
        self.o_proj = nn.Linear(self.q_size, cfg.hidden_size, bias=False)
        self.scale = cfg.head_dim ** -0.5

    def project(self, x, cos, sin, k_cache, v_cache, slot_mapping: torch.Tensor) -> torch.Tensor:
        """q for every position, after writing this step's keys/values to the cache first: both
        attention paths then read everything from the cache."""
        qkv = self.qkv_proj(x).view(-1, self.num_heads + 2 * self.num_kv_heads, self.head_dim)
        q, k, v = qkv.split([self.num_heads, self.num_kv_heads, self.num_kv_heads], dim=1)
        q, k = (x * cos + _rotate_half(x) * sin for x in (q, k))
        k_cache.view(-1, self.num_kv_heads, self.head_dim).index_copy_(0, slot_mapping, k)
        v_cache.view(-1, self.num_kv_heads, self.head_dim).index_copy_(0, slot_mapping, v)
        return q

    def attend(self, q, k_cache, v_cache, meta: AttentionMetadata, backend: AttentionBackend,
               out: torch.Tensor | None = None) -> torch.Tensor:
        """The one place the packed sequence splits by kind: chunk positions go to the packed
        prefill path, decode positions to one query row per request. Both write their rows
        of one [T, q_size] output (`out`, or a new tensor), so no concatenation follows."""
        out = torch.empty(q.shape[0], self.q_size, dtype=q.dtype, device=q.device) if out is None else out
        heads = out.view(-1, self.num_heads, self.head_dim)
        n_prefill = meta.prefill.num_tokens if meta.prefill is not None else 0
        side = (backend.side_stream(q.device) if meta.prefill is not None and meta.decode is not None
                else None)
        if side is not None:  # the decode rows go on the backend's second stream, beside the chunks,
            side.wait_stream(torch.cuda.current_stream(q.device))  # once q and the cache writes are done
        if meta.prefill is not None:
            backend.prefill(q[:n_prefill], k_cache, v_cache, meta.prefill, self.scale, out=heads[:n_prefill])
        if meta.decode is not None:
            with torch.cuda.stream(side):  # None: the current stream
                backend.decode(q[n_prefill:], k_cache, v_cache, meta.decode, self.scale, out=heads[n_prefill:])
        if side is not None:  # and the layer goes on once both are done
            torch.cuda.current_stream(q.device).wait_stream(side)
        return out


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.gate_up_proj = nn.Linear(cfg.hidden_size, 2 * cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate) * up)


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    # A layer in three parts, so fusedlib.graphs can replay the two outside attention from
    # CUDA graphs while attention, whose metadata changes shape every step, runs eagerly.
    # Both parts take the model's `fused_ops` switch (see Qwen2Model).
    def pre_attention(self, hidden, residual, cos, sin, k_cache, v_cache, slot_mapping, fused_ops: bool,
                      gate_up_silu: bool):
        """(q, residual): the residual stream gains `hidden`, is normed and projected; this
        step's keys and values go to the cache. `residual` is None before the first layer.
        `gate_up_silu` is the model's switch of that name (see Qwen2Model)."""
        attn, norm = self.self_attn, self.input_layernorm
        if fused_ops:
            # Three kernels: add + norm; the GEMM without its bias; bias, rotary on q and k
            # and the k/v cache write, all from one read of the projection's output.
            x, residual = ops.add_rms_norm(hidden, residual, norm.weight, norm.eps)
            qkv = ops.linear(x, attn.qkv_proj.weight, gate_up_silu, ops.QKV_SPLIT_K)
            return ops.rotary_to_cache(qkv, attn.qkv_proj.bias, cos, sin, k_cache, v_cache,
                                       slot_mapping, attn.num_heads, attn.num_kv_heads), residual
        residual = hidden if residual is None else hidden + residual
        return attn.project(norm(residual), cos, sin, k_cache, v_cache, slot_mapping), residual

    def post_attention(self, attn_out: torch.Tensor, residual: torch.Tensor, fused_ops: bool,
                       gate_up_silu: bool):
        """(hidden, residual): the MLP's output, and the stream it is to be added to.
        `gate_up_silu` is the model's switch of that name (see Qwen2Model); with it, the
        returned `hidden` may be the down projection's split-K partials."""
        o_proj = self.self_attn.o_proj
        if fused_ops:
            # The attention output joins the stream inside the norm; SiLU and the multiply
            # are one kernel between the two MLP GEMMs, or the gate_up GEMM's epilogue.
            norm, mlp = self.post_attention_layernorm, self.mlp
            o = ops.linear(attn_out, o_proj.weight, gate_up_silu, ops.O_PROJ_SPLIT_K)
            x, residual = ops.add_rms_norm(o, residual, norm.weight, norm.eps)
            act = ops.gate_up_silu(x, mlp.gate_up_proj.weight, gate_up_silu)
            return ops.linear(act, mlp.down_proj.weight, gate_up_silu, ops.DOWN_SPLIT_K), residual
        residual = residual + o_proj(attn_out)
        return self.mlp(self.post_attention_layernorm(residual)), residual


class Qwen2Model(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.config = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.lm_head = None if cfg.tie_word_embeddings else nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.rotary = RotaryEmbedding(cfg.head_dim, cfg.max_position_embeddings, cfg.rope_theta)
        # Fused Triton ops (True) or the PyTorch reference (False) outside attention: read at
        # every forward, by the head and by each layer part it is passed to.
        self.fused_ops = False
        self.gate_up_silu = False

    @property
    def device(self) -> torch.device:
        return self.embed_tokens.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.embed_tokens.weight.dtype

    @torch.inference_mode()
    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, meta: AttentionMetadata,
                kv_cache: torch.Tensor, backend: AttentionBackend,
                logit_indices: torch.Tensor) -> torch.Tensor:
        """Logits (fp32) at `logit_indices` of the packed sequence only: a prompt chunk that
        does not finish its prompt needs no logits, and the vocabulary projection is the
        largest matmul in the model."""
        hidden, residual = self.embed_tokens(input_ids), None
        cos, sin = self.rotary(positions, hidden.dtype)
        for i, layer in enumerate(self.layers):
            k_cache, v_cache = kv_cache[i, 0], kv_cache[i, 1]
            q, residual = layer.pre_attention(hidden, residual, cos, sin, k_cache, v_cache, meta.slot_mapping,
                                              self.fused_ops, self.gate_up_silu)
            attn_out = layer.self_attn.attend(q, k_cache, v_cache, meta, backend)
            hidden, residual = layer.post_attention(attn_out, residual, self.fused_ops, self.gate_up_silu)
        return self.head(hidden, residual, logit_indices)

    def head(self, hidden: torch.Tensor, residual: torch.Tensor, logit_indices: torch.Tensor) -> torch.Tensor:
        # Fused, the last residual add, the gather of the logit rows and the final norm are one kernel.
        x = (ops.rms_norm_rows(hidden, residual, self.norm.weight, self.norm.eps, logit_indices) if self.fused_ops
             else self.norm((hidden + residual)[logit_indices]))
        weight = self.embed_tokens.weight if self.lm_head is None else self.lm_head.weight
        if x.is_cuda and x.dtype != torch.float32:
            # cuBLAS writes fp32 logits from the fp16 GEMM: no cast kernel over [rows, vocab]
            # (14 us at 32 rows on the H200, of which the wider writes take back 3). CPU
            # builds lack this overload.
            return torch.mm(x, weight.t(), out_dtype=torch.float32)
        return F.linear(x, weight).float()
