"""A measurement campaign: every headline of the book as paired runs, resumable in short spans.

`python -m fusedlib.bench.campaign OUT --phase NAME [--limit SECONDS]` runs one phase's plan
in order. It first prints what the phase holds and how much of it is left; each finished run
is appended to its result set under OUT at once, and a run already there is skipped, so a
phase cut off by its time limit resumes where it stopped when run again (carry OUT along).
Before each run the driver checks that the longest run of that experiment it has seen so far
still fits before the limit; it never starts what it cannot finish. At the end it prints each
comparison of the phase from the rows under OUT. `--dry-run` prints the plan and runs nothing.

A comparison is a `Pairs` item: configuration A against B (they differ in one option),
each first run as a recorded warm-up, then `pairs` runs of each in ABBA order
(fusedlib.bench.paired), all inside one process on one machine. A `Sweep` runs A and B once
at each value of one option (the offered rate, the seed), the side that goes first
alternating. Arrivals, closed and sensitivity runs can be paired: their specs take `repeat`,
`warmup` and `comparison`.

Result sets: OUT/paired/<experiment>.jsonl, apart from the earlier campaigns' rows in data/,
so a claim reads rows of one campaign. Gates run first, on the configurations measured
(graphs included: their padding changes the arithmetic); a gate is a check and runs again
when the phase resumes only if its rows are missing.

Each phase is planned to fit one device command of at most 9 minutes (`--limit 510` leaves
room for the process start); the estimate in each phase's comment comes from the H200 logs
and rows of the campaigns before it (data/paired/campaign_*.log, data/*/runs.jsonl).
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import paired, rows
from .spec import RunSpec, stored_options


@dataclass(frozen=True)
class Pairs:
    """A against B in ABBA order (arrivals, closed or sensitivity specs). Every run carries
    the comparison's name, so two comparisons that share a configuration each get runs of
    their own, interleaved with their own other side. Pair i is the i-th run of each side
    (`repeat` i; the warm-ups are repeat 0)."""
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

    def pair_specs(self) -> list[tuple[RunSpec, RunSpec]]:
        a, b = self.a.but(comparison=self.name), self.b.but(comparison=self.name)
        return [(a.but(repeat=i), b.but(repeat=i)) for i in range(1, self.pairs + 1)]


@dataclass(frozen=True)
class Sweep:
    """A and B once at each of `values` of one option, after a recorded warm-up of each at
    the first value; which side goes first alternates from value to value (A B, B A, ...),
    so a machine that drifts through the sweep lands on both. Pair i is the two runs at
    values[i] (`repeat` 1; the warm-ups are repeat 0). `pooled`: the values are draws of one
    condition (seeds), so the pairs pool into one comparison; otherwise (rates) each value
    is a point of its own."""
    name: str
    a: RunSpec
    b: RunSpec
    option: str
    values: tuple
    pooled: bool = False

    def specs(self) -> list[RunSpec]:
        a, b = self.a.but(comparison=self.name), self.b.but(comparison=self.name)
        first = {self.option: self.values[0]}
        order = [a.but(**first, repeat=0, warmup=True), b.but(**first, repeat=0, warmup=True)]
        for i, pair in enumerate(self.pair_specs()):
            order += pair if i % 2 == 0 else pair[::-1]
        return order

    def pair_specs(self) -> list[tuple[RunSpec, RunSpec]]:
        a, b = self.a.but(comparison=self.name), self.b.but(comparison=self.name)
        return [(a.but(**{self.option: v}, repeat=1), b.but(**{self.option: v}, repeat=1)) for v in self.values]


def _arrivals(**options) -> RunSpec:
    return RunSpec.build("arrivals", **{"profile": "full", "rate": 40.0, "n_requests": 400, **options})


def _closed(**options) -> RunSpec:
    # One warm-up pass (recorded) and one measured pass per run: the pairs carry the repetition.
    return RunSpec.build("closed", **{"profile": "full", "warmups": 1, "repeats": 1, **options})


# The configurations the book's parts compare: part 7 (eager), part 9's decode graphs (the
# decode-only forward graphed, split-KV decode), part 9 (every forward graphed, split-KV decode), part 10 (part 9 plus the fused small ops and the balanced decode kernel),
# and part 10 with the host's work off the critical path (overlap), the engine part 10 ends on.
PART7 = dict(attention="triton", fused_ops=False)
DECODE_GRAPHS = dict(attention="triton-splitkv", cuda_graphs=True, graph_chunks=False, fused_ops=False)
PART9 = dict(attention="triton-splitkv", cuda_graphs=True, graph_chunks=True, fused_ops=False)
PART10 = dict(attention="triton-balanced", cuda_graphs=True, graph_chunks=True, fused_ops=True)
PART10_OVERLAP = dict(PART10, overlap=True)
# Part 10's last step: every forward one CUDA graph, attention inside (no eager attention
# launches between graph pieces), host one step ahead.
PART10_WHOLE = dict(PART10_OVERLAP, graph_chunks=False, whole_graphs=True)
# Its comparisons, by the names their rows carry (the book reads them by these names).
WHOLE_PART = "part 10 whole graphs"
WHOLE_VS_PIECEWISE = "part 10: whole vs piecewise graphs"
WHOLE_FUSED_VS_CHUNKED = f"{WHOLE_PART}: fused vs chunked"
WHOLE_SEEDS = f"{WHOLE_PART} seeds: fused vs chunked"
# And with decode-sized batches' gate_up GEMM carrying the MLP's activation in its epilogue.
PART10_GATE_UP = dict(PART10_WHOLE, gate_up_silu=True)
GATE_UP_PART = "part 10 gate_up+SiLU"
GATE_UP_VS_CUBLAS = "part 10: gate_up+SiLU in one kernel vs cuBLAS"
GATE_UP_FUSED_VS_CHUNKED = f"{GATE_UP_PART}: fused vs chunked"
# And with a mixed step's decode attention on a second stream beside its chunks' attention.
PART10_PARALLEL = dict(PART10_GATE_UP, attention="triton-parallel")
PARALLEL_VS_SERIAL = "part 10: decode attention beside the chunks' vs after them"
# Fused against chunked with the engine the series ends on (its default on a GPU).
FINAL_PART = "part 10 as the series ends"
FINAL_FUSED_VS_CHUNKED = f"{FINAL_PART}: fused vs chunked"
FINAL_SEEDS = f"{FINAL_PART} seeds: fused vs chunked"

# What a run's rows give a comparison: the served rate of an open-loop run, the output
# throughput of a closed run's median row (both: larger is faster).
METRIC = {"arrivals": "served_rate", "sensitivity": "served_rate", "closed": "output_throughput"}


def _fused_vs_chunked(part: str, cfg: dict, pairs: int, make=_arrivals, **kw) -> Pairs:
    return Pairs(f"{part}: fused vs chunked", make(engine="fused", **cfg, **kw), make(engine="chunked", **cfg, **kw),
                 pairs)


def _gate(cfg: dict) -> RunSpec:
    return RunSpec.build("gates", profile="full", **cfg)


def _step_trace(engine: str, cfg: dict) -> RunSpec:
    return RunSpec.build("step_trace", profile="full", engine=engine, **cfg)


# ---------------------------------------------------------------------------- phases
# Durations on the H200 (data/paired/campaign_*.log): a part-10 arrivals run at 40/s with 400
# requests takes 13-16 s (construction ~1 s, the rest serving), part 9 19-24 s, part 7 eager
# 45-52 s fused and 70-83 s chunked at 400 requests; a step trace 6 s; the gates 18-31 s (the
# first run of a process also loads the model). The driver bounds a run only by one of the same
# experiment it has timed, so each phase starts every experiment's first run early.

def _fast(pairs: int) -> list:
    return [_gate(PART10), _gate(PART9), _step_trace("chunked", PART10), _step_trace("fused", PART10),
            _fused_vs_chunked("part 10", PART10, pairs),
            Pairs("fused: part 10 vs part 9", _arrivals(engine="fused", **PART10), _arrivals(engine="fused", **PART9),
                  pairs)]


def _series(pairs: int) -> list:
    return [_fused_vs_chunked("part 7", PART7, pairs, n_requests=200), _fused_vs_chunked("part 9", PART9, pairs)]


def _part10(pairs: int) -> list:
    # ~6.5 min: gates 30 s, four step traces 25 s (without overlap too: the host gap with and
    # without, at one commit), then 2 x 12 runs of 13-15 s. Both comparisons at 40/s offered.
    return [_gate(PART10_OVERLAP),
            *(_step_trace(engine, cfg) for cfg in (PART10_OVERLAP, PART10) for engine in ("chunked", "fused")),
            Pairs("part 10: overlap vs not", _arrivals(engine="fused", **PART10_OVERLAP),
                  _arrivals(engine="fused", **PART10), pairs),
            _fused_vs_chunked("part 10 + overlap", PART10_OVERLAP, pairs)]


CLOSED_CELLS = (("mixed", 8), ("mixed", 32), ("mixed", 64), ("p256", 8), ("p256", 32))


def _closed_phase(pairs: int) -> list:
    # ~7 min; a second short command if the closed runs are at their bound. Per cell 12 runs
    # of (construction ~1.5 s + a warm-up pass + a measured pass), ~4.5 min, at most ~7.5: eager
    # closed walls were 4.0 / 5.7 / 9.5 s (mixed b8/b32/b64) and 1.9 / 2.5 s (p256 b8/b32); part
    # 10's steps are ~3x faster, so ~1.2-3 s a pass (twice that is the bound). Last the peer's
    # closed run of the book's mixed b64 batch, compared there with ours (~2.5 min: after one
    # warm-up its first pass took 50 s, the next ~21 s; 2 warm-ups and 3 passes).
    return [*(_fused_vs_chunked(f"closed {workload} b{batch}", PART10_OVERLAP, pairs, make=_closed,
                                workload=workload, batch_size=batch) for workload, batch in CLOSED_CELLS),
            RunSpec.build("peer", profile="full", workload="mixed", batch_size=64, warmups=2, repeats=3)]


PEER_COMPARISON = "128 x 128: fused vs transformers"
PEER_WHOLE_COMPARISON = "128 x 128, whole graphs: fused vs transformers"
PEER_GATE_UP_COMPARISON = "128 x 128, gate_up+SiLU: fused vs transformers"
PEER_PARALLEL_COMPARISON = "128 x 128, second stream: fused vs transformers"


def _closed_whole(pairs: int) -> list:
    # ~4 min: the closed cells with the engine the series ends on (no peer run); whole graphs
    # take part 10 + overlap's ~1.2-3 s passes down a little, so 60 runs of ~4 s with construction.
    return [_fused_vs_chunked(f"closed whole graphs {workload} b{batch}", PART10_WHOLE, pairs, make=_closed,
                              workload=workload, batch_size=batch) for workload, batch in CLOSED_CELLS]


def _peer_bracket(comparison: str, cfg: dict) -> list:
    """Our fused engine closed on 128 mixed prompts x 128 new tokens, before and after
    transformers' continuous batching on the same requests."""
    ours = _closed(engine="fused", workload="mixed_fixed", batch_size=128, warmups=1, repeats=3,
                   comparison=comparison, **cfg)
    return [ours.but(repeat=1),
            RunSpec.build("peer", profile="full", workload="mixed_fixed", batch_size=128, warmups=2, repeats=3),
            ours.but(repeat=2)]


