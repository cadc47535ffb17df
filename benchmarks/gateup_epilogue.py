"""gate_up with SiLU(gate) * up in its epilogue, Hopper-shaped (issue 53, part 12): one Triton kernel
writes only the [M, I] activation, where the engine has cuBLAS write x @ W.T ([M, 2I]) for the
activation kernel to read back. A prototype, outside fusedlib/ until measured.

After Triton's persistent matmul tutorial (09-persistent-matmul.py, descriptor-persistent kernel):
TMA descriptors made on the device (the tutorial warp-specializes on Hopper only with those), one
program per SM walking tiles in grouped order, the tile loop flattened with its K loop, or
warp-specialized (a producer warp group on the loads, two consumer groups; unflattened on Hopper).
Pairing: `interleaved` (default) reorders the weight's rows once, at load time, into blocks of
block_n gate rows then the matching block_n up rows, so one TMA box and one wgmma of N = 2 * block_n
per K step fill one accumulator, which the epilogue splits (the tutorial's EPILOGUE_SUBTILE split).
`stacked` keeps the engine's [gate; up] rows: two boxes, two MMAs reading the x tile twice, two
accumulators (the TMA probe in not_kept.csv that tied at 544 rows); it stays in the sweep.
The epilogue rounds where fusedlib.ops.activation rounds (each GEMM output, SiLU's output, the
product); against an fp32 SiLU(x Wg) * (x Wu) a kernel's max error must be at most twice the
engine rounding's (SiLU-and-mul of the fp32 GEMM rounded to fp16).
  CPU (interpreter, tiny shapes, ~3 s): PYTHONPATH=$PWD python3 benchmarks/gateup_epilogue.py --cpu-check
  H100 (under 90 s, mostly compiles):   PYTHONPATH=$PWD python3 benchmarks/gateup_epilogue.py
Per M: the engine's path (fusedlib.ops.gate_up_silu: cuBLAS, then the activation kernel), bare
torch.matmul (anchor), each launch shape, ROUNDS alternated rounds of timing.median_ms (ITERS calls,
CUDA events, an L2 flush before each). TFLOP/s count 2 * M * 2I * K; new/engine is time over the
engine path's, paired per round (median [range]): below 1 is faster. A shape that fails to compile
is named and dropped; a wrong one is named and the script exits 1."""
import statistics
import sys
from dataclasses import dataclass

from fusedlib.bench import use_interpreter_without_gpu

if "--cpu-check" in sys.argv:
    use_interpreter_without_gpu(always=True)  # before any kernel is defined

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from fusedlib import ops  # noqa: E402
from fusedlib.bench.timing import flush_buffer, median_ms  # noqa: E402
from fusedlib.config import PRESETS  # noqa: E402

ROWS = (256, 1024, 2303, 4096)  # 2,303: the mixed step at batch 256 / budget 2,048
ROUNDS, ITERS = 7, 20
ENGINE, ANCHOR = "cublas+act (engine)", "torch.matmul (anchor)"
ALL_ROWS = 64  # GROUP_M >= the row tiles: every row tile of a weight tile in turn, the weight read once


@dataclass(frozen=True)
class LaunchShape:
    block_m: int
    block_n: int  # output columns per tile: 2 * block_n weight rows
    block_k: int
    group_m: int
    num_warps: int
    num_stages: int
    interleaved: bool = True
    warp_specialize: bool = False

    @property
    def name(self) -> str:
        group = "col" if self.group_m == ALL_ROWS else f"g{self.group_m}"
        return (f"{'i' if self.interleaved else 's'}{self.block_m}x{self.block_n}x{self.block_k}-{group}"
                f"-w{self.num_warps}s{self.num_stages}{'-ws' if self.warp_specialize else ''}")


