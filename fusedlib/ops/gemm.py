"""The MLP's two GEMMs for decode-sized batches: gate_up with SiLU(gate) * up in its epilogue,
and down split over K with its reduce in the same launch.

A decode step multiplies 32 rows by each weight, so the gate_up GEMM is a 55 MB weight
read, and the activation after it one more launch. Here one program computes a BLOCK_N
slice of both halves, gate rows [n, n + BLOCK_N) and up rows [I + n, I + n + BLOCK_N) of
the [2I, K] weight, and stores only SiLU(gate) * up: the [M, 2I] projection output is
never written, and no activation kernel runs. The weight tile is the MMA's tall operand
and the batch its narrow one (swap-AB), so a 32-row batch fills no padded rows of Hopper's
64-tall tensor-core tiles. I / BLOCK_N programs (140 at BLOCK_N 64) keep every SM streaming
without splitting K. Values are rounded where the reference rounds (the projection's
output, F.silu's, the product), as in `fusedlib.ops.activation`.

The down projection of the same batch, [M, 8960] x [1536, 8960]^T, has too few output
columns to fill the chip (1536 / 64 = 24 column tiles), so `down_proj_kernel` also splits
K: program (n, s) multiplies column tile n over the s-th slice of K and stores an fp32
partial. cuBLAS does the same but reduces in a second kernel; here the program that
finishes a column tile last (a ticket counter per tile, one atomic add) sums that tile's
partials and stores the output, so the layer launches one kernel for the projection. An
earlier split-K kernel with the same arrival counter lost to cuBLAS at 32 rows on the H200
(data/roofline/small_gemm.csv, bfa3594), but it also computed SiLU * up while loading the
[M, 2I] gate_up output (twice the input bytes, the activation inside the K loop); with the
activation in the gate_up epilogue this one loads its input as it is.
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
    sm86_stages: int = 3


def stages_for(major: int, cfg: GateUpConfig | DownConfig) -> int:
    """Pipeline stages on a GPU of compute capability `major`: five stages of a 64-row
    batch's gate_up tiles take 144 KB of shared memory, which Hopper has (227 KB per block)
    and an A10 (sm_86, Modal's default GPU, 99 KB) has not; `sm86_stages` fit there."""
    return cfg.num_stages if major >= 9 else min(cfg.num_stages, cfg.sm86_stages)


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
    _check(x, weight, "gate_up", "[2 * intermediate, K]", weight.shape[0] % 2 == 0)
    (rows, k), n2 = x.shape, weight.shape[0]
    out = torch.empty(rows, n2 // 2, dtype=x.dtype, device=x.device)
    if rows:
        gate_up_silu_kernel[(triton.cdiv(n2 // 2, cfg.block_n),)](
            x, weight, out, rows, n2 // 2, k, x.stride(0), weight.stride(0), out.stride(0),
            BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, **_launch(x, cfg))
    return out


def _check(x: torch.Tensor, weight: torch.Tensor, name: str, shape: str, fits: bool = True) -> None:
    if not fits or x.dim() != 2 or weight.dim() != 2 or weight.shape[1] != x.shape[1] \
            or x.stride(-1) != 1 or weight.stride(-1) != 1 or x.dtype != weight.dtype:
        raise ValueError(f"x {tuple(x.shape)} {x.dtype} does not fit a {name} weight {tuple(weight.shape)} "
                         f"{weight.dtype} ({shape}, unit last strides)")


def _launch(x: torch.Tensor, cfg) -> dict:
    """The launch arguments both kernels take from the batch, the dtype and the GPU."""
    major = torch.cuda.get_device_capability(x.device)[0] if x.is_cuda else 9  # the interpreter: any
    return dict(BLOCK_M=max(16, triton.next_power_of_2(x.shape[0])),
                DOT_PRECISION="ieee" if x.dtype == torch.float32 else "tf32",
                num_warps=cfg.num_warps, num_stages=stages_for(major, cfg))


@dataclass(frozen=True)
class DownConfig:
    """Launch shape of `down_proj_kernel`: column tiles of block_n output columns, K cut
    into `splits` slices (a multiple of block_k each). Best of the H200 sweep at 32 rows
    (data/roofline/down.csv, 5450832): 11.1 us, 59% of the copy rate, against 11.7 us for
    cuBLAS's two kernels in the same run."""
    block_n: int = 64
    block_k: int = 128
    splits: int = 5  # 24 column tiles x 5 = 120 programs at the 1.5B's 1536 columns
    num_warps: int = 4
    num_stages: int = 4  # on Hopper; see `stages_for`
    sm86_stages: int = 2  # a 64-row batch's 128-deep K tiles: 32 KB a stage


# Ticket counters per device, one per column tile: zero between launches (the program that
# reduces a tile sets its counter back), so CUDA graphs can replay the kernel as captured.
# Launches on one device must not overlap (the engine runs one stream): two at once would
# draw tickets from the same counters.
_TICKETS: dict[torch.device, torch.Tensor] = {}
MAX_COLUMN_TILES = 4096


@triton.jit(do_not_specialize=["num_rows"])
def down_proj_kernel(
    x_ptr,  # [M, K]
    w_ptr,  # [N, K]
    out_ptr,  # [M, N]
    partials_ptr,  # fp32 [SPLITS, M, N]
    tickets_ptr,  # int32 [>= N / BLOCK_N], zero on entry and on exit
    num_rows, N, K, k_per_split, stride_x, stride_w, stride_out,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLITS: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    tile, split = tl.program_id(0), tl.program_id(1)
    offs_n = tile * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    n_valid, m_valid = offs_n < N, offs_m < num_rows
    x_rows = x_ptr + offs_m[:, None].to(tl.int64) * stride_x
    w_rows = w_ptr + offs_n[:, None].to(tl.int64) * stride_w
    acc = tl.zeros([BLOCK_N, BLOCK_M], tl.float32)  # transposed tile: swap-AB, as above
    k_start = split * k_per_split
    for k0 in range(k_start, tl.minimum(k_start + k_per_split, K), BLOCK_K):
        ks = k0 + offs_k
        k_valid = ks < K
        x = tl.load(x_rows + ks[None, :], mask=m_valid[:, None] & k_valid[None, :], other=0.0)
        w = tl.load(w_rows + ks[None, :], mask=n_valid[:, None] & k_valid[None, :], other=0.0)
        acc = tl.dot(w, tl.trans(x), acc, input_precision=DOT_PRECISION)
    mask = n_valid[:, None] & m_valid[None, :]
    tile_offs = offs_m[None, :] * N + offs_n[:, None]
    tl.store(partials_ptr + split * num_rows * N + tile_offs, acc, mask=mask)
    # Every thread's partial is stored before the ticket is taken (the barrier), and the
    # atomic's acquire-release order makes the other programs' partials visible to the last.
    tl.debug_barrier()
    if tl.atomic_add(tickets_ptr + tile, 1) == SPLITS - 1:
        total = tl.zeros([BLOCK_N, BLOCK_M], tl.float32)
        for s in tl.static_range(SPLITS):  # in split order: the sum does not depend on timing
            total += tl.load(partials_ptr + s * num_rows * N + tile_offs, mask=mask, other=0.0,
                             cache_modifier=".cg")
        tl.store(out_ptr + offs_m[None, :].to(tl.int64) * stride_out + offs_n[:, None],
                 total.to(out_ptr.dtype.element_ty), mask=mask)
        tl.store(tickets_ptr + tile, 0)


def down_proj(x: torch.Tensor, weight: torch.Tensor, one_kernel: bool,
              cfg: DownConfig = DownConfig()) -> torch.Tensor:
    """x @ weight.T: one launch of `down_proj_kernel` when `one_kernel` and x has at most
    SMALL_M_MAX rows, else cuBLAS."""
    if not one_kernel or x.shape[0] > SMALL_M_MAX:
        return F.linear(x, weight)
    (rows, k), n = x.shape, weight.shape[0]
    tiles = triton.cdiv(n, cfg.block_n)
    _check(x, weight, "down", f"[N, K], N at most {MAX_COLUMN_TILES * cfg.block_n}", tiles <= MAX_COLUMN_TILES)
    tickets = _TICKETS.get(x.device)
    if tickets is None:
        if x.is_cuda and torch.cuda.is_current_stream_capturing():
            raise RuntimeError("down_proj's ticket counters must exist before graph capture: run it once eagerly")
        tickets = _TICKETS[x.device] = torch.zeros(MAX_COLUMN_TILES, dtype=torch.int32, device=x.device)
    out = torch.empty(rows, n, dtype=x.dtype, device=x.device)
    if rows:
        partials = torch.empty(cfg.splits, rows, n, dtype=torch.float32, device=x.device)
        k_per_split = triton.cdiv(triton.cdiv(k, cfg.splits), cfg.block_k) * cfg.block_k
        down_proj_kernel[(tiles, cfg.splits)](
            x, weight, out, partials, tickets, rows, n, k, k_per_split, x.stride(0), weight.stride(0),
            out.stride(0), BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, SPLITS=cfg.splits, **_launch(x, cfg))
    return out
