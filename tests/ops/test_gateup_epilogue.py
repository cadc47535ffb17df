"""gate_up's interleaved weight and its large-batch epilogue GEMM (`gate_up_silu_tma_kernel`, part 12's):
the layout row by row, every gate_up path against an fp32 reference built from separate gate and up
matrices (on the CPU interpreter; the GPU with FUSEDLIB_GPU_TESTS=1), which path runs where,
benchmarks/gateup_epilogue.py's bookkeeping, and the launch shape compiled for sm_90 without a GPU.
The engine's switch: tests/test_model.py."""
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from fusedlib import ops
from fusedlib.ops import gemm
from fusedlib.ops.gemm import EPILOGUE_MIN_ROWS, GATE_UP_BLOCK, GATE_UP_EPILOGUE, EpilogueShape

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gateup_epilogue.py"
DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
INTERMEDIATE, K = 2 * GATE_UP_BLOCK, 72  # two layout blocks; K a partial tile of every block_k here


def load_benchmark():
    spec = importlib.util.spec_from_file_location("gateup_epilogue", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gate_and_up(seed: int, intermediate: int = INTERMEDIATE):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(intermediate, K, generator=gen) / K ** 0.5).half().to(DEVICE) for _ in range(2)]


def test_interleaved_weight_alternates_gate_and_up_blocks():
    rows = torch.arange(4 * GATE_UP_BLOCK).float()[:, None].expand(-1, 8)  # row r holds r
    gate, up = rows[:2 * GATE_UP_BLOCK], rows[2 * GATE_UP_BLOCK:]
    b = GATE_UP_BLOCK
    packed = ops.interleave_gate_up(gate, up)
    assert packed[:, 0].long().tolist() == [*range(0, b), *range(2 * b, 3 * b), *range(b, 2 * b), *range(3 * b, 4 * b)]
    halves = ops.split_gate_up(packed, dim=0)
    assert torch.equal(halves[0].flatten(0, 1), gate) and torch.equal(halves[1].flatten(0, 1), up)
    with pytest.raises(ValueError, match=f"I a multiple of {GATE_UP_BLOCK}"):
        ops.interleave_gate_up(gate[:100], up[:100])


# The epilogue's threshold lowered for the numbers' tests: the interpreter walks a grid program by
# program, and the activation kernel's is one program per row (about 5 ms each here).
LOW_THRESHOLD = 96


@pytest.mark.parametrize("rows", [17, LOW_THRESHOLD - 1, LOW_THRESHOLD, LOW_THRESHOLD + 70])
def test_every_gate_up_path_matches_the_fp32_reference(monkeypatch, rows):
    """Part 12's gate_up at decode size (the swap-AB kernel), below the threshold (cuBLAS, then the
    activation kernel) and from it (the epilogue kernel; a partial last row tile at + 70) against the
    fp32 SiLU(x Wg) * (x Wu): within twice the engine rounding's error (the prototype's rule). The
    weight with gate and up swapped in its blocks is far outside it: the layout cannot drift unseen."""
    monkeypatch.setattr(gemm, "EPILOGUE_MIN_ROWS", LOW_THRESHOLD)
    gate, up = gate_and_up(seed=rows)
    x = torch.randn(rows, K, generator=torch.Generator().manual_seed(1)).half().to(DEVICE)
    g, u = F.linear(x.float(), gate.float()), F.linear(x.float(), up.float())
    reference, engine_rounding = F.silu(g) * u, F.silu(g.half()) * u.half()
    tolerance = 2 * (engine_rounding.float() - reference).abs().max().item()
    assert gemm.gate_up_path(x, epilogue=True) == ("small-m" if rows <= gemm.SMALL_M_MAX else
                                                   "tma" if rows >= LOW_THRESHOLD else "cublas")
    error = lambda weight: (ops.gate_up_silu(x, weight, epilogue=True).float() - reference).abs().max().item()  # noqa: E731
    assert error(ops.interleave_gate_up(gate, up)) <= tolerance < 10 * tolerance < error(ops.interleave_gate_up(up, gate))


def test_epilogue_runs_from_the_threshold_with_the_switch_in_16_bits_only(monkeypatch):
    """Which kernels run (launches recorded, not run: the interpreter would take seconds a grid)."""
    launches = []
    for kernel in ("gate_up_silu_tma_kernel", "silu_mul_kernel", "gate_up_silu_kernel"):
        monkeypatch.setattr(gemm, kernel, type("Spy", (), {
            "__getitem__": lambda self, grid, kernel=kernel: launches.append(kernel) or (lambda *a, **kw: None)})())
    gate, up = gate_and_up(seed=0)
    weight = ops.interleave_gate_up(gate, up)
    for rows, epilogue, dtype, kernel in ((EPILOGUE_MIN_ROWS, True, torch.float16, "gate_up_silu_tma_kernel"),
                                          (EPILOGUE_MIN_ROWS + 1000, True, torch.float16, "gate_up_silu_tma_kernel"),
                                          (EPILOGUE_MIN_ROWS - 1, True, torch.float16, "silu_mul_kernel"),
                                          (EPILOGUE_MIN_ROWS, False, torch.float16, "silu_mul_kernel"),
                                          (EPILOGUE_MIN_ROWS, True, torch.float32, "silu_mul_kernel"),
                                          (gemm.SMALL_M_MAX, True, torch.float16, "gate_up_silu_kernel")):
        launches.clear()
        ops.gate_up_silu(torch.zeros(rows, K, dtype=dtype, device=DEVICE), weight.to(dtype), epilogue)
        assert launches == [kernel], (rows, epilogue, dtype)


