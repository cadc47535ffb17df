"""A probe: the mixed step's gate_up GEMM with SiLU(gate) * up in its epilogue, its tiles
moved by Hopper's tensor memory accelerator (TMA) instead of pointer loads.

At a mixed step's 544 rows the engine runs cuBLAS for gate_up (about 49 us a layer, ~610
TFLOP/s) and then the activation kernel, which reads the [544, 17,920] projection back
and writes half of it (~6.6 us). An earlier pointer-load Triton kernel with the activation
in its epilogue reached ~410 TFLOP/s (data/roofline/gate_up_tiles): Triton's pointer loads
pass through registers and `cp.async`, while a TMA descriptor has one thread ask for a
whole [rows, BLOCK_K] box, which the copy engine writes straight into shared memory in the
layout the wgmma instructions read. This module asks whether that closes the gap to cuBLAS
enough for the epilogue's saving to show.

Each program owns a BLOCK_M x BLOCK_N tile of the output: the matching gate rows [n, n +
BLOCK_N) and up rows [I + n, I + n + BLOCK_N) of the [2I, K] weight, two fp32
accumulators, and the activation rounded where the reference rounds (as
`fusedlib.ops.gemm.gate_up_silu_kernel`). Programs on the row tiles of one column tile are
adjacent in launch order, so each weight tile is read from HBM once. The persistent
variant launches one program per SM walking tiles in that order, so a partial last wave is
spread over every SM rather than left to a few.

Descriptors need compute capability 9.0; nothing in the engine calls this module.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl


@dataclass(frozen=True)
class TmaTiles:
    """Launch shape of `gate_up_silu_tma_kernel`."""
    block_m: int = 128
    block_n: int = 128
    block_k: int = 64
    num_warps: int = 8
    num_stages: int = 3
    persistent: bool = False


@triton.jit
def _tile_silu_mul(x_desc, w_desc, off_m, off_n, intermediate, K,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    gate = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    up = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x = x_desc.load([off_m, k0])
        gate = tl.dot(x, w_desc.load([off_n, k0]).T, gate)
        up = tl.dot(x, w_desc.load([intermediate + off_n, k0]).T, up)
    dtype = x_desc.dtype
    gate = gate.to(dtype).to(tl.float32)
    silu = (gate / (1.0 + tl.exp(-gate))).to(dtype).to(tl.float32)
    return (silu * up.to(dtype).to(tl.float32)).to(dtype)


@triton.jit
def gate_up_silu_tma_kernel(x_desc, w_desc, out_desc, intermediate, K, m_tiles,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """One output tile per program, row tiles of a column tile adjacent in launch order."""
    pid = tl.program_id(0)
    off_m = (pid % m_tiles) * BLOCK_M
    off_n = (pid // m_tiles) * BLOCK_N
    out_desc.store([off_m, off_n], _tile_silu_mul(x_desc, w_desc, off_m, off_n, intermediate, K,
                                                  BLOCK_M, BLOCK_N, BLOCK_K))


@triton.jit
def gate_up_silu_tma_persistent_kernel(x_desc, w_desc, out_desc, intermediate, K, m_tiles, tiles,
                                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                       BLOCK_K: tl.constexpr):
    """The same tiles in the same order, one program per SM taking every num_programs-th."""
    for tile in range(tl.program_id(0), tiles, tl.num_programs(0)):
        off_m = (tile % m_tiles) * BLOCK_M
        off_n = (tile // m_tiles) * BLOCK_N
        out_desc.store([off_m, off_n], _tile_silu_mul(x_desc, w_desc, off_m, off_n, intermediate, K,
                                                      BLOCK_M, BLOCK_N, BLOCK_K))


def gate_up_silu_tma(x: torch.Tensor, weight: torch.Tensor, cfg: TmaTiles = TmaTiles()) -> torch.Tensor:
    """F.silu(gate) * up of gate, up = (x @ weight.T).chunk(2, -1), in one TMA kernel."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    (rows, k), n2 = x.shape, weight.shape[0]
    intermediate = n2 // 2
    if intermediate % cfg.block_n or k % cfg.block_k:
        raise ValueError(f"tiles {cfg} do not divide intermediate {intermediate} and K {k}")
    out = torch.empty(rows, intermediate, dtype=x.dtype, device=x.device)
    x_desc = TensorDescriptor.from_tensor(x, [cfg.block_m, cfg.block_k])
    w_desc = TensorDescriptor.from_tensor(weight, [cfg.block_n, cfg.block_k])
    out_desc = TensorDescriptor.from_tensor(out, [cfg.block_m, cfg.block_n])
    m_tiles = triton.cdiv(rows, cfg.block_m)
    tiles = m_tiles * (intermediate // cfg.block_n)
    shape = dict(BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
                 num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    if cfg.persistent:
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4
        gate_up_silu_tma_persistent_kernel[(min(sms, tiles),)](x_desc, w_desc, out_desc, intermediate, k,
                                                               m_tiles, tiles, **shape)
    else:
        gate_up_silu_tma_kernel[(tiles,)](x_desc, w_desc, out_desc, intermediate, k, m_tiles, **shape)
    return out
