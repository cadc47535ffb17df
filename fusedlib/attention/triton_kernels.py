"""Triton kernels for attention over the paged KV cache (layout: base.py): the prompt kernel
over query tiles, and flash-decoding over KV splits with a reduce that merges their partials."""
# The prompt kernel: one program per (query head, slot of the tile table), a tile being one
# request's positions or (part 7's decode) one decode row. Flash-decoding: one program per
# (request, KV head, KV split) over the GQA group's heads; the partials are (acc, max, sum).
# Softmax runs in base 2 (scores times scale * log2(e), then exp2). The running max starts at a
# large *finite* negative number, so a row that sees only masked keys in an iteration computes
# exp2(-inf - finite) = 0, never NaN. Varying ints (block-table row stride, split counts) are
# excluded from Triton's integer specialization so a new step shape never recompiles.
from __future__ import annotations

import triton
import triton.language as tl

NEG_BIG = tl.constexpr(-1.0e30)
# A split-KV partial is one row of HEAD_DIM + PARTIAL_EXTRA fp32: the unnormalised
# accumulator, then the running max, then the running sum, then padding that keeps every
# row 16-byte aligned.
PARTIAL_EXTRA = tl.constexpr(4)


@triton.jit
def _prompt_step(q, acc, l_i, m_i, kv_start, kv_len, row_last_key, block_row_ptr, k_head_ptr, v_head_ptr,
                 stride_k_block, stride_k_slot, stride_v_block, stride_v_slot, qk_scale, BLOCK_N: tl.constexpr,
                 KV_BLOCK_SIZE: tl.constexpr, MASKED: tl.constexpr, DOT_PRECISION: tl.constexpr):
    # One BLOCK_N step of online softmax over keys [kv_start, kv_start + BLOCK_N), gathered
    # through the block table. MASKED: row r sees key j only if j <= row_last_key[r] (causal, or
    # -1 for a row of another request); unmasked, every row sees every key of the step.
    key_idx = kv_start + tl.arange(0, BLOCK_N)
    if MASKED:
        key_valid = key_idx < kv_len
        block_id = tl.load(block_row_ptr + key_idx // KV_BLOCK_SIZE, mask=key_valid, other=0).to(tl.int64)
    else:
        block_id = tl.load(block_row_ptr + key_idx // KV_BLOCK_SIZE).to(tl.int64)
    slot = key_idx % KV_BLOCK_SIZE
    k_ptrs = k_head_ptr + block_id[:, None] * stride_k_block + slot[:, None] * stride_k_slot
    v_ptrs = v_head_ptr + block_id[:, None] * stride_v_block + slot[:, None] * stride_v_slot
    if MASKED:
        k = tl.load(k_ptrs, mask=key_valid[:, None], other=0.0)
    else:
        k = tl.load(k_ptrs)
    scores = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)
    if MASKED:
        visible = key_idx[None, :] <= row_last_key[:, None]
        scores = tl.where(visible, scores * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        p = tl.exp2(scores - m_new[:, None])
    else:
        m_new = tl.maximum(m_i, tl.max(scores, axis=1) * qk_scale)
        p = tl.exp2(scores * qk_scale - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, axis=1)
    if MASKED:
        v = tl.load(v_ptrs, mask=key_valid[:, None], other=0.0)
    else:
        v = tl.load(v_ptrs)
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=DOT_PRECISION)
    return acc, l_i, m_new


@triton.jit(do_not_specialize=["stride_bt"])
def prompt_attention_kernel(
    # int32 tables: tile ranges [>= tile count, 2], packed positions [start, end) of each query
    # tile, and the tile count [1]; token_seq and positions [P], each packed position's request and
    # key index (unused when DECODE_ROWS); context_lens [n] (read only when DECODE_ROWS); block
    # tables [n, stride_bt].
    q_ptr, k_cache_ptr, v_cache_ptr, out_ptr,
    tile_ranges_ptr, tile_count_ptr, token_seq_ptr, positions_ptr, context_lens_ptr, block_tables_ptr,
    qk_scale,  # softmax scale * log2(e)
    stride_q_tok, stride_q_head, stride_o_tok, stride_o_head,
    stride_k_block, stride_k_slot, stride_k_head, stride_v_block, stride_v_slot, stride_v_head, stride_bt,
    GROUP: tl.constexpr,  # query heads per KV head
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, KV_BLOCK_SIZE: tl.constexpr,
    DECODE_ROWS: tl.constexpr,  # packed position i is decode request i at context_lens[i]-1
    DOT_PRECISION: tl.constexpr,
):
    # One program per (query head, slot), walking tiles slot, slot + slots, ... of the table: the
    # grid is the host's (fixed in a CUDA graph), the tile count the device's.
    # Heads vary fastest in launch order, so all heads of the longest tiles (the tile table's
    # first) start before any shorter tile: a causal prompt's long tiles do not finish last alone.
    head, offs_d = tl.program_id(0), tl.arange(0, HEAD_DIM)
    kv_head = head // GROUP
    k_head_ptr = k_cache_ptr + kv_head * stride_k_head + offs_d[None, :]
    v_head_ptr = v_cache_ptr + kv_head * stride_v_head + offs_d[None, :]
    for tile in range(tl.program_id(1), tl.load(tile_count_ptr), tl.num_programs(1)):
        tile_start = tl.load(tile_ranges_ptr + 2 * tile)
        tile_end = tl.load(tile_ranges_ptr + 2 * tile + 1)
        offs_m = tile_start + tl.arange(0, BLOCK_M)
        row_valid = offs_m < tile_end
        if DECODE_ROWS:  # the tile's one row is decode request tile_start, at its last position
            seq = tile_start
            row_pos = tl.load(context_lens_ptr + offs_m, mask=row_valid, other=0) - 1
        else:
            seq = tl.load(token_seq_ptr + tile_start)
            row_pos = tl.load(positions_ptr + offs_m, mask=row_valid, other=-1)
        q = tl.load(q_ptr + offs_m[:, None].to(tl.int64) * stride_q_tok + head * stride_q_head
                    + offs_d[None, :], mask=row_valid[:, None], other=0.0)
        m_i = tl.full([BLOCK_M], NEG_BIG, tl.float32)
        l_i = tl.zeros([BLOCK_M], tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

        # Every tile holds one request's positions (the host's tables cut no tile across two): it
        # sees the keys below its first position unmasked, then masks only the steps across its
        # diagonal.
        row_last_key = tl.where(row_valid, row_pos, -1)
        kv_len = tl.max(row_last_key, axis=0) + 1
        first_pos = tl.min(tl.where(row_valid, row_pos, kv_len), axis=0)
        unmasked_end = (first_pos + 1) // BLOCK_N * BLOCK_N
        block_row_ptr = block_tables_ptr + seq * stride_bt
        for kv_start in range(0, unmasked_end, BLOCK_N):
            acc, l_i, m_i = _prompt_step(q, acc, l_i, m_i, kv_start, kv_len, row_last_key, block_row_ptr,
                                         k_head_ptr, v_head_ptr, stride_k_block, stride_k_slot, stride_v_block,
                                         stride_v_slot, qk_scale, BLOCK_N, KV_BLOCK_SIZE, False, DOT_PRECISION)
        for kv_start in range(unmasked_end, kv_len, BLOCK_N):
            acc, l_i, m_i = _prompt_step(q, acc, l_i, m_i, kv_start, kv_len, row_last_key, block_row_ptr,
                                         k_head_ptr, v_head_ptr, stride_k_block, stride_k_slot, stride_v_block,
                                         stride_v_slot, qk_scale, BLOCK_N, KV_BLOCK_SIZE, True, DOT_PRECISION)

        # Padding rows never saw a key (l_i == 0) or saw only unmasked ones; they are not stored.
        out = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
        tl.store(out_ptr + offs_m[:, None].to(tl.int64) * stride_o_tok + head * stride_o_head
                 + offs_d[None, :], out.to(out_ptr.dtype.element_ty), mask=row_valid[:, None])


@triton.jit
def _split_range(context_len, split, max_splits, split_tiles, BLOCK_N: tl.constexpr):
    """[start, end) of one request's split (empty past its end)."""
    # Runs of `split_tiles` whole BLOCK_N tiles (the host's length for the step), or with 0 the
    # request's own context cut into `max_splits` runs.
    tiles = tl.cdiv(context_len, BLOCK_N)
    tiles_per_split = tl.where(split_tiles > 0, split_tiles, tl.cdiv(tiles, max_splits))
    start = split * tiles_per_split * BLOCK_N
    return start, tl.minimum(start + tiles_per_split * BLOCK_N, context_len)


@triton.jit(do_not_specialize=["stride_bt", "max_splits", "split_tiles"])
def splitkv_decode_kernel(
    q_ptr, k_cache_ptr, v_cache_ptr,
    partials_ptr,  # fp32 [n, H, max_splits, HEAD_DIM + PARTIAL_EXTRA] (unused when ONE_SPLIT)
    out_ptr,  # [n, H, HEAD_DIM], written only when ONE_SPLIT
    context_lens_ptr, block_tables_ptr,
    qk_scale,
    max_splits,  # the grid's splits per (request, KV head)
    split_tiles,  # BLOCK_N tiles per split, or 0: each request's own equal splits
    stride_q_tok, stride_q_head, stride_o_tok, stride_o_head,
    stride_k_block, stride_k_slot, stride_k_head,
    stride_v_block, stride_v_slot, stride_v_head,
    stride_bt,
    GROUP: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    BLOCK_H: tl.constexpr,  # GROUP padded up to a tl.dot-legal tile height
    BLOCK_N: tl.constexpr,  # keys per iteration, each through the block table (any KV_BLOCK_SIZE)
    KV_BLOCK_SIZE: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
    ONE_SPLIT: tl.constexpr,  # max_splits == 1: normalise and store the output, no reduce
):
    """One program per (request, KV head, split): see `_split_range`."""
    req = tl.program_id(0)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    num_heads = tl.num_programs(1) * GROUP

    context_len = tl.load(context_lens_ptr + req)
    start, end = _split_range(context_len, split, max_splits, split_tiles, BLOCK_N)

    offs_h = tl.arange(0, BLOCK_H)
    head_valid = offs_h < GROUP
    heads = kv_head * GROUP + offs_h
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + req.to(tl.int64) * stride_q_tok + heads[:, None] * stride_q_head
                + offs_d[None, :], mask=head_valid[:, None], other=0.0)

    m_i = tl.full([BLOCK_H], NEG_BIG, tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, HEAD_DIM], tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    block_row_ptr = block_tables_ptr + req.to(tl.int64) * stride_bt
    k_head_ptr = k_cache_ptr + kv_head * stride_k_head + offs_d[None, :]
    v_head_ptr = v_cache_ptr + kv_head * stride_v_head + offs_d[None, :]
    for kv_start in range(start, end, BLOCK_N):
        key_idx = kv_start + offs_n
        key_valid = key_idx < end
        block_id = tl.load(block_row_ptr + key_idx // KV_BLOCK_SIZE, mask=key_valid,
                           other=0).to(tl.int64)
        slot = key_idx % KV_BLOCK_SIZE
        # K and V are both requested before either is used, so both are in flight at once.
        k = tl.load(k_head_ptr + block_id[:, None] * stride_k_block + slot[:, None] * stride_k_slot,
                    mask=key_valid[:, None], other=0.0)
        v = tl.load(v_head_ptr + block_id[:, None] * stride_v_block + slot[:, None] * stride_v_slot,
                    mask=key_valid[:, None], other=0.0)
        scores = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale
        scores = tl.where(key_valid[None, :], scores, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(scores - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=DOT_PRECISION)
        m_i = m_new

    if ONE_SPLIT:
        tl.store(out_ptr + req.to(tl.int64) * stride_o_tok + heads[:, None] * stride_o_head
                 + offs_d[None, :], (acc / l_i[:, None]).to(out_ptr.dtype.element_ty),
                 mask=head_valid[:, None])
    else:
        # Every split stores, one past the request's end too: (acc 0, max NEG_BIG, sum 0)
        # weighs nothing in the merge, so the reduce reads all of them without first reading
        # the request's context length (one dependent load fewer on its critical path).
        row_ptr = partials_ptr + ((req * num_heads + heads) * max_splits + split).to(tl.int64) \
            * (HEAD_DIM + PARTIAL_EXTRA)
        tl.store(row_ptr[:, None] + offs_d[None, :], acc, mask=head_valid[:, None])
        tl.store(row_ptr + HEAD_DIM, m_i, mask=head_valid)
        tl.store(row_ptr + HEAD_DIM + 1, l_i, mask=head_valid)


@triton.jit(do_not_specialize=["max_splits"])
def splitkv_reduce_kernel(
    partials_ptr, out_ptr,
    max_splits,  # the decode kernel's
    stride_o_tok, stride_o_head,
    HEAD_DIM: tl.constexpr,
    BLOCK_S: tl.constexpr,  # partials merged per iteration (fixed, so no split count recompiles)
):
    """Merge one (request, head)'s split partials, BLOCK_S at a time."""
    req = tl.program_id(0)
    head = tl.program_id(1)
    row = req * tl.num_programs(1) + head
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_DIM)
    m = tl.full([1], NEG_BIG, tl.float32)
    total = tl.zeros([1], tl.float32)
    acc = tl.zeros([HEAD_DIM], tl.float32)
    for first in range(0, max_splits, BLOCK_S):
        valid = first + offs_s < max_splits
        split_ptr = partials_ptr + (row * max_splits + first + offs_s).to(tl.int64) \
            * (HEAD_DIM + PARTIAL_EXTRA)
        m_s = tl.load(split_ptr + HEAD_DIM, mask=valid, other=NEG_BIG)
        sum_s = tl.load(split_ptr + HEAD_DIM + 1, mask=valid, other=0.0)
        acc_s = tl.load(split_ptr[:, None] + offs_d[None, :], mask=valid[:, None], other=0.0)
        m_new = tl.maximum(m, tl.max(m_s, axis=0))
        keep = tl.exp2(m - m_new)
        take = tl.exp2(m_s - m_new)  # 0 for a split past the request's end (m_s NEG_BIG)
        total = total * keep + tl.sum(sum_s * take, axis=0)
        acc = acc * keep + tl.sum(acc_s * take[:, None], axis=0)
        m = m_new
    # Every request has at least one key, so total > 0.
    tl.store(out_ptr + req.to(tl.int64) * stride_o_tok + head * stride_o_head + offs_d,
             (acc / total).to(out_ptr.dtype.element_ty))