SHAPES = (  # wgmma tile BLOCK_M x 2 * BLOCK_N; 128 x 256 is the tutorial's and cuBLAS's large-M Hopper tile
    LaunchShape(128, 128, 64, ALL_ROWS, 8, 3),
    LaunchShape(128, 128, 64, 8, 8, 3),  # the tutorial's grouping: the weight read once per 8 row tiles
    LaunchShape(128, 128, 64, ALL_ROWS, 8, 4),
    LaunchShape(128, 128, 128, ALL_ROWS, 8, 2),
    LaunchShape(128, 64, 64, ALL_ROWS, 8, 4),
    LaunchShape(128, 64, 64, ALL_ROWS, 4, 4),
    LaunchShape(64, 128, 64, ALL_ROWS, 4, 4),  # twice the tiles: fuller waves at 256 rows
    LaunchShape(64, 64, 64, ALL_ROWS, 4, 5),  # the TMA probe's best box, now persistent
    LaunchShape(128, 128, 64, ALL_ROWS, 4, 3, warp_specialize=True),  # 4 warps a group: 12 in all
    LaunchShape(128, 64, 64, ALL_ROWS, 4, 4, warp_specialize=True),
    LaunchShape(128, 64, 64, ALL_ROWS, 8, 4, interleaved=False),
    LaunchShape(128, 128, 64, ALL_ROWS, 8, 3, interleaved=False),
)


@triton.jit
def _tile_coords(tile, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    # The tutorial's grouped order: GROUP_M row tiles take each weight column tile in turn.
    per_group = GROUP_M * num_pid_n
    first_m = tile // per_group * GROUP_M
    group_rows = tl.minimum(num_pid_m - first_m, GROUP_M)
    return first_m + tile % group_rows, tile % per_group // group_rows


@triton.jit(do_not_specialize=["M"])
def gate_up_silu_kernel(x_ptr, w_ptr, out_ptr, M, I, K,  # x [M, K], w [2I, K] packed per INTERLEAVED, out [M, I]
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                        NUM_SMS: tl.constexpr, INTERLEAVED: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
                        FLATTEN: tl.constexpr):
    dtype = out_ptr.dtype.element_ty
    num_pid_m, num_pid_n = tl.cdiv(M, BLOCK_M), I // BLOCK_N
    W_BOX: tl.constexpr = 2 * BLOCK_N if INTERLEAVED else BLOCK_N
    x_desc = tl.make_tensor_descriptor(x_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K])  # rows past M read as 0
    w_desc = tl.make_tensor_descriptor(w_ptr, [2 * I, K], [K, 1], [W_BOX, BLOCK_K])
    out_desc = tl.make_tensor_descriptor(out_ptr, [M, I], [I, 1], [BLOCK_M, BLOCK_N])  # stores clipped at M
    tile_c = tl.program_id(0) - NUM_SMS  # the epilogue's own tile counter, as the tutorial keeps it
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=FLATTEN,
                         warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m, off_n = pid_m * BLOCK_M, pid_n * BLOCK_N
        if INTERLEAVED:  # weight rows [2 off_n, 2 off_n + 2 BLOCK_N): gate columns off_n.., then up's
            acc = tl.zeros([BLOCK_M, 2 * BLOCK_N], tl.float32)
            for ki in range(tl.cdiv(K, BLOCK_K)):
                acc = tl.dot(x_desc.load([off_m, ki * BLOCK_K]), w_desc.load([2 * off_n, ki * BLOCK_K]).T, acc)
            gate, up = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N)), (0, 2, 1)))
        else:  # gate rows [off_n, ..), up rows [I + off_n, ..)
            gate = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
            up = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
            for ki in range(tl.cdiv(K, BLOCK_K)):
                x = x_desc.load([off_m, ki * BLOCK_K])
                gate = tl.dot(x, w_desc.load([off_n, ki * BLOCK_K]).T, gate)
                up = tl.dot(x, w_desc.load([I + off_n, ki * BLOCK_K]).T, up)
        # Rounded where fusedlib.ops.activation rounds: each GEMM output, SiLU's output, the product.
        gate = gate.to(dtype).to(tl.float32)
        silu = (gate / (1.0 + tl.exp(-gate))).to(dtype).to(tl.float32)
        tile_c += NUM_SMS
        pid_m, pid_n = _tile_coords(tile_c, num_pid_m, num_pid_n, GROUP_M)
        out_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], (silu * up.to(dtype).to(tl.float32)).to(dtype))


