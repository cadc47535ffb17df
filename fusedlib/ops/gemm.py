"""Split-K GEMM for decode-sized batches: y = x @ W.T for at most SMALL_M_MAX rows.

A decode step multiplies 32 rows by each weight matrix, so every GEMM is a read of the
weight at whatever bandwidth the launch reaches. cuBLAS picks tiles for the whole matrix:
on the H200 the q/k/v and output projections (4-6 MB each) ran at about a quarter of copy
bandwidth (32 programs for 132 SMs), and the down projection came as a split-K GEMM plus a
separate reduce kernel. Here every weight is cut into BLOCK_N-row tiles and its K into
SPLIT_K runs, so there are enough programs to keep every SM streaming; the last program of
a tile to finish sums the partials (as split-KV attention merges its splits, with an
arrival counter), so one launch does the whole product.

Two more things make the kernel worth its lines:

* swap-AB: the weight tile is the MMA's tall operand and the batch its narrow one, so a
  32-row batch fills no padded rows (Hopper's tensor-core tiles are 64 tall);
* `silu_mul`: the operand may be the gate_up projection's [M, 2K] output, with SiLU(gate)
  * up computed as the tiles are loaded, so the MLP's activation costs no kernel (rounded
  where the reference rounds, as in `fusedlib.ops.activation`).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from . import activation

SMALL_M_MAX = 64  # rows above this go to cuBLAS, whose large-M tiles are near the FLOP rate
INTERPRETER_SMS = 4
# Arrival counters, one per output tile: allocated once per device at this size, so a
# captured CUDA graph never sees them move.
MAX_TILES = 1 << 14


@dataclass(frozen=True)
class SmallGemmConfig:
    """Launch shape of the split-K GEMM (the GEMM bench sweeps these)."""
    block_n: int = 64  # weight rows per program
    block_k: int = 128  # K per iteration
    programs_per_sm: float = 2  # split K until about this many programs per SM
    min_k_iterations: int = 4  # but never below this many iterations per program
    num_warps: int = 4
    num_stages: int = 4


@functools.lru_cache(maxsize=None)
def _arrival_counters(device: torch.device) -> torch.Tensor:
    return torch.zeros(MAX_TILES, dtype=torch.int32, device=device)


@functools.lru_cache(maxsize=None)
def _num_sms(device: torch.device) -> int:
    return (torch.cuda.get_device_properties(device).multi_processor_count
            if device.type == "cuda" else INTERPRETER_SMS)


@triton.jit(do_not_specialize=["num_rows"])
def small_m_linear_kernel(
    x_ptr,  # [M, K], or [M, 2K] gate_up when SILU_MUL
    w_ptr,  # [N, K]
    out_ptr,  # [M, N]
    partials_ptr,  # fp32 [SPLIT_K, M, N] (unused when SPLIT_K == 1)
    arrivals_ptr,  # int32 [N tiles], zero between launches
    num_rows, N, K, stride_x, stride_w, stride_out,
    K_PER_SPLIT: tl.constexpr,  # a multiple of BLOCK_K
    SPLIT_K: tl.constexpr,
    SILU_MUL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    tile = tl.program_id(0)
    split = tl.program_id(1)
    dtype = out_ptr.dtype.element_ty
    offs_n = tile * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    n_valid = offs_n < N
    m_valid = offs_m < num_rows
    x_rows = x_ptr + offs_m[:, None].to(tl.int64) * stride_x
    w_rows = w_ptr + offs_n[:, None].to(tl.int64) * stride_w
    acc = tl.zeros([BLOCK_N, BLOCK_M], tl.float32)  # out.T's tile: swap-AB
    k_start = split * K_PER_SPLIT
    for k0 in range(k_start, tl.minimum(k_start + K_PER_SPLIT, K), BLOCK_K):
        ks = k0 + offs_k
        k_valid = ks < K
        x_mask = m_valid[:, None] & k_valid[None, :]
        if SILU_MUL:
            gate = tl.load(x_rows + ks[None, :], mask=x_mask, other=0.0).to(tl.float32)
            up = tl.load(x_rows + K + ks[None, :], mask=x_mask, other=0.0).to(tl.float32)
            silu = (gate / (1.0 + tl.exp(-gate))).to(dtype).to(tl.float32)
            x = (silu * up).to(dtype)
        else:
            x = tl.load(x_rows + ks[None, :], mask=x_mask, other=0.0)
        w = tl.load(w_rows + ks[None, :], mask=n_valid[:, None] & k_valid[None, :], other=0.0)
        acc = tl.dot(w, tl.trans(x), acc, input_precision=DOT_PRECISION)

    out_ptrs = out_ptr + offs_m[None, :].to(tl.int64) * stride_out + offs_n[:, None]
    out_mask = n_valid[:, None] & m_valid[None, :]
    if SPLIT_K == 1:
        tl.store(out_ptrs, acc.to(dtype), mask=out_mask)
    else:
        # The partial goes to L2; the tile's last program to arrive (the acquire-release
        # counter, with barriers around it, orders every program's stores before its
        # loads) sums all SPLIT_K partials in split order, so the sum is deterministic.
        tile_offsets = offs_m[None, :].to(tl.int64) * N + offs_n[:, None]
        tl.store(partials_ptr + split * num_rows * N + tile_offsets, acc, mask=out_mask)
        tl.debug_barrier()
        counter = arrivals_ptr + tile
        if tl.atomic_add(counter, 1, sem="acq_rel", scope="gpu") == SPLIT_K - 1:
            tl.debug_barrier()
            total = tl.zeros([BLOCK_N, BLOCK_M], tl.float32)
            for s in tl.static_range(SPLIT_K):
                total += tl.load(partials_ptr + s * num_rows * N + tile_offsets, mask=out_mask,
                                 other=0.0, cache_modifier=".cg")
            tl.store(out_ptrs, total.to(dtype), mask=out_mask)
            tl.atomic_xchg(counter, 0, sem="relaxed", scope="gpu")


def split_k(n: int, k: int, device: torch.device, cfg: SmallGemmConfig) -> int:
    """K runs per output tile: enough programs for `programs_per_sm` per SM, each at least
    `min_k_iterations` BLOCK_K steps long."""
    tiles = triton.cdiv(n, cfg.block_n)
    wanted = math.ceil(cfg.programs_per_sm * _num_sms(device) / tiles)
    return max(1, min(wanted, k // (cfg.block_k * cfg.min_k_iterations)))


def small_m_linear(x: torch.Tensor, weight: torch.Tensor, silu_mul: bool = False,
                   cfg: SmallGemmConfig = SmallGemmConfig()) -> torch.Tensor:
    """x @ weight.T for x of at most SMALL_M_MAX rows; with `silu_mul`, x is the gate_up
    output [M, 2K] and the product is F.silu(gate) * up @ weight.T."""
    n, k = weight.shape
    if x.dim() != 2 or x.shape[1] != (2 * k if silu_mul else k) or x.stride(-1) != 1 \
            or weight.stride(-1) != 1 or x.dtype != weight.dtype:
        raise ValueError(f"x {tuple(x.shape)} {x.dtype} does not fit weight {tuple(weight.shape)} "
                         f"{weight.dtype} (silu_mul={silu_mul}, unit last strides)")
    m = x.shape[0]
    if m > SMALL_M_MAX:
        raise ValueError(f"small_m_linear takes at most {SMALL_M_MAX} rows, got {m}")
    out = torch.empty(m, n, dtype=x.dtype, device=x.device)
    if m == 0:
        return out
    splits = split_k(n, k, x.device, cfg)
    k_per_split = triton.cdiv(triton.cdiv(k, splits), cfg.block_k) * cfg.block_k
    splits = triton.cdiv(k, k_per_split)
    tiles = triton.cdiv(n, cfg.block_n)
    assert tiles <= MAX_TILES, tiles
    partials = out if splits == 1 else torch.empty(splits, m, n, dtype=torch.float32, device=x.device)
    small_m_linear_kernel[(tiles, splits)](
        x, weight, out, partials, _arrival_counters(x.device), m, n, k, x.stride(0),
        weight.stride(0), out.stride(0), K_PER_SPLIT=k_per_split, SPLIT_K=splits, SILU_MUL=silu_mul,
        BLOCK_M=max(16, triton.next_power_of_2(m)), BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
        DOT_PRECISION="ieee" if x.dtype == torch.float32 else "tf32",
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )
    return out


def linear(x: torch.Tensor, weight: torch.Tensor, small_m: bool, silu_mul: bool = False) -> torch.Tensor:
    """x @ weight.T (of F.silu(gate) * up for x = gate_up when `silu_mul`): one split-K
    launch when `small_m` and x has at most SMALL_M_MAX rows, else cuBLAS (after the
    activation's own kernel)."""
    if small_m and x.shape[0] <= SMALL_M_MAX:
        return small_m_linear(x, weight, silu_mul)
    return F.linear(activation.silu_mul(x) if silu_mul else x, weight)
