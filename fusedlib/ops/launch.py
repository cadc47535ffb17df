"""How fusedlib's Triton kernels launch on Hopper: programmatic dependent launch (PDL), and a
decode GEMM's weights asked into L2 before it waits for its input.

In a stream (and in a CUDA graph captured from one) a kernel normally starts only after the
one before it has finished and its writes are flushed. In a 32-row decode step that
predecessor is usually a small kernel waiting on latency (a norm, the split-KV reduce) while
HBM idles, and the GEMM after it then starts its weight read from cold. A kernel launched
with PDL may be scheduled as soon as every program of its predecessor has started. Each of
ours then waits in `griddepcontrol.wait` until the predecessor is done and its memory
visible, so no read of an activation and no write can overlap it, and signals
`launch_dependents` so that the kernel after it may be scheduled in turn. Before waiting, a
GEMM asks L2 for the first bytes of each weight row it will read (`prefetch_rows`): a
weight is written by no kernel, so those reads may overlap anything, and they put the
predecessor's idle memory to work. cuBLAS kernels launch plainly; a kernel of ours after
one of them still overlaps its launch.

`enabled` is the switch for all of them (False launches every kernel as parts 7-10 first
measured them); below sm_90 (an A10) neither PDL nor the bulk prefetch exists and both are
off, as on the Triton interpreter.
"""
from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

enabled = True


@functools.cache
def _has_pdl(device_index: int) -> bool:
    return torch.cuda.get_device_capability(device_index)[0] >= 9


def options(t: torch.Tensor) -> dict:
    """The launch arguments of a kernel over `t`: its PDL constexpr and Triton's launch flag."""
    pdl = enabled and t.is_cuda and _has_pdl(t.device.index or 0)
    return {"PDL": pdl, "launch_pdl": pdl}


@triton.jit
def wait_for_predecessor(PDL: tl.constexpr):
    """With PDL: wait until the kernel before has finished and its writes are visible, then
    let the kernel after be scheduled."""
    if PDL:
        gdc_wait()
        gdc_launch_dependents()


@triton.jit
def prefetch_rows(row_ptrs, row_valid, fallback_ptr, num_bytes, PDL: tl.constexpr):
    """With PDL, ask L2 for `num_bytes` (rounded down to 16) from each valid pointer of
    `row_ptrs`, 16-byte aligned: one Hopper bulk prefetch per row, issued by the copy engine,
    nothing waiting for it. Rows past the weight's end ask for `fallback_ptr`'s bytes instead
    (a row of the same weight), so no request leaves it."""
    if PDL:
        num_bytes = num_bytes // 16 * 16
        if num_bytes > 0:
            ptrs = tl.where(row_valid, row_ptrs, fallback_ptr)
            tl.inline_asm_elementwise("cp.async.bulk.prefetch.L2.global [$1], $2;\nmov.u32 $0, 0;", "=r,l,r",
                                      [ptrs, tl.zeros(row_valid.shape, tl.int32) + num_bytes],
                                      dtype=tl.int32, is_pure=False, pack=1)