def _peer(pairs: int) -> list:
    # ~5 min. Part 10's target (ours: 4 passes of ~3 s each time; the peer, from its b64 run
    # scaled to twice the prompts and 1.6x the output tokens: 2 warm-up and 3 measured passes of
    # ~36 s, the first ~2.4x that).
    return _peer_bracket(PEER_COMPARISON, PART10_OVERLAP)


def _peer_open(pairs: int) -> list:
    # ~4.5 min: transformers served 1.7 req/s at 40/s offered (236 s for 400 requests), so 100
    # requests each: at 2/s (just past its capacity, ~60 s) and 1/s (under it, ~100 s), each
    # after 2 recorded warm-up batches (~30 s). The shorter first, so the driver's estimate of
    # the second starts it in the same command.
    return [RunSpec.build("peer_arrivals", profile="full", rate=rate, n_requests=100, warmups=2)
            for rate in (2.0, 1.0)]


# With overlap both engines kept up with 40/s offered (part10 phase, H200: 34.4 req/s served by
# either, the draw's own bound with the drain), so their capacities lie above it: the sweep and
# the seeds offer more.
SATURATING_RATE = 80.0


def _knees(pairs: int) -> list:
    # ~3 min: both engines once per rate, from well past their knees (40/s no longer saturates
    # either with overlap) down to under them: 14 runs of ~400/min(rate, capacity) s, 8-15 s.
    return [Sweep("part 10 + overlap sweep: fused vs chunked", _arrivals(engine="fused", **PART10_OVERLAP),
                  _arrivals(engine="chunked", **PART10_OVERLAP), "rate", (SATURATING_RATE, 64.0, 52.0, 44.0, 36.0, 28.0))]