def test_bad_weights_are_refused():
    x = torch.zeros(EPILOGUE_MIN_ROWS, K, dtype=torch.float16, device=DEVICE)
    with pytest.raises(ValueError, match=f"intermediate a multiple of {GATE_UP_BLOCK}"):
        ops.gate_up_silu(x, torch.zeros(2 * 80, K, dtype=torch.float16, device=DEVICE), epilogue=True)
    with pytest.raises(ValueError, match="contiguous"):
        ops.gate_up_silu(x, torch.zeros(K, 2 * INTERMEDIATE, dtype=torch.float16, device=DEVICE).T, epilogue=True)


def test_sweep_times_good_shapes_and_names_wrong_and_failed_ones(monkeypatch, capsys):
    """A shape handed a weight packed by another block is wrong (named, not timed); one whose tiles
    do not divide the weight fails (named once); a good one is checked and timed beside both engine
    paths and the anchor."""
    bench = load_benchmark()
    gate, up = gate_and_up(seed=2)
    good, wrong_block, too_wide = EpilogueShape(16, 32, 32, 4, 2), EpilogueShape(16, 64, 32, 4, 2), \
        EpilogueShape(16, 512, 32, 4, 2)
    real_interleave = ops.interleave_gate_up
    monkeypatch.setattr(ops, "interleave_gate_up",  # packs every copy by 32 rows, whatever the shape's block
                        lambda g, u, block=GATE_UP_BLOCK: real_interleave(g, u, 32 if block == 64 else block))
    wrong = bench.sweep(gate, up, (5, 70), [good, wrong_block, too_wide], rounds=1, iters=1)
    assert [line.split(" at ")[0] for line in wrong] == [bench.name(wrong_block)] * 2
    out = capsys.readouterr().out
    assert out.count(f"{bench.name(too_wide)}: failed, ValueError") == 1
    timed = [line.split("  ")[1].strip() for line in out.splitlines() if line.startswith("  ")]
    assert timed == [bench.ENGINE, bench.PART12, bench.ANCHOR, bench.name(good)] * 2


def test_benchmark_sweeps_the_engines_shape_and_its_cpu_check_passes():
    bench = load_benchmark()
    assert bench.SHAPES[0] == GATE_UP_EPILOGUE and len(set(bench.SHAPES)) == len(bench.SHAPES)
    assert len(bench.tiny_check(DEVICE)) == 6  # 3 row counts x 2 shapes, each within tolerance


# As tests/attention/test_triton_backend.py's GPU_COMPILE: sm_90 with Triton's bundled ptxas, no GPU, at
# the model's shape: TMA loads, one wgmma of N = 2 * block_n = 256 per K step (the interleaving's point),
# within an H100's shared memory.
SM90_COMPILE = textwrap.dedent("""
    import inspect, re
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from fusedlib.ops.gemm import GATE_UP_EPILOGUE as s, gate_up_silu_tma_kernel as kernel

    constexprs = dict(BLOCK_M=s.block_m, BLOCK_N=s.block_n, BLOCK_K=s.block_k, NUM_SMS=132)
    signature = {p: "constexpr" if p in constexprs else "*fp16" if p.endswith("_ptr") else "i32"
                 for p in inspect.signature(kernel.fn).parameters}
    # Marked as a launch marks them: 16-byte-aligned pointers, I and K divisible by 16 (M is not specialized).
    aligned = {(i,): [["tt.divisibility", 16]] for i, p in enumerate(signature) if signature[p] != "constexpr" and p != "M"}
    compiled = triton.compile(ASTSource(kernel, signature, constexprs, attrs=aligned), target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": s.num_warps, "num_stages": s.num_stages})
    assert "cp.async.bulk.tensor" in compiled.asm["ptx"]
    assert compiled.metadata.shared <= 227 * 1024, compiled.metadata.shared
    print(",".join(sorted(set(re.findall(r"wgmma\\.mma_async\\.sync\\.aligned\\.(m64n\\d+k16)", compiled.asm["ptx"])))))
""")


@pytest.mark.slow(6)
def test_the_engines_launch_shape_compiles_for_hopper():
    import triton.backends

    if "nvidia" not in triton.backends.backends:
        pytest.skip("this Triton has no NVIDIA backend")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", SM90_COMPILE], env=env, capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["m64n256k16"]
