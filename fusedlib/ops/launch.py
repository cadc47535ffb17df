"""How fusedlib's Triton kernels launch: with programmatic dependent launch (PDL) on Hopper.

In a stream (and in a CUDA graph captured from one) a kernel normally starts only after the
one before it has finished and its writes are flushed, so every launch pays the gap and the
last wave of its predecessor leaves SMs idle. A kernel launched with PDL may be scheduled
while its predecessor is still finishing: each of ours first waits in `griddepcontrol.wait`
until the predecessor is done and its memory visible (so no read or write of ours can
overlap it), then signals `launch_dependents`, so the kernel after it may be scheduled as
soon as every one of its programs has started. What overlaps is launch latency, block
scheduling and the predecessor's tail, never data. cuBLAS kernels launch plainly; a
kernel of ours after one of them still saves its launch gap.

`enabled` is the switch for all of them (False launches every kernel as parts 7-10 first
measured them); below sm_90 (an A10) the instructions do not exist and PDL is off.
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
    """A kernel's first statement: with PDL, wait until the kernel before has finished and
    its writes are visible, then let the kernel after be scheduled."""
    if PDL:
        gdc_wait()
        gdc_launch_dependents()
