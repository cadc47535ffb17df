"""A layer's GEMMs for decode-sized batches (at most SMALL_M_MAX rows; larger ones stay on
cuBLAS, whose large-M tiles are near the FLOP rate): gate_up with SiLU(gate) * up in its
epilogue, and qkv, o_proj and down split over K, summed by the kernel that reads them."""
# gate_up: one program computes a BLOCK_N slice of both halves of the [2I, K] weight and stores
# only SiLU(gate) * up: the [M, 2I] projection is never written and no activation kernel runs.
# The weight tile is the MMA's tall operand and the batch its narrow one (swap-AB), so a 32-row
# batch fills no padded rows of Hopper's 64-tall tensor-core tiles. qkv, o_proj and down have
# too few output columns to fill the chip (1536 / 64 = 24 column tiles), so `split_k_kernel`
# also splits K and stores fp32 partials; each projection's only reader (add + RMSNorm, or the
# rotary kernel) sums them as it loads a row (`load_projection`), in split order, rounded to the
# model dtype as a GEMM's output is.
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from . import activation

SMALL_M_MAX = 64


@dataclass(frozen=True)
class GateUpConfig:
    """Launch shape of `gate_up_silu_kernel`."""
    # The best on the H200 at 32 rows: 18.0 us (72% of the copy rate) against 19.8 us for cuBLAS
    # and the activation kernel.
    block_n: int = 64  # columns of SiLU(gate) * up per program: 2 * block_n weight rows
    block_k: int = 64
    num_warps: int = 4
    num_stages: int = 5  # on Hopper; see `stages_for`
    sm86_stages: int = 3


def stages_for(major: int, cfg: GateUpConfig | SplitKConfig) -> int:
    """Pipeline stages on compute capability `major`."""
    # Five stages of a 64-row batch's gate_up tiles take 144 KB of shared memory, which Hopper
    # has and an A10 (sm_86, 99 KB) has not.
    return cfg.num_stages if major >= 9 else min(cfg.num_stages, cfg.sm86_stages)


