"""The fused small ops against the model's PyTorch reference pieces, on the Triton CPU
interpreter (the same cases run on the GPU with FUSEDLIB_GPU_TESTS=1).

Ragged token counts, fp32 and fp16. bf16 is not tested here: its arithmetic is broken in
the interpreter (TOOLCHAIN.md); the GPU script checks the model dtype there."""
import os
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from fusedlib import ops
from fusedlib.ops import gemm
from fusedlib.ops.gemm import GATE_UP_BLOCK, GATE_UP_SMALL_M, SMALL_M_MAX, SmallMConfig
from fusedlib.model import RMSNorm, RotaryEmbedding, _rotate_half

DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
# Each op launches one program per token, so counts past a few rows only lengthen the grid (and
# the interpreter walks it program by program).
TOKENS = [1, 3, 17]
DTYPES = [torch.float32, torch.float16]
# fp16: a value is rounded once where the reference rounds two or three times.
TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3}


def rand(*shape, dtype, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).to(dtype).to(DEVICE)


def assert_close(actual, expected, dtype, what):
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, what
    err = ((actual.float() - expected.float()).abs() / (1 + expected.float().abs())).max().item()
    assert err <= TOLERANCE[dtype], f"{what}: max rel err {err}"


def reference_norm(hidden, weight, eps=1e-6):
    norm = RMSNorm(hidden.shape[1], eps).to(DEVICE, hidden.dtype)
    norm.weight.data.copy_(weight)
    return norm(hidden)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tokens", TOKENS)
def test_add_rms_norm(tokens, dtype):
    hidden_size = 96  # not a power of two: the tile is masked
    x = rand(tokens, hidden_size, dtype=dtype, seed=tokens)
    residual = rand(tokens, hidden_size, dtype=dtype, seed=tokens + 1, scale=3.0)
    weight = rand(hidden_size, dtype=dtype, seed=2)
    normed, new_residual = ops.add_rms_norm(x, residual, weight, 1e-6)
    assert torch.equal(new_residual, x + residual)
    assert_close(normed, reference_norm(x + residual, weight), dtype, "normed")
    # The first layer: no residual yet; x itself is the residual stream.
    normed, new_residual = ops.add_rms_norm(x, None, weight, 1e-6)
    assert new_residual is x
    assert_close(normed, reference_norm(x, weight), dtype, "normed without residual")


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_rows_gathers_the_logit_rows(dtype):
    x = rand(33, 64, dtype=dtype, seed=0)
    residual = rand(33, 64, dtype=dtype, seed=1)
    weight = rand(64, dtype=dtype, seed=2)
    rows = torch.tensor([32, 0, 17, 17, 5], device=DEVICE)
    out = ops.rms_norm_rows(x, residual, weight, 1e-6, rows)
    assert_close(out, reference_norm((x + residual)[rows], weight), dtype, "rows")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tokens", TOKENS)
def test_silu_mul(tokens, dtype):
    """The projection interleaved as the weight is: GATE_UP_BLOCK columns of gate, the same of up, ..."""
    intermediate = 9 * GATE_UP_BLOCK  # spans two of the kernel's column blocks
    gate, up = rand(tokens, intermediate, dtype=dtype, seed=tokens), rand(tokens, intermediate, dtype=dtype, seed=99)
    gate_up = torch.stack([gate.unflatten(1, (-1, GATE_UP_BLOCK)), up.unflatten(1, (-1, GATE_UP_BLOCK))], 2).flatten(1)
    assert_close(ops.silu_mul(gate_up), F.silu(gate) * up, dtype, "silu_mul")


