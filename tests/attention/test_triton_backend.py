"""Triton attention kernels against the PyTorch reference, on the CPU interpreter.

Caches hold random values and every request owns randomly shuffled, non-contiguous
blocks; unused block-table entries point at other requests' blocks, so a kernel that
reads past a request's context or ignores the table gets a wrong answer, not a lucky one.
"""
import dataclasses
import math
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from fusedlib.attention.base import DecodeMeta, PrefillMeta
from fusedlib.attention.torch_backend import TorchAttention
from fusedlib.attention.triton_backend import (INTERPRETER_PROMPT_TILES, PromptTiles, SplitKVConfig,
                                               TritonAttention, request_tiles)
from fusedlib.attention.triton_kernels import NEG_BIG

# The same cases run on the GPU with FUSEDLIB_GPU_TESTS=1 (see tests/conftest.py).
ON_INTERPRETER = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if ON_INTERPRETER else "cuda"
BLOCK_SIZE = 16  # the cache's tokens per block, unless a test names another
HEAD_DIM = 16
TOLERANCE = {torch.float32: 1e-5, torch.float16: 4e-3}


def make_cache(context_lens, num_kv_heads, dtype, seed, block_size=BLOCK_SIZE):
    """Random K/V caches of `block_size`-token blocks and shuffled block tables covering `context_lens`."""
    gen = torch.Generator().manual_seed(seed)
    blocks_needed = [math.ceil(n / block_size) for n in context_lens]
    max_blocks = max(blocks_needed) + 1  # at least one padding entry per row
    num_blocks = sum(blocks_needed) + 8
    shape = (num_blocks, block_size, num_kv_heads, HEAD_DIM)
    k_cache = torch.randn(shape, generator=gen).to(dtype)
    v_cache = torch.randn(shape, generator=gen).to(dtype)
    owner = torch.randperm(num_blocks, generator=gen)
    tables, used = [], 0
    for need in blocks_needed:
        own = owner[used:used + need]
        used += need
        # Padding points at blocks owned by someone else (valid ids, wrong data).
        padding = torch.randint(0, num_blocks, (max_blocks - need,), generator=gen)
        tables.append(torch.cat([own, padding]))
    return (k_cache.to(DEVICE), v_cache.to(DEVICE),
            torch.stack(tables).to(torch.int32).to(DEVICE))


def make_prefill(chunks, num_heads, num_kv_heads, dtype, seed=0, block_size=BLOCK_SIZE):
    """chunks: (tokens cached before this chunk, chunk length) per request."""
    context_lens = [cached + length for cached, length in chunks]
    k_cache, v_cache, block_tables = make_cache(context_lens, num_kv_heads, dtype, seed, block_size)
    lengths = [length for _, length in chunks]
    token_seq = torch.cat([torch.full((n,), i, dtype=torch.int32) for i, n in enumerate(lengths)])
    positions = torch.cat([torch.arange(c, c + n, dtype=torch.int32) for c, n in chunks])
    meta = PrefillMeta(num_tokens=sum(lengths), block_tables=block_tables, token_seq=token_seq.to(DEVICE),
                       positions=positions.to(DEVICE))
    gen = torch.Generator().manual_seed(seed + 1)
    q = torch.randn(sum(lengths), num_heads, HEAD_DIM, generator=gen).to(dtype).to(DEVICE)
    return q, k_cache, v_cache, meta


def make_decode(context_lens, num_heads, num_kv_heads, dtype, seed=0, block_size=BLOCK_SIZE):
    k_cache, v_cache, block_tables = make_cache(context_lens, num_kv_heads, dtype, seed, block_size)
    meta = DecodeMeta(num_tokens=len(context_lens),
                      context_lens=torch.tensor(context_lens, dtype=torch.int32, device=DEVICE),
                      block_tables=block_tables, max_context_len=max(context_lens))
    gen = torch.Generator().manual_seed(seed + 1)
    q = torch.randn(len(context_lens), num_heads, HEAD_DIM, generator=gen).to(dtype).to(DEVICE)
    return q, k_cache, v_cache, meta


def assert_close(actual, expected, dtype):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert not torch.isnan(actual).any()
    err = (actual.float() - expected.float()).abs().max().item()
    assert err <= TOLERANCE[dtype], f"max abs err {err}"