def _small_pool(pairs: int) -> list:
    # ~4 min, at most ~8: the KV pool capped at 0.5 GiB at 40/s offered, 200 requests a run.
    # Eager, the capped pool served 3.3 req/s; part 10's ~3x faster steps should turn it over
    # at ~10 req/s, so 12 runs of ~20 s (of ~40 s if it serves only 5 req/s).
    return [_fused_vs_chunked("small pool", PART10_OVERLAP, pairs, pool_gib=0.5, n_requests=200)]


def _seeds(name: str, cfg: dict) -> Sweep:
    return Sweep(name, RunSpec.build("sensitivity", profile="full", engine="fused", rate=SATURATING_RATE, **cfg),
                 RunSpec.build("sensitivity", profile="full", engine="chunked", rate=SATURATING_RATE, **cfg),
                 "seed", tuple(range(8)), pooled=True)


def _sensitivity(pairs: int) -> list:
    # ~3.5 min: capacity at 80/s offered (past both knees) on 8 draws (seeds), fused and chunked
    # on each, 18 runs of ~10 s with the warm-ups. The pair ratios over seeds give the gain with
    # its spread over draws.
    return [_seeds("part 10 + overlap seeds: fused vs chunked", PART10_OVERLAP)]


def _seeds_whole(pairs: int) -> list:
    # ~3.5 min, as `sensitivity`, with the engine the series ends on.
    return [_seeds(WHOLE_SEEDS, PART10_WHOLE)]