def reference_rotary(qkv, bias, cos, sin, k_cache, v_cache, slots, heads, kv_heads):
    """Attention.project's reference arithmetic after the projection."""
    d = k_cache.shape[-1]
    q, k, v = (qkv + bias).split([heads * d, kv_heads * d, kv_heads * d], dim=-1)
    q, k, v = q.view(-1, heads, d), k.view(-1, kv_heads, d), v.view(-1, kv_heads, d)
    q = q * cos + _rotate_half(q) * sin
    k = k * cos + _rotate_half(k) * sin
    k_cache.view(-1, kv_heads, d).index_copy_(0, slots, k)
    v_cache.view(-1, kv_heads, d).index_copy_(0, slots, v)
    return q


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tokens", TOKENS)
# 16-token blocks (parts 7-11's) and 128 (part 12's): the same 256 slots.
@pytest.mark.parametrize("heads,kv_heads,head_dim,num_blocks,block_size", [(4, 2, 16, 16, 16), (12, 2, 32, 2, 128)])
def test_rotary_to_cache(tokens, dtype, heads, kv_heads, head_dim, num_blocks, block_size):
    qkv = rand(tokens, (heads + 2 * kv_heads) * head_dim, dtype=dtype, seed=tokens)
    bias = rand(qkv.shape[1], dtype=dtype, seed=1)
    rotary = RotaryEmbedding(head_dim, 4096, 10000.0).to(DEVICE)
    positions = torch.randint(0, 4096, (tokens,), generator=torch.Generator().manual_seed(3)).to(DEVICE)
    cos, sin = rotary(positions, dtype)
    # Distinct slots scattered over the cache (not in token order).
    slots = torch.randperm(num_blocks * block_size, generator=torch.Generator().manual_seed(4))[:tokens].to(DEVICE)
    cache = rand(2, num_blocks, block_size, kv_heads, head_dim, dtype=dtype, seed=5)
    expected_cache = cache.clone()
    expected_q = reference_rotary(qkv, bias, cos, sin, expected_cache[0], expected_cache[1], slots,
                                  heads, kv_heads)
    q = ops.rotary_to_cache(qkv, bias, cos, sin, cache[0], cache[1], slots, heads, kv_heads)
    assert_close(q, expected_q, dtype, "q")
    assert_close(cache, expected_cache, dtype, "cache")  # untouched slots stay as they were
    written = cache.view(2, -1, kv_heads, head_dim)[:, slots]
    assert (written != rand(2, num_blocks, block_size, kv_heads, head_dim, dtype=dtype, seed=5)
            .view(2, -1, kv_heads, head_dim)[:, slots]).any()


GATE_UP_CONFIGS = {  # the default tile; a narrow one with K in several short steps
    "default": GATE_UP_SMALL_M,
    "narrow": replace(GATE_UP_SMALL_M, block_n=16, block_k=32),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("config", GATE_UP_CONFIGS)
@pytest.mark.parametrize("tokens", [1, 17, 64])
def test_gate_up_silu_matches_the_reference(tokens, config, dtype):
    """Ragged rows (a 64-row tile holding 1 or 17), two layout blocks (intermediate 256,
    interleaved) and K not a multiple of block_k (300), against the reference's gate and up
    projections, F.silu and product, each rounded to the model dtype."""
    intermediate, k = 2 * GATE_UP_BLOCK, 300
    x = rand(tokens, k, dtype=dtype, seed=tokens)
    gate, up = rand(intermediate, k, dtype=dtype, seed=7, scale=0.1), rand(intermediate, k, dtype=dtype, seed=8, scale=0.1)
    weight = ops.interleave_gate_up(gate, up)
    assert_close(ops.gate_up_silu(x, weight, cfg=GATE_UP_CONFIGS[config]), F.silu(F.linear(x, gate)) * F.linear(x, up),
                 dtype, config)


SPLIT_K_CONFIGS = {  # the three projections'; narrow tiles over short K steps; more splits than K needs
    "down": ops.DOWN_SPLIT_K,
    "qkv": ops.QKV_SPLIT_K,
    "o_proj": ops.O_PROJ_SPLIT_K,
    "narrow": SmallMConfig(block_n=16, block_k=32, splits=3),
    "empty splits": SmallMConfig(block_n=32, block_k=64, splits=8),
}


def summed(partials, dtype):
    """The partials' sum in split order, rounded once to `dtype`: what a reader must see."""
    total = partials[0].clone()
    for p in partials[1:]:
        total += p
    return total.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("config", SPLIT_K_CONFIGS)
@pytest.mark.parametrize("tokens", [1, 17, 64])
def test_split_k_partials_sum_to_the_projection(tokens, config, dtype):
    """Ragged rows, a ragged last column tile (N 100) and K not a multiple of block_k (300;
    at 8 splits of 64 the last three slices are empty and must store zeros)."""
    n, k = 100, 300
    weight = rand(n, k, dtype=dtype, seed=7, scale=0.1)
    x = rand(tokens, k, dtype=dtype, seed=tokens)
    cfg = SPLIT_K_CONFIGS[config]
    partials = ops.linear(x, weight, cfg)
    assert partials.shape == (cfg.splits, tokens, n) and partials.dtype == torch.float32
    expected = F.linear(x.float(), weight.float()).to(dtype)  # one rounding of an fp32 sum
    assert_close(summed(partials, dtype), expected, dtype, config)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tokens", [1, 17])
def test_norms_read_partials_as_their_rounded_sum(tokens, dtype):
    """add_rms_norm and rms_norm_rows given partials give exactly what they give for the
    partials' sum in split order, rounded to the model dtype; without a residual the sum
    itself becomes the residual stream."""
    hidden = 96
    partials = rand(4, tokens, hidden, dtype=torch.float32, seed=tokens)
    plain = summed(partials, dtype)
    residual = rand(tokens, hidden, dtype=dtype, seed=1, scale=3.0)
    weight = rand(hidden, dtype=dtype, seed=2)
    for res in (residual, None):
        got, expected = ops.add_rms_norm(partials, res, weight, 1e-6), ops.add_rms_norm(plain, res, weight, 1e-6)
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1]), res is None
    rows = torch.tensor([tokens - 1, 0], device=DEVICE)
    assert torch.equal(ops.rms_norm_rows(partials, residual, weight, 1e-6, rows),
                       ops.rms_norm_rows(plain, residual, weight, 1e-6, rows))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rotary_reads_partials_as_their_rounded_sum(dtype):
    heads, kv_heads, head_dim, tokens = 4, 2, 16, 5
    partials = rand(3, tokens, (heads + 2 * kv_heads) * head_dim, dtype=torch.float32, seed=0)
    bias = rand(partials.shape[-1], dtype=dtype, seed=1)
    cos, sin = RotaryEmbedding(head_dim, 64, 10000.0).to(DEVICE)(torch.arange(tokens, device=DEVICE), dtype)
    slots = torch.arange(tokens, device=DEVICE) * 3
    caches = [torch.zeros(2, 4, 16, kv_heads, head_dim, dtype=dtype, device=DEVICE) for _ in range(2)]
    q = [ops.rotary_to_cache(qkv, bias, cos, sin, cache[0], cache[1], slots, heads, kv_heads)
         for qkv, cache in ((partials, caches[0]), (summed(partials, dtype), caches[1]))]
    assert torch.equal(q[0], q[1]) and torch.equal(caches[0], caches[1])


