"""A probe: prompt attention with each query tile's keys cut into splits, one program per
(query tile, head, split), merged by split-KV decode's reduce.

After 3,584 cached keys the engine's packed kernel reaches about 107 TFLOP/s on a 512-token
chunk and FlashAttention-2 (torch's SDPA) 183 (data/roofline/prefill_rates). The packed
kernel launches one program per (query tile, head): 192 for that chunk, each walking about
3,800 keys one 128-key tile after another, with about one warp per scheduler to hide each
step's dependent loads and dots. FlashAttention-2 splits the key range over more blocks when
its grid is small, then merges the partial softmax states. This module does the same to the
packed kernel's walk, for one request's chunk (the case the question is about), with three
merges to compare (`split_prefill`'s `merge`): `splitkv_reduce_kernel`, each query row of each
head a "request" whose splits it combines (sets AO, AP); `split_merge_kernel`, a program per
query tile and head (set AQ); and the split kernel merging in the last run of each tile, with
the runs chosen per tile on the device (set AR). Nothing in the engine calls it.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from fusedlib.attention.triton_backend import LOG2E, REDUCE_BLOCK_S, _dot_precision
from fusedlib.attention.triton_kernels import NEG_BIG, PARTIAL_EXTRA, splitkv_reduce_kernel


# "adaptive": a tile splits its walk only into runs of at least this many key tiles (a fresh
# 512-token chunk's tiles walk at most 4 tiles of 128 keys, so they keep one run and merge nothing)
ADAPTIVE_MIN_TILES = 6


@triton.jit
def split_prefill_kernel(
    q_ptr, k_cache_ptr, v_cache_ptr,
    partials_ptr,  # fp32 [rows, H, SPLITS, HEAD_DIM + PARTIAL_EXTRA]
    out_ptr,  # [rows, H, HEAD_DIM], written only when ADAPTIVE
    tickets_ptr,  # int32 [tiles * H], zero on entry and on exit (only when ADAPTIVE)
    block_table_ptr,  # int32 [blocks] of the one request
    cached, rows, qk_scale,
    stride_q_tok, stride_q_head, stride_o_tok, stride_o_head,
    stride_k_block, stride_k_slot, stride_k_head,
    stride_v_block, stride_v_slot, stride_v_head,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    KV_BLOCK_SIZE: tl.constexpr, SPLITS: tl.constexpr, DOT_PRECISION: tl.constexpr,
    ADAPTIVE: tl.constexpr, MIN_TILES: tl.constexpr,
):
    """Rows [tile * BLOCK_M, + BLOCK_M) of a chunk at positions cached + row, one head, the
    split-th run of whole BLOCK_N key tiles of the tile's causal span. With ADAPTIVE the tile
    takes only as many runs (at most SPLITS) as give each at least MIN_TILES key tiles: a tile
    of one run normalises and stores its output, and of several the run that draws the last
    ticket merges them (programs past the tile's runs exit)."""
    tile, head, split = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    kv_head = head // GROUP
    offs_m = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    row_valid = offs_m < rows
    row_last_key = tl.where(row_valid, cached + offs_m, -1)
    kv_len = cached + tl.minimum((tile + 1) * BLOCK_M, rows)
    walk = tl.cdiv(kv_len, BLOCK_N)
    runs = SPLITS
    if ADAPTIVE:
        runs = tl.minimum(tl.maximum(walk // MIN_TILES, 1), SPLITS)
    per_split = tl.cdiv(walk, runs) * BLOCK_N
    start, end = split * per_split, tl.minimum((split + 1) * per_split, kv_len)
    if split >= runs:
        return

    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None].to(tl.int64) * stride_q_tok + head * stride_q_head + offs_d[None, :],
                mask=row_valid[:, None], other=0.0)
    m_i = tl.full([BLOCK_M], NEG_BIG, tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    for kv_start in range(start, end, BLOCK_N):
        key_idx = kv_start + offs_n
        key_valid = key_idx < end
        block_id = tl.load(block_table_ptr + key_idx // KV_BLOCK_SIZE, mask=key_valid, other=0).to(tl.int64)
        slot = key_idx % KV_BLOCK_SIZE
        k = tl.load(k_cache_ptr + block_id[:, None] * stride_k_block + slot[:, None] * stride_k_slot
                    + kv_head * stride_k_head + offs_d[None, :], mask=key_valid[:, None], other=0.0)
        v = tl.load(v_cache_ptr + block_id[:, None] * stride_v_block + slot[:, None] * stride_v_slot
                    + kv_head * stride_v_head + offs_d[None, :], mask=key_valid[:, None], other=0.0)
        scores = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale
        scores = tl.where(key_valid[None, :] & (key_idx[None, :] <= row_last_key[:, None]), scores, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(scores - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=DOT_PRECISION)
        m_i = m_new
    num_heads = tl.num_programs(1)
    o_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_o_tok + head * stride_o_head + offs_d[None, :]
    if ADAPTIVE and runs == 1:
        tl.store(o_ptrs, (acc / tl.where(l_i > 0, l_i, 1.0)[:, None]).to(out_ptr.dtype.element_ty),
                 mask=row_valid[:, None])
        return
    # A split no row of the tile reaches stores (0, NEG_BIG, 0), which weighs nothing in the merge.
    rows_ptr = partials_ptr + ((offs_m * num_heads + head) * SPLITS).to(tl.int64) * (HEAD_DIM + PARTIAL_EXTRA)
    row_ptr = rows_ptr + split * (HEAD_DIM + PARTIAL_EXTRA)
    tl.store(row_ptr[:, None] + offs_d[None, :], acc, mask=row_valid[:, None])
    tl.store(row_ptr + HEAD_DIM, m_i, mask=row_valid)
    tl.store(row_ptr + HEAD_DIM + 1, l_i, mask=row_valid)
    if ADAPTIVE:
        # Every thread's partial is stored before the ticket is drawn (the barrier), and the
        # atomic's acquire-release order makes the other runs' partials visible to the last.
        tl.debug_barrier()
        if tl.atomic_add(tickets_ptr + tile * num_heads + head, 1) == runs - 1:
            m = tl.full([BLOCK_M], NEG_BIG, tl.float32)
            total = tl.zeros([BLOCK_M], tl.float32)
            merged = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
            for s in range(0, runs):
                part = rows_ptr + s * (HEAD_DIM + PARTIAL_EXTRA)
                m_s = tl.load(part + HEAD_DIM, mask=row_valid, other=NEG_BIG)
                m_new = tl.maximum(m, m_s)
                keep, take = tl.exp2(m - m_new), tl.exp2(m_s - m_new)
                total = total * keep + tl.load(part + HEAD_DIM + 1, mask=row_valid, other=0.0) * take
                merged = merged * keep[:, None] + take[:, None] * tl.load(
                    part[:, None] + offs_d[None, :], mask=row_valid[:, None], other=0.0)
                m = m_new
            tl.store(o_ptrs, (merged / tl.where(total > 0, total, 1.0)[:, None]).to(out_ptr.dtype.element_ty),
                     mask=row_valid[:, None])
            tl.store(tickets_ptr + tile * num_heads + head, 0)  # zero again for the next launch


@triton.jit
def split_merge_kernel(partials_ptr, out_ptr, rows, stride_o_tok, stride_o_head,
                       HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, SPLITS: tl.constexpr):
    """Merge the SPLITS partials of BLOCK_M query rows of one head: one program per (query
    tile, head), every split's loads issued in one unrolled pass, in place of a reduce program
    per row."""
    tile, head = tl.program_id(0), tl.program_id(1)
    num_heads = tl.num_programs(1)
    offs_m = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    row_valid = offs_m < rows
    offs_d = tl.arange(0, HEAD_DIM)
    m = tl.full([BLOCK_M], NEG_BIG, tl.float32)
    total = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for split in tl.static_range(SPLITS):
        row_ptr = partials_ptr + ((offs_m * num_heads + head) * SPLITS + split).to(tl.int64) * (HEAD_DIM + PARTIAL_EXTRA)
        m_s = tl.load(row_ptr + HEAD_DIM, mask=row_valid, other=NEG_BIG)
        sum_s = tl.load(row_ptr + HEAD_DIM + 1, mask=row_valid, other=0.0)
        acc_s = tl.load(row_ptr[:, None] + offs_d[None, :], mask=row_valid[:, None], other=0.0)
        m_new = tl.maximum(m, m_s)
        keep, take = tl.exp2(m - m_new), tl.exp2(m_s - m_new)
        total = total * keep + sum_s * take
        acc = acc * keep[:, None] + acc_s * take[:, None]
        m = m_new
    out = acc / tl.where(total > 0, total, 1.0)[:, None]
    tl.store(out_ptr + offs_m[:, None].to(tl.int64) * stride_o_tok + head * stride_o_head + offs_d[None, :],
             out.to(out_ptr.dtype.element_ty), mask=row_valid[:, None])


def split_prefill(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_table: torch.Tensor,
                  cached: int, scale: float, splits: int, block_m: int = 64, block_n: int = 128,
                  num_warps: int = 4, num_stages: int = 2, merge: str = "rows",
                  min_tiles: int = ADAPTIVE_MIN_TILES) -> torch.Tensor:
    """Causal attention of one request's chunk q [rows, H, D], at positions cached .. cached +
    rows - 1, over its paged K/V (block_table [blocks]), in `splits` runs a query tile, merged
    by `merge`: "rows" (split-KV decode's reduce, a program per query row and head), "tiles"
    (`split_merge_kernel`, a program per query tile and head), "adaptive" (each tile at most
    `splits` runs of at least `min_tiles` key tiles, merged by its last run, no second launch)
    or "none" (the unmerged partials [rows, H, splits, D + PARTIAL_EXTRA], to time the split
    kernel alone)."""
    if merge not in ("rows", "tiles", "adaptive", "none"):
        raise ValueError(f"merge must be rows, tiles, adaptive or none, got {merge!r}")
    rows, num_heads, head_dim = q.shape
    partials = torch.empty(rows, num_heads, splits, head_dim + PARTIAL_EXTRA.value, dtype=torch.float32,
                           device=q.device)
    out = torch.empty_like(q)
    tiles = triton.cdiv(rows, block_m)
    tickets = torch.zeros(tiles * num_heads, dtype=torch.int32, device=q.device)
    split_prefill_kernel[(tiles, num_heads, splits)](
        q, k_cache, v_cache, partials, out, tickets, block_table, cached, rows, scale * LOG2E,
        q.stride(0), q.stride(1), out.stride(0), out.stride(1),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
        GROUP=num_heads // k_cache.shape[2], HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n,
        KV_BLOCK_SIZE=k_cache.shape[1], SPLITS=splits, DOT_PRECISION=_dot_precision(q.dtype),
        ADAPTIVE=merge == "adaptive", MIN_TILES=min_tiles, num_warps=num_warps, num_stages=num_stages)
    if merge == "adaptive":
        return out
    if merge == "none":
        return partials
    if merge == "tiles":
        split_merge_kernel[(triton.cdiv(rows, block_m), num_heads)](
            partials, out, rows, out.stride(0), out.stride(1), HEAD_DIM=head_dim, BLOCK_M=block_m, SPLITS=splits,
            num_warps=num_warps)
    else:
        splitkv_reduce_kernel[(rows, num_heads)](partials, out, splits, out.stride(0), out.stride(1),
                                                 HEAD_DIM=head_dim, BLOCK_S=REDUCE_BLOCK_S, num_warps=4)
    return out