def _eager(pairs: int) -> list:
    # ~13 min, two commands (the second resumes): part 7 at 400 requests, 6 runs of ~50 s
    # (fused) and 6 of ~78 s (chunked). With 200 requests the gain was +46% [+23, +55] over 5
    # pairs; twice the requests halve what one slow stretch weighs in a run. If the interval is
    # still wider than +-10 points, --pairs 9 adds four pairs (~8 min) to the same ABBA order.
    # The gate first (~30 s): part 7's configuration checked at the commit its pairs run at, and
    # on a fresh lease it loads the model and compiles the kernels before the first timed run.
    return [_gate(PART7), _fused_vs_chunked("part 7, 400 arrivals", PART7, pairs)]


def _decode_graphs(pairs: int) -> list:
    # ~4.5 min: the middle configuration of part 9 (decode-only forwards graphed, mixed ones
    # eager), 200 arrivals a run as part 7's first set: 12 runs of ~20 s (400-arrival runs of
    # this configuration served ~11 req/s, 36-52 s each), after its gate.
    return [_gate(DECODE_GRAPHS), _fused_vs_chunked("decode graphs", DECODE_GRAPHS, pairs, n_requests=200)]


def _gates(pairs: int) -> list:
    # ~2.5 min: every configuration the book reports, checked at one commit (run it with OUT
    # holding no gate rows: a stored gate is not run again), the engine the series ends on first.
    return [_gate(cfg) for cfg in (PART10_PARALLEL, PART10_GATE_UP, PART10_WHOLE, PART10_OVERLAP, PART10, PART9, DECODE_GRAPHS, PART7)]


