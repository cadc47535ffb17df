"""Each experiment's planned runs: one function per notebook, its keyword arguments the
notebook's parameters (None: the profile's default, `DEFAULTS`). A plan is the RunSpecs in run
order; `runner.execute` runs those without rows yet (`runner.missing`). The scale plan's second
stage runs at the best setting the first found, so every plan function takes the current rows.

Capacity is measured in steady state (metrics.steady): Poisson arrivals at multiples of a
setting's capacity estimate, around it (the sweep) and past it (the top multiple: the paired
rounds and the scale grid), enough that the queue stays non-empty over most of a run.
`estimate_seconds(plan)` is the plan's device time, from the same estimates. No torch here.
"""
from __future__ import annotations

import inspect

from .spec import CHECKS, ENGINES, KERNEL_KINDS, PROFILES, SERIES, RunSpec, SpecError
from ..config import PARTS

# Capacity estimates, requests/s, from the drain rates (served_rate) past saturation of the
# fused engine in the rows committed before the steady method (H100; those rows are in git
# history, the drain grid's reading in data/not_kept.csv): parts 7-10 at 32 rows and 512-token chunks (60-240 arrivals at
# 40-160/s), part 11's grid (200-768 arrivals at 400/s; 256 x 2048 from its paired rounds).
# A drain reads low (part 10: 48 over 240 arrivals, ~50 over 2,000), so the steady rate sits
# at or above 1x and the multiples from 1.25x up are past it; the chunked engine's capacity
# is lower still (the same multiples saturate it sooner).
# Parts 7-9 since, from their steady rates (fused, 400 arrivals, H100): part 7 11.4 and part 8
# 10.2 req/s (the drain-based 9.0 and 8.0 put one swept rate of three past capacity: no
# plateau), part 9 11.1; each now puts one rate below capacity and two past it.
# Part 12 (part 11's best setting with Hopper-shaped kernels): its steady rate with them, 103-109
# req/s (H100, 5 pairs); from the 95 first estimated, its soak (twice the estimate) ran at 1.8x.
CAPACITY_ESTIMATES = {"part7": 11.4, "part8": 10.2, "part9": 11.0, "part10": 48.0, "part12": 105.0}
SCALE_ESTIMATES = {(256, 2048): 79.0, (256, 8192): 69.6, (256, 512): 50.5, (128, 2048): 65.2, (128, 8192): 61.5,
                   (128, 512): 58.1, (64, 2048): 50.8, (64, 8192): 47.5, (64, 512): 50.3, (32, 2048): 42.0,
                   (32, 8192): 40.6, (32, 512): 39.4}
MULTIPLES = (0.8, 1.0, 1.25, 1.5, 2.0)

