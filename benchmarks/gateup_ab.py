"""Part 12's engine with and without the gate_up epilogue (issue 53), at its best setting (256 rows,
2,048-token budget): the fused engine's steady rate (`metrics.steady`) over saturated open runs, each a
new workload draw. "on" is the engine as built (the epilogue from EPILOGUE_MIN_ROWS rows); "off" sets
EPILOGUE_MIN_ROWS past any step, so every gate_up is cuBLAS then the activation kernel (part 11's path).
The switch is read while the engine captures its graphs, so each run builds its engine anew; the arms
alternate ABBA. Prints each run and the paired gain (t interval on log ratios, 95%).
  H100: PYTHONPATH=$PWD python3 benchmarks/gateup_ab.py [pairs, default 3] [rate, default 200]"""
import sys
import time

from fusedlib.bench import engines, runs, stats
from fusedlib.bench.spec import RunSpec
from fusedlib.ops import gemm

PAIRS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
RATE = float(sys.argv[2]) if len(sys.argv) > 2 else 200.0  # ~2x part 12's capacity (97.9 req/s)
N_REQUESTS = 1500
ON_ROWS = gemm.EPILOGUE_MIN_ROWS


def run(arm: str, seed: int) -> dict:
    gemm.EPILOGUE_MIN_ROWS = ON_ROWS if arm == "on" else 10**9
    engines.forget_engines()
    t0 = time.monotonic()
    spec = RunSpec.build("capacity", "full", config="part12", engine="fused", rate=RATE, n_requests=N_REQUESTS,
                         seed=seed, round=seed)
    row = runs.run(spec)[0]
    print(f"{arm:>3} seed={seed} steady {row['steady_rate']:.2f} req/s saturated={row['saturated']} "
          f"step_gpu_ms_p50 {row['step_gpu_ms_p50']:.2f} compiled_after={row['kernels_compiled_after_construction']} "
          f"({time.monotonic() - t0:.0f} s with the build)", flush=True)
    return row


rates = {"on": [], "off": []}
gpu_ms = {"on": [], "off": []}
for seed in range(PAIRS):
    for arm in (("on", "off") if seed % 2 == 0 else ("off", "on")):
        row = run(arm, seed)
        rates[arm].append(row["steady_rate"])
        gpu_ms[arm].append(row["step_gpu_ms_p50"])
seeds = list(range(PAIRS))
print("steady rate, on over off:", stats.gain(rates["on"], rates["off"], seeds).text)
print("step GPU ms p50, on over off:", stats.gain(gpu_ms["on"], gpu_ms["off"], seeds).text)