def _whole(pairs: int) -> list:
    # ~8 min: gate (~35 s on a fresh lease: model load and compiles), two step traces (~15 s),
    # then two comparisons past both knees (80/s offered, where part 10 + overlap served ~40
    # req/s, 400 requests: runs of ~11 s, 12 each with the warm-ups, ~2.5 min a comparison).
    return [_gate(PART10_WHOLE), *(_step_trace(engine, PART10_WHOLE) for engine in ("chunked", "fused")),
            Pairs(WHOLE_VS_PIECEWISE, _arrivals(engine="fused", rate=SATURATING_RATE, **PART10_WHOLE),
                  _arrivals(engine="fused", rate=SATURATING_RATE, **PART10_OVERLAP), pairs),
            _fused_vs_chunked(WHOLE_PART, PART10_WHOLE, pairs, rate=SATURATING_RATE)]


def _gate_up(pairs: int) -> list:
    # ~8 min, as `whole`: gate, two step traces, then the one-kernel gate_up + activation
    # against cuBLAS and the activation kernel (both whole-graphed, fused) and fused vs chunked
    # with it, past both knees (80/s offered).
    return [_gate(PART10_GATE_UP), *(_step_trace(engine, PART10_GATE_UP) for engine in ("chunked", "fused")),
            Pairs(GATE_UP_VS_CUBLAS, _arrivals(engine="fused", rate=SATURATING_RATE, **PART10_GATE_UP),
                  _arrivals(engine="fused", rate=SATURATING_RATE, **PART10_WHOLE), pairs),
            _fused_vs_chunked(GATE_UP_PART, PART10_GATE_UP, pairs, rate=SATURATING_RATE)]


def _parallel(pairs: int) -> list:
    # ~4 min: gate, then the second stream against the engine without it (both gate_up,
    # whole-graphed, fused), past both knees (80/s offered).
    return [_gate(PART10_PARALLEL),
            Pairs(PARALLEL_VS_SERIAL, _arrivals(engine="fused", rate=SATURATING_RATE, **PART10_PARALLEL),
                  _arrivals(engine="fused", rate=SATURATING_RATE, **PART10_GATE_UP), pairs)]


def _peer_gate_up(pairs: int) -> list:
    # ~5 min, as `peer_whole`, with gate_up+SiLU (OUT holding no peer rows).
    return _peer_bracket(PEER_GATE_UP_COMPARISON, PART10_GATE_UP)


def _peer_parallel(pairs: int) -> list:
    # ~5 min, as `peer_whole`, with the engine part 10 ends on (its default on a GPU: the second
    # stream, 128 keys per prefill iteration; OUT holding no peer rows).
    return _peer_bracket(PEER_PARALLEL_COMPARISON, PART10_PARALLEL)


def _peer_whole(pairs: int) -> list:
    # ~5 min, as `peer`, with the engine the series ends on. Run it with OUT holding no peer
    # rows, or the peer's run (the same spec as `peer`'s) counts as done.
    return _peer_bracket(PEER_WHOLE_COMPARISON, PART10_WHOLE)


def _final(pairs: int) -> list:
    # ~2.5 min, as `whole`'s second comparison: fused vs chunked past both knees (80/s offered,
    # 400 arrivals) with the engine the series ends on. Its gate ran in the `parallel` phase.
    return [_fused_vs_chunked(FINAL_PART, PART10_PARALLEL, pairs, rate=SATURATING_RATE)]


def _seeds_final(pairs: int) -> list:
    # ~3.5 min, as `seeds_whole`, with the engine the series ends on.
    return [_seeds(FINAL_SEEDS, PART10_PARALLEL)]


