"""Each experiment's planned runs: one function per notebook, its keyword arguments the
notebook's parameters (None: the profile's default, from `DEFAULTS`). A plan is a list of
RunSpecs in the order they run; `runner.execute` runs those without rows yet, and an
experiment is complete when every planned run has rows (`runner.missing`). The scale plan's
second stage depends on measured rows (it runs at the best setting the first stage found),
so every plan function takes the experiment's current rows. No torch here.
"""
from __future__ import annotations

import inspect

from .spec import CHECKS, ENGINES, SERIES, RunSpec, SpecError
from ..config import PARTS

DEFAULTS = {
    "full": {
        "gates": dict(configs=SERIES + ("part11",)),
        "attention": dict(backends=("triton", "triton-splitkv", "triton-parallel")),
        # Sweep rates per configuration, the last past both engines' capacity (the saturating
        # rate of the paired rounds); requests per run sized so the profile fits its time.
        "capacity": dict(rates={"part7": (4, 7, 40), "part8": (4, 8, 40), "part9": (8, 16, 80),
                                "part10": (20, 35, 160)},
                         n_requests={"part7": 60, "part8": 60, "part9": 120, "part10": 240}),
        "peer": dict(configs=("part10", "part11"), n_requests=128),
        # Largest batch first: a call that runs out of time leaves the settings part 11 is about.
        "scale": dict(batches=(256, 128, 64, 32), chunks=(2048, 8192, 512), rate=400.0,
                      sweep_fractions=(0.25, 0.5, 0.75), min_requests=200),
    },
    "smoke": {
        "gates": dict(configs=SERIES),
        "attention": dict(backends=("triton", "triton-splitkv", "triton-parallel")),
        "capacity": dict(rates={c: (40, 2000) for c in SERIES}, n_requests={c: 12 for c in SERIES}),
        "peer": dict(configs=("part10", "part11"), n_requests=6),
        "scale": dict(batches=(2, 4), chunks=(16, 32), rate=2000.0, sweep_fractions=(0.5,), min_requests=8),
    },
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
    for r in range(1, rounds):
        for engine in (ENGINES if r % 2 == 0 else ENGINES[::-1]):
            out.append(spec_for(engine, r))
    return out


def gates(profile: str, configs=None, rows=()) -> list[RunSpec]:
    """One gates run per configuration; part11 at its own max_batch and chunk_tokens (256, 8192)."""
    out = []
    for c in _configs(configs, DEFAULTS[profile]["gates"]["configs"]):
        big = c == "part11"
        out.append(RunSpec.build("gates", profile, config=c, max_batch=PARTS[c].max_batch if big else None,
                                 chunk_tokens=PARTS[c].chunk_tokens if big else None))
    return out


def census(profile: str, configs=None, engines=None, rows=()) -> list[RunSpec]:
    return [RunSpec.build("census", profile, config=c, engine=e) for c in _configs(configs) for e in engines or ENGINES]


def attention(profile: str, backends=None, rows=()) -> list[RunSpec]:
    return [RunSpec.build("attention", profile, attention=b)
            for b in _default(profile, "attention", "backends", backends)]


def capacity(profile: str, rounds: int = 5, configs=None, rates=None, n_requests=None, rows=()) -> list[RunSpec]:
    """Per configuration: both engines at each sweep rate (round 0, seed 0), the top rate last,
    then the paired rounds at the top rate. `rates` and `n_requests`: one value (a list of
    rates) for every configuration, or a dict by configuration."""
    out, rounds = [], _rounds(rounds)
    for c in _configs(configs):
        sweep = sorted(_per_config(_default(profile, "capacity", "rates", rates), c))
        n = _per_config(_default(profile, "capacity", "n_requests", n_requests), c)

        def spec(engine, r, rate=sweep[-1]):
            return RunSpec.build("capacity", profile, config=c, engine=engine, rate=rate, n_requests=n, seed=r, round=r)
        out += [spec(e, 0, rate) for rate in sweep for e in ENGINES] + _pairs(rounds, spec)
    return out


def peer(profile: str, rounds: int = 5, configs=None, n_requests=None, transformers_rounds: int = 1,
         rows=()) -> list[RunSpec]:
    """Per configuration (its max_batch and chunk_tokens): transformers' continuous batching for
    `transformers_rounds` rounds, then our engines for `rounds`, fused and chunked in ABBA order."""
    n, out, rounds = _default(profile, "peer", "n_requests", n_requests), [], _rounds(rounds)
    for c in _configs(configs, DEFAULTS[profile]["peer"]["configs"]):
        kw = dict(config=c, max_batch=PARTS[c].max_batch, chunk_tokens=PARTS[c].chunk_tokens, n_requests=n)
        out += [RunSpec.build("peer", profile, engine="transformers", round=r, **kw)
                for r in range(transformers_rounds)]
        out += [RunSpec.build("peer", profile, engine=e, round=r, **kw)
                for r in range(rounds) for e in (ENGINES if r % 2 == 0 else ENGINES[::-1])]
    return out


def best_setting(rows, batches, chunks, rate) -> tuple[int, int, float] | None:
    """(max_batch, chunk_tokens, served rate) of the fused engine's highest served rate over the
    scale grid's runs (round 0 at the grid's `rate`); None until each setting has one."""
    grid = {(r["max_batch"], r["chunk_tokens"]): r.get("served_rate") for r in rows
            if r.get("engine") == "fused" and r.get("round") == 0 and r.get("rate") == rate
            and r.get("served_rate") is not None}
    if not all((b, c) in grid for b in batches for c in chunks):
        return None
    (b, c), rate = max(((k, v) for k, v in grid.items() if k[0] in batches and k[1] in chunks), key=lambda kv: kv[1])
    return b, c, rate


def scale(profile: str, rounds: int = 5, batches=None, chunks=None, rate=None, n_requests=None, sweep_rates=None,
          rows=()) -> list[RunSpec]:
    """Part 11: configuration part11 at every max_batch x chunk_tokens, both engines, at `rate`
    (past capacity: the served rate is the capacity), round 0. Then, once that grid has rows, at
    the fused engine's best setting: a rate sweep (`sweep_rates`, default fractions of the best
    served rate) and the paired rounds 1..rounds-1 at `rate`. Requests per run: `n_requests`,
    default the larger of `min_requests` and three batches."""
    d, rounds = DEFAULTS[profile]["scale"], _rounds(rounds)
    batches, chunks, rate = batches or d["batches"], chunks or d["chunks"], rate or d["rate"]

    def spec(b, c, engine, r, at=rate):
        n = n_requests or max(d["min_requests"], 3 * b)
        return RunSpec.build("scale", profile, config="part11", engine=engine, max_batch=b, chunk_tokens=c, rate=at,
                             n_requests=n, seed=r, round=r)
    out = [spec(b, c, e, 0) for b in batches for c in chunks for e in ENGINES]
    best = best_setting(rows, batches, chunks, float(rate))
    if best is not None:
        b, c, served = best
        rates = sweep_rates or sorted({round(f * served, 1) for f in d["sweep_fractions"]})
        out += [spec(b, c, e, 0, at) for at in rates for e in ENGINES]
        out += _pairs(rounds, lambda engine, r: spec(b, c, engine, r))
    return out


PLANS = {"gates": gates, "census": census, "attention": attention, "capacity": capacity, "peer": peer,
         "scale": scale}


def plan(experiment: str, profile: str, params: dict, rows=()) -> list[RunSpec]:
    """The experiment's plan from a notebook's parameters (those its plan function takes)."""
    fn = PLANS[experiment]
    taken = inspect.signature(fn).parameters
    return fn(profile, **{k: v for k, v in params.items() if k in taken and k not in ("profile", "rows")}, rows=rows)