def gate_up_silu_reference(x, weight):
    gate, up = ops.split_gate_up(F.linear(x, weight))
    return (F.silu(gate) * up).flatten(-2)


def summed_linear(x, weight):
    out = ops.linear(x, weight, ops.DOWN_SPLIT_K)
    return summed(out, x.dtype) if out.dim() == 3 else out


@pytest.mark.parametrize("op,kernel,expected", [(ops.gate_up_silu, "gate_up_silu_kernel", gate_up_silu_reference),
                                                (summed_linear, "split_k_kernel", F.linear)],
                         ids=["gate_up_silu", "split_k"])
def test_triton_gemms_take_small_batches_only(monkeypatch, op, kernel, expected):
    launches = []
    real = getattr(gemm, kernel)
    monkeypatch.setattr(gemm, kernel, type("Spy", (), {
        "__getitem__": lambda self, grid: launches.append(grid) or real[grid]})())
    weight = rand(2 * GATE_UP_BLOCK, 8, dtype=torch.float32, seed=1)
    for rows in (SMALL_M_MAX, SMALL_M_MAX + 1, 256):
        x = rand(rows, 8, dtype=torch.float32, seed=rows)
        assert_close(op(x, weight), expected(x, weight), torch.float32, str(rows))
    assert len(launches) == 1  # the batch of SMALL_M_MAX rows only; larger ones on cuBLAS


def test_bad_shapes_name_the_problem():
    x = rand(3, 8, dtype=torch.float32, seed=0)
    with pytest.raises(ValueError, match="weight"):
        ops.add_rms_norm(x, None, rand(7, dtype=torch.float32, seed=1), 1e-6)
    with pytest.raises(ValueError, match="gate_up"):
        ops.silu_mul(rand(3, 7, dtype=torch.float32, seed=1))
    with pytest.raises(ValueError, match="does not fit a gate_up weight"):
        ops.gate_up_silu(x, rand(5, 8, dtype=torch.float32, seed=1))
    with pytest.raises(ValueError, match="does not fit a projection weight"):
        ops.linear(x, rand(5, 7, dtype=torch.float32, seed=1), ops.DOWN_SPLIT_K)
    with pytest.raises(ValueError, match="fp32 \\[splits, tokens, N\\] partials"):
        ops.add_rms_norm(rand(2, 3, 8, dtype=torch.float16, seed=1), None, rand(8, dtype=torch.float16, seed=1), 1e-6)
    cache = rand(4, 16, 2, 16, dtype=torch.float32, seed=2)
    with pytest.raises(ValueError, match="qkv"):
        ops.rotary_to_cache(rand(3, 100, dtype=torch.float32, seed=3), None, x, x, cache, cache,
                            torch.arange(3, device=DEVICE), 4, 2)