PHASES = {"fast": _fast, "series": _series, "part10": _part10, "closed": _closed_phase, "peer": _peer,
          "peer_open": _peer_open, "knees": _knees, "small_pool": _small_pool, "sensitivity": _sensitivity,
          "eager": _eager, "decode_graphs": _decode_graphs, "gates": _gates,
          "whole": _whole, "peer_whole": _peer_whole, "seeds_whole": _seeds_whole,
          "closed_whole": _closed_whole, "gate_up": _gate_up, "peer_gate_up": _peer_gate_up,
          "parallel": _parallel, "peer_parallel": _peer_parallel, "final": _final, "seeds_final": _seeds_final}


def plan(phase: str, pairs: int = 5) -> list:
    """Items in priority order: a RunSpec, Pairs or a Sweep."""
    if phase not in PHASES:
        raise SystemExit(f"unknown phase {phase!r}; choose one of {', '.join(PHASES)}")
    return PHASES[phase](pairs)


def expand(items: list) -> list[RunSpec]:
    specs = []
    for item in items:
        specs += item.specs() if isinstance(item, (Pairs, Sweep)) else [item]
    return specs


def result_set(out: Path, spec: RunSpec) -> Path:
    return out / "paired" / spec.experiment


def _done(out: Path, spec: RunSpec) -> bool:
    from . import runs  # torch and the engine: not for a page that reads results

    return runs.already_done(result_set(out, spec), spec.resolved())


def _describe(item) -> str:
    if isinstance(item, Pairs):
        return f"{item.name} ({item.a.experiment}, {item.pairs} pairs)"
    if isinstance(item, Sweep):
        return f"{item.name} ({item.a.experiment}, {item.option} {', '.join(map(str, item.values))})"
    what = {k: v for k, v in item.given().items() if k not in ("experiment", "profile")}
    return f"{item.experiment} {what}"


def show_plan(phase: str, out: Path, pairs: int = 5) -> list[RunSpec]:
    """Print each item of the phase with its runs left; the runs left, in order."""
    todo = []
    print(f"campaign {phase}:", flush=True)
    for item in plan(phase, pairs):
        specs = item.specs() if isinstance(item, (Pairs, Sweep)) else [item]
        left = [s for s in specs if not _done(out, s)]
        print(f"  {_describe(item)}: {len(left)} of {len(specs)} runs to do", flush=True)
        todo += left
    return todo


def run_phase(phase: str, out: Path, limit_s: float, pairs: int = 5) -> int:
    """Run what is left of the phase; returns how many runs remain or failed (0: the phase
    is done). A run that raises is reported and skipped; running the phase again retries it."""
    from . import runs  # torch and the engine: only where runs are made

    started = time.monotonic()
    longest = {}  # experiment -> the longest run seen, seconds: what the next one may take
    failed = 0
    todo = show_plan(phase, out, pairs)
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
        print(f"  [{i + 1}/{len(todo)}] {spec.experiment} {what} {took:.0f} s" + _headline(new), flush=True)
    return failed


def _headline(new: list[dict]) -> str:
    if not new:
        return ""
    if new[0].get("served_rate") is not None:
        return f", served {new[0]['served_rate']:.2f} req/s"
    median = [r for r in new if r.get("stat") == "median"]
    return f", median wall {median[0]['wall_s']:.2f} s" if median else ""


# ---------------------------------------------------------------------------- report
def stored(out: Path, specs: list[RunSpec]) -> dict[RunSpec, dict]:
    """Each finished run's row (of a closed run, its median row), by spec."""
    found = {}
    for experiment in {s.experiment for s in specs}:
        by_options = {}
        for r in rows.read_rows(out / "paired" / experiment):
            if r.get("stat", "median") == "median":
                by_options[tuple(sorted(stored_options(r).items()))] = r
        for s in specs:
            key = tuple(sorted(s.resolved().options().items()))
            if s.experiment == experiment and key in by_options:
                found[s] = by_options[key]
    return found


def measured(out: Path, specs: list[RunSpec]) -> dict[RunSpec, float]:
    """Each finished run's value (METRIC; of a closed run, its median row), by spec."""
    return {s: r[METRIC[s.experiment]] for s, r in stored(out, specs).items()}


