"""gate_up with SiLU(gate) * up in its epilogue, Hopper-shaped (issue 53, part 12): the engine's
`fusedlib.ops.gemm.gate_up_silu_tma_kernel` writes only the [M, I] activation, where parts 10-11 have
cuBLAS write x @ W.T ([M, 2I]) for the activation kernel to read back. This script sweeps its launch
shapes against both engine paths; the engine's own shape is `GATE_UP_EPILOGUE`, taken from
EPILOGUE_MIN_ROWS rows by part 12's engine (`gate_up_silu(..., epilogue=True)`).

The kernel (after Triton's persistent matmul tutorial): TMA descriptors made on the device, one program
per SM walking tiles in column order, the tile loop flattened with its K loop; the weight interleaved
(`interleave_gate_up`: block_n gate rows, then the matching up rows), so one TMA box and one wgmma of
N = 2 * block_n per K step fill one accumulator, which the epilogue splits. A shape's block_n is its
weight's interleaving block: the engine stores the weight by GATE_UP_BLOCK, and this script packs a copy
per block_n. Tried before and not swept here: the weight as [gate; up] ("stacked": two boxes and two
MMAs, 1.07-1.8x the engine's time), warp specialization (Triton 3.6 fails to compile it on Hopper), the
tutorial's grouped tile order (8 row tiles a group: no faster than column order from 1,024 rows).
Each output rounds where the engine's activation kernel rounds (each GEMM output, SiLU's output, the
product); against an fp32 SiLU(x Wg) * (x Wu) a path's max error must be at most twice the engine
rounding's (SiLU-and-mul of the fp32 GEMM rounded to fp16).
  CPU (interpreter, tiny shapes, ~5 s): PYTHONPATH=$PWD python3 benchmarks/gateup_epilogue.py --cpu-check
  H100 (under 90 s, mostly compiles):   PYTHONPATH=$PWD python3 benchmarks/gateup_epilogue.py
Per M: parts 10-11's path (cuBLAS, then the activation kernel; `engine`), part 12's (`gate_up_silu` with
the epilogue: cuBLAS below EPILOGUE_MIN_ROWS, else the engine's shape), bare torch.matmul (anchor), each
launch shape; ROUNDS alternated rounds of timing.median_ms (ITERS calls, CUDA events, an L2 flush before
each). TFLOP/s count 2 * M * 2I * K; new/engine is time over the engine path's, paired per round (median
[range]): below 1 is faster. A shape that fails to compile is named and dropped; a wrong one is named and
the script exits 1."""
import statistics
import sys

from fusedlib.bench import use_interpreter_without_gpu

if "--cpu-check" in sys.argv:
    use_interpreter_without_gpu(always=True)  # before any kernel is defined

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402

from fusedlib import ops  # noqa: E402
from fusedlib.bench.timing import flush_buffer, median_ms  # noqa: E402
from fusedlib.config import PRESETS  # noqa: E402
from fusedlib.ops.gemm import GATE_UP_EPILOGUE, EpilogueShape, gate_up_silu_tma  # noqa: E402

ROWS = (256, 1024, 2303, 4096)  # 2,303: the mixed step at batch 256 / budget 2,048
ROUNDS, ITERS = 7, 20
ENGINE, PART12, ANCHOR = "cublas+act (engine)", "part 12's path", "torch.matmul (anchor)"
SHAPES = (  # wgmma tile block_m x 2 * block_n; 128 x 256 is the tutorial's and cuBLAS's large-M Hopper tile
    GATE_UP_EPILOGUE,  # 128 x 128 x 64, 8 warps, 3 stages
    EpilogueShape(128, 128, 64, 8, 4),
    EpilogueShape(128, 128, 128, 8, 2),
    EpilogueShape(128, 64, 64, 8, 4),
    EpilogueShape(128, 64, 64, 4, 4),
    EpilogueShape(64, 128, 64, 4, 4),  # twice the tiles: fuller waves at 256 rows
    EpilogueShape(64, 64, 64, 4, 5),  # the TMA probe's best box, now persistent
)


def name(shape: EpilogueShape) -> str:
    return f"{shape.block_m}x{shape.block_n}x{shape.block_k}-w{shape.num_warps}s{shape.num_stages}"


def tolerance_and_reference(x: torch.Tensor, gate: torch.Tensor, up: torch.Tensor) -> tuple[float, torch.Tensor]:
    """(twice the engine rounding's max error, the fp32 SiLU(x Wg) * (x Wu))."""
    g, u = F.linear(x.float(), gate.float()), F.linear(x.float(), up.float())
    reference = F.silu(g) * u
    engine_rounding = F.silu(g.to(x.dtype)) * u.to(x.dtype)  # torch rounds SiLU's output, then the product
    return 2 * max_error(engine_rounding, reference), reference


