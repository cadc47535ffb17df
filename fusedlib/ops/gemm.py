"""The MLP's gate_up projection with SiLU(gate) * up in its epilogue, for decode-sized batches.

A decode step multiplies 32 rows by each weight, so the gate_up GEMM is a 55 MB weight
read, and the activation after it one more launch. Here one program computes a BLOCK_N
slice of both halves, gate rows [n, n + BLOCK_N) and up rows [I + n, I + n + BLOCK_N) of
the [2I, K] weight, and stores only SiLU(gate) * up: the [M, 2I] projection output is
never written, and no activation kernel runs. The weight tile is the MMA's tall operand
and the batch its narrow one (swap-AB), so a 32-row batch fills no padded rows of Hopper's
64-tall tensor-core tiles. I / BLOCK_N programs (140 at BLOCK_N 64) keep every SM streaming
without splitting K. Values are rounded where the reference rounds (the projection's
output, F.silu's, the product), as in `fusedlib.ops.activation`.

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

from . import activation

SMALL_M_MAX = 64


@dataclass(frozen=True)
class GateUpConfig:
    """Launch shape of `gate_up_silu_kernel`. Best of the H200 sweep at 32 rows
    (data/roofline/gate_up.csv, 7b8c45e): 18.0 us, 72% of the copy rate, against 19.8 us
    for cuBLAS and the activation kernel."""
    block_n: int = 64  # columns of SiLU(gate) * up per program: 2 * block_n weight rows
    block_k: int = 64
    num_warps: int = 4
    num_stages: int = 5  # on Hopper; see `stages_for`


def stages_for(major: int, cfg: GateUpConfig) -> int:
    """Pipeline stages on a GPU of compute capability `major`: five stages of a 64-row
    batch's tiles take 144 KB of shared memory, which Hopper has (227 KB per block) and an
    A10 (sm_86, Modal's default GPU, 99 KB) has not; three fit there."""
    return cfg.num_stages if major >= 9 else min(cfg.num_stages, 3)


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


def gate_up_silu(x: torch.Tensor, weight: torch.Tensor, one_kernel: bool,
                 cfg: GateUpConfig = GateUpConfig()) -> torch.Tensor:
    """F.silu(gate) * up of gate, up = (x @ weight.T).chunk(2, -1): one launch of
    `gate_up_silu_kernel` when `one_kernel` and x has at most SMALL_M_MAX rows, else
    cuBLAS and the activation's own kernel."""
    if not one_kernel or x.shape[0] > SMALL_M_MAX:
        return activation.silu_mul(F.linear(x, weight))
    if x.dim() != 2 or weight.dim() != 2 or weight.shape[1] != x.shape[1] or weight.shape[0] % 2 \
            or x.stride(-1) != 1 or weight.stride(-1) != 1 or x.dtype != weight.dtype:
        raise ValueError(f"x {tuple(x.shape)} {x.dtype} does not fit a gate_up weight {tuple(weight.shape)} "
                         f"{weight.dtype} ([2 * intermediate, K], unit last strides)")
    (rows, k), n2 = x.shape, weight.shape[0]
    major = torch.cuda.get_device_capability(x.device)[0] if x.is_cuda else 9  # the interpreter: any
    out = torch.empty(rows, n2 // 2, dtype=x.dtype, device=x.device)
    if rows:
        gate_up_silu_kernel[(triton.cdiv(n2 // 2, cfg.block_n),)](
            x, weight, out, rows, n2 // 2, k, x.stride(0), weight.stride(0), out.stride(0),
            BLOCK_M=max(16, triton.next_power_of_2(rows)), BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
            DOT_PRECISION="ieee" if x.dtype == torch.float32 else "tf32",
            num_warps=cfg.num_warps, num_stages=stages_for(major, cfg))
    return out
