"""A measurement campaign: every headline of the book as paired runs, resumable in short spans.

`python -m fusedlib.bench.campaign OUT --phase NAME [--limit SECONDS]` runs one phase's plan
in order. Each finished run is appended to its result set under OUT at once, and a run
already there is skipped, so a phase cut off by its time limit resumes where it stopped when
run again (carry OUT along). Before each run the driver checks that the longest run it has
seen so far still fits before the limit; it never starts what it cannot finish.

A comparison is a `Pairs` item: configuration A against B (they differ in one option),
each first run as a recorded warm-up, then `pairs` runs of each in ABBA order
(fusedlib.bench.paired), all inside one process on one machine.

Result sets: OUT/paired/<experiment>.jsonl, apart from the earlier campaigns' rows in data/,
so a claim reads rows of one campaign. Gates run first, on the configurations measured
(graphs included: their padding changes the arithmetic); a gate is a check and runs again
when the phase resumes only if its rows are missing.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import paired, runs
from .spec import RunSpec


@dataclass(frozen=True)
class Pairs:
    """A against B in ABBA order: `arrivals` specs. Every run carries the comparison's name,
    so two comparisons that share a configuration each get runs of their own, interleaved
    with their own other side."""
    name: str
    a: RunSpec
    b: RunSpec
    pairs: int

    def specs(self) -> list[RunSpec]:
        a, b = self.a.but(comparison=self.name), self.b.but(comparison=self.name)
        order = [a.but(repeat=0, warmup=True), b.but(repeat=0, warmup=True)]
        counts = [0, 0]
        for side in paired.abba_order(self.pairs):
            counts[side] += 1
            order.append((a, b)[side].but(repeat=counts[side]))
        return order


def _arrivals(**options) -> RunSpec:
    return RunSpec.build("arrivals", **{"profile": "full", "rate": 40.0, "n_requests": 400, **options})


# The configurations the book's parts compare: part 7 (eager), part 9 (every forward graphed,
# split-KV decode), part 10 (part 9 plus the fused small ops and the balanced decode kernel).
PART7 = dict(attention="triton", fused_ops=False)
PART9 = dict(attention="triton-splitkv", cuda_graphs=True, graph_chunks=True, fused_ops=False)
PART10 = dict(attention="triton-balanced", cuda_graphs=True, graph_chunks=True, fused_ops=True)


def plan(phase: str, pairs: int = 5) -> list:
    """Items in priority order: a RunSpec, or Pairs."""
    def fused_vs_chunked(part: str, cfg: dict, **kw) -> Pairs:
        return Pairs(f"{part}: fused vs chunked", _arrivals(engine="fused", **cfg, **kw),
                     _arrivals(engine="chunked", **cfg, **kw), pairs)

    gate = lambda cfg: RunSpec.build("gates", profile="full", **cfg)  # noqa: E731
    if phase == "fast":
        return [
            gate(PART10), gate(PART9),
            RunSpec.build("step_trace", profile="full", engine="chunked", **PART10),
            RunSpec.build("step_trace", profile="full", engine="fused", **PART10),
            fused_vs_chunked("part 10", PART10),
            Pairs("fused: part 10 vs part 9", _arrivals(engine="fused", **PART10),
                  _arrivals(engine="fused", **PART9), pairs),
        ]
    if phase == "series":
        return [fused_vs_chunked("part 7", PART7, n_requests=200), fused_vs_chunked("part 9", PART9)]
    raise SystemExit(f"unknown phase {phase!r}; choose fast or series")


def expand(items: list) -> list[RunSpec]:
    specs = []
    for item in items:
        specs += item.specs() if isinstance(item, Pairs) else [item]
    return specs


def result_set(out: Path, spec: RunSpec) -> Path:
    return out / "paired" / spec.experiment


def run_phase(phase: str, out: Path, limit_s: float, pairs: int = 5) -> int:
    """Run what is left of the phase; returns how many runs remain or failed (0: the phase
    is done). A run that raises is reported and skipped; running the phase again retries it."""
    started = time.monotonic()
    longest = {}  # experiment -> the longest run seen, seconds: what the next one may take
    failed = 0
    todo = [s for s in expand(plan(phase, pairs)) if not runs.already_done(result_set(out, s), s.resolved())]
    print(f"campaign {phase}: {len(todo)} runs to do", flush=True)
    for i, spec in enumerate(todo):
        elapsed = time.monotonic() - started
        need = longest.get(spec.experiment, 0.0) * 1.15
        if elapsed + need > limit_s:
            print(f"campaign {phase}: stopping before run {i + 1}/{len(todo)} "
                  f"({elapsed:.0f} s used, the next may take {need:.0f} s of {limit_s:.0f})", flush=True)
            return len(todo) - i
        t0 = time.monotonic()
        try:
            new = runs.run(spec, result_set(out, spec))
        except Exception as error:  # one broken configuration must not cost the others' rows
            failed += 1
            print(f"  [{i + 1}/{len(todo)}] {spec.experiment} FAILED: {type(error).__name__}: {error}", flush=True)
            continue
        took = time.monotonic() - t0
        longest[spec.experiment] = max(longest.get(spec.experiment, 0.0), took)
        what = {k: v for k, v in spec.given().items() if k not in ("experiment", "profile")}
        served = new[0].get("served_rate") if new else None
        print(f"  [{i + 1}/{len(todo)}] {spec.experiment} {what} {took:.0f} s"
              + (f", served {served:.2f} req/s" if served else ""), flush=True)
    return failed


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m fusedlib.bench.campaign", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path, help="campaign folder; rows under OUT/paired/")
    p.add_argument("--phase", required=True, choices=("fast", "series"))
    p.add_argument("--limit", type=float, default=540.0, help="seconds this command may run (default 540)")
    p.add_argument("--pairs", type=int, default=5, help="ABBA pairs per comparison (default 5)")
    a = p.parse_args(argv)
    if a.limit <= 0 or a.pairs < 1:
        p.error("--limit must be > 0 and --pairs >= 1")
    left = run_phase(a.phase, a.out, a.limit, a.pairs)
    print(f"campaign {a.phase}: {'done' if left == 0 else f'{left} runs left; run it again to resume'}")
    sys.exit(0)


if __name__ == "__main__":
    main()


__all__ = ["Pairs", "plan", "expand", "run_phase", "PART7", "PART9", "PART10"]