@triton.jit(do_not_specialize=["num_rows"])
def gate_up_silu_kernel(
    x_ptr,  # [M, K]
    w_ptr,  # [2I, K]: gate rows, then up rows
    out_ptr,  # [M, I]
    num_rows, intermediate, K, stride_x, stride_w, stride_out,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    dtype = out_ptr.dtype.element_ty
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    n_valid = offs_n < intermediate
    m_valid = offs_m < num_rows
    x_rows = x_ptr + offs_m[:, None].to(tl.int64) * stride_x
    gate_rows = w_ptr + offs_n[:, None].to(tl.int64) * stride_w
    up_rows = gate_rows + intermediate * stride_w
    gate = tl.zeros([BLOCK_N, BLOCK_M], tl.float32)  # transposed tiles: swap-AB
    up = tl.zeros([BLOCK_N, BLOCK_M], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        k_valid = ks < K
        x = tl.load(x_rows + ks[None, :], mask=m_valid[:, None] & k_valid[None, :], other=0.0)
        w_mask = n_valid[:, None] & k_valid[None, :]
        gate = tl.dot(tl.load(gate_rows + ks[None, :], mask=w_mask, other=0.0), tl.trans(x), gate,
                      input_precision=DOT_PRECISION)
        up = tl.dot(tl.load(up_rows + ks[None, :], mask=w_mask, other=0.0), tl.trans(x), up,
                    input_precision=DOT_PRECISION)
    gate = gate.to(dtype).to(tl.float32)
    silu = (gate / (1.0 + tl.exp(-gate))).to(dtype).to(tl.float32)
    act = silu * up.to(dtype).to(tl.float32)
    tl.store(out_ptr + offs_m[None, :].to(tl.int64) * stride_out + offs_n[:, None], act.to(dtype),
             mask=n_valid[:, None] & m_valid[None, :])


def gate_up_silu(x: torch.Tensor, weight: torch.Tensor, cfg: GateUpConfig = GateUpConfig()) -> torch.Tensor:
    """F.silu(gate) * up of gate, up = (x @ weight.T).chunk(2, -1)."""
    if x.shape[0] > SMALL_M_MAX:
        return activation.silu_mul(F.linear(x, weight))
    _check(x, weight, "gate_up", "[2 * intermediate, K]", weight.shape[0] % 2 == 0)
    (rows, k), n2 = x.shape, weight.shape[0]
    out = torch.empty(rows, n2 // 2, dtype=x.dtype, device=x.device)
    if rows:
        gate_up_silu_kernel[(triton.cdiv(n2 // 2, cfg.block_n),)](
            x, weight, out, rows, n2 // 2, k, x.stride(0), weight.stride(0), out.stride(0),
            BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, **_launch(x, cfg))
    return out


def _check(x: torch.Tensor, weight: torch.Tensor, name: str, shape: str, fits: bool = True) -> None:
    if not fits or x.dim() != 2 or weight.dim() != 2 or weight.shape[1] != x.shape[1] \
            or x.stride(-1) != 1 or weight.stride(-1) != 1 or x.dtype != weight.dtype:
        raise ValueError(f"x {tuple(x.shape)} {x.dtype} does not fit a {name} weight {tuple(weight.shape)} "
                         f"{weight.dtype} ({shape}, unit last strides)")


def _launch(x: torch.Tensor, cfg) -> dict:
    """The launch arguments both kernels take from the batch, the dtype and the GPU."""
    major = torch.cuda.get_device_capability(x.device)[0] if x.is_cuda else 9  # the interpreter: any
    return dict(BLOCK_M=max(16, triton.next_power_of_2(x.shape[0])),
                DOT_PRECISION="ieee" if x.dtype == torch.float32 else "tf32",
                num_warps=cfg.num_warps, num_stages=stages_for(major, cfg))


@dataclass(frozen=True)
class SplitKConfig:
    """Launch shape of `split_k_kernel`: block_n-column tiles, K cut into `splits` slices."""
    block_n: int = 64
    block_k: int = 128
    splits: int = 5
    num_warps: int = 4
    num_stages: int = 4  # on Hopper; see `stages_for`
    sm86_stages: int = 2  # a 64-row batch's 128-deep K tiles: 32 KB a stage


# Per projection of the 1.5B at 32 rows, the best on the H200, as graph replays: qkv [2048, 1536] 4.4 us and o_proj [1536, 1536] 4.2 us against
# cuBLAS's 5.6 and 5.4 (one kernel each, about 30 SMs busy); down [1536, 8960] 9.8 us against
# 12.3, where 256-deep K tiles gained 1% (64 KB a stage: one stage on an A10).
QKV_SPLIT_K = SplitKConfig(block_n=64, block_k=128, splits=4)  # 32 column tiles x 4 = 128 programs
O_PROJ_SPLIT_K = SplitKConfig(block_n=64, block_k=128, splits=4)  # 24 x 4 = 96
DOWN_SPLIT_K = SplitKConfig(block_n=64, block_k=128, splits=5)  # 24 x 5 = 120


@triton.jit(do_not_specialize=["num_rows"])
def split_k_kernel(
    x_ptr,  # [M, K]
    w_ptr,  # [N, K]
    partials_ptr,  # fp32 [SPLITS, M, N]
    num_rows, N, K, k_per_split, stride_x, stride_w,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    tile, split = tl.program_id(0), tl.program_id(1)
    offs_n = tile * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    n_valid, m_valid = offs_n < N, offs_m < num_rows
    x_rows = x_ptr + offs_m[:, None].to(tl.int64) * stride_x
    w_rows = w_ptr + offs_n[:, None].to(tl.int64) * stride_w
    acc = tl.zeros([BLOCK_N, BLOCK_M], tl.float32)  # transposed tile: swap-AB, as above
    k_start = split * k_per_split
    for k0 in range(k_start, tl.minimum(k_start + k_per_split, K), BLOCK_K):
        ks = k0 + offs_k
        k_valid = ks < K
        x = tl.load(x_rows + ks[None, :], mask=m_valid[:, None] & k_valid[None, :], other=0.0)
        w = tl.load(w_rows + ks[None, :], mask=n_valid[:, None] & k_valid[None, :], other=0.0)
        acc = tl.dot(w, tl.trans(x), acc, input_precision=DOT_PRECISION)
    tl.store(partials_ptr + split * num_rows * N + offs_m[None, :] * N + offs_n[:, None], acc,
             mask=n_valid[:, None] & m_valid[None, :])


@triton.jit
def load_projection(ptr, offs, mask, stride_split, SPLITS: tl.constexpr, dtype: tl.constexpr):
    """A projection's output at `offs` in fp32: as it is (SPLITS 0), or its partials' sum."""
    # Summed in split order (so the result does not depend on timing), rounded to `dtype` as a
    # GEMM's own output is.
    if SPLITS == 0:
        return tl.load(ptr + offs, mask=mask, other=0.0).to(tl.float32)
    total = tl.load(ptr + offs, mask=mask, other=0.0)
    for s in tl.static_range(1, SPLITS):
        total += tl.load(ptr + s * stride_split + offs, mask=mask, other=0.0)
    return total.to(dtype).to(tl.float32)


def split_layout(x: torch.Tensor) -> tuple[int, int]:
    """(SPLITS, split stride) for `load_projection`: (0, 0) for [M, N], (S, M * N) for partials."""
    if x.dim() == 3 and x.dtype == torch.float32 and x.is_contiguous():
        return x.shape[0], x.stride(0)
    if x.dim() != 2 or x.stride(-1) != 1:
        raise ValueError(f"a projection output is [tokens, N] with unit column stride or contiguous fp32 "
                         f"[splits, tokens, N] partials, got {tuple(x.shape)} {x.dtype}")
    return 0, 0


def linear(x: torch.Tensor, weight: torch.Tensor, cfg: SplitKConfig) -> torch.Tensor:
    """x @ weight.T for `load_projection`: fp32 [splits, M, N] partials, or past SMALL_M_MAX rows [M, N]."""
    if x.shape[0] > SMALL_M_MAX:
        return F.linear(x, weight)
    _check(x, weight, "projection", "[N, K]")
    (rows, k), n = x.shape, weight.shape[0]
    partials = torch.empty(cfg.splits, rows, n, dtype=torch.float32, device=x.device)
    if rows:
        k_per_split = triton.cdiv(triton.cdiv(k, cfg.splits), cfg.block_k) * cfg.block_k
        split_k_kernel[(triton.cdiv(n, cfg.block_n), cfg.splits)](
            x, weight, partials, rows, n, k, k_per_split, x.stride(0), weight.stride(0),
            BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, **_launch(x, cfg))
    return partials
