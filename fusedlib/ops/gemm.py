"""The MLP's input norm, gate_up projection and SiLU(gate) * up in one kernel, for
decode-sized batches.

A decode step multiplies 32 rows by each weight, so the gate_up GEMM is a 55 MB weight
read, with the residual add + RMSNorm before it and the activation after it two more
launches. Here one program computes a BLOCK_N slice of both halves, gate rows
[n, n + BLOCK_N) and up rows [I + n, I + n + BLOCK_N) of the [2I, K] weight, and stores
only SiLU(gate) * up: the [M, 2I] projection output is never written, and neither the
norm nor the activation runs as its own kernel. The weight tile is the MMA's tall operand
and the batch its narrow one (swap-AB), so a 32-row batch fills no padded rows of
Hopper's 64-tall tensor-core tiles. I / BLOCK_N programs (140 at BLOCK_N 64) keep every
SM streaming without splitting K.

The norm rides along the K loop. RMSNorm scales each row by one number,
rsqrt(mean(s^2) + eps) of the row's stream s = hidden + residual, so the dot runs on
s * norm_weight and the row's scale multiplies the accumulator at the end, while the same
loop sums s^2: no pass over the row has to finish before the weight stream starts. Every
program reads the (L2-resident) rows it needs; program 0 also stores s, the next
residual. Rounding differs from the reference's only in where the scale is applied (after
the dot, not before), so fp16 results agree to fp16 rounding, not bit for bit.

On the H200 a split-K variant of this kernel for the q/k/v, output and down projections
lost to cuBLAS at 32 rows (data/roofline/small_gemm.csv, bfa3594) and is not kept.
Batches of more than SMALL_M_MAX rows stay on cuBLAS, whose large-M tiles are near the
FLOP rate.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from . import activation, norm

SMALL_M_MAX = 64


@dataclass(frozen=True)
class GateUpConfig:
    """Launch shape of `norm_gate_up_silu_kernel`. Best of the H200 sweep at 32 rows
    (data/roofline/gate_up.csv, 7b8c45e): 18.0 us, 72% of the copy rate, against 19.8 us
    for cuBLAS and the activation kernel."""
    block_n: int = 64  # columns of SiLU(gate) * up per program: 2 * block_n weight rows
    block_k: int = 64
    num_warps: int = 4
    num_stages: int = 5  # on Hopper; see `stages_for`


def stages_for(major: int, cfg: GateUpConfig, itemsize: int) -> int:
    """Pipeline stages on a GPU of compute capability `major` for elements of `itemsize`
    bytes. Hopper has 227 KB of shared memory per block, an A10 (sm_86, Modal's default
    GPU) 99 KB: three stages there. fp32 tiles (two weight tiles and the batch's two stream
    tiles per stage) take 61 KB a stage at 64 rows: two stages on either."""
    stages = cfg.num_stages if major >= 9 else min(cfg.num_stages, 3)
    return stages if itemsize <= 2 else min(stages, 2)


@triton.jit(do_not_specialize=["num_rows"])
def norm_gate_up_silu_kernel(
    hidden_ptr, residual_ptr,  # [M, K] each: the stream is their sum
    norm_w_ptr,  # [K]
    w_ptr,  # [2I, K]: gate rows, then up rows
    out_ptr,  # [M, I]
    residual_out_ptr,  # [M, K]: hidden + residual, stored by program 0
    num_rows, intermediate, K, stride_hidden, stride_residual, stride_w, stride_out,
    stride_residual_out, eps,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    dtype = out_ptr.dtype.element_ty
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    n_valid = offs_n < intermediate
    m_valid = offs_m < num_rows
    rows = offs_m[:, None].to(tl.int64)
    gate_rows = w_ptr + offs_n[:, None].to(tl.int64) * stride_w
    up_rows = gate_rows + intermediate * stride_w
    store_sum = tl.program_id(0) == 0
    gate = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    up = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    sum_sq = tl.zeros([BLOCK_M, BLOCK_K], tl.float32)  # reduced once, after the loop
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        k_valid = ks < K
        x_mask = m_valid[:, None] & k_valid[None, :]
        h = tl.load(hidden_ptr + rows * stride_hidden + ks[None, :], mask=x_mask, other=0.0)
        r = tl.load(residual_ptr + rows * stride_residual + ks[None, :], mask=x_mask, other=0.0)
        # The stream rounded to the model dtype, as the reference's `hidden + residual` is.
        stream = (h.to(tl.float32) + r.to(tl.float32)).to(dtype)
        tl.store(residual_out_ptr + rows * stride_residual_out + ks[None, :], stream, mask=x_mask & store_sum)
        stream = stream.to(tl.float32)
        sum_sq += stream * stream
        norm_w = tl.load(norm_w_ptr + ks, mask=k_valid, other=0.0).to(tl.float32)
        x = (stream * norm_w[None, :]).to(dtype)
        w_mask = n_valid[:, None] & k_valid[None, :]
        # The computed rows are the MMA's first operand, which may sit in registers; the
        # weight tile, its second, streams through shared memory as loaded.
        gate = tl.dot(x, tl.trans(tl.load(gate_rows + ks[None, :], mask=w_mask, other=0.0)), gate,
                      input_precision=DOT_PRECISION)
        up = tl.dot(x, tl.trans(tl.load(up_rows + ks[None, :], mask=w_mask, other=0.0)), up,
                    input_precision=DOT_PRECISION)
    scale = tl.rsqrt(tl.sum(sum_sq, axis=1) / K + eps)[:, None]  # each row's RMSNorm factor
    gate = (gate * scale).to(dtype).to(tl.float32)
    silu = (gate / (1.0 + tl.exp(-gate))).to(dtype).to(tl.float32)
    act = silu * (up * scale).to(dtype).to(tl.float32)
    tl.store(out_ptr + rows * stride_out + offs_n[None, :], act.to(dtype),
             mask=m_valid[:, None] & n_valid[None, :])


def norm_gate_up_silu(hidden: torch.Tensor, residual: torch.Tensor, norm_weight: torch.Tensor,
                      eps: float, weight: torch.Tensor, one_kernel: bool,
                      cfg: GateUpConfig = GateUpConfig()) -> tuple[torch.Tensor, torch.Tensor]:
    """(F.silu(gate) * up, hidden + residual) of gate, up = (rms_norm(hidden + residual) *
    norm_weight) @ weight.T, chunked in two: one launch of `norm_gate_up_silu_kernel` when
    `one_kernel` and at most SMALL_M_MAX rows, else the add + norm kernel, cuBLAS and the
    activation's kernel."""
    if not one_kernel or hidden.shape[0] > SMALL_M_MAX:
        x, residual = norm.add_rms_norm(hidden, residual, norm_weight, eps)
        return activation.silu_mul(F.linear(x, weight)), residual
    norm.check(hidden, residual, norm_weight)
    if weight.dim() != 2 or weight.shape[1] != hidden.shape[1] or weight.shape[0] % 2 \
            or weight.stride(-1) != 1 or weight.dtype != hidden.dtype:
        raise ValueError(f"x {tuple(hidden.shape)} {hidden.dtype} does not fit a gate_up weight "
                         f"{tuple(weight.shape)} {weight.dtype} ([2 * intermediate, K], unit last strides)")
    (rows, k), n2 = hidden.shape, weight.shape[0]
    major = torch.cuda.get_device_capability(hidden.device)[0] if hidden.is_cuda else 9  # the interpreter: any
    out = torch.empty(rows, n2 // 2, dtype=hidden.dtype, device=hidden.device)
    residual_out = torch.empty_like(hidden)
    if rows:
        norm_gate_up_silu_kernel[(triton.cdiv(n2 // 2, cfg.block_n),)](
            hidden, residual, norm_weight, weight, out, residual_out, rows, n2 // 2, k,
            hidden.stride(0), residual.stride(0), weight.stride(0), out.stride(0), residual_out.stride(0), eps,
            BLOCK_M=max(16, triton.next_power_of_2(rows)), BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
            DOT_PRECISION="ieee" if hidden.dtype == torch.float32 else "tf32",
            num_warps=cfg.num_warps, num_stages=stages_for(major, cfg, hidden.element_size()))
    return out, residual_out
