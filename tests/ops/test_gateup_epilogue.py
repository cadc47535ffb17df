"""benchmarks/gateup_epilogue.py's prototype gate_up + SiLU kernel: exact against the fp32 reference
on the CPU interpreter at tiny shapes (the GPU with FUSEDLIB_GPU_TESTS=1), its weight layout, its
refusals, the sweep's bookkeeping, and its launch shapes compiled for sm_90 without a GPU."""
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gateup_epilogue.py"
_spec = importlib.util.spec_from_file_location("gateup_epilogue", SCRIPT)
gateup = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gateup)
DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
TINY = gateup.LaunchShape(16, 32, 32, 2, 4, 2)


def test_every_pairing_matches_the_fp32_reference():
    assert len(gateup.tiny_check(DEVICE)) == 9  # 3 row counts x 3 shapes, each within tolerance


def test_interleaved_weight_alternates_gate_and_up_blocks():
    rows = torch.arange(2 * 96).float()[:, None].expand(-1, 8)  # row r holds r: gate 0..95, up 96..191
    packed = gateup.pack_weight(rows, gateup.LaunchShape(16, 32, 32, 2, 4, 2))[:, 0].long().tolist()
    assert packed == [*range(0, 32), *range(96, 128), *range(32, 64), *range(128, 160), *range(64, 96),
                      *range(160, 192)]
    assert gateup.pack_weight(rows, gateup.LaunchShape(16, 32, 32, 2, 4, 2, interleaved=False)) is rows


def test_weights_the_tiles_do_not_divide_are_refused():
    x, weight = torch.zeros(4, 72, dtype=torch.float16), torch.zeros(2 * 80, 72, dtype=torch.float16)
    with pytest.raises(ValueError, match="I a multiple of 32"):
        gateup.pack_weight(weight, TINY)
    with pytest.raises(ValueError, match="I a multiple of 32"):
        gateup.gate_up_silu(x, weight, TINY, num_sms=4)


def test_sweep_times_good_shapes_and_names_wrong_and_failed_ones(monkeypatch, capsys):
    """A shape handed the engine's stacked weight as if interleaved is wrong (named, not timed); one whose
    tiles do not divide the weight fails (named once); the stacked shape is checked and timed."""
    gen = torch.Generator().manual_seed(2)
    weight = (torch.randn(2 * 96, 72, generator=gen) / 72 ** 0.5).half().to(DEVICE)
    monkeypatch.setattr(gateup, "pack_weight", lambda w, s: w)
    shapes = [TINY, gateup.LaunchShape(16, 64, 32, 2, 4, 2), gateup.LaunchShape(16, 32, 32, 2, 4, 2, False)]
    wrong = gateup.sweep(weight, (5, 70), shapes, num_sms=4, rounds=1, iters=1)
    assert [line.split(" at ")[0] for line in wrong] == [TINY.name, TINY.name]
    out = capsys.readouterr().out
    assert out.count(f"{shapes[1].name}: failed, ValueError") == 1
    timed = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    assert timed == ["cublas+act", "torch.matmul", shapes[2].name] * 2


# As tests/attention/test_triton_backend.py's GPU_COMPILE: sm_90 with Triton's bundled ptxas, no GPU, at
# the model's shape. The warp-specialized shape must come out specialized (the pass falls back to a
# plain loop silently), the interleaved 128 x 128 tile must be one wgmma of N = 256 (the pairing's
# point), and every shape within an H100's shared memory.
SM90_COMPILE = textwrap.dedent("""
    import importlib.util, inspect, re, sys
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    spec = importlib.util.spec_from_file_location("gateup_epilogue", sys.argv[1])
    gateup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gateup)
    kernel = gateup.gate_up_silu_kernel
    for name in sys.argv[2:]:
        s = next(s for s in gateup.SHAPES if s.name == name)
        constexprs = dict(BLOCK_M=s.block_m, BLOCK_N=s.block_n, BLOCK_K=s.block_k, GROUP_M=s.group_m, NUM_SMS=132,
                          INTERLEAVED=s.interleaved, WARP_SPECIALIZE=s.warp_specialize, FLATTEN=not s.warp_specialize)
        signature = {p: "constexpr" if p in constexprs else "*fp16" if p.endswith("_ptr") else "i32"
                     for p in inspect.signature(kernel.fn).parameters}
        # Marked as a launch marks them: 16-byte-aligned pointers, I and K divisible by 16 (M is not specialized).
        aligned = {(i,): [["tt.divisibility", 16]] for i, p in enumerate(signature)
                   if signature[p] != "constexpr" and p != "M"}
        compiled = triton.compile(ASTSource(kernel, signature, constexprs, attrs=aligned),
                                  target=GPUTarget("cuda", 90, 32),
                                  options={"num_warps": s.num_warps, "num_stages": s.num_stages})
        assert ("ttg.warp_specialize" in compiled.asm["ttgir"]) == s.warp_specialize, name
        assert "cp.async.bulk.tensor" in compiled.asm["ptx"], name
        assert compiled.metadata.shared <= 227 * 1024, (name, compiled.metadata.shared)
        mma = sorted(set(re.findall(r"wgmma\\.mma_async\\.sync\\.aligned\\.(m64n\\d+k16)", compiled.asm["ptx"])))
        print(name, compiled.metadata.num_warps, ",".join(mma))
""")
HEADLINE, SPECIALIZED, STACKED = "i128x128x64-col-w8s3", "i128x128x64-col-w4s3-ws", "s128x128x64-col-w8s3"


@pytest.mark.slow(8)
def test_launch_shapes_compile_for_hopper():
    import triton.backends

    if "nvidia" not in triton.backends.backends:
        pytest.skip("this Triton has no NVIDIA backend")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", SM90_COMPILE, str(SCRIPT), HEADLINE, SPECIALIZED, STACKED],
                          env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    compiled = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()}
    # 12 warps: a producer group and two consumer groups of 4; the stacked pairing issues two N = 128 MMAs.
    assert compiled == {HEADLINE: ["8", "m64n256k16"], SPECIALIZED: ["12", "m64n256k16"], STACKED: ["8", "m64n128k16"]}
