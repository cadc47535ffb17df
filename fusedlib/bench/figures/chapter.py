"""The figures every chapter of parts 7-10 shows for its own part: what its steps cost (the step
census) and what it serves (the open-loop capacity runs, paired fused against chunked).

Each part's capacity rows are those of the newest code version that measured it (`data.newest`);
capacity is their `steady_rate` (`metrics.steady_from_times`)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..stats import MISSING, Value, fixed, gain, median, ratio
from ..text import cell, ms, pct, rate, sig, span, times, us
from ..workloads import arrival_times
from .data import PARTS, load, newest, per_rows


def prefix(config: str) -> str:
    """The glue prefix of a part's values: part7 -> p07."""
    return f"p{int(config.removeprefix('part')):02d}"


# --------------------------------------------------------------------------------- steps
def step_rows(d: str | Path | None = None) -> pd.DataFrame:
    """Census step rows, one per (config, engine, step): medians over repeated rows, with the
    step's bytes floor (weights + KV at the copy bandwidth) and FLOP floor (at the GEMM rate)."""
    c = load("census", d)
    if not len(c) or "record" not in c:
        return pd.DataFrame()
    c = c[c["record"] == "step"].copy()
    if not len(c):
        return pd.DataFrame()
    cols = ["wall_ms", "wall_ms_min", "wall_ms_max", "gpu_ms", "host_ms", "weight_bytes", "kv_bytes", "copy_bw_Bps", "flops", "gemm_tflops",
            "n_kernels", "num_layers", "decode_rows", "chunk_tokens", "context"]
    cols = [x for x in cols if x in c]
    c[cols] = c[cols].astype(float)  # a CPU run's rows hold None where GPU time would be
    c["bytes_floor_ms"] = (c["weight_bytes"] + c["kv_bytes"]) / c["copy_bw_Bps"] * 1e3
    c["flop_floor_ms"] = c["flops"] / (c["gemm_tflops"] * 1e12) * 1e3
    c["kernels_per_layer"] = c["n_kernels"] / c["num_layers"]
    if "device_name" in c:  # a CPU's copy and GEMM rates make no floor of a GPU step
        c.loc[c["device_name"] == "cpu", ["bytes_floor_ms", "flop_floor_ms"]] = float("nan")
    keep = ["wall_ms", "wall_ms_min", "wall_ms_max", "gpu_ms", "host_ms", "bytes_floor_ms", "flop_floor_ms",
            "kernels_per_layer", "decode_rows", "chunk_tokens", "context", "n_kernels"]
    keep = [x for x in keep if x in c]
    return c.groupby(["config", "engine", "step"], as_index=False)[keep].median()


def _one(s: pd.DataFrame, config: str, engine: str, step: str) -> dict | None:
    if not len(s):
        return None
    r = s[(s["config"] == config) & (s["engine"] == engine) & (s["step"] == step)]
    return None if not len(r) else r.iloc[0].to_dict()


def bottleneck(host: float | None, share: float | None) -> str:
    """What sets a step's length, from the host's busy time and the GPU events' span, each as a
    share of the step's wall time."""
    # The events' span counts the GPU's waits for the next launch, so it bounds the GPU's work
    # from above; a host busy for nearly the whole step is what sets an eager step's length.
    if host is None or share is None:
        return "unknown: these rows carry no GPU time"
    if host >= 0.9:
        return (f"the host: it is busy for {pct(100 * min(host, 1.0))} of the step's wall time, so the GPU's "
                f"event span ({pct(100 * min(share, 1.0))} of it) includes its waits for launches")
    if share >= 0.9:
        return (f"the GPU: its events span {pct(100 * min(share, 1.0))} of the step's wall time, the host is "
                f"busy for {pct(100 * host)}")
    return (f"neither alone: the GPU's events span {pct(100 * share)} of the step's wall time, the host is "
            f"busy for {pct(100 * host)}")


def _get(r: dict | None, k: str) -> float | None:
    return None if r is None or k not in r or pd.isna(r[k]) else float(r[k])


