"""A layer's GEMMs where cuBLAS's leave time: gate_up with SiLU(gate) * up in its epilogue (decode-sized
batches, and large ones on Hopper), qkv, o_proj and down split over K (decode-sized: at most SMALL_M_MAX
rows); and the activation kernel that follows cuBLAS's gate_up elsewhere."""
# gate_up's weight [2I, K] is stored interleaved (`interleave_gate_up`, at load time): blocks of
# GATE_UP_BLOCK gate rows, each followed by the matching up rows, and so is its projection's
# output [M, 2I]; every reader here and the reference MLP (model.py) reads that layout.
# Small batches: one program computes a BLOCK_N slice of gate and up and stores only
# SiLU(gate) * up: the [M, 2I] projection is never written and no activation kernel runs.
# The weight tile is the MMA's tall operand and the batch its narrow one (swap-AB), so a 32-row
# batch fills no padded rows of Hopper's 64-tall tensor-core tiles. qkv, o_proj and down have
# too few output columns to fill the chip (1536 / 64 = 24 column tiles), so `split_k_kernel`
# also splits K and stores fp32 partials; each projection's only reader (add + RMSNorm, or the
# rotary kernel) sums them as it loads a row (`load_projection`), in split order, rounded to the
# model dtype as a GEMM's output is.
# Large batches on Hopper (`gate_up_silu_tma_kernel`, after Triton's persistent matmul tutorial):
# one program per SM walks output tiles, its loads TMA boxes; a tile's gate and up weight rows
# are one box (the interleaving's point), so one MMA of N = 2 * block_n fills one accumulator,
# which the epilogue splits.
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

SMALL_M_MAX = 64
SILU_MUL_BLOCK = 1024  # the activation kernel's columns per program


@dataclass(frozen=True)
class EpilogueShape:
    """Launch shape of `gate_up_silu_tma_kernel`: block_m x block_n tiles of SiLU(gate) * up."""
    block_m: int
    block_n: int  # also the weight's interleaving block: one box of 2 * block_n rows per K step
    block_k: int
    num_warps: int
    num_stages: int


# Of 10 launch shapes on an H100 (benchmarks/gateup_epilogue.py: K 1536, I 8960, 7 alternated
# rounds), the fastest at 2,303 rows (a mixed step at batch 256 / budget 2,048) and 4,096: 0.83
# of the time of cuBLAS's GEMM and the activation kernel (688 TFLOP/s against 568 at 2,303); at
# 1,024 rows 0.93 (64-row tiles: 0.92); at 256 rows 1.42, where no shape beat cuBLAS (the best
# 1.23): below EPILOGUE_MIN_ROWS cuBLAS stays.
GATE_UP_EPILOGUE = EpilogueShape(block_m=128, block_n=128, block_k=64, num_warps=8, num_stages=3)
EPILOGUE_MIN_ROWS = 1024
GATE_UP_BLOCK = GATE_UP_EPILOGUE.block_n


def interleave_gate_up(gate: torch.Tensor, up: torch.Tensor, block: int = GATE_UP_BLOCK) -> torch.Tensor:
    """gate_up's weight [2I, K] from gate's and up's [I, K]: `block` rows of gate, the same of up, and so on."""
    if gate.dim() != 2 or gate.shape != up.shape or gate.shape[0] % block:
        raise ValueError(f"gate {tuple(gate.shape)} and up {tuple(up.shape)} must be [I, K] alike, "
                         f"I a multiple of {block}")
    return torch.stack([gate.unflatten(0, (-1, block)), up.unflatten(0, (-1, block))], dim=1).flatten(0, 2)


def split_gate_up(t: torch.Tensor, dim: int = -1) -> tuple[torch.Tensor, torch.Tensor]:
    """(gate, up) views of a gate_up weight (dim 0) or output (dim -1), `dim` as [I / GATE_UP_BLOCK, GATE_UP_BLOCK]."""
    return t.unflatten(dim, (-1, 2, GATE_UP_BLOCK)).unbind(dim + 1 if dim >= 0 else dim - 1)


@triton.jit
def _gate_index(n, BLOCK: tl.constexpr):
    # Gate's column n in the interleaved layout (the weight's row, the projection's column); up's is BLOCK further.
    return n + n // BLOCK * BLOCK


@triton.jit
def _silu_times(gate, up, dtype: tl.constexpr):
    # SiLU(gate) * up in `dtype`, rounded where the reference rounds: each GEMM output, SiLU's output, the product.
    gate = gate.to(dtype).to(tl.float32)
    silu = (gate / (1.0 + tl.exp(-gate))).to(dtype).to(tl.float32)
    return (silu * up.to(dtype).to(tl.float32)).to(dtype)