SCALE = 1 / math.sqrt(HEAD_DIM)

# (cached before, chunk length). Single-token prompt; chunks crossing block and tile
# boundaries; chunks continuing earlier cached chunks at a block boundary and mid-block;
# context lengths that are not multiples of 16.
MIXED_CHUNKS = [(0, 1), (0, 37), (48, 20), (21, 11), (0, 70), (5, 3), (100, 1)]
# Many short chunks: one tile spans several requests.
TINY_CHUNKS = [(0, 1), (3, 2), (0, 4), (16, 1), (0, 3), (30, 2), (0, 1), (7, 4),
               (0, 2), (1, 1), (0, 4), (15, 3), (0, 1), (2, 2)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("chunks", [MIXED_CHUNKS, TINY_CHUNKS], ids=["mixed", "tiny"])
def test_prefill_matches_torch(chunks, dtype):
    q, k_cache, v_cache, meta = make_prefill(chunks, 4, 2, dtype)
    expected = TorchAttention().prefill(q, k_cache, v_cache, meta, SCALE)
    actual = TritonAttention().prefill(q, k_cache, v_cache, meta, SCALE)
    assert_close(actual, expected, dtype)


@pytest.mark.slow(2)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_prefill_over_many_key_steps(dtype):
    """Chunks whose causal spans take many key steps, unmasked then across the diagonal, and
    end inside one, match the torch reference."""
    q, k_cache, v_cache, meta = make_prefill([(150, 40), (0, 200), (5, 3)], 4, 2, dtype)
    expected = TorchAttention().prefill(q, k_cache, v_cache, meta, SCALE)
    assert_close(TritonAttention().prefill(q, k_cache, v_cache, meta, SCALE), expected, dtype)


@pytest.mark.parametrize("chunks", [MIXED_CHUNKS, TINY_CHUNKS], ids=["mixed", "tiny"])
def test_prefill_tiles_cut_each_request_on_its_own(chunks):
    """The backend's prefill tile table: every packed position in exactly one tile, no tile
    spanning two requests, each chunk cut into as few tiles as its length allows, the tiles
    walking the most keys (a request's prefix + its last row's position + 1) first. The
    consecutive cut of the packed positions (the table before) has tiles of several requests
    here, so it would fail; "tiny" has more tiles than the grid's programs, which then take
    several (the prefill cases above check those outputs)."""
    _, _, _, meta = make_prefill(chunks, 4, 2, torch.float32)
    height, seq, pos = INTERPRETER_PROMPT_TILES.block_m, meta.token_seq.tolist(), meta.positions.tolist()
    consecutive = [(s, min(s + height, meta.num_tokens)) for s in range(0, meta.num_tokens, height)]
    assert max(len(set(seq[s:e])) for s, e in consecutive) >= 3
    ranges, count, programs = request_tiles(meta, height)
    tiles = ranges[:count.item()].tolist()
    assert sorted(i for s, e in tiles for i in range(s, e)) == list(range(meta.num_tokens))
    assert all(s < e and len(set(seq[s:e])) == 1 for s, e in tiles)
    assert len(tiles) == sum(math.ceil(n / height) for _, n in chunks)
    keys = [pos[e - 1] + 1 for _, e in tiles]
    assert keys == sorted(keys, reverse=True) and keys[0] == max(c + n for c, n in chunks)
    assert (programs < len(tiles)) == (chunks is TINY_CHUNKS)


def test_prefill_tiles_are_built_once_per_step(monkeypatch):
    """A step's layers share its PrefillMeta: the first prefill builds the tiles, the others reuse
    them; a new step's meta builds its own (a CUDA graph's capture must record the build)."""
    from fusedlib.attention import triton_backend

    q, k_cache, v_cache, meta = make_prefill([(0, 9), (20, 6)], 4, 2, torch.float32)
    backend, built = TritonAttention(), []
    monkeypatch.setattr(triton_backend, "request_tiles",
                        lambda meta, height: built.append(meta) or request_tiles(meta, height))
    expected = TorchAttention().prefill(q, k_cache, v_cache, meta, SCALE)
    for step in (meta, meta, dataclasses.replace(meta)):
        assert_close(backend.prefill(q, k_cache, v_cache, step, SCALE), expected, torch.float32)
    assert [m is meta for m in built] == [True, False]


@pytest.mark.parametrize("num_heads,num_kv_heads", [(4, 2), (12, 2), (2, 2)])
def test_prefill_gqa_grouping(num_heads, num_kv_heads):
    chunks = [(0, 19), (33, 14)]
    q, k_cache, v_cache, meta = make_prefill(chunks, num_heads, num_kv_heads, torch.float32, 3)
    expected = TorchAttention().prefill(q, k_cache, v_cache, meta, SCALE)
    actual = TritonAttention().prefill(q, k_cache, v_cache, meta, SCALE)
    assert_close(actual, expected, torch.float32)


# The prompt kernel's shapes: tiles of 16 and 32 positions, keys one and two cache blocks a step.
TILES_16x32, TILES_32x16 = PromptTiles(16, 32, 4, 1), PromptTiles(32, 16, 4, 1)
# Each pair of a launch shape, a GQA grouping and a dtype is in some case: six cases where all
# twelve combinations (~14 s on the interpreter) cover no pair more.
PROMPT_CASES = [(TILES_16x32, 4, 2, torch.float32), (TILES_32x16, 4, 2, torch.float16),
                (TILES_16x32, 12, 2, torch.float16), (TILES_32x16, 12, 2, torch.float32),
                (TILES_16x32, 2, 2, torch.float32), (TILES_32x16, 2, 2, torch.float16)]


@pytest.mark.parametrize("tiles,num_heads,num_kv_heads,dtype", PROMPT_CASES,
                         ids=lambda v: f"{v.block_m}x{v.block_n}" if isinstance(v, PromptTiles) else
                         str(v).removeprefix("torch.") if isinstance(v, torch.dtype) else None)
def test_prompt_tiles_match_torch(tiles, num_heads, num_kv_heads, dtype):
    """Each launch shape and GQA grouping over a packed step: a fresh prompt whose causal span
    takes several unmasked steps before its diagonal; a chunk after a cached prefix that ends
    mid-block; short chunks several to a tile; a chunk continuing at a block boundary. Blocks are
    shuffled (make_cache), so a tile's keys come from non-contiguous blocks."""
    chunks = [(0, 75), (37, 21), (0, 3), (5, 2), (64, 16), (130, 9)]
    q, k_cache, v_cache, meta = make_prefill(chunks, num_heads, num_kv_heads, dtype, seed=11)
    expected = TorchAttention().prefill(q, k_cache, v_cache, meta, SCALE)
    actual = TritonAttention(prompt_tiles=tiles).prefill(q, k_cache, v_cache, meta, SCALE)
    assert_close(actual, expected, dtype)


DECODE_CONTEXTS = [1, 16, 17, 33, 64, 100, 7, 129, 48, 2]


# The padded GQA group (12 / 2: 6 heads in a 16-row tile) in fp16 only: fp32's tighter check
# of the same kernels is the 4 / 2 case's.
@pytest.mark.slow(3)
@pytest.mark.parametrize("num_heads,num_kv_heads,dtype", [(4, 2, torch.float32), (4, 2, torch.float16),
                                                          (12, 2, torch.float16)])
def test_decode_kernels_match_torch(num_heads, num_kv_heads, dtype):
    q, k_cache, v_cache, meta = make_decode(DECODE_CONTEXTS, num_heads, num_kv_heads, dtype)
    expected = TorchAttention().decode(q, k_cache, v_cache, meta, SCALE)
    for name in ("rows", "splitkv", "balanced"):
        backend = TritonAttention(decode_kernel=name, num_sms=16)
        assert_close(backend.decode(q, k_cache, v_cache, meta, SCALE), expected, dtype)


@pytest.mark.slow(2)
def test_parallel_backend_attends_a_mixed_step_as_the_balanced_one():
    """"triton-hopper" (like "triton-parallel") runs a mixed step's decode rows on a second stream
    beside its chunks (on CUDA; on the CPU there is one stream and it runs them in order): the same kernels on
    the same inputs, so the output is bit-identical to balanced decode on one stream, and both
    match the reference. Chunks and decode rows share one cache, as in a step. One dtype: the
    kernels' dtypes are checked above; this is about which launches run where."""
    from fusedlib.attention import make_backend
    from fusedlib.attention.base import AttentionMetadata
    from fusedlib.config import PRESETS
    from fusedlib.model import Attention

    dtype = torch.float32

    chunks, contexts = MIXED_CHUNKS, DECODE_CONTEXTS
    k_cache, v_cache, tables = make_cache([c + n for c, n in chunks] + contexts, 2, dtype, seed=9)
    lengths = [n for _, n in chunks]
    prefill = PrefillMeta(num_tokens=sum(lengths), block_tables=tables[:len(chunks)],
                          token_seq=torch.cat([torch.full((n,), i, dtype=torch.int32)
                                               for i, n in enumerate(lengths)]).to(DEVICE),
                          positions=torch.cat([torch.arange(c, c + n, dtype=torch.int32)
                                               for c, n in chunks]).to(DEVICE))
    decode = DecodeMeta(num_tokens=len(contexts), block_tables=tables[len(chunks):],
                        context_lens=torch.tensor(contexts, dtype=torch.int32, device=DEVICE),
                        max_context_len=max(contexts))
    meta = AttentionMetadata(slot_mapping=torch.zeros(0, dtype=torch.int64, device=DEVICE),
                             prefill=prefill, decode=decode)
    cfg = PRESETS["tiny"]
    attn = Attention(dataclasses.replace(cfg, num_heads=4, num_kv_heads=2, head_dim=HEAD_DIM, hidden_size=4 * HEAD_DIM))
    gen = torch.Generator().manual_seed(10)
    q = torch.randn(sum(lengths) + len(contexts), 4, HEAD_DIM, generator=gen).to(dtype).to(DEVICE)
    parallel, balanced = make_backend("triton-hopper"), TritonAttention(decode_kernel="balanced")
    assert (parallel.side_stream(q.device) is not None) == (DEVICE == "cuda")
    assert balanced.side_stream(q.device) is None
    out = attn.attend(q, k_cache, v_cache, meta, parallel)
    assert torch.equal(out, attn.attend(q, k_cache, v_cache, meta, balanced))
    heads = out.view(-1, 4, HEAD_DIM)
    reference = TorchAttention()
    assert_close(heads[:prefill.num_tokens], reference.prefill(q[:prefill.num_tokens], k_cache, v_cache, prefill,
                                                               attn.scale), dtype)
    assert_close(heads[prefill.num_tokens:], reference.decode(q[prefill.num_tokens:], k_cache, v_cache, decode,
                                                              attn.scale), dtype)


@pytest.mark.slow(1)
def test_kernels_read_blocks_longer_than_their_key_steps():
    """Part 12's 128-token cache blocks read in key steps shorter than a block (the interpreter's
    16-key prompt tiles, decode's 64 keys): each step's keys lie in part of one block, and
    contexts end inside a first block, at its end and in a second or third."""
    q, k_cache, v_cache, meta = make_prefill([(0, 40), (120, 20), (0, 3)], 4, 2, torch.float32, 12, 128)
    expected = TorchAttention().prefill(q, k_cache, v_cache, meta, SCALE)
    assert_close(TritonAttention().prefill(q, k_cache, v_cache, meta, SCALE), expected, torch.float32)
    q, k_cache, v_cache, meta = make_decode([1, 128, 129, 300], 4, 2, torch.float32, 6, 128)
    expected = TorchAttention().decode(q, k_cache, v_cache, meta, SCALE)
    for name in ("rows", "splitkv", "balanced"):  # split-KV's steps: SplitKVConfig's 64 keys
        backend = TritonAttention(decode_kernel=name, num_sms=8)
        assert_close(backend.decode(q, k_cache, v_cache, meta, SCALE), expected, torch.float32)


@pytest.mark.parametrize("num_sms", [1, 3, 64])
def test_splitkv_any_split_count(num_sms):
    """One split, a few uneven ones, and many (short requests get empty splits)."""
    q, k_cache, v_cache, meta = make_decode(DECODE_CONTEXTS, 4, 2, torch.float32, seed=5)
    expected = TorchAttention().decode(q, k_cache, v_cache, meta, SCALE)
    actual = TritonAttention(decode_kernel="splitkv", num_sms=num_sms).decode(
        q, k_cache, v_cache, meta, SCALE)
    assert_close(actual, expected, torch.float32)


@pytest.mark.parametrize("num_sms,block_n", [(1, 16), (3, 32), (32, 16), (64, 64)])
def test_balanced_any_split_count(num_sms, block_n):
    """One split per request (normalised in the decode kernel, no reduce), a few, and more
    splits than a short request has tiles (those store a partial that must weigh nothing in
    the reduce); tiles of one and several cache blocks.
    The 600-key request at block_n 16 on 32 SMs uses 19 splits: more than the reduce
    merges per iteration."""
    q, k_cache, v_cache, meta = make_decode([1, 16, 17, 33, 600], 4, 2, torch.float32, seed=5)
    expected = TorchAttention().decode(q, k_cache, v_cache, meta, SCALE)
    backend = TritonAttention(decode_kernel="balanced", num_sms=num_sms,  # 8 per SM: the counts above
                              splitkv=SplitKVConfig(block_n=block_n, programs_per_sm=8))
    assert_close(backend.decode(q, k_cache, v_cache, meta, SCALE), expected, torch.float32)
    num_pairs = meta.num_tokens * 2
    assert (backend.max_splits(meta.max_context_len, num_pairs, torch.device(DEVICE)) == 1) == (num_sms == 1)


@pytest.mark.parametrize("kernel", ["splitkv", "balanced"])
def test_splits_fall_where_the_plan_says(kernel, monkeypatch):
    """One decode kernel serves both plans: "splitkv" cuts every request at the host's
    split length, "balanced" cuts each request into its own equal runs of tiles. Every
    split writes its partial (none of the buffer's NaN fill stays); one past a request's
    end writes the neutral (acc 0, max NEG_BIG, sum 0)."""
    contexts, block_n = [600, 10, 100], 16
    partials, empty = [], torch.empty

    def nan_empty(*shape, **kwargs):  # the decode kernel's partials buffer, NaN-filled
        tensor = empty(*shape, **kwargs)
        if kwargs.get("dtype") == torch.float32 and len(shape) == 4:
            partials.append(tensor.fill_(float("nan")))
        return tensor

    monkeypatch.setattr(torch, "empty", nan_empty)
    q, k_cache, v_cache, meta = make_decode(contexts, 4, 2, torch.float32, seed=4)
    # Four SMs wherever it runs (the interpreter's count), so the premise below holds on a GPU too.
    backend = TritonAttention(decode_kernel=kernel, num_sms=4, splitkv=SplitKVConfig(block_n=block_n, programs_per_sm=6))
    out = backend.decode(q, k_cache, v_cache, meta, SCALE)
    assert_close(out, TorchAttention().decode(q, k_cache, v_cache, meta, SCALE), torch.float32)
    device, pairs = torch.device(DEVICE), len(contexts) * 2
    if kernel == "splitkv":
        _, split_len = backend.split_plan(max(contexts), pairs, device)
        expected = [math.ceil(n / split_len) for n in contexts]
    else:
        max_splits = backend.max_splits(max(contexts), pairs, device)
        tiles = [math.ceil(n / block_n) for n in contexts]
        expected = [math.ceil(t / math.ceil(t / max_splits)) for t in tiles]
    written = partials[-1][:, :, :, :HEAD_DIM + 2]  # [request, head, split, acc + max + sum]
    assert not written.isnan().any()
    holds_keys = written[..., HEAD_DIM] > NEG_BIG.value / 2
    assert holds_keys.sum(dim=2).tolist() == [[n] * 4 for n in expected]
    neutral = written[~holds_keys]
    assert (neutral[:, :HEAD_DIM] == 0).all() and (neutral[:, HEAD_DIM + 1] == 0).all()
    # The premise: the two plans differ for the 100-key request (1 split against 4).
    assert expected[2] == (1 if kernel == "splitkv" else 4)


def test_balanced_launch_shape_ignores_context_lengths():
    """The grid depends on the request count (and the cap passed as max_context_len) only,
    so one captured graph serves every step of that size."""
    backend = TritonAttention(decode_kernel="balanced", num_sms=132)
    shapes = {backend.max_splits(32768, 64, torch.device(DEVICE)) for _ in range(2)}
    assert shapes == {math.ceil(SplitKVConfig().programs_per_sm * 132 / 64)}


def test_out_argument_is_written_in_place():
    q, k_cache, v_cache, meta = make_decode([5, 40], 4, 2, torch.float32, seed=2)
    wide = torch.zeros(4, 4, HEAD_DIM, device=DEVICE)
    for name in ("rows", "splitkv", "balanced"):
        wide.zero_()
        got = TritonAttention(decode_kernel=name).decode(q, k_cache, v_cache, meta, SCALE, out=wide[1:3])
        assert got.data_ptr() == wide[1:3].data_ptr()
        assert_close(wide[1:3], TorchAttention().decode(q, k_cache, v_cache, meta, SCALE), torch.float32)
        assert not wide[0].any() and not wide[3].any()


@pytest.mark.slow(5)
def test_decode_at_the_largest_batch():
    """256 decode rows (the largest max_batch): the rows layout's 256 tiles and split-KV's grid
    over 256 requests. "splitkv" is left out: with every context under one 64-key tile both plans
    give one split, so it would launch the balanced case's kernel on the same grid again. One
    head: the interpreter runs every program one after another, and the grouping cases are above."""
    contexts = [(37 * i) % 40 + 1 for i in range(256)]  # short: the point is 256 rows, not long walks
    q, k_cache, v_cache, meta = make_decode(contexts, 1, 1, torch.float32, seed=7)
    expected = TorchAttention().decode(q, k_cache, v_cache, meta, SCALE)
    for name in ("rows", "balanced"):
        assert_close(TritonAttention(decode_kernel=name).decode(q, k_cache, v_cache, meta, SCALE), expected,
                     torch.float32)


def test_block_table_is_honoured():
    """Swapping two requests' tables must swap which keys they see."""
    q, k_cache, v_cache, meta = make_decode([40, 40], 4, 2, torch.float32, seed=9)
    backend = TritonAttention()
    before = backend.decode(q, k_cache, v_cache, meta, SCALE)
    meta.block_tables = meta.block_tables.flip(0).contiguous()
    after = backend.decode(q, k_cache, v_cache, meta, SCALE)
    assert (before - after).abs().max() > 1e-2
    assert_close(after, TorchAttention().decode(q, k_cache, v_cache, meta, SCALE), torch.float32)


def test_output_follows_strided_query_views():
    """q as a slice of a wider packed tensor (how the model hands it over)."""
    q, k_cache, v_cache, meta = make_prefill([(0, 9), (20, 6)], 4, 2, torch.float32)
    wide = torch.randn(q.shape[0], 3 * q.shape[1], HEAD_DIM, device=DEVICE)
    wide[:, 4:8] = q
    view = wide[:, 4:8]
    expected = TorchAttention().prefill(q, k_cache, v_cache, meta, SCALE)
    assert_close(TritonAttention().prefill(view, k_cache, v_cache, meta, SCALE), expected,
                 torch.float32)


def test_split_plan_covers_the_longest_context():
    for max_len in (1, 63, 64, 65, 1000, 4096, 4200):
        for pairs, sms in ((64, 132), (2, 132), (64, 1), (1000, 132)):
            backend = TritonAttention(decode_kernel="splitkv", num_sms=sms)
            num_splits, split_len = backend.split_plan(max_len, pairs, torch.device(DEVICE))
            assert split_len % backend.splitkv.block_n == 0 and split_len > 0
            assert (num_splits - 1) * split_len < max_len <= num_splits * split_len
    # The real decode shape does split.
    assert TritonAttention(num_sms=132).split_plan(4096, 64, torch.device(DEVICE))[0] > 1


@pytest.mark.skipif(not ON_INTERPRETER, reason="counts real compiles on the GPU")
def test_num_compiled_is_zero_on_the_interpreter():
    from fusedlib.engine import num_compiled

    assert num_compiled() == 0


# The interpreter accepts code the GPU compiler rejects (non-constexpr globals, tile
# shapes). Compiling for sm_90 (the H200) and sm_86 (the A10, Modal's default) needs no
# GPU, only Triton's bundled ptxas, so do it here, in a subprocess without
# TRITON_INTERPRET, at the real model's shape and the tiny one's.
GPU_COMPILE = textwrap.dedent("""
    import inspect
    import sys
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from fusedlib.attention import triton_kernels as K
    from fusedlib.attention.triton_backend import (EARLIER_PROMPT_TILES, HOPPER_PROMPT_TILES, MIN_DOT_ROWS,
                                                   REDUCE_BLOCK_S, PART9_SPLITKV, SplitKVConfig)
    from fusedlib.ops import gemm, norm, rotary

    ARCH = int(sys.argv[1])
    SHARED_PER_BLOCK = {90: 227 * 1024, 86: 99 * 1024}  # H100/H200 and A10 opt-in maxima
    INT_TABLES = {"tile_ranges_ptr", "tile_count_ptr", "token_seq_ptr", "positions_ptr", "context_lens_ptr",
                  "block_tables_ptr", "rows_ptr", "tickets_ptr"}
    INT64 = {"slot_mapping_ptr"}
    FP32 = {"partials_ptr"}

    def compile_for_arch(kernel, dtype, constexprs, num_warps, num_stages=2, fp32=()):
        signature = {}
        for name in inspect.signature(kernel.fn).parameters:
            if name in constexprs:
                signature[name] = "constexpr"
            elif name in INT_TABLES:
                signature[name] = "*i32"
            elif name in INT64:
                signature[name] = "*i64"
            elif name in FP32 or name in fp32:
                signature[name] = "*fp32"
            elif name.endswith("_ptr"):
                signature[name] = "*" + dtype
            else:
                signature[name] = "fp32" if name in ("qk_scale", "eps") else "i32"
        # At a launch Triton marks 16-byte-aligned pointers and ints divisible by 16 as such
        # (all of ours but those excluded from specialization); without the marks the loads
        # cannot become async copies, nothing is pipelined, and the shared memory measured here
        # would be a pipeline-free kernel's.
        unspecialized = set(kernel.do_not_specialize) | {kernel.arg_names[i] for i in kernel.do_not_specialize
                                                         if isinstance(i, int)}
        aligned = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(signature)
                   if signature[name] not in ("constexpr", "fp32") and name not in unspecialized}
        compiled = triton.compile(ASTSource(kernel, signature, constexprs, attrs=aligned),
                                  target=GPUTarget("cuda", ARCH, 32),
                                  options={"num_warps": num_warps, "num_stages": num_stages})
        # A launch needing more shared memory than the arch has per block fails only at run time.
        assert compiled.metadata.shared <= SHARED_PER_BLOCK[ARCH], (kernel.fn.__name__, compiled.metadata.shared)

    # The real model's shape in fp16 (what serves on the GPU), the tiny one's in fp32.
    for heads, kv_heads, head_dim, hidden, dtype, precision in (
            (12, 2, 128, 1536, "fp16", "tf32"), (4, 2, 16, 64, "fp32", "ieee")):
        group = heads // kv_heads
        for has_residual, rows, splits in ((False, False, 0), (True, False, 0), (True, True, 0),
                                           (True, False, 5), (True, True, 5)):
            compile_for_arch(norm.add_rms_norm_kernel, dtype, dict(
                SPLITS=splits, HAS_RESIDUAL=has_residual, WRITE_RESIDUAL=has_residual and not rows,
                HAS_ROWS=rows, BLOCK=triton.next_power_of_2(hidden)), 4, fp32={"x_ptr"} if splits else ())
        compile_for_arch(gemm.silu_mul_kernel, dtype, dict(BLOCK=gemm.SILU_MUL_BLOCK, LAYOUT_BLOCK=gemm.GATE_UP_BLOCK), 4)
        gate_up = gemm.GATE_UP_SMALL_M
        for rows in (16, 32, 64):
            compile_for_arch(gemm.gate_up_silu_kernel, dtype, dict(
                BLOCK_M=rows, BLOCK_N=gate_up.block_n, BLOCK_K=gate_up.block_k, LAYOUT_BLOCK=gemm.GATE_UP_BLOCK,
                DOT_PRECISION=precision),
                gate_up.num_warps, gemm.stages_for(ARCH // 10, gate_up))
        for split_k in (gemm.QKV_SPLIT_K, gemm.O_PROJ_SPLIT_K, gemm.DOWN_SPLIT_K):
            for rows in (16, 32, 64):
                compile_for_arch(gemm.split_k_kernel, dtype, dict(
                    BLOCK_M=rows, BLOCK_N=split_k.block_n, BLOCK_K=split_k.block_k, DOT_PRECISION=precision),
                    split_k.num_warps, gemm.stages_for(ARCH // 10, split_k))
        for splits in (0, gemm.QKV_SPLIT_K.splits):
            compile_for_arch(rotary.rotary_to_cache_kernel, dtype, dict(
                NUM_HEADS=heads, NUM_KV_HEADS=kv_heads, HEAD_DIM=head_dim,
                BLOCK_HQ=triton.next_power_of_2(heads), BLOCK_HKV=triton.next_power_of_2(kv_heads),
                KV_BLOCK_SIZE=16, SPLITS=splits), 4, fp32={"qkv_ptr"} if splits else ())
        # Prefill at the arch's tiles (the A10 gets the earlier ones), part 7's decode rows.
        for tiles, decode_rows in ((HOPPER_PROMPT_TILES if ARCH == 90 else EARLIER_PROMPT_TILES, False),
                                   (EARLIER_PROMPT_TILES, True)):
            compile_for_arch(K.prompt_attention_kernel, dtype, dict(
                GROUP=group, HEAD_DIM=head_dim, BLOCK_M=tiles.block_m, BLOCK_N=tiles.block_n, KV_BLOCK_SIZE=16,
                DECODE_ROWS=decode_rows, DOT_PRECISION=precision), tiles.num_warps, tiles.num_stages)
        for splitkv in (SplitKVConfig(), PART9_SPLITKV):
            for one_split in (False, True):
                compile_for_arch(K.splitkv_decode_kernel, dtype, dict(
                    GROUP=group, HEAD_DIM=head_dim, BLOCK_H=MIN_DOT_ROWS, BLOCK_N=splitkv.block_n,
                    KV_BLOCK_SIZE=16, DOT_PRECISION=precision, ONE_SPLIT=one_split),
                    splitkv.num_warps, splitkv.num_stages)
        compile_for_arch(K.splitkv_reduce_kernel, dtype, dict(
            HEAD_DIM=head_dim, BLOCK_S=REDUCE_BLOCK_S), 4)
""")


@pytest.mark.slow(3)
@pytest.mark.parametrize("arch", [90, 86], ids=["sm_90", "sm_86"])
def test_kernels_compile_for_gpu(arch):
    import triton.backends

    if "nvidia" not in triton.backends.backends:
        pytest.skip("this Triton has no NVIDIA backend")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", GPU_COMPILE, str(arch)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_each_backend_takes_its_parts_launch_shapes(monkeypatch):
    """Parts 7-11's backends keep the launch shapes their rows ran; only "triton-hopper" (part 12)
    takes Hopper's prompt tiles and the deeper split-KV pipeline, and only on a Hopper card."""
    from fusedlib.attention import TRITON, make_backend
    from fusedlib.attention.triton_backend import (EARLIER_PROMPT_TILES, HOPPER_PROMPT_TILES, PART9_SPLITKV,
                                                   PART10_SPLITKV, _prompt_tiles)
    shapes = {name: (make_backend(name).splitkv, make_backend(name).hopper_shapes) for name in TRITON}
    assert shapes == {"triton": (PART10_SPLITKV, False),
                      "triton-splitkv": (PART9_SPLITKV, False), "triton-parallel": (PART10_SPLITKV, False),
                      "triton-hopper": (SplitKVConfig(), True)}
    cuda = torch.device("cuda")
    for capability, hopper in (((9, 0), HOPPER_PROMPT_TILES), ((8, 6), EARLIER_PROMPT_TILES)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device, c=capability: c)
        assert _prompt_tiles(cuda, hopper_shapes=True) == hopper
        assert _prompt_tiles(cuda, hopper_shapes=False) == EARLIER_PROMPT_TILES