DEFAULTS = {
    "full": {
        "gates": dict(configs=SERIES + ("part11", "part12")),
        # Part 7-10's step census; part 11's census is a saturated run at its best setting (the
        # fused engine, 256 rows x 2,048-token chunks) offered twice the setting's estimate:
        # 1,500 arrivals (~20 s at ~80 req/s served), its profiler window after 500 completions.
        # Part 12's is the same run at its own estimate.
        "census": dict(configs=SERIES + ("part11", "part12"), engines=ENGINES,
                       saturated={c: dict(setting=(256, 2048), engines=("fused",), multiple=2.0, n_requests=1500)
                                  for c in ("part11", "part12")}),
        "attention": dict(backends=("triton", "triton-splitkv", "triton-parallel")),
        # 400 arrivals a run, the reference's count: at 32 rows the steady window holds all but
        # about one batch (~90%). Pairs: 5 at part 10's headline, 3 at the eager parts, whose
        # runs are ~15x longer (400 arrivals at ~5 req/s is 80 s). Part 12 runs 256 rows: 2,000
        # arrivals, 5 pairs (1,500 left 60-65% in the steady window, which leaves out the first
        # batch's 256 completions and the last batch's drain; the issue asks for at least 60%). The eager parts' sweep is their
        # best engine's (the fused one; the chunked one runs at the top rate, the pairs' round 0)
        # at three multiples, one below the estimate and two past it: all five multiples for both
        # engines would be ~42 minutes of an H100 for parts 7-9, this plan ~22.
        "capacity": dict(configs=SERIES + ("part12",), capacity=CAPACITY_ESTIMATES,
                         multiples={**{c: (0.8, 1.25, 2.0) for c in ("part7", "part8", "part9")},
                                    "part10": MULTIPLES, "part12": MULTIPLES},
                         sweep_engines={**{c: ("fused",) for c in ("part7", "part8", "part9")},
                                        "part10": ENGINES, "part12": ENGINES},
                         n_requests={**{c: 400 for c in SERIES}, "part12": 2000},
                         rounds={"part7": 3, "part8": 3, "part9": 3, "part10": 5, "part12": 5}),
        # The peer's closed workload: 48 requests (a batch and a half at part 10's 32 rows), 3
        # rounds; transformers' runs are the slow ones (~16 s a pass on an H100, two passes a
        # run), and the device time for them is short.
        "peer": dict(configs=("part10", "part11"), n_requests=48, rounds=3),
        # The grid: every max batch x chunk budget, the fused engine at 2x each cell's estimate.
        # Which setting wins is the open question (the drain grid ranked 256 rows first, 11%
        # apart over its chunk budgets, but a drain undercounts large batches most: theirs is the
        # longest tail). The best cell then gets the sweep (the fused engine) and 5 pairs.
        # Arrivals per run: 600 at 32 rows (~84% in the steady window), 1,500 at 64 and 128,
        # 2,000 at 256 (1,500 held 57-65% there: the first batch's 256 and the drain are left out).
        "scale": dict(batches=(256, 128, 64, 32), chunks=(2048, 8192, 512), capacity=SCALE_ESTIMATES,
                      multiples=MULTIPLES, n_requests={32: 600, 128: 1500, 256: 2000}, rounds=5,
                      sweep_engines=("fused",)),
        # Part 12 (part 11's best setting, 256 rows x 2,048-token chunks) offered twice its
        # estimate: 10,000 arrivals, served at capacity (~95 req/s: under 2 minutes).
        "soak": dict(config="part12", multiple=2.0, n_requests=10_000),
    },
    "smoke": {
        # The tiny model on a CPU: estimates of what it serves (its capacity runs at 32 rows
        # rarely fill the batch; the scale grid's 2 and 4 rows do), counts that keep
        # `make run-all PROFILE=smoke` to about two minutes.
        "gates": dict(configs=SERIES),
        "census": dict(configs=SERIES + ("part11", "part12"), engines=ENGINES,
                       saturated={c: dict(setting=(4, 32), engines=("fused",), multiple=5.0, n_requests=40)
                                  for c in ("part11", "part12")}),
        "attention": dict(backends=("triton", "triton-splitkv", "triton-parallel")),
        "capacity": dict(configs=SERIES + ("part12",), capacity={c: 100.0 for c in SERIES + ("part12",)},
                         multiples=(0.5, 2.0), sweep_engines=ENGINES, n_requests=12,
                         rounds={c: 2 for c in SERIES + ("part12",)}),
        "peer": dict(configs=("part10", "part11"), n_requests=6, rounds=2),
        "scale": dict(batches=(2, 4), chunks=(16, 32), capacity={(b, c): 40.0 for b in (2, 4) for c in (16, 32)},
                      multiples=(0.5, 2.0), n_requests=12, rounds=2, sweep_engines=("fused",)),
        "soak": dict(config="part12", setting=(4, 32), multiple=2.0, n_requests=40),
    },
}

