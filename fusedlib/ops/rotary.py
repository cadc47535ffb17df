"""The qkv projection's epilogue in one kernel: its bias, rotary embedding (rotate-half) on q and
k, and the k/v write into the paged cache, from one read of each token's qkv row."""
# The reference path takes a bias epilogue, ~10 elementwise kernels and two index_copy_s.
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .gemm import load_projection, split_layout


@triton.jit
def _rotate(base_ptr, bias_ptr, heads, half, head_valid, cos_lo, cos_hi, sin_lo, sin_hi, stride_split,
            SPLITS: tl.constexpr, HEAD_DIM: tl.constexpr, dtype: tl.constexpr):
    """Rotated (first half, second half) of `heads` consecutive heads at base_ptr, biased, in fp32."""
    lo = heads[:, None] * HEAD_DIM + half[None, :]
    x1 = load_projection(base_ptr, lo, head_valid[:, None], stride_split, SPLITS, dtype)
    x2 = load_projection(base_ptr, lo + HEAD_DIM // 2, head_valid[:, None], stride_split, SPLITS, dtype)
    bias1 = tl.load(bias_ptr + lo, mask=head_valid[:, None], other=0.0).to(tl.float32)
    bias2 = tl.load(bias_ptr + lo + HEAD_DIM // 2, mask=head_valid[:, None], other=0.0).to(tl.float32)
    # Rounded to the model dtype, as the reference's biased projection output is.
    x1 = (x1 + bias1).to(dtype).to(tl.float32)
    x2 = (x2 + bias2).to(dtype).to(tl.float32)
    return x1 * cos_lo[None, :] - x2 * sin_lo[None, :], x2 * cos_hi[None, :] + x1 * sin_hi[None, :]


@triton.jit
def rotary_to_cache_kernel(
    qkv_ptr, bias_ptr, cos_ptr, sin_ptr, slot_mapping_ptr,
    q_out_ptr, k_cache_ptr, v_cache_ptr,
    stride_qkv, stride_split, stride_cos, stride_sin, stride_q_tok,
    stride_k_block, stride_k_slot, stride_k_head,
    stride_v_block, stride_v_slot, stride_v_head,
    NUM_HEADS: tl.constexpr, NUM_KV_HEADS: tl.constexpr, HEAD_DIM: tl.constexpr,
    BLOCK_HQ: tl.constexpr, BLOCK_HKV: tl.constexpr, KV_BLOCK_SIZE: tl.constexpr,
    SPLITS: tl.constexpr,  # qkv is SPLITS split-K partials (0: qkv itself)
):
    tok = tl.program_id(0).to(tl.int64)
    dtype = q_out_ptr.dtype.element_ty
    half = tl.arange(0, HEAD_DIM // 2)
    cos_lo = tl.load(cos_ptr + tok * stride_cos + half).to(tl.float32)
    cos_hi = tl.load(cos_ptr + tok * stride_cos + HEAD_DIM // 2 + half).to(tl.float32)
    sin_lo = tl.load(sin_ptr + tok * stride_sin + half).to(tl.float32)
    sin_hi = tl.load(sin_ptr + tok * stride_sin + HEAD_DIM // 2 + half).to(tl.float32)
    row = qkv_ptr + tok * stride_qkv
    q_size = NUM_HEADS * HEAD_DIM
    kv_size = NUM_KV_HEADS * HEAD_DIM

    q_heads = tl.arange(0, BLOCK_HQ)
    q_valid = q_heads < NUM_HEADS
    q1, q2 = _rotate(row, bias_ptr, q_heads, half, q_valid, cos_lo, cos_hi, sin_lo, sin_hi, stride_split,
                     SPLITS, HEAD_DIM, dtype)
    q_dst = q_out_ptr + tok * stride_q_tok + q_heads[:, None] * HEAD_DIM + half[None, :]
    tl.store(q_dst, q1.to(dtype), mask=q_valid[:, None])
    tl.store(q_dst + HEAD_DIM // 2, q2.to(dtype), mask=q_valid[:, None])

    slot = tl.load(slot_mapping_ptr + tok).to(tl.int64)
    block = slot // KV_BLOCK_SIZE
    offset = slot % KV_BLOCK_SIZE
    kv_heads = tl.arange(0, BLOCK_HKV)
    kv_valid = kv_heads < NUM_KV_HEADS
    k1, k2 = _rotate(row + q_size, bias_ptr + q_size, kv_heads, half, kv_valid, cos_lo, cos_hi,
                     sin_lo, sin_hi, stride_split, SPLITS, HEAD_DIM, dtype)
    k_dst = (k_cache_ptr + block * stride_k_block + offset * stride_k_slot
             + kv_heads[:, None] * stride_k_head + half[None, :])
    tl.store(k_dst, k1.to(dtype), mask=kv_valid[:, None])
    tl.store(k_dst + HEAD_DIM // 2, k2.to(dtype), mask=kv_valid[:, None])

    dims = tl.arange(0, HEAD_DIM)
    v_offs = q_size + kv_size + kv_heads[:, None] * HEAD_DIM + dims[None, :]
    v = load_projection(row, v_offs, kv_valid[:, None], stride_split, SPLITS, dtype)
    v += tl.load(bias_ptr + v_offs, mask=kv_valid[:, None], other=0.0).to(tl.float32)
    v_dst = (v_cache_ptr + block * stride_v_block + offset * stride_v_slot
             + kv_heads[:, None] * stride_v_head + dims[None, :])
    tl.store(v_dst, v.to(dtype), mask=kv_valid[:, None])


def rotary_to_cache(qkv: torch.Tensor, bias: torch.Tensor, cos: torch.Tensor,
                    sin: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                    slot_mapping: torch.Tensor, num_heads: int, num_kv_heads: int) -> torch.Tensor:
    """q [tokens, num_heads, head_dim], rotated; k (rotated) and v written to the caches at `slot_mapping`."""
    head_dim, splits, dtype = k_cache.shape[-1], split_layout(qkv), k_cache.dtype
    tokens, width = qkv.shape[-2], (num_heads + 2 * num_kv_heads) * head_dim
    if qkv.shape[-1] != width or (not splits[0] and qkv.dtype != dtype) or k_cache.shape != v_cache.shape:
        raise ValueError(f"qkv must be [tokens, {width}] of the caches' {dtype}, got {tuple(qkv.shape)} {qkv.dtype}")
    cos, sin = cos.reshape(tokens, head_dim), sin.reshape(tokens, head_dim)
    q = torch.empty(tokens, num_heads, head_dim, dtype=dtype, device=qkv.device)
    rotary_to_cache_kernel[(tokens,)](  # no tokens: an empty grid, no launch
        qkv, bias, cos, sin, slot_mapping, q, k_cache, v_cache,
        qkv.stride(-2), splits[1], cos.stride(0), sin.stride(0), q.stride(0),
        *k_cache.stride()[:3], *v_cache.stride()[:3],
        NUM_HEADS=num_heads, NUM_KV_HEADS=num_kv_heads, HEAD_DIM=head_dim,
        BLOCK_HQ=triton.next_power_of_2(num_heads), BLOCK_HKV=triton.next_power_of_2(num_kv_heads),
        KV_BLOCK_SIZE=k_cache.shape[1], SPLITS=splits[0], num_warps=4,
    )
    return q