@triton.jit
def silu_mul_kernel(gate_up_ptr, out_ptr, intermediate, stride_in, stride_out, BLOCK: tl.constexpr,
                    LAYOUT_BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < intermediate
    gate_ptrs = gate_up_ptr + row * stride_in + _gate_index(cols, LAYOUT_BLOCK)
    gate, up = tl.load(gate_ptrs, mask=mask, other=0.0), tl.load(gate_ptrs + LAYOUT_BLOCK, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride_out + cols, _silu_times(gate, up, out_ptr.dtype.element_ty), mask=mask)


def silu_mul(gate_up: torch.Tensor) -> torch.Tensor:
    """F.silu(gate) * up of a gate_up projection [tokens, 2 * I] (interleaved) -> [tokens, I]."""
    if gate_up.dim() != 2 or gate_up.shape[1] % (2 * GATE_UP_BLOCK) or gate_up.stride(-1) != 1:
        raise ValueError(f"gate_up must be [tokens, 2 * intermediate] with unit column stride, intermediate a "
                         f"multiple of {GATE_UP_BLOCK}, got {tuple(gate_up.shape)}")
    tokens, intermediate = gate_up.shape[0], gate_up.shape[1] // 2
    out = torch.empty(tokens, intermediate, dtype=gate_up.dtype, device=gate_up.device)
    silu_mul_kernel[(tokens, triton.cdiv(intermediate, SILU_MUL_BLOCK))](  # no tokens: an empty grid, no launch
        gate_up, out, intermediate, gate_up.stride(0), out.stride(0), BLOCK=SILU_MUL_BLOCK,
        LAYOUT_BLOCK=GATE_UP_BLOCK, num_warps=4)
    return out


@dataclass(frozen=True)
class SmallMConfig:
    """Launch shape of `gate_up_silu_kernel` or `split_k_kernel` (which cuts K into `splits` slices)."""
    block_n: int  # gate_up: columns of SiLU(gate) * up per program, 2 * block_n weight rows
    block_k: int
    splits: int = 1
    num_warps: int = 4
    num_stages: int = 4  # on Hopper; see `stages_for`
    sm86_stages: int = 2  # a 64-row batch's 128-deep K tiles take 32 KB a stage


# The best on the H200 at 32 rows: 18.0 us (72% of the copy rate) against 19.8 us for cuBLAS
# and the activation kernel.
GATE_UP_SMALL_M = SmallMConfig(block_n=64, block_k=64, num_stages=5, sm86_stages=3)


def stages_for(major: int, cfg: SmallMConfig) -> int:
    """Pipeline stages on compute capability `major`."""
    # Five stages of a 64-row batch's gate_up tiles take 144 KB of shared memory, which Hopper
    # has and an A10 (sm_86, 99 KB) has not.
    return cfg.num_stages if major >= 9 else min(cfg.num_stages, cfg.sm86_stages)


@triton.jit(do_not_specialize=["num_rows"])
def gate_up_silu_kernel(
    x_ptr,  # [M, K]
    w_ptr,  # [2I, K], interleaved by LAYOUT_BLOCK rows
    out_ptr,  # [M, I]
    num_rows, intermediate, K, stride_x, stride_w, stride_out,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, LAYOUT_BLOCK: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    n_valid, m_valid = offs_n < intermediate, offs_m < num_rows
    x_rows = x_ptr + offs_m[:, None].to(tl.int64) * stride_x
    gate_rows = w_ptr + _gate_index(offs_n, LAYOUT_BLOCK)[:, None].to(tl.int64) * stride_w
    up_rows = gate_rows + LAYOUT_BLOCK * stride_w
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
    tl.store(out_ptr + offs_m[None, :].to(tl.int64) * stride_out + offs_n[:, None],
             _silu_times(gate, up, out_ptr.dtype.element_ty), mask=n_valid[:, None] & m_valid[None, :])


@triton.jit(do_not_specialize=["M"])
def gate_up_silu_tma_kernel(x_ptr, w_ptr, out_ptr, M, I, K,  # x [M, K], w [2I, K] (interleaved by BLOCK_N), out [M, I]
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, NUM_SMS: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    # Descriptors made on the device (as the tutorial does), in scratch that each launch asks for.
    x_desc = tl.make_tensor_descriptor(x_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K])  # rows past M read as 0
    w_desc = tl.make_tensor_descriptor(w_ptr, [2 * I, K], [K, 1], [2 * BLOCK_N, BLOCK_K])
    out_desc = tl.make_tensor_descriptor(out_ptr, [M, I], [I, 1], [BLOCK_M, BLOCK_N])  # stores clipped at M
    # Tiles in column order: each weight tile's row tiles in turn, so the weight is read about once.
    # The epilogue keeps its own tile counter, as the tutorial's flattened loop does.
    tile_c = tl.program_id(0) - NUM_SMS
    for tile in tl.range(tl.program_id(0), num_pid_m * (I // BLOCK_N), NUM_SMS, flatten=True):
        off_m, off_n = tile % num_pid_m * BLOCK_M, tile // num_pid_m * BLOCK_N
        acc = tl.zeros([BLOCK_M, 2 * BLOCK_N], tl.float32)  # gate's columns, then up's
        for ki in range(tl.cdiv(K, BLOCK_K)):
            acc = tl.dot(x_desc.load([off_m, ki * BLOCK_K]), w_desc.load([2 * off_n, ki * BLOCK_K]).T, acc)
        gate, up = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N)), (0, 2, 1)))
        tile_c += NUM_SMS
        out_desc.store([tile_c % num_pid_m * BLOCK_M, tile_c // num_pid_m * BLOCK_N],
                       _silu_times(gate, up, out_ptr.dtype.element_ty))


def gate_up_path(x: torch.Tensor, epilogue: bool) -> str:
    """What `gate_up_silu` runs for x: "small-m" or "tma" (its gate_up_silu_* kernel), or "cublas" (then silu_mul)."""
    if x.shape[0] <= SMALL_M_MAX:
        return "small-m"
    # The TMA kernel where it was measured: on Hopper (on the interpreter: anywhere), 16-bit
    # operands (fp32's tiles would not fit in shared memory).
    tma = epilogue and x.shape[0] >= EPILOGUE_MIN_ROWS and x.element_size() == 2 and _major(x) == 9
    return "tma" if tma else "cublas"


def gate_up_silu(x: torch.Tensor, weight: torch.Tensor, epilogue: bool = False,
                 cfg: SmallMConfig = GATE_UP_SMALL_M) -> torch.Tensor:
    """F.silu(gate) * up of the gate_up projection x @ weight.T, its weight interleaved
    (`interleave_gate_up`); `epilogue`: the TMA kernel for large batches (part 12's shapes)."""
    path = gate_up_path(x, epilogue)
    if path != "small-m":
        return gate_up_silu_tma(x, weight) if path == "tma" else silu_mul(F.linear(x, weight))
    _check(x, weight, "gate_up", f"[2 * intermediate, K], intermediate a multiple of {GATE_UP_BLOCK}",
           weight.shape[0] % (2 * GATE_UP_BLOCK) == 0)
    (rows, k), n2 = x.shape, weight.shape[0]
    out = torch.empty(rows, n2 // 2, dtype=x.dtype, device=x.device)
    if rows:
        gate_up_silu_kernel[(triton.cdiv(n2 // 2, cfg.block_n),)](
            x, weight, out, rows, n2 // 2, k, x.stride(0), weight.stride(0), out.stride(0),
            BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, LAYOUT_BLOCK=GATE_UP_BLOCK, **_launch(x, cfg))
    return out


def gate_up_silu_tma(x: torch.Tensor, weight: torch.Tensor, shape: EpilogueShape = GATE_UP_EPILOGUE) -> torch.Tensor:
    """`gate_up_silu` by `gate_up_silu_tma_kernel` at `shape`, the weight interleaved by shape.block_n rows."""
    fits = x.is_contiguous() and weight.is_contiguous() and weight.stride(0) * weight.element_size() % 16 == 0
    _check(x, weight, "gate_up", f"[2 * intermediate, K], intermediate a multiple of {shape.block_n}; both "
           "contiguous, rows of 16-byte multiples (TMA)", fits and weight.shape[0] % (2 * shape.block_n) == 0)
    (rows, k), n2 = x.shape, weight.shape[0]
    out = torch.empty(rows, n2 // 2, dtype=x.dtype, device=x.device)
    # The descriptors' scratch from torch's caching allocator: inside a CUDA graph's capture, its pool.
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=x.device))
    # One program per SM (on the interpreter, 4: several tiles each); no rows: an empty grid, no launch.
    num_sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4
    gate_up_silu_tma_kernel[(min(num_sms, triton.cdiv(rows, shape.block_m) * (n2 // 2 // shape.block_n)),)](
        x, weight, out, rows, n2 // 2, k, BLOCK_M=shape.block_m, BLOCK_N=shape.block_n, BLOCK_K=shape.block_k,
        NUM_SMS=num_sms, num_warps=shape.num_warps, num_stages=shape.num_stages)
    return out


def _major(x: torch.Tensor) -> int:
    return torch.cuda.get_device_capability(x.device)[0] if x.is_cuda else 9  # the interpreter: any


def _check(x: torch.Tensor, weight: torch.Tensor, name: str, shape: str, fits: bool = True) -> None:
    if not fits or x.dim() != 2 or weight.dim() != 2 or weight.shape[1] != x.shape[1] \
            or x.stride(-1) != 1 or weight.stride(-1) != 1 or x.dtype != weight.dtype:
        raise ValueError(f"x {tuple(x.shape)} {x.dtype} does not fit a {name} weight {tuple(weight.shape)} "
                         f"{weight.dtype} ({shape}, unit last strides)")


def _launch(x: torch.Tensor, cfg) -> dict:
    """The launch arguments both kernels take from the batch, the dtype and the GPU."""
    return dict(BLOCK_M=max(16, triton.next_power_of_2(x.shape[0])),
                DOT_PRECISION="ieee" if x.dtype == torch.float32 else "tf32",
                num_warps=cfg.num_warps, num_stages=stages_for(_major(x), cfg))


# Per projection of the 1.5B at 32 rows, the best on the H200, as graph replays: qkv [2048, 1536] 4.4 us and o_proj [1536, 1536] 4.2 us against
# cuBLAS's 5.6 and 5.4 (one kernel each, about 30 SMs busy); down [1536, 8960] 9.8 us against
# 12.3, where 256-deep K tiles gained 1% (64 KB a stage: one stage on an A10).
QKV_SPLIT_K = SmallMConfig(block_n=64, block_k=128, splits=4)  # 32 column tiles x 4 = 128 programs
O_PROJ_SPLIT_K = SmallMConfig(block_n=64, block_k=128, splits=4)  # 24 x 4 = 96
DOWN_SPLIT_K = SmallMConfig(block_n=64, block_k=128, splits=5)  # 24 x 5 = 120


@triton.jit(do_not_specialize=["num_rows"])
def split_k_kernel(
    x_ptr,  # [M, K]
    w_ptr,  # [N, K]
    partials_ptr,  # fp32 [SPLITS, M, N]
    num_rows, N, K, k_per_split, stride_x, stride_w,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
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
    tl.store(partials_ptr + split * num_rows * N + offs_m[None, :] * N + offs_n[:, None], acc,
             mask=n_valid[:, None] & m_valid[None, :])


@triton.jit
def load_projection(ptr, offs, mask, stride_split, SPLITS: tl.constexpr, dtype: tl.constexpr):
    """A projection's output at `offs` in fp32: as it is (SPLITS 0), or its partials' sum."""
    # Summed in split order (so the result does not depend on timing), rounded to `dtype` as a
    # GEMM's own output is.
    if SPLITS == 0:
        return tl.load(ptr + offs, mask=mask, other=0.0).to(tl.float32)
    total = tl.load(ptr + offs, mask=mask, other=0.0)
    for s in tl.static_range(1, SPLITS):
        total += tl.load(ptr + s * stride_split + offs, mask=mask, other=0.0)
    return total.to(dtype).to(tl.float32)


def split_layout(x: torch.Tensor) -> tuple[int, int]:
    """(SPLITS, split stride) for `load_projection`: (0, 0) for [M, N], (S, M * N) for partials."""
    if x.dim() == 3 and x.dtype == torch.float32 and x.is_contiguous():
        return x.shape[0], x.stride(0)
    if x.dim() != 2 or x.stride(-1) != 1:
        raise ValueError(f"a projection output is [tokens, N] with unit column stride or contiguous fp32 "
                         f"[splits, tokens, N] partials, got {tuple(x.shape)} {x.dtype}")
    return 0, 0


def linear(x: torch.Tensor, weight: torch.Tensor, cfg: SmallMConfig) -> torch.Tensor:
    """x @ weight.T for `load_projection`: fp32 [splits, M, N] partials, or past SMALL_M_MAX rows [M, N]."""
    if x.shape[0] > SMALL_M_MAX:
        return F.linear(x, weight)
    _check(x, weight, "projection", "[N, K]")
    (rows, k), n = x.shape, weight.shape[0]
    partials = torch.empty(cfg.splits, rows, n, dtype=torch.float32, device=x.device)
    if rows:
        k_per_split = triton.cdiv(triton.cdiv(k, cfg.splits), cfg.block_k) * cfg.block_k
        split_k_kernel[(triton.cdiv(n, cfg.block_n), cfg.splits)](
            x, weight, partials, rows, n, k, k_per_split, x.stride(0), weight.stride(0),
            BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, **_launch(x, cfg))
    return partials