def repeats(r: dict | None) -> Value:
    """A census step's wall time: its repeats' median, their fastest and slowest its range."""
    m = _get(r, "wall_ms")
    return MISSING if m is None else Value(m, ms(m), _get(r, "wall_ms_min"), _get(r, "wall_ms_max"))


def serving_decode(config: str, d: Path) -> tuple[Value, Value]:
    """A part's pure decode step in its paired capacity runs, each run's median over ~1,200 steps:
    the median over both engines' runs, and fused over chunked from the pairs. The engines run the
    same forward, and the census, one timing per engine, moves between runs more than that."""
    c = newest("capacity", d, config)
    runs = pair_runs(c) if {"decode_step_s_p50", "n_decode_steps", "seed"} <= set(c) else c.iloc[:0]
    if not len(runs):
        return MISSING, MISSING
    w = runs.pivot_table(index="round", columns="engine", values=["decode_step_s_p50", "seed"]).dropna()
    what = f"runs of both engines, about {runs['n_decode_steps'].median():,.0f} steps each"
    return (median(1e3 * runs["decode_step_s_p50"], "ms", what),
            gain(w["decode_step_s_p50"]["fused"], w["decode_step_s_p50"]["chunked"], w["seed"]["fused"]))


def change(new: Value, old: Value) -> tuple[Value, Value]:
    """From `old` to `new` (each with a range): old/new as a step's "longer" or "shorter" where the
    ranges do not overlap, and the percent change over the range their far ends allow (resolved
    exactly where they do not overlap)."""
    if None in (new.value, old.value, new.lo, old.lo):
        return MISSING, MISSING
    r, lo, hi = new.value / old.value, new.lo / old.hi, new.hi / old.lo
    p = Value(100 * (r - 1), f"{100 * (r - 1):+.1f}%, {100 * (lo - 1):+.1f}% to {100 * (hi - 1):+.1f}% from the two "
              "ranges", 100 * (lo - 1), 100 * (hi - 1))
    words = (f"not resolved as longer or shorter ({span(lo, hi, times)} as long)" if not p.resolved else
             f"{times(r)} longer ({span(lo, hi, times)})" if r > 1 else f"{times(1 / r)} shorter ({span(1 / hi, 1 / lo, times)})")
    return Value(1 / r, words, 1 / hi, 1 / lo), p


