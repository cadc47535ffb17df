"""The fused small ops against the model's PyTorch reference pieces, on the Triton CPU
interpreter (the same cases run on the GPU with FUSEDLIB_GPU_TESTS=1).

Ragged token counts, fp32 and fp16. bf16 is not tested here: its arithmetic is broken in
the interpreter (TOOLCHAIN.md); the GPU script checks the model dtype there."""
import os

import pytest
import torch
import torch.nn.functional as F

from fusedlib import ops
from fusedlib.ops import gemm
from fusedlib.ops.gemm import SMALL_M_MAX, DownConfig, GateUpConfig
from fusedlib.model import RMSNorm, RotaryEmbedding, _rotate_half

DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
TOKENS = [1, 3, 17, 33, 100]
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
    gate_up = rand(tokens, 2 * 1100, dtype=dtype, seed=tokens)  # spans two column blocks
    gate, up = gate_up.split(1100, dim=-1)
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
@pytest.mark.parametrize("heads,kv_heads,head_dim", [(4, 2, 16), (12, 2, 32)])
def test_rotary_to_cache(tokens, dtype, heads, kv_heads, head_dim):
    num_blocks, block_size = 16, 16
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
    "default": GateUpConfig(),
    "narrow": GateUpConfig(block_n=16, block_k=32),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("config", GATE_UP_CONFIGS)
@pytest.mark.parametrize("tokens", [1, 17, 64])
def test_gate_up_silu_matches_the_reference(tokens, config, dtype):
    """Ragged rows (a 64-row tile holding 1 or 17), a ragged last column tile
    (intermediate 100) and K not a multiple of block_k (300), against the reference's
    gate_up projection, F.silu and product, each rounded to the model dtype."""
    intermediate, k = 100, 300
    x = rand(tokens, k, dtype=dtype, seed=tokens)
    weight = rand(2 * intermediate, k, dtype=dtype, seed=7, scale=0.1)
    gate, up = F.linear(x, weight).chunk(2, dim=-1)
    assert_close(ops.gate_up_silu(x, weight, True, GATE_UP_CONFIGS[config]), F.silu(gate) * up, dtype, config)


DOWN_CONFIGS = {  # the default; narrow tiles over short K steps; more splits than K needs
    "default": DownConfig(),
    "narrow": DownConfig(block_n=16, block_k=32, splits=3),
    "empty splits": DownConfig(block_n=32, block_k=64, splits=8),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("config", DOWN_CONFIGS)
@pytest.mark.parametrize("tokens", [1, 17, 64])
def test_down_proj_matches_the_reference(tokens, config, dtype):
    """Ragged rows, a ragged last column tile (N 100) and K not a multiple of block_k (300;
    at 8 splits of 64 the last three slices are empty), twice in a row: the second call
    finds the ticket counters back at zero, or its sums would be wrong."""
    n, k = 100, 300
    weight = rand(n, k, dtype=dtype, seed=7, scale=0.1)
    for call in range(2):
        x = rand(tokens, k, dtype=dtype, seed=tokens + call)
        expected = F.linear(x.float(), weight.float()).to(dtype)  # one rounding of an fp32 sum
        assert_close(ops.down_proj(x, weight, True, DOWN_CONFIGS[config]), expected, dtype, f"{config} call {call}")
    assert not gemm._TICKETS[x.device].any()


def gate_up_silu_reference(x, weight):
    gate, up = F.linear(x, weight).chunk(2, dim=-1)
    return F.silu(gate) * up


@pytest.mark.parametrize("op,kernel,expected", [(ops.gate_up_silu, "gate_up_silu_kernel", gate_up_silu_reference),
                                                (ops.down_proj, "down_proj_kernel", F.linear)],
                         ids=["gate_up_silu", "down_proj"])
def test_mlp_gemms_take_one_kernel_for_small_batches_only(monkeypatch, op, kernel, expected):
    launches = []
    real = getattr(gemm, kernel)
    monkeypatch.setattr(gemm, kernel, type("Spy", (), {
        "__getitem__": lambda self, grid: launches.append(grid) or real[grid]})())
    weight = rand(16, 8, dtype=torch.float32, seed=1)
    for rows, one_kernel in ((SMALL_M_MAX, True), (SMALL_M_MAX + 1, True), (3, False)):
        x = rand(rows, 8, dtype=torch.float32, seed=rows)
        assert_close(op(x, weight, one_kernel), expected(x, weight), torch.float32, str(rows))
    assert len(launches) == 1


def test_bad_shapes_name_the_problem():
    x = rand(3, 8, dtype=torch.float32, seed=0)
    with pytest.raises(ValueError, match="weight"):
        ops.add_rms_norm(x, None, rand(7, dtype=torch.float32, seed=1), 1e-6)
    with pytest.raises(ValueError, match="gate_up"):
        ops.silu_mul(rand(3, 7, dtype=torch.float32, seed=1))
    with pytest.raises(ValueError, match="does not fit a gate_up weight"):
        ops.gate_up_silu(x, rand(5, 8, dtype=torch.float32, seed=1), True)
    with pytest.raises(ValueError, match="does not fit a down weight"):
        ops.down_proj(x, rand(5, 7, dtype=torch.float32, seed=1), True)
    cache = rand(4, 16, 2, 16, dtype=torch.float32, seed=2)
    with pytest.raises(ValueError, match="qkv"):
        ops.rotary_to_cache(rand(3, 100, dtype=torch.float32, seed=3), None, x, x, cache, cache,
                            torch.arange(3, device=DEVICE), 4, 2)
