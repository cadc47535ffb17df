"""Qwen2, read top to bottom: embedding, decoder layers, final norm, head."""
# The model runs one *packed, unpadded* sequence of T positions, prompt chunks first (the first
# `meta.prefill.num_tokens`), then decode rows. Every linear, norm and MLP sees all T at once; only
# attention splits (`Attention.attend`): that is the whole difference between one forward per
# step and two. The forward's `fused_ops` picks the fused Triton ops of `fusedlib.ops` or the plain
# PyTorch reference (parts 7-9); both do the same arithmetic.
#
# q/k/v are one matmul and gate/up are one (as in gpt-fast): 4 GEMMs a layer instead of 7.
# The residual stream travels as two tensors, `hidden` (the last sub-layer's output) and
# `residual` (the sum so far, None before the first layer), so the add that merges them can
# happen inside the norm that reads them next.
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
    """Rotate-half RoPE from one [positions, 2 (cos, sin), head_dim] table."""
    # One table computed in fp32 and cast with the model: a forward gathers its rows in one kernel
    # and casts nothing (two fp32 tables cost 3 us more per decode step on the H200).

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
        """q for every position, this step's keys and values written to the cache first."""
        qkv = self.qkv_proj(x).view(-1, self.num_heads + 2 * self.num_kv_heads, self.head_dim)
        q, k, v = qkv.split([self.num_heads, self.num_kv_heads, self.num_kv_heads], dim=1)
        q, k = (x * cos + _rotate_half(x) * sin for x in (q, k))
        k_cache.view(-1, self.num_kv_heads, self.head_dim).index_copy_(0, slot_mapping, k)
        v_cache.view(-1, self.num_kv_heads, self.head_dim).index_copy_(0, slot_mapping, v)
        return q

    def attend(self, q, k_cache, v_cache, meta: AttentionMetadata, backend: AttentionBackend) -> torch.Tensor:
        """The one place the packed sequence splits: chunk positions to prefill, decode rows to
        decode, each writing its rows of one [T, q_size] output (no concatenation follows)."""
        out = torch.empty(q.shape[0], self.q_size, dtype=q.dtype, device=q.device)
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
        gate, up = ops.split_gate_up(self.gate_up_proj(x))  # gate_up's rows are interleaved (ops/gemm.py)
        return self.down_proj((F.silu(gate) * up).flatten(-2))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, hidden, residual, cos, sin, k_cache, v_cache, meta: AttentionMetadata,
                backend: AttentionBackend, fused_ops: bool):
        """(hidden, residual): the MLP's output (fused: maybe split-K partials) and the stream."""
        attn, mlp, norm1, norm2 = self.self_attn, self.mlp, self.input_layernorm, self.post_attention_layernorm
        if not fused_ops:
            residual = hidden if residual is None else hidden + residual
            q = attn.project(norm1(residual), cos, sin, k_cache, v_cache, meta.slot_mapping)
            residual = residual + attn.o_proj(attn.attend(q, k_cache, v_cache, meta, backend))
            return mlp(norm2(residual)), residual
        # add + norm; the GEMM without its bias; bias, rotary on q and k and the k/v cache
        # write, all from one read of the projection's output.
        x, residual = ops.add_rms_norm(hidden, residual, norm1.weight, norm1.eps)
        qkv = ops.linear(x, attn.qkv_proj.weight, ops.QKV_SPLIT_K)
        q = ops.rotary_to_cache(qkv, attn.qkv_proj.bias, cos, sin, k_cache, v_cache, meta.slot_mapping,
                                attn.num_heads, attn.num_kv_heads)
        o = ops.linear(attn.attend(q, k_cache, v_cache, meta, backend), attn.o_proj.weight, ops.O_PROJ_SPLIT_K)
        # The attention output joins the stream inside the norm; SiLU(gate) * up is the gate_up
        # GEMM's epilogue (or one kernel after cuBLAS's GEMM); part 12's shapes take the large-batch one.
        x, residual = ops.add_rms_norm(o, residual, norm2.weight, norm2.eps)
        act = ops.gate_up_silu(x, mlp.gate_up_proj.weight, backend.hopper_shapes)
        return ops.linear(act, mlp.down_proj.weight, ops.DOWN_SPLIT_K), residual


class Qwen2Model(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.config = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.lm_head = None if cfg.tie_word_embeddings else nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.rotary = RotaryEmbedding(cfg.head_dim, cfg.max_position_embeddings, cfg.rope_theta)

    @property
    def device(self) -> torch.device:
        return self.embed_tokens.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.embed_tokens.weight.dtype

    @torch.inference_mode()
    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, meta: AttentionMetadata,
                kv_cache: torch.Tensor, backend: AttentionBackend, logit_indices: torch.Tensor,
                fused_ops: bool) -> torch.Tensor:
        """Logits (fp32) at `logit_indices` of one packed sequence (prompt-chunk positions, then decode rows)."""
        hidden, residual = self.embed_tokens(input_ids), None
        cos, sin = self.rotary(positions, hidden.dtype)
        for i, layer in enumerate(self.layers):  # .forward: no module hooks, less host time
            hidden, residual = layer.forward(hidden, residual, cos, sin, kv_cache[i, 0], kv_cache[i, 1], meta,
                                             backend, fused_ops)
        # The head. Only the logit rows reach the vocabulary projection, the largest matmul. Fused,
        # the last residual add, the gather of the logit rows and the final norm are one kernel.
        x = (ops.rms_norm_rows(hidden, residual, self.norm.weight, self.norm.eps, logit_indices) if fused_ops
             else self.norm((hidden + residual)[logit_indices]))
        weight = self.embed_tokens.weight if self.lm_head is None else self.lm_head.weight
        if x.is_cuda and x.dtype != torch.float32:
            # cuBLAS writes fp32 logits from the fp16 GEMM: no cast kernel over [rows, vocab]
            # (14 us at 32 rows on the H200, of which the wider writes take back 3). CPU
            # builds lack this overload.
            return torch.mm(x, weight.t(), out_dtype=torch.float32)
        return F.linear(x, weight).float()
