"""Part 12's engine in two named arms at its best setting (256 rows, 2,048-token budget): the fused
engine's steady rate (`metrics.steady`) and median step GPU ms over saturated open runs (the capacity
experiment's), each pair a new workload draw (seed = pair), the arms alternating ABBA. An arm is a set
of EngineConfig overrides on part 12's settings and/or module globals set while its engine builds and
serves (each run builds its engine anew). Prints each run and the paired gain of the first arm over
the second (t interval on log ratios, 95%).
  H100: PYTHONPATH=$PWD python3 benchmarks/engine_ab.py --arms blocks16,blocks128 [--pairs 3] [--rate 200]"""
import argparse
import sys
import time
from dataclasses import replace

from fusedlib.bench import engines, metrics, runs, stats, workloads
from fusedlib.bench.spec import RunSpec
from fusedlib.ops import gemm

ARMS = {  # name -> (EngineConfig overrides on part 12's, {(module, global name): value})
    "as-built": ({}, {}),
    "blocks16": ({"kv_block_size": 16}, {}),
    "blocks128": ({"kv_block_size": 128}, {}),  # part 12's own today, named so the pair keeps its meaning
    # Every gate_up through cuBLAS then the activation kernel (part 11's path), at any row count.
    "no-epilogue": ({}, {(gemm, "EPILOGUE_MIN_ROWS"): 10**9}),
}
N_REQUESTS = 1500


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arms", required=True, help=f"two of {', '.join(ARMS)}, comma-separated (A,B)")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--rate", type=float, default=200.0)  # ~2x part 12's capacity (97.9 req/s)
    args = parser.parse_args(argv)
    args.arms = args.arms.split(",")
    unknown = [a for a in args.arms if a not in ARMS]
    if unknown or len(args.arms) != 2 or args.pairs < 1 or not args.rate > 0:
        sys.exit(f"engine_ab: unknown arm {unknown[0]!r}; arms are {', '.join(ARMS)}" if unknown else
                 "engine_ab: --arms takes two arms (A,B), --pairs an integer >= 1, --rate a number > 0")
    return args


def run(arm: str, seed: int, rate: float) -> dict:
    """One saturated open run of `arm` on a new engine: its steady rate and step GPU ms."""
    overrides, patches = ARMS[arm]
    saved = {key: getattr(*key) for key in patches}
    t0 = time.monotonic()
    spec = RunSpec.build("capacity", "full", config="part12", engine="fused", rate=rate, n_requests=N_REQUESTS,
                         seed=seed, round=seed)
    try:
        for (module, name), value in patches.items():
            setattr(module, name, value)
        engine = engines.make_engine(spec, replace(spec.settings(), **overrides), cached=False)
        trace = workloads.poisson_arrivals(engines.mixed_draw(spec, N_REQUESTS, seed), rate, seed=seed)
        with engine.record_steps() as steps:
            served = engines.serve_open_loop(engine, trace)
    finally:
        for (module, name), value in saved.items():
            setattr(module, name, value)
    row = {**metrics.steady_from_times(metrics.request_times(served), engine.config.max_batch),
           **runs.step_fields(steps, engine.config.max_batch)}
    num = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731  (no GPU time on a CPU)
    print(f"{arm:>12} seed={seed} kv_block_size={engine.config.kv_block_size} steady {num(row['steady_rate'])} req/s "
          f"saturated={row['saturated']} step_gpu_ms_p50 {num(row['step_gpu_ms_p50'])} compiled_after="
          f"{engine.kernels_compiled_since_construction()} ({time.monotonic() - t0:.0f} s with the build)", flush=True)
    return row


def main(argv: list[str]) -> None:
    args = parse(argv)
    rows = ([], [])  # per arm, by position: the same arm twice is an A/A check
    for seed in range(args.pairs):
        for i in ((0, 1) if seed % 2 == 0 else (1, 0)):
            rows[i].append(run(args.arms[i], seed, args.rate))
    a, b, seeds = args.arms[0], args.arms[1], list(range(args.pairs))
    for field, what in (("steady_rate", "steady rate"), ("step_gpu_ms_p50", "step GPU ms p50")):
        values = [[row[field] for row in arm_rows] for arm_rows in rows]
        print(f"{what}, {a} over {b}:", stats.gain(values[0], values[1], seeds).text)


if __name__ == "__main__":
    main(sys.argv[1:])
