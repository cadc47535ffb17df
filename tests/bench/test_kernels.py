"""The GPU bench's functions also run on CPU at the tiny shape (interpreter), so a broken
row builder shows up here and not on the GPU, where time is scarce."""
from fusedlib.bench import kernels as kernel_bench


def test_kernel_gate_smoke_rows_pass_and_carry_provenance():
    rows = kernel_bench.kernel_gate(profile="smoke")
    assert rows and all(r["passed"] for r in rows)
    assert all(r["gpu"] == "cpu" and "git_commit" in r for r in rows)


def test_layout_bench_smoke_rows():
    rows = kernel_bench.decode_layout_bench(profile="smoke", iters=2)
    assert {r["kernel"] for r in rows} == {"rows", "packed", "splitkv", "balanced"}
    assert all(r["median_ms"] > 0 and "gpu" in r for r in rows)
