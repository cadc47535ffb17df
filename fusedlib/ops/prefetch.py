"""A weight pulled into L2 ahead of the GEMM that reads it, from a stream beside the layer.

In a 32-row decode step most of a layer's time is spent in kernels that keep memory idle:
attention reads its K/V at about half the copy rate, and the norms, rotary, reduce and the
two small projections wait on latency, not bandwidth. The gate_up GEMM that follows them
is the opposite, a 55 MB weight read at the copy rate. `prefetch_l2` asks L2 for the
first bytes of such a weight while the idle stretch runs, so that part of the GEMM's read
is an L2 hit instead of a DRAM read. It moves no data the step would not read anyway; it
moves the reads earlier, into time the memory was not using.

The request is a hint and changes no value: `prefetch.global.L2::evict_last` for each
128-byte line (sm_80 and later, so it serves an A10 too), or on Hopper one
`cp.async.bulk.prefetch.L2` of CHUNK bytes per thread, issued by the copy engine instead of
the SM. The lines are marked evict-last so the K/V streaming through L2 beside them goes
first. The kernel runs on a side stream (`Qwen2Model.forward`), so nothing on the layer's
own path waits for it. The Triton interpreter has no inline PTX: on CPU nothing is
prefetched and nothing needs to be.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

LINE = 128  # bytes per L2 line


@dataclass(frozen=True)
class PrefetchConfig:
    """What each decode-sized layer asks L2 for, and how: the first `gate_up_bytes` of its
    gate_up weight once its attention starts, and the first `down_bytes` of its down
    weight once its gate_up starts (0: none). `bulk` uses Hopper's bulk prefetch, in
    `chunk`-byte requests, from `programs` programs of one warp."""
    gate_up_bytes: int = 0
    down_bytes: int = 0
    bulk: bool = True
    chunk: int = 16384
    programs: int = 4
    in_rotary: bool = False  # gate_up's requests from the rotary kernel's programs instead (bulk, sm_90)
    after_attention: bool = False  # gate_up's side-stream requests once attention is done, not before it

    def prefetch_bytes(self, weight: torch.Tensor, num_bytes: int) -> tuple[int, int, bool]:
        """(bytes, request size, bulk) of a prefetch of `weight`'s first `num_bytes` on its GPU:
        whole requests only, bulk ones on Hopper (sm_90) only, lines elsewhere."""
        if self.chunk % 16 or self.chunk <= 0:
            raise ValueError(f"a bulk prefetch is a positive multiple of 16 bytes, got {self.chunk}")
        bulk = self.bulk and torch.cuda.get_device_capability(weight.device)[0] >= 9
        chunk = self.chunk if bulk else LINE
        return min(num_bytes, weight.numel() * weight.element_size()) // chunk * chunk, chunk, bulk


@triton.jit
def request_l2(ptr, num_bytes, first, step, CHUNK: tl.constexpr, BULK: tl.constexpr):
    """Request CHUNK-byte pieces first, first + step, ... (in units of 32 pieces: one per
    lane) of [ptr, ptr + num_bytes), num_bytes a multiple of CHUNK (CHUNK is LINE without
    BULK). A lane past the end asks for the first piece again instead of memory outside."""
    lanes = tl.arange(0, 32)
    for start in range(first * 32 * CHUNK, num_bytes, step * 32 * CHUNK):
        offs = start + lanes * CHUNK
        ptrs = ptr + tl.where(offs < num_bytes, offs, 0).to(tl.int64)
        if BULK:
            tl.inline_asm_elementwise(
                "{\n.reg .b64 pol;\ncreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
                "cp.async.bulk.prefetch.L2.global.L2::cache_hint [$1], $2, pol;\n"
                "mov.u32 $0, 0;\n}",
                "=r,l,r", [ptrs, tl.full([32], CHUNK, tl.int32)], dtype=tl.int32, is_pure=False, pack=1)
        else:
            tl.inline_asm_elementwise("prefetch.global.L2::evict_last [$1];\nmov.u32 $0, 0;",
                                      "=r,l", [ptrs], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit(do_not_specialize=["num_bytes"])
def l2_prefetch_kernel(weight_ptr, num_bytes, CHUNK: tl.constexpr, BULK: tl.constexpr):
    """The whole of [weight_ptr, weight_ptr + num_bytes) requested once, spread over the grid."""
    request_l2(weight_ptr, num_bytes, tl.program_id(0), tl.num_programs(0), CHUNK, BULK)


def prefetch_l2(weight: torch.Tensor, num_bytes: int, cfg: PrefetchConfig) -> None:
    """Ask L2 for the first `num_bytes` of `weight` (contiguous, on a GPU): one launch of
    `l2_prefetch_kernel` on the current stream."""
    if not weight.is_cuda or not weight.is_contiguous():
        raise ValueError(f"prefetch_l2 needs a contiguous CUDA tensor, got {weight.device} "
                         f"contiguous={weight.is_contiguous()}")
    num_bytes, chunk, bulk = cfg.prefetch_bytes(weight, num_bytes)
    if num_bytes:
        l2_prefetch_kernel[(cfg.programs,)](weight.view(-1).view(torch.int8), num_bytes,
                                            CHUNK=chunk, BULK=bulk, num_warps=1)