def max_error(out: torch.Tensor, reference: torch.Tensor) -> float:
    return (out.float() - reference).abs().max().item()


def tiny_check(device: str = "cpu") -> list[str]:
    """Two shapes at tiny sizes: partial row tiles, a partial K tile (72 = 2 * 32 + 8), more tiles than
    the programs, 1 row. Returns one line per case; raises on a wrong one."""
    gen = torch.Generator().manual_seed(0)
    gate, up = ((torch.randn(96, 72, generator=gen) / 72 ** 0.5).half().to(device) for _ in range(2))
    lines = []
    for rows in (1, 37, 70):
        x = torch.randn(rows, 72, generator=gen).half().to(device)
        tol, reference = tolerance_and_reference(x, gate, up)
        for shape in (EpilogueShape(16, 32, 32, 4, 2), EpilogueShape(32, 16, 32, 4, 2)):
            err = max_error(gate_up_silu_tma(x, ops.interleave_gate_up(gate, up, shape.block_n), shape), reference)
            if not err <= tol:
                raise AssertionError(f"{name(shape)} at {rows} rows: max error {err:.2e} > {tol:.2e}")
            lines.append(f"{name(shape):16} rows {rows:3}: max error {err:.2e} (tolerance {tol:.2e})")
    return lines


def sweep(gate: torch.Tensor, up: torch.Tensor, row_counts, shapes, rounds: int, iters: int) -> list[str]:
    """Check, then time, both engine paths, the anchor and each shape at each row count; print a table
    per row count; return the wrong results (a shape that fails to compile is named once and dropped)."""
    device, (inter, k) = gate.device.type, gate.shape
    gen = torch.Generator(device=device).manual_seed(1)
    weight = ops.interleave_gate_up(gate, up)  # as the engine stores it
    packed = {}  # one copy of the weight per shape's block_n
    flush, wrong, failed = flush_buffer(device), [], set()
    for rows in row_counts:
        x = torch.randn(rows, k, generator=gen, device=device).to(gate.dtype)
        tol, reference = tolerance_and_reference(x, gate, up)
        calls = {ENGINE: lambda: ops.gate_up_silu(x, weight), PART12: lambda: ops.gate_up_silu(x, weight, True),
                 ANCHOR: lambda: torch.matmul(x, weight.T)}
        errors = {}
        for path in (ENGINE, PART12):  # a wrong one would put the tolerance rule itself in question
            errors[path] = max_error(calls[path](), reference)
            if not errors[path] <= tol:
                wrong.append(f"{path} at {rows} rows: max error {errors[path]:.2e} > {tol:.2e}")
        for s in (s for s in shapes if name(s) not in failed):
            try:
                w = packed.setdefault(s.block_n, ops.interleave_gate_up(gate, up, s.block_n))
                call = (lambda s=s, w=w: gate_up_silu_tma(x, w, s))
                errors[name(s)] = max_error(call(), reference)
            except Exception as e:  # e.g. a shape that does not fit, or that this Triton cannot compile
                failed.add(name(s))
                print(f"{name(s)}: failed, {type(e).__name__}: {str(e).strip().splitlines()[0][:120]}")
                continue
            if not errors[name(s)] <= tol:
                wrong.append(f"{name(s)} at {rows} rows: max error {errors[name(s)]:.2e} > {tol:.2e}")
                continue
            calls[name(s)] = call
        ms = {path: [] for path in calls}
        for _ in range(rounds):
            for path, call in calls.items():
                ms[path].append(median_ms(call, device, iters, flush)[0])
        print(f"M = {rows}".ljust(40), "TFLOP/s  max error", f"(<= {tol:.1e})  new/engine [rounds' range]")
        for path, times in ms.items():
            ratios = sorted(t / e for t, e in zip(times, ms[ENGINE]))
            error = f"{errors[path]:.1e}" if path in errors else "-"
            print(f"  {path:38}{2 * rows * 2 * inter * k / statistics.median(times) / 1e9:7.1f}  {error:>9}",
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
    gate, up = ((torch.randn(inter, k, generator=gen, device="cuda") / k ** 0.5).half() for _ in range(2))
    wrong = sweep(gate, up, ROWS, SHAPES, ROUNDS, ITERS)
    for line in wrong:
        print("WRONG:", line)
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    if "--cpu-check" in sys.argv:
        print("\n".join(tiny_check()))
    else:
        main()