@dataclass(frozen=True)
class Result:
    """What the rows under OUT hold of one comparison: `runs`, the row of each of its runs that
    finished (recorded warm-ups included), by spec."""
    item: Pairs | Sweep
    runs: dict

    @property
    def metric(self) -> str:
        return METRIC[self.item.a.experiment]

    def pairs(self) -> list[tuple[RunSpec, RunSpec]]:
        """The complete pairs (A's spec, B's spec), in the plan's order; warm-ups are no pair's."""
        return [(a, b) for a, b in self.item.pair_specs() if a in self.runs and b in self.runs]

    def values(self) -> tuple[list[float], list[float]]:
        """The metric of each complete pair's A run and B run."""
        done = self.pairs()
        return [self.runs[a][self.metric] for a, _ in done], [self.runs[b][self.metric] for _, b in done]

    def comparison(self) -> paired.Comparison | None:
        """A/B as a paired ratio with its bootstrap interval; None without a complete pair, or for
        a sweep over values that are each a point of their own (rates)."""
        if not self.pairs() or (isinstance(self.item, Sweep) and not self.item.pooled):
            return None
        return paired.compare_pairs(*self.values())


def results(phase: str, out: Path, pairs: int = 5) -> list[Result]:
    """Each comparison of the phase (its Pairs and Sweeps, in plan order) with the rows under OUT."""
    items = [item for item in plan(phase, pairs) if isinstance(item, (Pairs, Sweep))]
    found = stored(out, expand(items))
    return [Result(item, {s: found[s] for s in item.specs() if s in found}) for item in items]


def report(phase: str, out: Path, pairs: int = 5) -> list[str]:
    """One line per comparison of the phase, from the rows under OUT: A/B of the metric as a
    paired ratio with its bootstrap interval (a sweep over rates: each rate's pair)."""
    lines = []
    for result in results(phase, out, pairs):
        item = result.item
        what = f"{item.name}: {item.a.engine} / {item.b.engine}" if item.a.engine != item.b.engine else item.name
        c = result.comparison()
        if not result.pairs():
            lines.append(f"{what}: no complete pair yet")
        elif c is None:
            lines += [f"{what} at {getattr(a, item.option):g}: {result.metric} {x:.3g} / {y:.3g} = {x / y:.3g}"
                      for (a, _), x, y in zip(result.pairs(), *result.values())]
        else:
            lines.append(f"{what}: {result.metric} {c.describe()}")
    return lines


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m fusedlib.bench.campaign", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path, help="campaign folder; rows under OUT/paired/")
    p.add_argument("--phase", required=True, choices=tuple(PHASES))
    p.add_argument("--limit", type=float, default=540.0, help="seconds this command may run (default 540)")
    p.add_argument("--pairs", type=int, default=5, help="ABBA pairs per comparison (default 5)")
    p.add_argument("--dry-run", action="store_true", help="print the phase's plan and what is left; run nothing")
    a = p.parse_args(argv)
    if a.limit <= 0 or a.pairs < 1:
        p.error("--limit must be > 0 and --pairs >= 1")
    if a.dry_run:
        show_plan(a.phase, a.out, a.pairs)
        sys.exit(0)
    left = run_phase(a.phase, a.out, a.limit, a.pairs)
    for line in report(a.phase, a.out, a.pairs):
        print(f"  {line}")
    print(f"campaign {a.phase}: {'done' if left == 0 else f'{left} runs left; run it again to resume'}")
    sys.exit(0)


if __name__ == "__main__":
    main()


__all__ = ["Pairs", "Sweep", "Result", "plan", "expand", "run_phase", "show_plan", "report", "results", "measured",
           "stored", "PHASES", "PART7", "DECODE_GRAPHS", "PART9", "PART10", "PART10_OVERLAP", "PART10_WHOLE",
           "WHOLE_VS_PIECEWISE", "WHOLE_FUSED_VS_CHUNKED", "WHOLE_SEEDS", "PART10_GATE_UP", "GATE_UP_VS_CUBLAS",
           "PART10_PARALLEL", "PARALLEL_VS_SERIAL",
           "GATE_UP_FUSED_VS_CHUNKED", "PEER_GATE_UP_COMPARISON", "PEER_PARALLEL_COMPARISON"]