@per_rows
def steps(config: str, d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """The part's decode and mixed steps beside their floors: table and named values."""
    s = step_rows(d)
    dec, mix, _, mixc = (_one(s, config, e, k) for e in ("fused", "chunked") for k in ("decode", "mixed"))
    g = _get
    v = {name: fixed(g(r, field), ms) for name, r, field in (  # the step times and floors as they are
        ("decode_gpu", dec, "gpu_ms"), ("decode_host", dec, "host_ms"), ("decode_floor", dec, "bytes_floor_ms"),
        ("mixed_gpu", mix, "gpu_ms"), ("mixed_floor", mix, "flop_floor_ms"))}
    v |= {name: repeats(r) for name, r in (("decode_wall", dec), ("mixed_wall", mix), ("mixed_chunked_wall", mixc))}
    v["decode_over_floor"] = fixed(ratio(g(dec, "wall_ms"), g(dec, "bytes_floor_ms")), times)
    share = ratio(g(dec, "gpu_ms"), g(dec, "wall_ms"))
    v["decode_gpu_share"] = fixed(share and 100 * min(share, 1.0), pct)
    host = ratio(g(dec, "host_ms"), g(dec, "wall_ms"))
    v["bottleneck"] = MISSING if dec is None else Value(host, bottleneck(host, share))
    v["kernels_per_layer"] = fixed(g(dec, "kernels_per_layer"), sig)
    v["decode_kernels"] = fixed(g(dec, "n_kernels"), lambda x: f"{x:,.0f}")
    per_kernel = ratio(g(dec, "host_ms"), g(dec, "n_kernels"))
    v["host_us_per_kernel"] = fixed(per_kernel and 1e3 * per_kernel, us)
    v["decode_step"], v["decode_vs_chunked_pct"] = serving_decode(config, d)
    v["decode_shape"] = MISSING if dec is None else Value(
        g(dec, "decode_rows"), f"{g(dec, 'decode_rows'):.0f} rows at {g(dec, 'context'):,.0f} tokens of context each")
    saving = ratio(g(mix, "wall_ms"), g(mixc, "wall_ms"))
    saving = saving and 100 * (1 - saving)
    v["mixed_saving"] = fixed(saving, lambda x: f"{pct(x)} shorter" if x >= 0 else f"{pct(-x)} longer")
    v["mixed_over_floor"] = fixed(ratio(g(mix, "gpu_ms"), g(mix, "flop_floor_ms")), times)
    v["mixed_shape"] = MISSING if mix is None else Value(g(mix, "chunk_tokens"), (
        f"a {g(mix, 'chunk_tokens'):,.0f}-token prompt chunk beside {g(mix, 'decode_rows'):.0f} decode rows"))
    i = PARTS.index(config)
    if i > 0:
        v["decode_change"], v["decode_change_pct"] = change(v["decode_step"], serving_decode(PARTS[i - 1], d)[0])
    rows = []
    for engine, step, r in (("fused", "decode", dec), ("fused", "mixed", mix), ("chunked", "mixed", mixc)):
        if r is None:
            continue
        floor = g(r, "bytes_floor_ms") if step == "decode" else g(r, "flop_floor_ms")
        rows.append({"step": step, "engine": engine, "wall (ms)": cell(g(r, "wall_ms")),
                     "GPU (ms)": cell(g(r, "gpu_ms")), "host (ms)": cell(g(r, "host_ms")),
                     "floor (ms)": cell(floor), "floor is": "bytes" if step == "decode" else "FLOPs",
                     "kernels per layer": cell(g(r, "kernels_per_layer"))})
    return pd.DataFrame(rows), {f"{prefix(config)}_{k}": x for k, x in v.items()}


# ------------------------------------------------------------------------------ capacity
def run_medians(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Open-loop runs per keys + rate: each field's median over rounds; `capacity` (the steady
    rate) with `_min` and `_max`, it and `arrived` with `_sweep` (round 0's: one draw at every
    rate), and `saturated` (every round's)."""
    if not len(df):
        return pd.DataFrame()
    fields = [c for c in ("served_rate", "steady_rate", "ttft_p50_s", "ttft_p99_s", "itl_p50_s", "itl_p99_s", "e2e_p50_s",
                          "goodput_rate", "host_share", "host_ms_per_step_p50", "step_gpu_ms_p50", "n_requests") if c in df]
    df = df.assign(capacity=df["steady_rate"].astype(float), arrived=[  # the rate the run's draw arrived at, not offered
        (n - 1) / arrival_times(int(n), r, int(s))[-1] for n, r, s in zip(df["n_requests"], df["rate"], df["seed"])])
    runs = df.groupby(keys + ["rate"])
    out = runs[fields + ["capacity", "arrived"]].median().reset_index()
    out["n"] = runs.size().values
    out["capacity_min"], out["capacity_max"] = runs["capacity"].min().values, runs["capacity"].max().values
    out[["capacity_sweep", "arrived_sweep"]] = runs.apply(lambda g: g.sort_values("round").iloc[0][["capacity", "arrived"]]).values
    out["saturated"] = runs["saturated"].agg(lambda x: None if x.isna().all() else bool(x.eq(True).all())).values \
        if "saturated" in df else None
    return out


def pair_runs(df: pd.DataFrame) -> pd.DataFrame:
    """The runs of the paired comparison in open-loop rows of one setting: at the rate with the
    most rounds both engines ran (the highest such rate), those rounds' rows."""
    if not len(df) or not {"fused", "chunked"} <= set(df["engine"]):
        return df.iloc[:0]
    both = df.groupby(["rate", "round"])["engine"].nunique()
    if not len(both := both[both == 2].reset_index()):
        return df.iloc[:0]
    counts = both.groupby("rate").size()
    r = float(max(counts[counts == counts.max()].index))
    return df[(df["rate"] == r) & df["round"].isin(both[both["rate"] == r]["round"])]


def pairs(df: pd.DataFrame) -> pd.DataFrame:
    """`pair_runs` as one row per round: round, seed, fused, chunked (steady rates) and rate."""
    at = pair_runs(df)
    if not len(at):
        return pd.DataFrame(columns=["round", "seed", "fused", "chunked"])
    wide = at.pivot_table(index="round", columns="engine", values="steady_rate", aggfunc="last")
    seeds = at.groupby("round")["seed"].first() if "seed" in at else pd.Series(0, index=wide.index)
    out = wide[["fused", "chunked"]].dropna().reset_index()
    out["seed"] = out["round"].map(seeds)
    out["rate"] = float(at["rate"].iloc[0])
    return out


def gain_verdict(v: Value) -> Value:
    """A gain's conclusion in words, chosen from its interval."""
    if v.value is None:
        return MISSING
    if v.lo is None:
        return Value(v.value, "unresolved (one pair)")
    if not v.resolved:
        return Value(v.value, "neither engine is resolved ahead of the other")
    return Value(v.value, f"the {'fused' if v.lo > 0 else 'chunked'} engine serves more")


CAPACITY_NAMES = ("capacity_fused", "capacity_chunked", "fusion_gain", "fusion_verdict", "pair_rate", "n_requests",
                  "offered_rates", "capacity_method", "plateau", "ttft_p50_fused", "ttft_p50_chunked", "itl_p99_fused",
                  "itl_p99_chunked")


def capacity_level(x, arrivals: float | None) -> Value:
    """A capacity over repeated runs: the median with its interval, its runs and the arrivals
    each run offered."""
    what = "runs" if arrivals is None or pd.isna(arrivals) else f"runs of {arrivals:,.0f} arrivals"
    return median(x, "requests/s", what=what)


def window_skip(rows: pd.DataFrame) -> int:
    """Completions a run's steady window leaves out at its start (0: rows from before `steady_skip`)."""
    known = len(rows) and "steady_skip" in rows and rows["steady_skip"].notna().all()
    return int(rows["steady_skip"].median()) if known else 0


def method_line(at_rate: pd.DataFrame, runs: pd.DataFrame, sized_for: float = 0.6) -> Value:
    """What the capacities of these runs are, in one sentence: the steady rate, its window's share of their
    completions (median, minimum); then each of `runs` (the page's) saturated with a window under `sized_for`."""
    share = at_rate["steady_fraction"] if "steady_fraction" in at_rate else pd.Series(dtype=float)
    mid, least = (pct(100 * x) if share.notna().any() else "" for x in (share.median(), share.min()))
    held = f"; it holds a median {mid}{f' (minimum {least})' if least != mid else ''} of a run's completions"
    start = f"less the first batch's {skip:,} completions" if (skip := window_skip(at_rate)) else "from its first completion"
    named = "; ".join(f"{r.engine}, batch {r.max_batch:.0f}, budget {r.chunk_tokens:,.0f}, offered {rate(r.rate)}, "
                      f"seed {r.seed:.0f} ({pct(100 * r.steady_fraction)})" for r in runs.itertuples()
                      if getattr(r, "saturated", None) is True and getattr(r, "steady_fraction", 1) < sized_for)
    short = f" Under the {pct(100 * sized_for)} a run is sized for: {named}." if named else ""
    return Value(None, "Capacity is the steady rate: completions per second over the longest stretch with a request "
                 f"waiting and the batch full, {start}{held if mid else ''}.{short}")


def plateau(c: pd.DataFrame, headline: Value | None = None, flat: float = 0.10) -> Value:
    """Whether the fused engine's sweep (round 0: one draw) shows a plateau: the rates (as arrived) that kept its queue
    non-empty, their steady rates within `flat`; off the pairs' `headline` by over half its interval, that it is one draw."""
    s = sweep_table(c[(c["engine"] == "fused") & (c["round"] == 0)]) if {"saturated", "round"} <= set(c) else c[:0]
    full, dry = s[s["saturated"].eq(True)] if len(s) else s, s[s["saturated"].eq(False)] if len(s) else s
    head = "On the sweep's draw the fused engine's queue stayed non-empty " + \
        (f"with {in_words(full['arrived']).text} arriving" if len(full) else "at no rate") + \
        (f" (it ran dry with {in_words(dry['arrived']).text})" if len(dry) else "")
    if len(full) < 2:
        return MISSING if not len(s) else Value(float(len(full)), f"{head}: the sweep shows no plateau.")
    spread, h = full["capacity"].max() / full["capacity"].min() - 1, headline
    off = h is not None and None not in (h.lo, h.hi) and abs(full["capacity"].median() - h.value) > (h.hi - h.lo) / 2
    return Value(float(len(full)), f"{head}: its steady rates lie within {pct(100 * spread)} of each other"
                 + (", the plateau" if spread < flat else f", more than the {pct(100 * flat)} a plateau allows")
                 + (f" (one draw; the capacity is the pairs' median over {h.n} draws)." if off else "."))


def in_words(rates: pd.Series) -> Value:
    """Rates (offered, or arrived) of a set of runs in words ("a, b and c requests/s"); value: how many."""
    r = sorted(set(rates.astype(float)))
    return Value(float(len(r)), ", ".join(sig(x) for x in r[:-1]) + (" and " if len(r) > 1 else "") + rate(r[-1]))


@per_rows
def capacity(config: str, d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """The part's paired capacity values (its sweep is `capacity_sweeps`)."""
    c = newest("capacity", d, config)
    names: dict[str, Value] = {k: MISSING for k in CAPACITY_NAMES}
    pr = pairs(c)
    if len(pr):
        arrivals = c["n_requests"].median() if "n_requests" in c else None
        names["capacity_fused"] = capacity_level(pr["fused"], arrivals)
        names["capacity_chunked"] = capacity_level(pr["chunked"], arrivals)
        names["fusion_gain"] = gain(pr["fused"], pr["chunked"], pr["seed"])
        names["fusion_verdict"] = gain_verdict(names["fusion_gain"])
        r = float(pr["rate"].iloc[0])
        at = c[c["rate"] == r]
        names |= {"pair_rate": fixed(r, rate), "n_requests": fixed(arrivals, lambda x: f"{x:,.0f}"), "offered_rates": in_words(c["rate"]),
                  "capacity_method": method_line(at, c), "plateau": plateau(c, names["capacity_fused"])}
        for eng in ("fused", "chunked"):
            e = at[at["engine"] == eng]
            names[f"ttft_p50_{eng}"] = median(e["ttft_p50_s"], "s", num=lambda x: sig(x, 2))
            names[f"itl_p99_{eng}"] = median(e["itl_p99_s"] * 1e3, "ms")
    return pd.DataFrame(), {f"{prefix(config)}_{k}": x for k, x in names.items()}


def part_values(configs, d: str | Path | None = None) -> dict[str, Value]:
    """The named values of these parts' steps and capacity."""
    return {k: v for c in configs for figure in (steps, capacity) for k, v in figure(c, d=d)[1].items()}


def sweep_table(c: pd.DataFrame) -> pd.DataFrame:
    """Served rate and latency per engine and offered rate (medians over rounds)."""
    keys = [k for k in ("config", "engine", "max_batch", "chunk_tokens") if k in c]
    m = run_medians(c, keys)
    return m.sort_values(keys + ["rate"]).reset_index(drop=True) if len(m) else m


def capacity_sweeps(d: str | Path | None = None) -> pd.DataFrame:
    """Every part's open-loop sweep (medians over rounds), for the capacity and latency figures."""
    return sweep_table(newest("capacity", d))
