"""SiLU(gate) * up in one kernel, reading the gate_up projection's [tokens, 2 * I] output."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

SILU_MUL_BLOCK = 1024


@triton.jit
def silu_mul_kernel(gate_up_ptr, out_ptr, intermediate, stride_in, stride_out,
                    BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < intermediate
    dtype = out_ptr.dtype.element_ty
    gate = tl.load(gate_up_ptr + row * stride_in + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(gate_up_ptr + row * stride_in + intermediate + cols, mask=mask, other=0.0)
    # Rounded where the reference rounds: F.silu's output, then the product.
    silu = (gate / (1.0 + tl.exp(-gate))).to(dtype).to(tl.float32)
    tl.store(out_ptr + row * stride_out + cols, (silu * up.to(tl.float32)).to(dtype), mask=mask)


def silu_mul(gate_up: torch.Tensor) -> torch.Tensor:
    """F.silu(gate) * up for gate_up = cat([gate, up], -1): [tokens, 2 * I] -> [tokens, I]."""
    if gate_up.dim() != 2 or gate_up.shape[1] % 2 or gate_up.stride(-1) != 1:
        raise ValueError(f"gate_up must be [tokens, 2 * intermediate] with unit column stride, "
                         f"got {tuple(gate_up.shape)}")
    tokens, intermediate = gate_up.shape[0], gate_up.shape[1] // 2
    out = torch.empty(tokens, intermediate, dtype=gate_up.dtype, device=gate_up.device)
    if tokens:
        silu_mul_kernel[(tokens, triton.cdiv(intermediate, SILU_MUL_BLOCK))](
            gate_up, out, intermediate, gate_up.stride(0), out.stride(0), BLOCK=SILU_MUL_BLOCK, num_warps=4)
    return out
