"""Residual add + RMSNorm in one kernel (vLLM's fused_add_rms_norm, in our words)."""
# The layer's residual stream travels as `hidden` (the last sub-layer's output, or a
# projection's split-K partials, summed as the row loads) and `residual` (the sum so far); the
# norm that reads them anyway does the add, so the sum is never read back from memory.
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .gemm import load_projection, split_layout


@triton.jit
def add_rms_norm_kernel(
    x_ptr, residual_ptr, weight_ptr, out_ptr, residual_out_ptr, rows_ptr,
    num_cols, eps,
    stride_x, stride_split, stride_residual, stride_out, stride_residual_out,
    SPLITS: tl.constexpr,  # x is SPLITS split-K partials (0: x itself)
    HAS_RESIDUAL: tl.constexpr,  # add residual into x before the norm
    WRITE_RESIDUAL: tl.constexpr,  # store the sum (the next layer's residual)
    HAS_ROWS: tl.constexpr,  # program i reads row rows[i] (the head's logit rows)
    BLOCK: tl.constexpr,
):
    i = tl.program_id(0)
    if HAS_ROWS:
        src = tl.load(rows_ptr + i).to(tl.int64)
    else:
        src = i.to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < num_cols
    dtype = out_ptr.dtype.element_ty
    x = load_projection(x_ptr + src * stride_x, cols, mask, stride_split, SPLITS, dtype)
    if HAS_RESIDUAL:
        r = tl.load(residual_ptr + src * stride_residual + cols, mask=mask, other=0.0)
        # Rounded to the model dtype, as the reference's `hidden + residual` is.
        x = (x + r.to(tl.float32)).to(dtype).to(tl.float32)
    if WRITE_RESIDUAL:
        tl.store(residual_out_ptr + i.to(tl.int64) * stride_residual_out + cols, x.to(dtype), mask=mask)
    variance = tl.sum(x * x, axis=0) / num_cols
    normed = (x * tl.rsqrt(variance + eps)).to(dtype).to(tl.float32)
    weight = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + i.to(tl.int64) * stride_out + cols, (normed * weight).to(dtype),
             mask=mask)


def _check(x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor) -> tuple[int, int]:
    """(SPLITS, split stride) of x (see `split_layout`), after checking the three agree."""
    splits, (tokens, hidden) = split_layout(x), x.shape[-2:]
    if weight.shape != (hidden,) or (not splits[0] and weight.dtype != x.dtype) or (residual is not None and (
            residual.shape != (tokens, hidden) or residual.dtype != weight.dtype or residual.stride(-1) != 1)):
        raise ValueError(f"x {tuple(x.shape)} {x.dtype}, residual and weight {tuple(weight.shape)} {weight.dtype} "
                         f"do not match")
    return splits


def _launch(x, splits, residual, weight, eps, out, residual_out, rows):
    if out.shape[0] == 0:
        return
    block = triton.next_power_of_2(x.shape[-1])
    add_rms_norm_kernel[(out.shape[0],)](
        x, x if residual is None else residual, weight, out,
        out if residual_out is None else residual_out,
        x if rows is None else rows,
        x.shape[-1], eps,
        x.stride(-2), splits[1], 0 if residual is None else residual.stride(0), out.stride(0),
        0 if residual_out is None else residual_out.stride(0),
        SPLITS=splits[0], HAS_RESIDUAL=residual is not None, WRITE_RESIDUAL=residual_out is not None,
        HAS_ROWS=rows is not None, BLOCK=block, num_warps=min(16, max(1, block // 256)),
    )


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor,
                 eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(rms_norm(x + residual) * weight, x + residual); with residual None, x is the new residual."""
    splits = _check(x, residual, weight)
    tokens, hidden = x.shape[-2:]
    out = torch.empty(tokens, hidden, dtype=weight.dtype, device=x.device)
    summed = residual is None and not splits[0]  # the new residual is x itself
    residual_out = None if summed else torch.empty_like(out)
    _launch(x, splits, residual, weight, eps, out, residual_out, None)
    return out, (x if summed else residual_out)


def rms_norm_rows(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
                  rows: torch.Tensor) -> torch.Tensor:
    """rms_norm((x + residual)[rows]) * weight: the gather, add and final norm in one kernel."""
    splits = _check(x, residual, weight)
    if rows.dim() != 1 or rows.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"rows must be a 1-d int32/int64 index tensor, got {rows.dtype} "
                         f"{tuple(rows.shape)}")
    out = torch.empty(rows.shape[0], x.shape[-1], dtype=weight.dtype, device=x.device)
    _launch(x, splits, residual, weight, eps, out, None, rows)
    return out