# What estimate_seconds charges besides the runs, by profile: a notebook's process loading the
# model; its first engine build (kernels compiled, from a cold Triton cache on a fresh
# machine, and graphs captured) and each later one (the committed rows on the H100 show 1-2 s
# between runs that built a new engine); transformers' copy of the model (each of its runs
# makes one); each run's own overhead (drawing the workload). Closed runs (the peer) take two
# passes of n_requests x the fixed budget at `tok_s` tokens/s (data/peer.jsonl, part 10 on an
# H100: ours ~5,900 and ~4,800, transformers ~380). A saturated census runs in a process of its
# own (the model loaded and its engine built there) and reads its profiler window after the
# run (`profile_s`). The kernel runs load no model: `kernel_s` by kind, from their calls
# (prompt: 4 cases x 5 contenders x 100 timed calls, SDPA's fp32 reference, two prompt
# kernels compiled from a cold cache; decode and gemm: a few hundred calls after a 1 GiB
# flush each, a compile or two). Each errs long.
COSTS = {
    "full": dict(model_load_s=15.0, first_build_s=30.0, engine_build_s=5.0, transformers_build_s=10.0,
                 run_overhead_s=1.0, profile_s=10.0,
                 tok_s={"fused": 5900.0, "chunked": 4800.0, "transformers": 380.0},
                 kernel_s={"prompt": 35.0, "decode": 10.0, "gemm": 10.0}),
    "smoke": dict(model_load_s=5.0, first_build_s=1.0, engine_build_s=0.5, transformers_build_s=2.0,
                  run_overhead_s=0.2, profile_s=2.0,
                  tok_s={"fused": 800.0, "chunked": 800.0, "transformers": 1000.0},
                  kernel_s={"prompt": 3.0, "decode": 2.0, "gemm": 1.0}),
}


def _default(profile: str, experiment: str, name: str, value):
    return DEFAULTS[profile][experiment][name] if value is None else value


def _configs(configs, default=SERIES) -> list[str]:
    """The configurations asked for, each checked (before a default by configuration is looked up)."""
    for c in configs or ():
        if c not in PARTS:
            raise SpecError("config", f"must be {CHECKS['config'][1]}, got {c!r}")
    return list(configs or default)


def _per_config(value, config: str):
    return value[config] if isinstance(value, dict) else value


def _rounds(rounds) -> int:
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise SpecError("rounds", f"must be an integer >= 1, got {rounds!r}")
    return rounds


def _pairs(rounds: int, spec_for) -> list[RunSpec]:
    """Rounds 1..rounds-1 of a paired comparison, fused and chunked in ABBA order (round 0 is
    the sweep's run at the same rate, fused first), seed = round: a new workload draw a pair."""
    out = []
    for r in range(1, _rounds(rounds)):
        for engine in (ENGINES if r % 2 == 0 else ENGINES[::-1]):
            out.append(spec_for(engine, r))
    return out


def gates(profile: str, configs=None, rows=()) -> list[RunSpec]:
    """One gates run per configuration; part11 and part12 at their own max_batch and chunk_tokens
    (256 x 8,192 and 256 x 2,048), part12 also at 8,192: its kernels at part 11's larger budget."""
    p11, p12 = PARTS["part11"], PARTS["part12"]
    sizes = {"part11": ((p11.max_batch, p11.chunk_tokens),),
             "part12": ((p12.max_batch, p12.chunk_tokens), (p12.max_batch, p11.chunk_tokens))}
    return [RunSpec.build("gates", profile, config=c, max_batch=b, chunk_tokens=t)
            for c in _configs(configs, DEFAULTS[profile]["gates"]["configs"]) for b, t in sizes.get(c, ((None, None),))]


def census(profile: str, configs=None, engines=None, rows=()) -> list[RunSpec]:
    """Per configuration and engine, a step census; for a configuration with a saturated
    setting in DEFAULTS (part11), the saturated census instead: its engines (default: the
    fused one) at that setting, offered a multiple of the setting's capacity estimate."""
    d, out = DEFAULTS[profile]["census"], []
    for c in _configs(configs, d["configs"]):
        sat = d["saturated"].get(c)
        if sat is None:
            out += [RunSpec.build("census", profile, config=c, engine=e) for e in engines or d["engines"]]
            continue
        (batch, chunk), estimate = sat["setting"], setting_estimate(profile, c, sat["setting"])
        out += [RunSpec.build("census", profile, config=c, engine=e, max_batch=batch, chunk_tokens=chunk,
                              rate=round(sat["multiple"] * estimate, 1), n_requests=sat["n_requests"], seed=0)
                for e in engines or sat["engines"]]
    return out