def pack_weight(weight: torch.Tensor, shape: LaunchShape) -> torch.Tensor:
    """The engine's [gate; up] weight [2I, K] as `shape` reads it: as it is (stacked), or in blocks of
    block_n gate rows then the matching block_n up rows (interleaved)."""
    if weight.dim() != 2 or weight.shape[0] % (2 * shape.block_n):
        raise ValueError(f"weight {tuple(weight.shape)} is not [2I, K] with I a multiple of {shape.block_n}")
    if not shape.interleaved:
        return weight
    n2, k = weight.shape
    return weight.view(2, n2 // 2 // shape.block_n, shape.block_n, k).transpose(0, 1).reshape(n2, k)


def gate_up_silu(x: torch.Tensor, packed: torch.Tensor, shape: LaunchShape, num_sms: int) -> torch.Tensor:
    """F.silu(gate) * up of gate, up = (x @ weight.T).chunk(2, -1), given pack_weight(weight, shape)."""
    if (x.dim() != 2 or packed.dim() != 2 or packed.shape[1] != x.shape[1] or packed.shape[0] % (2 * shape.block_n)
            or x.dtype != packed.dtype or not x.is_contiguous() or not packed.is_contiguous()
            or x.shape[1] * x.element_size() % 16):
        raise ValueError(f"x {tuple(x.shape)} {x.dtype} and weight {tuple(packed.shape)} {packed.dtype} do not fit "
                         f"{shape.name}: contiguous, weight [2I, K] with I a multiple of {shape.block_n}, "
                         "K rows 16-byte aligned (TMA)")
    (rows, k), n2 = x.shape, packed.shape[0]
    out = torch.empty(rows, n2 // 2, dtype=x.dtype, device=x.device)
    if rows:
        # Each program writes its descriptors into global scratch that Triton asks for per launch.
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=x.device))
        tiles = triton.cdiv(rows, shape.block_m) * (n2 // 2 // shape.block_n)
        gate_up_silu_kernel[(min(num_sms, tiles),)](
            x, packed, out, rows, n2 // 2, k, BLOCK_M=shape.block_m, BLOCK_N=shape.block_n, BLOCK_K=shape.block_k,
            GROUP_M=shape.group_m, NUM_SMS=num_sms, INTERLEAVED=shape.interleaved,
            WARP_SPECIALIZE=shape.warp_specialize, FLATTEN=not shape.warp_specialize,  # Hopper WS: unflattened
            num_warps=shape.num_warps, num_stages=shape.num_stages)
    return out


def tolerance_and_reference(x: torch.Tensor, weight: torch.Tensor) -> tuple[float, torch.Tensor]:
    """(twice the engine rounding's max error, the fp32 SiLU(x Wg) * (x Wu))."""
    gate_up = F.linear(x.float(), weight.float())
    gate, up = gate_up.chunk(2, dim=-1)
    reference = F.silu(gate) * up
    return 2 * (ops.silu_mul(gate_up.to(x.dtype)).float() - reference).abs().max().item(), reference


def max_error(out: torch.Tensor, reference: torch.Tensor) -> float:
    return (out.float() - reference).abs().max().item()


def tiny_check(device: str = "cpu") -> list[str]:
    """Every pairing, grouping and loop form at tiny shapes: partial row tiles, a partial K tile (72 =
    2 * 32 + 8), more tiles than the 4 programs, 1 row. Returns one line per case; raises on a wrong one."""
    gen = torch.Generator().manual_seed(0)
    weight = (torch.randn(2 * 96, 72, generator=gen) / 72 ** 0.5).half().to(device)
    shapes = [LaunchShape(16, 32, 32, 2, 4, 2, interleaved, ws) for interleaved, ws in
              ((True, False), (True, True), (False, False))]
    lines = []
    for rows in (1, 37, 70):
        x = torch.randn(rows, 72, generator=gen).half().to(device)
        tol, reference = tolerance_and_reference(x, weight)
        for shape in shapes:
            err = max_error(gate_up_silu(x, pack_weight(weight, shape), shape, num_sms=4), reference)
            if not err <= tol:
                raise AssertionError(f"{shape.name} at {rows} rows: max error {err:.2e} > {tol:.2e}")
            lines.append(f"{shape.name:28} rows {rows:3}: max error {err:.2e} (tolerance {tol:.2e})")
    return lines


def sweep(weight: torch.Tensor, row_counts, shapes, num_sms: int, rounds: int, iters: int) -> list[str]:
    """Check, then time, the engine path, the anchor and each shape at each row count; print a table per
    row count; return the wrong results (a shape that fails to compile is named once and dropped)."""
    device, (n2, k) = weight.device.type, weight.shape
    gen = torch.Generator(device=device).manual_seed(1)
    packed = {}  # one copy of the weight per layout
    flush, wrong, failed = flush_buffer(device), [], set()
    for rows in row_counts:
        x = torch.randn(rows, k, generator=gen, device=device).to(weight.dtype)
        tol, reference = tolerance_and_reference(x, weight)
        calls = {ENGINE: lambda: ops.gate_up_silu(x, weight), ANCHOR: lambda: torch.matmul(x, weight.T)}
        errors = {ENGINE: max_error(calls[ENGINE](), reference)}
        if not errors[ENGINE] <= tol:  # the tolerance rule itself would be in question
            wrong.append(f"{ENGINE} at {rows} rows: max error {errors[ENGINE]:.2e} > {tol:.2e}")
        for s in (s for s in shapes if s.name not in failed):
            try:
                w = packed.setdefault((s.interleaved, s.block_n), pack_weight(weight, s).contiguous())
                call = (lambda s=s, w=w: gate_up_silu(x, w, s, num_sms))
                errors[s.name] = max_error(call(), reference)
            except Exception as e:  # e.g. a shape that does not fit, or that this Triton cannot compile
                failed.add(s.name)
                print(f"{s.name}: failed, {type(e).__name__}: {str(e).strip().splitlines()[0][:120]}")
                continue
            if not errors[s.name] <= tol:
                wrong.append(f"{s.name} at {rows} rows: max error {errors[s.name]:.2e} > {tol:.2e}")
                continue
            calls[s.name] = call
        ms = {name: [] for name in calls}
        for _ in range(rounds):
            for name, call in calls.items():
                ms[name].append(median_ms(call, device, iters, flush)[0])
        print(f"M = {rows}".ljust(40), "TFLOP/s  max error", f"(<= {tol:.1e})  new/engine [rounds' range]")
        for name, times in ms.items():
            ratios = sorted(t / e for t, e in zip(times, ms[ENGINE]))
            error = f"{errors[name]:.1e}" if name in errors else "-"
            print(f"  {name:38}{2 * rows * n2 * k / statistics.median(times) / 1e9:7.1f}  {error:>9}",
                  f"              {statistics.median(ratios):.3f} [{ratios[0]:.3f}, {ratios[-1]:.3f}]")
    return wrong


def main() -> None:
    if not torch.cuda.is_available():
        raise SystemExit("the benchmark needs a CUDA GPU; on a CPU run it with --cpu-check")
    cfg = PRESETS["qwen2.5-1.5b"]
    k, inter = cfg.hidden_size, cfg.intermediate_size
    print(torch.cuda.get_device_name(), f"torch {torch.__version__} triton {triton.__version__}, K {k}, I {inter}; "
          f"median of {ROUNDS} rounds; new/engine = time over cuBLAS + activation's (below 1 is faster)")
    gen = torch.Generator(device="cuda").manual_seed(0)
    weight = (torch.randn(2 * inter, k, generator=gen, device="cuda") / k ** 0.5).half()
    wrong = sweep(weight, ROWS, SHAPES, torch.cuda.get_device_properties(0).multi_processor_count, ROUNDS, ITERS)
    for line in wrong:
        print("WRONG:", line)
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    if "--cpu-check" in sys.argv:
        print("\n".join(tiny_check()))
    else:
        main()
