"""How fast the H200 reads a weight of a given size, and nothing else: the floor a
weight-streaming kernel of that size could reach alone.

`read_kernel` streams a tensor once, each of `grid` programs summing a contiguous share in
fp32 (one float out per program, so nothing is written to speak of). A GEMM at 32 rows does
the same reads plus arithmetic that hides under them; what a read of the same bytes takes,
ramp and tail included, is what a single kernel of that size cannot beat.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def read_kernel(x_ptr, out_ptr, numel, per_program, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    start = pid.to(tl.int64) * per_program
    end = tl.minimum(start + per_program, numel)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(start, end, BLOCK):
        acc += tl.load(x_ptr + i + offs, mask=i + offs < end, other=0.0).to(tl.float32)
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))


def read(x: torch.Tensor, out: torch.Tensor, block: int = 4096, num_warps: int = 8) -> torch.Tensor:
    """Sum `x` (contiguous) in len(out) contiguous shares, one program each, into `out`
    (fp32): every byte of x read once."""
    if not x.is_contiguous() or out.dtype != torch.float32 or out.dim() != 1 or not len(out):
        raise ValueError(f"read needs a contiguous input and a 1-d fp32 output of the programs' sums, got "
                         f"{'contiguous' if x.is_contiguous() else 'strided'} {tuple(x.shape)} and "
                         f"{out.dtype} {tuple(out.shape)}")
    grid = len(out)
    per_program = triton.cdiv(triton.cdiv(x.numel(), grid), block) * block
    read_kernel[(grid,)](x, out, x.numel(), per_program, BLOCK=block, num_warps=num_warps)
    return out