def attention(profile: str, backends=None, rows=()) -> list[RunSpec]:
    return [RunSpec.build("attention", profile, attention=b)
            for b in _default(profile, "attention", "backends", backends)]


def offered_rates(estimate: float, multiples) -> list[float]:
    """The sweep's offered rates: each multiple of a capacity estimate, to 0.1 requests/s."""
    return sorted({round(m * estimate, 1) for m in multiples})


def _estimate(estimates: dict, key, option: str, what: str) -> float:
    if key not in estimates:
        raise SpecError(option, f"no capacity estimate for {what} in plans.DEFAULTS: give the offered rates")
    return estimates[key]


def capacity(profile: str, rounds=None, configs=None, rates=None, n_requests=None, rows=()) -> list[RunSpec]:
    """Per configuration: the sweep's engines at each offered rate (round 0, seed 0), both engines
    at the top rate (the pairs' round 0), paired rounds 1..rounds-1 there. `rates` (None: the
    multiples of the configuration's estimate), `rounds` and `n_requests`: one value (a list
    for rates), a dict by configuration, or None for the profile's."""
    d, out = DEFAULTS[profile]["capacity"], []
    for c in _configs(configs, d["configs"]):
        sweep = sorted(_per_config(rates, c)) if rates is not None else \
            offered_rates(_estimate(d["capacity"], c, "config", c), _per_config(d["multiples"], c))
        n = _per_config(_default(profile, "capacity", "n_requests", n_requests), c)

        def spec(engine, r, rate=sweep[-1]):
            return RunSpec.build("capacity", profile, config=c, engine=engine, rate=rate, n_requests=n, seed=r, round=r)
        out += [spec(e, 0, rate) for rate in sweep[:-1] for e in _per_config(d["sweep_engines"], c)]
        out += [spec(e, 0) for e in ENGINES]
        out += _pairs(_per_config(_default(profile, "capacity", "rounds", rounds), c), spec)
    return out


def peer(profile: str, rounds=None, configs=None, n_requests=None, rows=()) -> list[RunSpec]:
    """Per configuration (its max_batch and chunk_tokens), `rounds` rounds on the same closed
    workload, each transformers' continuous batching then our engines, fused and chunked
    alternating which goes first: the peer's runs interleaved with ours."""
    n, out = _default(profile, "peer", "n_requests", n_requests), []
    for c in _configs(configs, DEFAULTS[profile]["peer"]["configs"]):
        kw = dict(config=c, max_batch=PARTS[c].max_batch, chunk_tokens=PARTS[c].chunk_tokens, n_requests=n)
        for r in range(_rounds(_default(profile, "peer", "rounds", rounds))):
            out += [RunSpec.build("peer", profile, engine=e, round=r, **kw)
                    for e in ("transformers", *(ENGINES if r % 2 == 0 else ENGINES[::-1]))]
    return out


def best_setting(rows, grid: dict) -> tuple[int, int] | None:
    """(max_batch, chunk_tokens) of the fused engine's highest steady rate over the scale grid
    (`grid`: (max_batch, chunk_tokens) -> the cell's offered rate; its round-0 runs); None
    until every cell has one."""
    steady = {(r["max_batch"], r["chunk_tokens"]): r["steady_rate"] for r in rows
              if r.get("engine") == "fused" and r.get("round") == 0 and r.get("steady_rate") is not None
              and grid.get((r.get("max_batch"), r.get("chunk_tokens"))) == r.get("rate")}
    if set(steady) != set(grid):
        return None
    return max(grid, key=lambda cell: steady[cell])


def _arrivals(n, max_batch: int) -> int:
    """Arrivals a run: `n`, or from {largest max_batch: arrivals} the first entry covering `max_batch`."""
    if not isinstance(n, dict):
        return n
    return next((count for batch, count in sorted(n.items()) if max_batch <= batch), n[max(n)])


