"""Qwen2, read top to bottom: embedding, decoder layers, final norm, tied head.

The model runs one *packed, unpadded* sequence: `input_ids` and `positions` are [T] and the
step's `AttentionMetadata` (built by `fusedlib.batch.pack`) says which positions are prompt
chunks (the first `meta.prefill.num_tokens`) and which are decode tokens (the rest). Every
linear, norm and MLP sees all T positions at once; only attention splits (see
`Attention.forward`). That is the whole difference between one forward per step and two.

Two deliberate performance choices, as in gpt-fast: q/k/v are one matmul (`qkv_proj`) and
gate/up are one matmul (`gate_up_proj`), so a layer launches 4 GEMMs instead of 7. The
loader in weights.py concatenates the checkpoint's separate projections.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .attention.base import AttentionBackend, AttentionMetadata
from .config import ModelConfig


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Variance in fp32, as transformers does, so fp16 runs match it.
        dtype = x.dtype
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(dtype)


class RotaryEmbedding(nn.Module):
    """Non-interleaved (rotate-half) RoPE with a cos/sin table for every position."""

    def __init__(self, head_dim: int, max_positions: int, theta: float):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        freqs = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, positions: torch.Tensor, dtype: torch.dtype):
        return self.cos[positions].to(dtype)[:, None, :], self.sin[positions].to(dtype)[:, None, :]


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        self.q_size = cfg.num_heads * cfg.head_dim
        self.kv_size = cfg.num_kv_heads * cfg.head_dim
        self.qkv_proj = nn.Linear(cfg.hidden_size, self.q_size + 2 * self.kv_size, bias=True)
        self.o_proj = nn.Linear(self.q_size, cfg.hidden_size, bias=False)
        self.scale = cfg.head_dim ** -0.5

    def project(self, x, cos, sin, k_cache, v_cache, slot_mapping: torch.Tensor) -> torch.Tensor:
        """q for every position, after writing this step's keys/values to the cache first: both
        attention paths then read everything from the cache."""
        q, k, v = self.qkv_proj(x).split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        q = q.view(-1, self.num_heads, self.head_dim)
        k = k.view(-1, self.num_kv_heads, self.head_dim)
        v = v.view(-1, self.num_kv_heads, self.head_dim)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        k_cache.view(-1, self.num_kv_heads, self.head_dim).index_copy_(0, slot_mapping, k)
        v_cache.view(-1, self.num_kv_heads, self.head_dim).index_copy_(0, slot_mapping, v)
        return q

    def attend(self, q, k_cache, v_cache, meta: AttentionMetadata, backend: AttentionBackend) -> torch.Tensor:
        """The one place the packed sequence splits by kind: chunk positions go to the packed
        prefill path, decode positions to one query row per request. [T, q_size]."""
        parts = []
        n_prefill = meta.prefill.num_tokens if meta.prefill is not None else 0
        if meta.prefill is not None:
            parts.append(backend.prefill(q[:n_prefill], k_cache, v_cache, meta.prefill, self.scale))
        if meta.decode is not None:
            parts.append(backend.decode(q[n_prefill:], k_cache, v_cache, meta.decode, self.scale))
        out = parts[0] if len(parts) == 1 else torch.cat(parts, dim=0)
        return out.reshape(-1, self.q_size)


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.intermediate = cfg.intermediate_size
        self.gate_up_proj = nn.Linear(cfg.hidden_size, 2 * cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up_proj(x).split(self.intermediate, dim=-1)
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
    def pre_attention(self, x, cos, sin, k_cache, v_cache, slot_mapping) -> torch.Tensor:
        return self.self_attn.project(self.input_layernorm(x), cos, sin, k_cache, v_cache, slot_mapping)

    def post_attention(self, x, attn: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn.o_proj(attn)
        return x + self.mlp(self.post_attention_layernorm(x))


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
                kv_cache: torch.Tensor, backend: AttentionBackend,
                logit_indices: torch.Tensor) -> torch.Tensor:
        """Logits (fp32) at `logit_indices` of the packed sequence only: a prompt chunk that
        does not finish its prompt needs no logits, and the vocabulary projection is the
        largest matmul in the model."""
        x = self.embed_tokens(input_ids)
        cos, sin = self.rotary(positions, x.dtype)
        for i, layer in enumerate(self.layers):
            k_cache, v_cache = kv_cache[i, 0], kv_cache[i, 1]
            q = layer.pre_attention(x, cos, sin, k_cache, v_cache, meta.slot_mapping)
            x = layer.post_attention(x, layer.self_attn.attend(q, k_cache, v_cache, meta, backend))
        return self.head(x, logit_indices)

    def head(self, x: torch.Tensor, logit_indices: torch.Tensor) -> torch.Tensor:
        x = self.norm(x[logit_indices])
        weight = self.embed_tokens.weight if self.lm_head is None else self.lm_head.weight
        return F.linear(x, weight).float()