def scale(profile: str, rounds=None, batches=None, chunks=None, rate=None, n_requests=None, sweep_rates=None,
          rows=()) -> list[RunSpec]:
    """Part 11: every max_batch x chunk_tokens cell (largest batch first), the sweep's engines at
    `rate` (default: the top multiple of the cell's estimate), round 0; once every cell has rows,
    at the fused engine's best cell the chunked engine at that rate, pairs, then the sweep."""
    # Pairs: rounds 1..rounds-1; the sweep: `sweep_rates`, default the multiples of the
    # estimate. A cell without an estimate where one is needed is refused before any run.
    d = DEFAULTS[profile]["scale"]
    batches, chunks, n = batches or d["batches"], chunks or d["chunks"], n_requests or d["n_requests"]
    cells = [(b, c) for b in batches for c in chunks]
    estimates = {cell: _estimate(d["capacity"], cell, "batches", f"max_batch {cell[0]} x chunk_tokens {cell[1]}")
                 for cell in cells if not (rate and sweep_rates)}
    grid = {cell: float(rate) if rate else max(offered_rates(estimates[cell], d["multiples"])) for cell in cells}

    def spec(cell, engine, r, at):
        return RunSpec.build("scale", profile, config="part11", engine=engine, max_batch=cell[0], chunk_tokens=cell[1],
                             rate=at, n_requests=_arrivals(n, cell[0]), seed=r, round=r)
    out = [spec(cell, e, 0, at) for cell, at in grid.items() for e in d["sweep_engines"]]
    best = best_setting(rows, grid)
    if best is not None:
        top = grid[best]
        out += [spec(best, e, 0, top) for e in ENGINES]
        out += _pairs(_default(profile, "scale", "rounds", rounds), lambda engine, r: spec(best, engine, r, top))
        sweep = sweep_rates or offered_rates(estimates[best], d["multiples"])
        out += [spec(best, e, 0, float(at)) for at in sorted(sweep) for e in d["sweep_engines"]]
    return list(dict.fromkeys(out))  # the grid's run at the best setting is the pairs' round 0


def kernels(profile: str, kernels=None, rows=()) -> list[RunSpec]:
    """One run per kernel kind (prompt attention, decode attention, the layers' GEMMs)."""
    return [RunSpec.build("kernels", profile, kernel=k) for k in kernels or KERNEL_KINDS]


def soak(profile: str, n_requests=None, rate=None, rows=()) -> list[RunSpec]:
    """One run: the profile's soak configuration (full: part12, 256 rows x 2,048-token chunks;
    smoke: its setting) and the fused engine, `n_requests` arrivals at `rate` (default: the
    profile's multiple of the setting's capacity estimate, past capacity)."""
    d = DEFAULTS[profile]["soak"]
    c, n = d["config"], _default(profile, "soak", "n_requests", n_requests)
    batch, chunk = d.get("setting") or (PARTS[c].max_batch, PARTS[c].chunk_tokens)
    at = rate if rate is not None else round(d["multiple"] * setting_estimate(profile, c, (batch, chunk)), 1)
    return [RunSpec.build("soak", profile, config=c, engine="fused", max_batch=batch, chunk_tokens=chunk, rate=at,
                          n_requests=n, seed=0)]


PLANS = {"gates": gates, "census": census, "attention": attention, "capacity": capacity, "peer": peer,
         "scale": scale, "soak": soak, "kernels": kernels}


def plan(experiment: str, profile: str, params: dict, rows=()) -> list[RunSpec]:
    """The experiment's plan from a notebook's parameters (those its plan function takes)."""
    fn = PLANS[experiment]
    taken = inspect.signature(fn).parameters
    return fn(profile, **{k: v for k, v in params.items() if k in taken and k not in ("profile", "rows")}, rows=rows)


def foreseen(experiment: str, profile: str, params: dict, rows=()) -> list[RunSpec]:
    """The plan as it will stand once run: for scale, where the grid's rows do not choose the
    best setting yet, each cell without a row stands in at its capacity estimate, so the
    second stage is planned at the setting the estimates put first."""
    planned = plan(experiment, profile, params, rows)
    if experiment != "scale":
        return planned
    guessed = [{"engine": s.engine, "round": s.round, "max_batch": s.max_batch, "chunk_tokens": s.chunk_tokens,
                "rate": s.rate, "steady_rate": capacity_estimate(s)} for s in planned]
    return plan(experiment, profile, params, [*guessed, *rows])  # a measured row wins over its guess


def setting_estimate(profile: str, config: str, setting: tuple[int, int], experiment: str | None = None) -> float:
    """A configuration's capacity estimate (requests/s) at (max_batch, chunk_tokens)."""
    # Its own where the capacity experiment has one (part12; the scale grid's runs go by setting
    # alone), else the grid's for the setting; where DEFAULTS has neither (a setting given by
    # hand), the profile's smallest, so a time estimate errs long.
    by_config, grid = DEFAULTS[profile]["capacity"]["capacity"], DEFAULTS[profile]["scale"]["capacity"]
    if experiment != "scale" and config in by_config:
        return by_config[config]
    known = by_config if experiment == "capacity" else grid
    return known.get(setting, min(known.values()))


def capacity_estimate(spec: RunSpec) -> float:
    """The capacity estimate (requests/s) of an open run's setting (`setting_estimate`)."""
    return setting_estimate(spec.profile, spec.config, (spec.max_batch, spec.chunk_tokens), spec.experiment)


def run_seconds(spec: RunSpec) -> float:
    """One run's device seconds, engine builds and model load aside."""
    # Open runs: arrivals at the offered rate served at most at capacity, then the last batch's
    # time in the engine (Little's law at a full batch: max_batch / capacity). Closed runs: two
    # passes of the workload's tokens at the engine's token rate.
    costs = COSTS[spec.profile]
    if spec.experiment == "peer":
        tokens = spec.n_requests * PROFILES[spec.profile].peer_new_tokens
        return 2 * tokens / costs["tok_s"][spec.engine] + costs["run_overhead_s"]
    if spec.experiment == "kernels":
        return costs["kernel_s"][spec.kernel]
    saturated_census = spec.experiment == "census" and spec.rate is not None
    if spec.experiment not in ("capacity", "scale", "soak") and not saturated_census:
        raise ValueError(f"no time estimate for {spec.experiment} runs")
    cap = capacity_estimate(spec)
    own_process = costs["model_load_s"] + costs["first_build_s"] + costs["profile_s"] if saturated_census else 0
    return own_process + spec.n_requests / min(spec.rate, cap) + spec.max_batch / cap + costs["run_overhead_s"]


def estimate_seconds(specs: list[RunSpec]) -> float:
    """A plan's device seconds, in its order in one process: the model's load, each run
    (`run_seconds`), each engine built. ValueError for an experiment without an estimate."""
    # runs.make_engine keeps one setting's two engines; transformers' runs build their own
    # model; gates, attention and the step census have no estimate; kernel and saturated census
    # runs count their runs only.
    if not specs:
        return 0.0
    costs = COSTS[specs[0].profile]
    # the kernel runs need no model; a saturated census loads its own (run_seconds)
    here = [s for s in specs if s.experiment not in ("kernels", "census")]
    total, setting, built, setting_seen = costs["model_load_s"] if here else 0.0, None, set(), False
    for s in specs:
        total += run_seconds(s)
        if s not in here:
            continue
        if s.engine == "transformers":
            total += costs["transformers_build_s"]
            continue
        if (s.config, s.max_batch, s.chunk_tokens) != setting:
            setting, built = (s.config, s.max_batch, s.chunk_tokens), set()
        if s.engine not in built:
            total += costs["engine_build_s" if built or setting_seen else "first_build_s"]
            built.add(s.engine)
            setting_seen = True
    return total
