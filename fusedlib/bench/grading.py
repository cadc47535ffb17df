"""Grades: each dated prediction (data/predictions.yaml) and each of the reference's own
predictions (data/reference/predictions.yaml) against the rows in data/.

A grade reads its thresholds from the prediction's quoted phrases, never from numbers typed
here, and returns None when the rows that would grade it are not there (the prediction is then
open, not failed). One function per prediction, each taking plain tables, so each can be tested
on small hand-made rows.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from . import analysis as bd, steps
from .paired import compare_groups
from .predictions import Grade, Prediction, side, verdict
from .roofline import PEER_TARGET

REFERENCE_PREDICTIONS = Path(__file__).resolve().parents[2] / "data" / "reference" / "predictions.yaml"
E = ("chunked", "fused")


@dataclass(frozen=True)
class Rows:
    """Every table a chapter grades from: one GPU's rows, newest measurement of each configuration."""
    traces: pd.DataFrame     # steps.combined_traces
    arrivals: pd.DataFrame   # every arrivals run (repeats kept)
    beyond: pd.DataFrame     # graph/split-KV rows (arrivals and step traces)
    closed: pd.DataFrame
    layout: pd.DataFrame     # the layout bench
    peer: pd.DataFrame
    sensitivity: pd.DataFrame


def load_rows() -> Rows:
    beyond = bd.one_gpu(bd.load("beyond"))[0]
    layout = bd.newest_rows("kernels", bd.LAYOUT_KEYS)
    return Rows(traces=steps.combined_traces(bd.one_gpu(bd.load("step_trace"))[0], beyond),
                arrivals=bd.newest_rows("arrivals", bd.ARRIVAL_KEYS), beyond=beyond,
                closed=bd.newest_rows("closed", bd.CLOSED_KEYS),
                layout=layout[layout["result_set"] == "layout_bench"] if len(layout) else layout,
                peer=bd.newest_rows("peer", ["experiment", "engine", "workload", "batch_size", "seed", "rate",
                                             "n_requests"]),
                sensitivity=bd.newest_rows("sensitivity", ["engine", "seed", "long_share", "rate", "n_requests"]))


def _in(x: float, lo: float, hi: float) -> bool:
    return bool(lo <= x <= hi)


# ---------------------------------------------------------------- part 7: one forward per step

def pure_decode_step(p: Prediction, table: pd.DataFrame) -> Grade | None:
    """A1: both engines' full-batch pure decode step (eager, per-row) inside the range, and
    within the tolerance of each other."""
    x = [steps.lookup(table, "eager, per-row", e, "decode_full_s") for e in E]
    if np.isnan(x).any():
        return None
    lo, hi = p.range(1)
    tol = p.fractions(2)[0]
    diff = x[1] / x[0] - 1
    ok = all(_in(v * 1e3, lo, hi) for v in x)
    return Grade(f"chunked {bd.ms(x[0])}, fused {bd.ms(x[1])} ({bd.pct(diff)})", verdict(ok and abs(diff) <= tol),
                 ("both inside the range" if ok else "not both inside the range") + f", {bd.pct(abs(diff), False)} apart")


def mixed_saving(table: pd.DataFrame, configuration: str = "eager, per-row") -> float:
    return 1 - steps.lookup(table, configuration, "fused", "mixed_s") / steps.lookup(table, configuration, "chunked",
                                                                                      "mixed_s")


def loaded_step_saving(p: Prediction, table: pd.DataFrame) -> Grade | None:
    """A2: the fused mixed step's saving over the chunked one (eager, per-row) inside the range."""
    x = mixed_saving(table)
    if np.isnan(x):
        return None
    lo, hi = p.fractions(0)
    return Grade(f"{bd.pct(x, False)} cheaper ({bd.ms(steps.lookup(table, 'eager, per-row', 'chunked', 'mixed_s'))} "
                 f"as two forwards, {bd.ms(steps.lookup(table, 'eager, per-row', 'fused', 'mixed_s'))} fused)",
                 verdict(_in(x, lo, hi)), f"{side(x, lo, hi)} the range")


def capacity(arrivals: pd.DataFrame):
    """(rate, n_requests, fused runs, chunked runs, Comparison fused/chunked) at the highest
    offered rate both engines ran with the default pool; None without one. The runs were not
    interleaved ABBA, so the interval is compare_groups' (unpaired)."""
    pair = bd.capacity_pair(arrivals)
    if pair is None:
        return None
    d = bd.default_pool(arrivals)[0]
    at = d[(d["rate"] == pair["rate"]) & (d["n_requests"] == pair["n_requests"])]
    runs = {e: at.loc[at["engine"] == e, "served_rate"].to_numpy(float) for e in E}
    return pair["rate"], int(pair["n_requests"]), runs["fused"], runs["chunked"], compare_groups(runs["fused"],
                                                                                                 runs["chunked"])


def capacity_text(cap) -> str:
    rate, n, f, c, comp = cap
    return (f"fused {np.median(f):.3g}, chunked {np.median(c):.3g} requests/s at {rate:g}/s, {bd.pct(comp.change)} "
            f"[{bd.pct(comp.lo - 1)}, {bd.pct(comp.hi - 1)}] over {len(f)} and {len(c)} runs (unpaired)")


def capacity_gain(p: Prediction, arrivals: pd.DataFrame) -> Grade | None:
    """A3: fusion's capacity gain past saturation inside the range."""
    cap = capacity(arrivals)
    if cap is None:
        return None
    lo, hi = p.fractions(1)
    x = cap[-1].change
    return Grade(capacity_text(cap), verdict(_in(x, lo, hi)), f"the median gain is {side(x, lo, hi)} the range")


def uniform_controls(p: Prediction, closed: pd.DataFrame) -> Grade | None:
    """A4: the p256 closed batches' fused/chunked change of medians inside ±tolerance."""
    comp = bd.closed_comparison(closed)
    batches = [int(b) for b in p.range(0)]
    hit = comp[(comp["workload"] == "p256") & comp["batch_size"].isin(batches)] if len(comp) else comp
    if len(hit) < len(batches):
        return None
    tol = p.fractions(1)[0]
    ok = bool((hit["change"].abs() <= tol).all())
    return Grade(", ".join(f"batch {int(r.batch_size)}: {bd.pct(r.change)} ({'resolved' if r.resolved else 'unresolved'})"
                           for r in hit.itertuples()), verdict(ok),
                 "medians " + ("inside" if ok else "outside") + " the band; a change is resolved only when it exceeds "
                 "the runs' spread")


def floor_multiple(p: Prediction, multiples: dict[str, float]) -> Grade | None:
    """A5: each engine's full-batch pure decode step as a multiple of its bytes floor, inside the range."""
    if not multiples:
        return None
    lo, hi = p.range(0)
    ok = all(_in(x, lo, hi) for x in multiples.values())
    return Grade(", ".join(f"{e} {bd.times(x)}" for e, x in multiples.items()), verdict(ok),
                 "every multiple " + ("inside" if ok else "not inside") + " the range")


def peer_closed(p: Prediction, closed: pd.DataFrame, peer: pd.DataFrame) -> Grade | None:
    """A6: our fused engine's output throughput over the transformers peer's on the same closed batch."""
    pm = peer[(peer.get("stat") == "median")] if len(peer) and "stat" in peer else peer.iloc[0:0]
    ours = closed[(closed["stat"] == "median") & (closed["engine"] == "fused")] if len(closed) else closed
    m = ours.merge(pm[["workload", "batch_size", "output_throughput"]], on=["workload", "batch_size"],
                   suffixes=("", "_peer")) if len(pm) and len(ours) else pd.DataFrame()
    if not len(m):
        return None
    x = float(m["output_throughput"].iloc[0] / m["output_throughput_peer"].iloc[0])
    lo = p.range(0)[0]
    return Grade(f"{bd.times(x)} the peer's output tokens/s", verdict(x >= lo), f"{side(x, lo, np.inf)} the range")


def sensitivity(p: Prediction, sens: pd.DataFrame) -> Grade | None:
    """A7: the seeds' gains within ±band of seed 0's, and the gain growing with the long-prompt share."""
    if not len(sens) or not set(E) <= set(sens["engine"]):
        return None
    wide = bd.sensitivity_wide(sens)
    seeds = wide[wide["draw"] == "mixed"].set_index("seed")["gain"].dropna()
    shares = sens[sens["long_share"].notna()].pivot_table(index="long_share", columns="engine", values="served_rate")
    by_share = (shares["fused"] / shares["chunked"] - 1).dropna() if len(shares) else pd.Series(dtype=float)
    if not len(seeds) or not len(by_share):
        return None
    band = p.fractions(0)[0]
    base = seeds.loc[0] if 0 in seeds.index else seeds.iloc[0]
    spread_ok = bool(((seeds - base).abs() < band).all())
    grows = bool(by_share.is_monotonic_increasing)
    return Grade(f"seeds {bd.pct(seeds.min())} to {bd.pct(seeds.max())}; shares "
                 + ", ".join(f"{s:.0%}: {bd.pct(g)}" for s, g in by_share.items()), verdict(spread_ok and grows),
                 f"seed spread {'inside' if spread_ok else 'outside'} the band; the gain "
                 f"{'grows' if grows else 'does not grow'} with the share")


def small_pool(p: Prediction, arrivals: pd.DataFrame) -> Grade | None:
    """B5: at the highest rate of the capped pool both served rates inside the range, gain inside its range."""
    pair = bd.paired(bd.default_pool(arrivals)[1])
    if not len(pair):
        return None
    top = pair.sort_values("rate").iloc[-1]
    lo, hi = p.range(0)
    glo, ghi = p.fractions(1)
    served = [top[f"served_rate_{e}"] for e in E]
    ok_rate = all(_in(s, lo, hi) for s in served)
    return Grade(f"at {top['rate']:g}/s chunked {served[0]:.3g}, fused {served[1]:.3g} requests/s ({bd.pct(top['gain'])})",
                 verdict(ok_rate and _in(top["gain"], glo, ghi)),
                 f"served rates {'inside' if ok_rate else 'not inside'} the range, gain {side(top['gain'], glo, ghi)} its range")


def sweep(p: Prediction, arrivals: pd.DataFrame) -> Grade | None:
    """B6: below saturation each engine serves the offered rate within tolerance; at the flat
    rate each serves within tolerance of its rate at the top rate."""
    n = p.range(0)[0]
    tol_low = p.fractions(1)[0]
    flat, _, top = p.range(2)
    tol_flat = p.fractions(2)[1]
    d = bd.run_medians(bd.default_pool(arrivals)[0])
    d = d[d["n_requests"] == n] if len(d) else d
    oks, shown = [], []
    for e in E:
        s = d[d["engine"] == e].set_index("rate")
        if flat not in s.index or top not in s.index:
            return None
        sat = s["queue_wait_median_s"] > s["e2e_median_s"] - s["queue_wait_median_s"]
        low = (s.loc[~sat, "served_rate"] / s.index[~sat] - 1).drop(top, errors="ignore")
        flat_dev = s.loc[flat, "served_rate"] / s.loc[top, "served_rate"] - 1
        oks += [bool((low.abs() <= tol_low).all()), abs(flat_dev) <= tol_flat]
        shown.append(f"{e}: below saturation {bd.pct(low.min())} to {bd.pct(low.max())} off the offered rate, "
                     f"{flat:g}/s against {top:g}/s {bd.pct(flat_dev)}")
    return Grade("; ".join(shown), verdict(all(oks)),
                 "a finite Poisson draw arrives below its offered rate, and the drain of the last requests counts "
                 "against the served rate")


def peer_open(p: Prediction, arrivals: pd.DataFrame, peer: pd.DataFrame) -> Grade | None:
    """B7: our engines' served rate over the peer's on the same open-loop arrivals."""
    n, rate = p.range(0)
    po = peer[(peer["experiment"] == "peer_arrivals") & (peer["rate"] == rate) & (peer["n_requests"] == n)] \
        if len(peer) and "rate" in peer else peer.iloc[0:0]
    ours = bd.paired(bd.default_pool(arrivals)[0])
    ours = ours[(ours["rate"] == rate) & (ours["n_requests"] == n)] if len(ours) else ours
    if not len(po) or not len(ours):
        return None
    peer_rate = float(po.sort_values("timestamp")["served_rate"].iloc[-1])
    need = {"fused": p.range(1)[0], "chunked": p.range(2)[0]}
    mult = {e: float(ours[f"served_rate_{e}"].iloc[0]) / peer_rate for e in need}
    return Grade("; ".join(f"{e} {bd.times(m)}" for e, m in mult.items()),
                 verdict(all(mult[e] >= need[e] for e in need)), f"the peer served {peer_rate:.3g} requests/s")


def repeated_capacity(p: Prediction, arrivals: pd.DataFrame) -> Grade | None:
    """B8: each engine's runs spread under the band (of their median), the gain of medians inside its range."""
    rate, n = p.range(0)
    band = p.fractions(1)[0]
    glo, ghi = p.fractions(2)
    d = bd.default_pool(arrivals)[0]
    at = d[(d["rate"] == rate) & (d["n_requests"] == n)] if len(d) else d
    runs = {e: at.loc[at["engine"] == e, "served_rate"].to_numpy(float) for e in E}
    if min(len(r) for r in runs.values()) < 2:
        return None
    spread = {e: (r.max() - r.min()) / np.median(r) for e, r in runs.items()}
    gain = np.median(runs["fused"]) / np.median(runs["chunked"]) - 1
    ok = all(x < band for x in spread.values()) and _in(gain, glo, ghi)
    return Grade(f"spread fused {bd.pct(spread['fused'], False)}, chunked {bd.pct(spread['chunked'], False)}; gain "
                 f"{bd.pct(gain)} ({len(runs['fused'])} and {len(runs['chunked'])} runs)", verdict(ok),
                 f"gain {side(gain, glo, ghi)} its range")


# ---------------------------------------------------------------- parts 8 and 9

def decode_in_range(p: Prediction, table: pd.DataFrame, configuration: str, quote: int = 0) -> Grade | None:
    """B1, B2: both engines' full-batch pure decode step in a configuration inside the range."""
    x = [steps.lookup(table, configuration, e, "decode_full_s") for e in E]
    if np.isnan(x).any():
        return None
    lo, hi = p.range(quote)
    return Grade(f"chunked {bd.ms(x[0])}, fused {bd.ms(x[1])}", verdict(all(_in(v * 1e3, lo, hi) for v in x)),
                 f"chunked {side(x[0] * 1e3, lo, hi)}, fused {side(x[1] * 1e3, lo, hi)} the range")


def splitkv_eager(p: Prediction, table: pd.DataFrame) -> Grade | None:
    """B3: the eager split-KV full-batch decode step within ±band of the eager per-row one, per engine."""
    ch = [steps.lookup(table, "eager, split-KV", e, "decode_full_s") / steps.lookup(table, "eager, per-row", e,
                                                                                    "decode_full_s") - 1 for e in E]
    if np.isnan(ch).any():
        return None
    tol = p.fractions(0)[0]
    ok = all(abs(c) <= tol for c in ch)
    return Grade(f"chunked {bd.pct(ch[0])}, fused {bd.pct(ch[1])}", verdict(ok),
                 f"{'both' if ok else 'not both'} inside the band")


def graphed_capacity(p: Prediction, arrivals: pd.DataFrame, beyond: pd.DataFrame, configuration: str) -> Grade | None:
    """B4, B10: in a graphed configuration's capacity runs, each engine's median served rate and
    the gain of medians inside their ranges."""
    runs = {name: rows for name, rows, _ in bd.capacity_by_configuration(arrivals, beyond)}.get(configuration)
    if runs is None:
        return None
    served = {e: runs.loc[runs["engine"] == e, "served_rate"].to_numpy(float) for e in E}
    if not all(len(v) for v in served.values()):
        return None
    comp = compare_groups(served["fused"], served["chunked"])
    f, c = np.median(served["fused"]), np.median(served["chunked"])
    (flo, fhi), (clo, chi), (glo, ghi) = p.range(0), p.range(1), p.fractions(2)
    ok = _in(f, flo, fhi) and _in(c, clo, chi) and _in(comp.change, glo, ghi)
    return Grade(f"fused {f:.3g}, chunked {c:.3g} requests/s, {bd.pct(comp.change)} [{bd.pct(comp.lo - 1)}, "
                 f"{bd.pct(comp.hi - 1)}] over {len(served['fused'])} and {len(served['chunked'])} runs (unpaired)",
                 verdict(ok), f"fused {side(f, flo, fhi)}, chunked {side(c, clo, chi)} its range; gain "
                 f"{side(comp.change, glo, ghi)} its range")


def piecewise_mixed(p: Prediction, table: pd.DataFrame) -> Grade | None:
    """B9: with every forward graphed, the fused mixed step inside the range and at least the
    predicted share cheaper than the chunked one."""
    x = [steps.lookup(table, "every forward graphed, split-KV", e, "mixed_s") for e in E]
    if np.isnan(x).any():
        return None
    lo, hi = p.range(0)
    need = p.fractions(1)[0]
    cut = 1 - x[1] / x[0]
    return Grade(f"fused {bd.ms(x[1])}, chunked {bd.ms(x[0])} ({bd.pct(cut, False)} cheaper)",
                 verdict(_in(x[1] * 1e3, lo, hi) and cut >= need), f"fused {side(x[1] * 1e3, lo, hi)} the range")


def same_machine(p: Prediction, arrivals: pd.DataFrame, beyond: pd.DataFrame) -> Grade | None:
    """B11: eager and every-forward-graphed capacity on one machine; open unless both ran in one campaign."""
    one = bd.same_machine_capacity(arrivals, beyond)
    if one is None:
        return None
    ep, gp, _ = one
    ratio = {e: gp[f"served_rate_{e}"] / ep[f"served_rate_{e}"] for e in E}
    checks = [_in(ep["served_rate_fused"], *p.range(0)), _in(ep["served_rate_chunked"], *p.range(1)),
              _in(ratio["fused"], *p.range(2)), _in(ratio["chunked"], *p.range(3)), gp["gain"] < ep["gain"]]
    return Grade(f"eager fused {ep['served_rate_fused']:.3g}, chunked {ep['served_rate_chunked']:.3g}; graphed/eager "
                 f"fused {bd.times(ratio['fused'])}, chunked {bd.times(ratio['chunked'])}", verdict(all(checks)),
                 f"the gain {'shrank' if checks[-1] else 'did not shrink'} with graphs")


# ---------------------------------------------------------------- part 10: to the roofline

def roofline_grades(p: dict[str, Prediction], m: dict[str, float]) -> dict[str, Grade]:
    """C1-C6 on fusedlib.bench.roofline.measured_for_predictions' quantities: each range read
    from its prediction's quotes ("within 0.6 ms" is a range from 0)."""
    def inside(x, lo, hi, shown, unit=""):
        return _in(x, lo, hi), f"{shown(x)}{unit}", f"{side(x, lo, hi)} the range {shown(lo)} to {shown(hi)}{unit}"

    num, frac = (lambda v: f"{v:.3g}"), (lambda v: f"{v:.0%}")
    out = {}
    for key, quote, x, shown, unit in (("C1", 0, m["kernels_per_layer"], num, " kernels per layer"),
                                       ("C2", 0, m["decode_gpu_ms"], num, " ms of GPU time")):
        ok, got, why = inside(x, *p[key].range(quote), shown, unit)
        out[key] = Grade(got, verdict(ok), why)
    ok, got, why = inside(m["decode_host_ms"], 0.0, p["C3"].range(0)[0], num, " ms")
    out["C3"] = Grade(f"wall {got} above GPU time", verdict(ok), why)
    ok, got, why = inside(m["attention_worst"], *p["C4"].fractions(0), frac)
    out["C4"] = Grade(f"{got} of copy bandwidth at the worst context", verdict(ok), why)
    ok_gpu, gpu, why_gpu = inside(m["mixed_gpu_ms"], *p["C5"].range(0), num, " ms")
    ok_wall, wall, why_wall = inside(m["mixed_wall_ms"], *p["C5"].range(1), num, " ms")
    out["C5"] = Grade(f"GPU {gpu}, wall {wall}", verdict(ok_gpu and ok_wall), f"GPU {why_gpu}; wall {why_wall}")
    ok_cap, cap, why_cap = inside(m["fused_capacity"], *p["C6"].range(0), num, " requests/s")
    smaller = m["gain_part10"] < m["gain_part9"]
    out["C6"] = Grade(f"fused {cap}; fused/chunked {bd.pct(m['gain_part10'] - 1)} against {bd.pct(m['gain_part9'] - 1)} "
                      "with part 9's ops (paired)", verdict(ok_cap and smaller),
                      f"capacity {why_cap}; the gain {'smaller' if smaller else 'not smaller'}")
    return out


# ---------------------------------------------------------------- set D: the host one step ahead

def _interval(r) -> str:
    return f"{bd.pct(r['ratio'] - 1)} [{bd.pct(r['lo'] - 1)}, {bd.pct(r['hi'] - 1)}], n = {int(r['n'])}"


def _peer_grade(p: Prediction, peer: pd.DataFrame) -> Grade:
    """Both of our runs (before and after the peer's) against the prediction's range of times
    transformers' throughput, and against part 10's target."""
    ours = peer[peer["engine"] != "transformers"]["times_peer"]
    lo, hi = p.range(0)
    inside = bool(ours.between(lo, hi).all())
    return Grade(f"{ours.min():.1f}x to {ours.max():.1f}x (our runs before and after the peer's)", verdict(inside),
                 f"{'inside' if inside else 'not inside'} the range; the {PEER_TARGET:g}x target "
                 f"{'met' if (ours >= PEER_TARGET).all() else 'missed'}")


def overlap_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """D1-D7 on fusedlib.bench.roofline.measured_for_set_d. A prediction whose rows are
    missing gets no grade."""
    out = {}
    ov, fc, seeds = m.get("overlap"), m.get("fused_vs_chunked_40"), m.get("seeds")
    past_knee = ""
    if seeds is not None:
        past_knee = f"; offered 80/s it serves {seeds['a']:.3g} (median of 8 seeds)"
    if ov is not None and fc is not None:
        lo, hi = p["D1"].fractions(0)
        ok = _in(ov["ratio"] - 1, lo, hi) and bool(ov["resolved"])
        out["D1"] = Grade(_interval(ov), verdict(ok),
                          f"{side(ov['ratio'] - 1, lo, hi)} the range, {'resolved' if ov['resolved'] else 'not resolved'}; "
                          f"with overlap the fused engine served {ov['a']:.3g} requests/s, what both engines reach at "
                          "40/s offered, so the gain is a floor")
        lo, hi = p["D2"].range(0)
        out["D2"] = Grade(f"{ov['a']:.3g} requests/s", verdict(_in(ov["a"], lo, hi)),
                          f"{side(ov['a'], lo, hi)} the range, but that is the arrivals' bound, not the engine's"
                          + past_knee)
        lo, hi = p["D3"].fractions(0)
        seeds_text = f"; offered 80/s over 8 seeds {_interval(seeds)}" if seeds is not None else ""
        out["D3"] = Grade(_interval(fc), verdict(_in(fc["ratio"] - 1, lo, hi)),
                          f"{side(fc['ratio'] - 1, lo, hi)} the range: both engines keep up with 40/s{seeds_text}")
    steps = m.get("steps")
    if steps is not None and ("fused", True) in steps.index and ("fused", False) in steps.index:
        on, off = steps.loc[("fused", True)], steps.loc[("fused", False)]
        gap, limit = on["decode_ms"] - on["decode_gpu_ms"], p["D4"].range(0)[0]
        out["D4"] = Grade(f"{gap:+.2f} ms", verdict(gap < limit),
                          f"{'below' if gap < limit else 'not below'} {limit:g} ms; without overlap the same trace reads "
                          f"{off['decode_ms'] - off['decode_gpu_ms']:+.2f} ms too, because the GPU span holds the GPU's "
                          f"idle waits: overlap shows in the decode step itself, {off['decode_ms']:.2f} to "
                          f"{on['decode_ms']:.2f} ms")
    closed = m.get("closed")
    if closed is not None:
        mixed = closed[closed["comparison"].str.contains("mixed")]
        uniform = closed[closed["comparison"].str.contains("p256")]
        limit = p["D5"].fractions(1)[0]
        won = bool(mixed["resolved"].all() and (mixed["ratio"] > 1).all())
        near = bool(((uniform["ratio"] - 1).abs() <= limit).all())
        cells = "; ".join(f"{r.comparison.split(':')[0].removeprefix('closed ')} {_interval(r._asdict())}"
                          for r in closed.itertuples())
        out["D5"] = Grade(cells, verdict(won and near),
                          f"mixed cells {'all' if won else 'not all'} resolved in fused's favour; uniform cells "
                          f"{'within' if near else 'not within'} {limit:.0%}")
    if m.get("peer") is not None:
        out["D6"] = _peer_grade(p["D6"], m["peer"])
    if seeds is not None:
        lo, hi = p["D7"].fractions(0)
        ok = _in(seeds["ratio"] - 1, lo, hi) and bool(seeds["resolved"])
        out["D7"] = Grade(_interval(seeds), verdict(ok),
                          f"{side(seeds['ratio'] - 1, lo, hi)} the range, {'resolved' if seeds['resolved'] else 'not resolved'}")
    return out


def whole_graph_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """E1-E5 on fusedlib.bench.roofline.measured_for_set_e. A prediction whose rows are
    missing gets no grade."""
    from .roofline import PART10, WHOLE

    out = {}
    census = m.get("census")
    if census is not None:
        whole, piecewise = census.loc[(WHOLE, "mixed")], census.loc[(PART10, "mixed")]
        gpu, host = whole["gpu_ms_median"], whole["wall_ms_median"] - whole["gpu_ms_median"]
        (lo, hi), (limit,) = p["E1"].range(0), p["E1"].range(1)
        out["E1"] = Grade(f"{gpu:.2f} ms GPU, {whole['wall_ms_median']:.2f} ms wall", verdict(_in(gpu, lo, hi) and host <= limit),
                          f"GPU time {side(gpu, lo, hi)} the range, wall {host:+.2f} ms beyond it "
                          f"({'within' if host <= limit else 'not within'} {limit:g} ms); the piecewise step in the "
                          f"same run took {piecewise['gpu_ms_median']:.2f} ms GPU, {piecewise['wall_ms_median']:.2f} ms wall")
    for key, name in (("E2", "whole_vs_piecewise"), ("E3", "fused_vs_chunked")):
        r = m.get(name)
        if r is None:
            continue
        if key == "E2":
            lo, hi = p[key].fractions(0)
            ok, where = _in(r["ratio"] - 1, lo, hi) and bool(r["resolved"]), side(r["ratio"] - 1, lo, hi)
        else:
            lo, hi = p[key].range(0)
            ok, where = _in(r["ratio"], lo, hi), side(r["ratio"], lo, hi)
        out[key] = Grade(_interval(r), verdict(ok), f"{where} the range, {'resolved' if r['resolved'] else 'not resolved'}; "
                         f"{r['a']:.3g} against {r['b']:.3g} requests/s")
    if m.get("peer") is not None:
        out["E4"] = _peer_grade(p["E4"], m["peer"])
    gates = m.get("gates")
    if gates is not None:
        passed = int(gates["passed"].astype(bool).sum())
        out["E5"] = Grade(f"{passed} of {len(gates)} gates pass", verdict(passed == len(gates)),
                          f"at {', '.join(sorted(gates['git_commit'].unique()))}")
    return out


def split_k_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """F1-F3 on fusedlib.bench.roofline.measured_for_set_f. F4-F7 needed runs of the split-K
    configuration past the census (capacity, the peer, its gates), which were not made once
    the census measured it slower: they stay open."""
    from .roofline import SPLIT_K, WHOLE

    out = {}
    census = m.get("census")
    if census is not None:
        dec, base = census.loc[(SPLIT_K, "decode")], census.loc[(WHOLE, "decode")]
        (klo, khi), (glo, ghi) = p["F1"].range(0), p["F1"].range(1)
        kernels, gpu = dec["kernels_per_layer"], dec["gpu_ms_median"]
        out["F1"] = Grade(f"{kernels:.1f} kernels per layer, {gpu:.2f} ms GPU",
                          verdict(_in(kernels, klo, khi) and _in(gpu, glo, ghi)),
                          f"kernels {side(kernels, klo, khi)} their range, GPU time {side(gpu, glo, ghi)} its; "
                          f"with cuBLAS the same run's decode step took {base['gpu_ms_median']:.2f} ms")
        mixed = census.loc[(WHOLE, "mixed"), "gpu_ms_median"]
        lo, hi = p["F2"].range(0)
        out["F2"] = Grade(f"{mixed:.2f} ms GPU", verdict(_in(mixed, lo, hi)), f"{side(mixed, lo, hi)} the range")
    att = m.get("attention_1k")
    if att is not None:
        lo, hi = p["F3"].fractions(0)
        x = att["merge_fraction"]
        out["F3"] = Grade(f"{x:.0%} of the copy rate ({att['merge_us']:.1f} us)", verdict(_in(x, lo, hi)),
                          f"{side(x, lo, hi)} the range; with the reduce kernel back the best shape took "
                          f"{att['reduce_us']:.1f} us")
    return out


def norm_gate_up_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """G1-G5 on fusedlib.bench.roofline.measured_for_set_g: the A/B census lease that ran the
    fold against the code before it, the fold's gate_up sweep at that commit, its decode step
    check and its gate runs."""
    out = {}
    fold = m.get("fold")
    if fold is not None:
        one, mixed = fold.loc[("one-kernel gate_up", "decode")], fold.loc[("one-kernel gate_up", "mixed")]
        lo, hi = p["G1"].range(0)
        layer = one["new_per_layer"]
        out["G1"] = Grade(f"{layer:.1f} kernels per layer ({one['new_kernels']:.0f} per step)",
                          verdict(_in(layer, lo, hi)), f"{side(layer, lo, hi)} the range")
        (glo, ghi), (clo, chi) = p["G2"].range(0), p["G2"].fractions(1)
        gpu, fall = one["new_gpu_ms"], 1 - one["ratio"]
        out["G2"] = Grade(f"{gpu:.2f} ms GPU, {_interval(one)} against the code before",
                          verdict(_in(gpu, glo, ghi) and _in(fall, clo, chi)),
                          f"GPU time {side(gpu, glo, ghi)} its range; the step got slower, not faster "
                          f"(before: {one['base_gpu_ms']:.2f} ms)" if fall < 0 else
                          f"GPU time {side(gpu, glo, ghi)} its range, the fall {side(fall, clo, chi)} its")
        (glo, ghi), (clo, chi) = p["G3"].range(0), p["G3"].fractions(1)
        gpu, fall = mixed["new_gpu_ms"], 1 - mixed["ratio"]
        out["G3"] = Grade(f"{gpu:.2f} ms GPU, {_interval(mixed)} against the code before",
                          verdict(_in(gpu, glo, ghi) and _in(fall, clo, chi)),
                          f"GPU time {side(gpu, glo, ghi)} its range, the change {side(fall, clo, chi)} its")
    sweeps = m.get("sweeps")
    if sweeps is not None and len(sweeps) and fold is not None:
        first = sweeps[sweeps["commit"] == fold["new_commit"].iloc[0]].iloc[0]
        lo, hi = p["G4"].range(0)
        out["G4"] = Grade(f"{first['default_us']:.1f} us at the default shape (best {first['best_us']:.1f} us), "
                          f"three kernels {first['three_us']:.1f} us", verdict(_in(first["default_us"], lo, hi)),
                          f"{side(first['default_us'], lo, hi)} the range")
    check, gates = m.get("step_check"), m.get("gates")
    if check is not None and gates is not None and len(gates):
        (limit,) = p["G5"].range(0)
        agree = check["argmax_agree_outside_ties"] == check["rows_outside_ties"]
        passed = int(gates["passed"].astype(bool).sum())
        ok = check["max_abs_diff"] <= limit and agree and passed == len(gates)
        out["G5"] = Grade(f"max |d| {check['max_abs_diff']:.3f}, argmax {int(check['argmax_agree_outside_ties'])} of "
                          f"{int(check['rows_outside_ties'])} outside ties; gates {passed} of {len(gates)} checks",
                          verdict(ok), "every part holds" if ok else "a part fails")
    return out


def attention_flush_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """H1-H4 and I1-I4 on fusedlib.bench.roofline.measured_for_sets_h_i."""
    out = {}
    sweep, probe = m.get("sweep"), m.get("probe")
    if sweep is not None and probe is not None:
        at = sweep.set_index(["context", "l2_flush"])
        decode = probe[probe["kernel"] == "splitkv_decode_kernel"].groupby("l2_flush")["write_mb"].median()
        copy = at.loc[(1024, "read"), "copy_us"]
        (lo, hi), (dirty,), (clean,) = p["H1"].range(0), p["H1"].range(1), p["H1"].range(2)
        ok = _in(copy, lo, hi) and decode["zero"] >= dirty and decode["read"] < clean
        out["H1"] = Grade(f"copy {copy:.1f} µs; the decode kernel wrote {decode['zero']:.1f} MB to DRAM after the "
                          f"zeroing flush, {decode['read']:.2f} MB after the reading one",
                          verdict(ok), f"the copy {side(copy, lo, hi)} its range, the dirty write-back "
                          f"{'at or above' if decode['zero'] >= dirty else 'below'} {dirty:.0f} MB")
        one, four = at.loc[(1024, "read")], at.loc[(4096, "read")]
        (a, b), (c, d) = p["H2"].fractions(0), p["H2"].fractions(1)
        out["H2"] = Grade(f"{one['best_fraction']:.0%} at 1k ({one['best_us']:.1f} µs), {four['best_fraction']:.0%} at 4k",
                          verdict(_in(one["best_fraction"], a, b) and _in(four["best_fraction"], c, d)),
                          f"1k {side(one['best_fraction'], a, b)} its range, 4k {side(four['best_fraction'], c, d)} its")
        heads = int(one["kv_heads_per_program"])
        out["H3"] = Grade(f"the fastest shape at 1k reads {heads} KV head{'s' if heads > 1 else ''} per program",
                          verdict(heads == 2), "one head per program was faster at every context" if heads == 1
                          else "as predicted")
    shape = m.get("shape")
    if shape is not None:
        r = shape.loc[("one-kernel gate_up", "decode")]
        lo, hi = p["H4"].fractions(0)
        fall = 1 - r["ratio"]
        out["H4"] = Grade(f"{r['new_gpu_ms']:.3f} ms against {r['base_gpu_ms']:.3f} ms, {_interval(r)}",
                          verdict(_in(fall, lo, hi)), f"the fall {side(fall, lo, hi)} its range")
    pdl = m.get("pdl")
    if pdl is not None:
        dec, mixed = pdl.loc[("one-kernel gate_up", "decode")], pdl.loc[("one-kernel gate_up", "mixed")]
        (a, b), (c, d) = p["I1"].fractions(0), p["I1"].fractions(1)
        fd, fm = 1 - dec["ratio"], 1 - mixed["ratio"]
        out["I1"] = Grade(f"decode {_interval(dec)}, mixed {_interval(mixed)} with PDL against without",
                          verdict(_in(fd, a, b) and _in(fm, c, d)), "both steps got slower, not faster"
                          if fd < 0 and fm < 0 else f"decode {side(fd, a, b)} its range, mixed {side(fm, c, d)} its")
    checks = m.get("pdl_checks")
    if checks is not None and len(checks):
        worst = float(checks["max_abs_diff"].max())
        out["I2"] = Grade(f"max |d| {worst:g} over {len(checks)} comparisons", verdict(worst == 0),
                          "identical logits" if worst == 0 else "the logits differ")
    tree = m.get("pdl_tree")
    if tree is not None:
        r = tree.loc[("one-kernel gate_up", "decode")]
        lo, hi = p["I3"].range(0)
        out["I3"] = Grade(f"{r['new_gpu_ms']:.2f} ms GPU, {_interval(r)} against the code before",
                          verdict(_in(r["new_gpu_ms"], lo, hi)), f"{side(r['new_gpu_ms'], lo, hi)} the range")
    latest = m.get("sweep_latest")
    if latest is not None and len(latest):
        one = latest.set_index(["context", "l2_flush"]).loc[(1024, "read")]
        lo, hi = p["I4"].fractions(0)
        out["I4"] = Grade(f"{one['best_fraction']:.0%} ({one['best_us']:.1f} µs)",
                          verdict(_in(one["best_fraction"], lo, hi)), f"{side(one['best_fraction'], lo, hi)} the range")
    return out


# ---------------------------------------------------------------- the reference's own predictions

def reference_predictions(path: Path = REFERENCE_PREDICTIONS) -> list[dict]:
    raw = yaml.safe_load(Path(path).read_text())
    for r in raw["predictions"]:
        missing = {"id", "made_in", "where", "claim", "figures", "h200_terms"} - set(r)
        if missing:
            raise ValueError(f"{path}: {r.get('id', '?')} lacks {sorted(missing)}")
    return raw["predictions"]


def reference_grades(refs: list[dict], table: pd.DataFrame, arrivals: pd.DataFrame,
                     layout: pd.DataFrame) -> pd.DataFrame:
    """Each reference prediction, its A10 grade (the reference's own), and the same claim graded
    in H200 terms on our rows: R1-R4 by our two engines (eager, per-row), R5 by the split-KV kernel
    against the per-row one. A claim our rows cannot test reads as such."""
    # A claim may lean on another's figures (R1 on R4's noise band): read them all.
    f = {r["id"]: r["figures"] for r in reference_predictions()} | {r["id"]: r["figures"] for r in refs}
    dec = [steps.lookup(table, "eager, per-row", e, "decode_full_s") for e in E]
    dec_change = dec[1] / dec[0] - 1
    cap = capacity(arrivals)
    saving = mixed_saving(table)
    ours = {}
    if cap is not None:
        comp = cap[-1]
        moved = comp.resolved
        ours["R1"] = (f"decode step {bd.pct(dec_change)}, capacity {bd.pct(comp.change)} [{bd.pct(comp.lo - 1)}, "
                      f"{bd.pct(comp.hi - 1)}]", "WRONG" if abs(dec_change) <= f["R4"]["band"] and moved else "HELD")
        lo, hi = f["R3"]["lo"] / f["R3"]["before"] - 1, f["R3"]["hi"] / f["R3"]["before"] - 1
        ours["R3"] = (f"capacity {bd.pct(comp.change)}", verdict(_in(comp.change, lo, hi)))
    lo, hi = 1 - f["R2"]["hi_ms"] / f["R2"]["before_ms"], 1 - f["R2"]["lo_ms"] / f["R2"]["before_ms"]
    ours["R2"] = (f"{bd.pct(saving, False)} cheaper", verdict(_in(saving, lo, hi)))
    ours["R4"] = (f"{bd.pct(dec_change)}", verdict(abs(dec_change) <= f["R4"]["band"]))
    k = steps.kernel_ms(layout) if len(layout) else {}
    sk = [steps.lookup(table, "eager, split-KV", e, "decode_full_s") for e in E]
    if {"rows", "splitkv"} <= set(k) and not np.isnan(sk + dec).any():
        r5 = f["R5"]
        share_lo, share_hi = r5["decode_lo_ms"] / r5["decode_before_ms"], r5["decode_hi_ms"] / r5["decode_before_ms"]
        measured = sk[1] / dec[1]
        ours["R5"] = (f"attention {k['rows']:.3g} to {k['splitkv']:.3g} ms per layer; fused decode step "
                      f"{bd.ms(dec[1])} to {bd.ms(sk[1])} ({bd.pct(measured, False)} of its length)",
                      verdict(_in(measured, share_lo, share_hi)))
    return pd.DataFrame([{"reference's prediction": f"{r['claim']} ({r['made_in']}; its section {r['where']})",
                          "on the A10": r.get("reference_grade") or "graded in its next part",
                          "in H200 terms": r["h200_terms"],
                          "ours": ours[r["id"]][0] if r["id"] in ours else "no rows test it",
                          "grade": ours[r["id"]][1] if r["id"] in ours else "open"} for r in refs])


def _kernel_count_grade(p: Prediction, dec, mixed, mixed_change: int) -> Grade:
    """A prediction quoting the decode step's kernels ("N kernels") and its range per layer,
    from one A/B lease's decode and mixed rows, the mixed step's count changing by
    `mixed_change`."""
    (kernels,), (lo, hi) = p.range(0), p.range(1)
    ok = dec["new_kernels"] == kernels and _in(dec["new_per_layer"], lo, hi) and \
        mixed["new_kernels"] == mixed["base_kernels"] + mixed_change
    return Grade(f"{dec['new_kernels']:.0f} kernels ({dec['new_per_layer']:.2f} per layer) against "
                 f"{dec['base_kernels']:.0f}; mixed step {mixed['new_kernels']:.0f} against {mixed['base_kernels']:.0f}",
                 verdict(ok), "as predicted" if ok else "a count differs")


def split_k_partials_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """L1-L4 on fusedlib.bench.roofline.measured_for_set_l (the engine's configuration's rows:
    the kept lease, as for set K, and the sweep)."""
    from .roofline import SHAPE_AB_ROLE as one

    out = {}
    kept = m.get("kept")
    if kept is not None:
        dec, mixed = kept.loc[(one, "decode")], kept.loc[(one, "mixed")]
        (kernels,) = p["L1"].range(0)
        ok = dec["new_kernels"] == dec["base_kernels"] == kernels and mixed["new_kernels"] == mixed["base_kernels"]
        out["L1"] = Grade(f"{dec['new_kernels']:.0f} kernels against {dec['base_kernels']:.0f}; mixed step "
                          f"{mixed['new_kernels']:.0f} against {mixed['base_kernels']:.0f}", verdict(ok),
                          "as predicted" if ok else "a count differs")
        out["L3"] = _step_fall_grade(p["L3"], dec, mixed)
    sweep = m.get("sweep")
    if sweep is not None and {"qkv", "o_proj", "down"} <= set(sweep.index):
        ranges = [p["L2"].range(i) for i in range(5)]
        checks = [("qkv best", sweep.loc["qkv", "best_us"], ranges[0]), ("qkv cuBLAS", sweep.loc["qkv", "cublas_us"], ranges[1]),
                  ("o_proj best", sweep.loc["o_proj", "best_us"], ranges[2]),
                  ("o_proj cuBLAS", sweep.loc["o_proj", "cublas_us"], ranges[3]),
                  ("down best", sweep.loc["down", "best_us"], ranges[4])]
        missed = [f"{name} {side(x, lo, hi)}" for name, x, (lo, hi) in checks if not _in(x, lo, hi)]
        out["L2"] = Grade("; ".join(f"{name} {x:.1f} µs" for name, x, _ in checks), verdict(not missed),
                          "inside every range" if not missed else ", ".join(missed) + " its range")
    if m.get("kept_step_check") is not None:
        out["L4"] = _logit_check_grade(p["L4"], m["kept_step_check"])
    return out


def in_kernel_merge_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """M1-M3 on fusedlib.bench.roofline.measured_for_set_m (the engine's configuration's rows)."""
    from .roofline import SHAPE_AB_ROLE as one

    merge = m.get("merge")
    if merge is None:
        return {}
    dec, mixed, kernels = merge.loc[(one, "decode")], merge.loc[(one, "mixed")], m["kernels"]
    (fewer,) = p["M1"].range(0)
    ok = all(r["base_kernels"] - r["new_kernels"] == fewer for r in (dec, mixed))
    out = {"M1": Grade(f"decode {dec['new_kernels']:.0f} kernels against {dec['base_kernels']:.0f}; mixed "
                       f"{mixed['new_kernels']:.0f} against {mixed['base_kernels']:.0f}", verdict(ok),
                       "as predicted" if ok else "a count differs")}
    (a, b), (c, d) = p["M2"].fractions(0), p["M2"].fractions(1)
    fd, fm = 1 - dec["ratio"], 1 - mixed["ratio"]
    ok = _in(fd, a, b) and _in(fm, c, d)
    out["M2"] = Grade(f"decode {_interval(dec)}; mixed {_interval(mixed)}", verdict(ok),
                      "inside both ranges" if ok else f"decode fall {side(fd, a, b)} its range, mixed {side(fm, c, d)} its")
    (lo, hi) = p["M3"].range(0)
    decode_kernel = kernels.loc["splitkv_decode_kernel"]
    rise = decode_kernel["new_us"] - decode_kernel["base_us"]
    reduce_us = kernels.loc["splitkv_reduce_kernel", "base_us"]
    ok = _in(rise, lo, hi) and rise < reduce_us
    out["M3"] = Grade(f"split-KV decode {decode_kernel['base_us']:.0f} -> {decode_kernel['new_us']:.0f} µs a step "
                      f"(+{rise:.0f}); the reduce's {reduce_us:.0f} µs gone", verdict(ok),
                      "as predicted" if ok else f"the rise {side(rise, lo, hi)} its range")
    return out


def rotary_in_attention_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """J1-J4 on fusedlib.bench.roofline.measured_for_set_j (the engine's configuration's rows)."""
    from .roofline import SHAPE_AB_ROLE as one

    out = {}
    after = m.get("after_loop")
    if after is not None:
        dec, mixed = after.loc[(one, "decode")], after.loc[(one, "mixed")]
        out["J1"] = _kernel_count_grade(p["J1"], dec, mixed, mixed_change=-1)
        (g_lo, g_hi), (w_lo, w_hi) = p["J4"].range(0), p["J4"].range(1)
        gpu, wall = dec["new_gpu_ms"], dec["new_wall_ms"]
        out["J4"] = Grade(f"second form (new key after the loop): {gpu:.2f} ms GPU, {wall:.2f} ms wall, "
                          f"{_interval(dec)} against the code before",
                          verdict(_in(gpu, g_lo, g_hi) and _in(wall, w_lo, w_hi)),
                          f"GPU time {side(gpu, g_lo, g_hi)} its range, wall {side(wall, w_lo, w_hi)} its")
    select = m.get("select")
    if select is not None:
        dec, mixed = select.loc[(one, "decode")], select.loc[(one, "mixed")]
        (a, b), (limit,) = p["J2"].fractions(0), p["J2"].fractions(1)
        fd, fm = 1 - dec["ratio"], 1 - mixed["ratio"]
        ok = _in(fd, a, b) and abs(fm) < limit
        out["J2"] = Grade(f"decode {_interval(dec)}, mixed {_interval(mixed)}, rotary in attention against the kernel",
                          verdict(ok), "the decode step got slower, not faster" if fd < 0 else
                          f"decode {side(fd, a, b)} its range")
    check = m.get("select_check")
    if check is not None:
        d = float(check["max_abs_diff"])
        out["J3"] = Grade(f"max |d| {d:g}", verdict(d == 0), "identical logits" if d == 0 else "the logits differ")
    return out


def _step_fall_grade(p: Prediction, dec, mixed) -> Grade:
    """A prediction quoting the decode step's fall ("between a% and b%"), its GPU time
    ("between x and y ms") and a bound on the mixed step's change ("less than c%"), from one
    A/B lease's decode and mixed rows."""
    (a, b), (g_lo, g_hi), (limit,) = p.fractions(0), p.range(1), p.fractions(2)
    fall, gpu, fm = 1 - dec["ratio"], dec["new_gpu_ms"], mixed["ratio"] - 1
    ok = _in(fall, a, b) and _in(gpu, g_lo, g_hi) and abs(fm) < limit
    return Grade(f"decode {gpu:.3f} ms, {_interval(dec)}; mixed {_interval(mixed)}", verdict(ok),
                 "inside every range" if ok else
                 f"decode fall {side(fall, a, b)} its range, {gpu:.3f} ms {side(gpu, g_lo, g_hi)} its, "
                 f"mixed {abs(fm):.2%} against {limit:.1%}")


def _logit_check_grade(p: Prediction, check) -> Grade:
    """A prediction that the logits differ, by a max |d| inside its quoted range, with every
    argmax outside ties agreeing (a step_check row)."""
    (lo, hi), d = p.range(0), float(check["max_abs_diff"])
    ok = lo < d < hi and check["argmax_agree_outside_ties"] == check["rows_outside_ties"]
    return Grade(f"max |d| {d:.4f}, argmax {int(check['argmax_agree_outside_ties'])} of "
                 f"{int(check['rows_outside_ties'])} outside ties", verdict(ok),
                 "as predicted" if ok else "identical logits" if d == 0 else "outside its range")


def down_split_k_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """K1-K4 on fusedlib.bench.roofline.measured_for_set_k (the engine's configuration's rows:
    the kept lease, and the sweeps of both shapes' commits)."""
    from .roofline import SHAPE_AB_ROLE as one

    out = {}
    kept = m.get("kept")
    if kept is not None:
        dec, mixed = kept.loc[(one, "decode")], kept.loc[(one, "mixed")]
        out["K1"] = _kernel_count_grade(p["K1"], dec, mixed, mixed_change=0)
        out["K3"] = _step_fall_grade(p["K3"], dec, mixed)
    sweeps = m.get("sweeps")
    if sweeps is not None and len(sweeps):
        (b_lo, b_hi), (c_lo, c_hi), (limit,) = p["K2"].range(0), p["K2"].range(1), p["K2"].range(2)
        best, cublas, err = sweeps["best_us"].min(), sweeps["cublas_us"], sweeps["max_err"].max()
        ok_best, ok_cublas = _in(best, b_lo, b_hi), bool(cublas.between(c_lo, c_hi).all())
        out["K2"] = Grade(f"best shape {best:.1f} µs; cuBLAS {', '.join(f'{c:.1f}' for c in cublas)} µs "
                          f"({len(sweeps)} sweeps); largest difference {err:.4f}",
                          verdict(ok_best and ok_cublas and err <= limit),
                          f"best {side(best, b_lo, b_hi)} its range, cuBLAS {'inside' if ok_cublas else 'outside'} "
                          f"its, difference {'within' if err <= limit else 'over'} {limit}")
    if m.get("kept_step_check") is not None:
        out["K4"] = _logit_check_grade(p["K4"], m["kept_step_check"])
    return out


def _wall_fall_grade(p: Prediction, i: int, step) -> tuple[bool, str]:
    """Whether an A/B step's census wall time (median over the rounds) fell by the i-th quote's
    range, and the text saying so."""
    (lo, hi), fall = p.range(i), step["base_wall_ms"] - step["new_wall_ms"]
    return _in(fall, lo, hi), f"wall {step['base_wall_ms']:.3f} -> {step['new_wall_ms']:.3f} ms (-{fall:.3f})"


def _passes(gap: dict) -> str:
    n = int(gap["passes"])
    return "one pass" if n == 1 else f"medians of {n} passes"


def _staging_steps(m: dict):
    from .roofline import SHAPE_AB_ROLE as one

    lease = m["lease"]
    return lease.loc[(one, "decode")], lease.loc[(one, "mixed")]


def staging_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """N1-N4 on fusedlib.bench.roofline.measured_for_staging(data, "staging_ab")."""
    if "lease" not in m:
        return {}
    dec, mixed = _staging_steps(m)
    (most,) = p["N1"].range(0)
    same = all(abs(r["new_kernels"] - r["base_kernels"]) <= 1 for r in (dec, mixed))
    out = {"N1": Grade(f"decode {dec['base_kernels']:.0f} -> {dec['new_kernels']:.0f} kernels, "
                       f"{dec['base_copies']:.0f} -> {dec['new_copies']:.0f} copies; mixed {mixed['base_kernels']:.0f} "
                       f"-> {mixed['new_kernels']:.0f} kernels", verdict(same and dec["new_copies"] <= most),
                       "as predicted" if same and dec["new_copies"] <= most else
                       "a kernel count changed by more than one" if not same else "more copies")}
    (limit,) = p["N2"].fractions(0)
    ok = all(abs(r["ratio"] - 1) < limit for r in (dec, mixed))
    out["N2"] = Grade(f"decode {_interval(dec)}; mixed {_interval(mixed)}", verdict(ok),
                      "inside the bound" if ok else "a step moved more")
    fell, said = _wall_fall_grade(p["N3"], 0, dec)
    (w_lo, w_hi) = p["N3"].range(1)
    mixed_fell, mixed_said = _wall_fall_grade(p["N3"], 2, mixed)
    ok = fell and _in(dec["new_wall_ms"], w_lo, w_hi) and mixed_fell
    out["N3"] = Grade(f"decode {said}; mixed {mixed_said}", verdict(ok), "inside every range" if ok else
                      f"decode fall {'inside' if fell else 'outside'} its range, its wall "
                      f"{side(dec['new_wall_ms'], w_lo, w_hi)} its, mixed fall {'inside' if mixed_fell else 'outside'} its")
    if "gap" in m:
        (lo, hi), back = p["N4"].range(0), m["gap"]["step_call_returns"]
        out["N4"] = Grade(f"the call returns after {back:.3f} ms ({_passes(m['gap'])})",
                          verdict(_in(back, lo, hi)), f"{side(back, lo, hi)} its range")
    return out


def tables_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """O1-O3 on fusedlib.bench.roofline.measured_for_staging(data, "tables_ab")."""
    if "lease" not in m:
        return {}
    dec, mixed = _staging_steps(m)
    (copies,) = p["O1"].range(0)
    ok = dec["new_kernels"] == dec["base_kernels"] and dec["new_copies"] == copies
    out = {"O1": Grade(f"{dec['new_kernels']:.0f} kernels (before: {dec['base_kernels']:.0f}), "
                       f"{dec['new_copies']:.0f} copies a decode step", verdict(ok),
                       "as predicted" if ok else "a count differs")}
    (limit,) = p["O2"].fractions(0)
    steady = all(abs(r["ratio"] - 1) < limit for r in (dec, mixed))
    fell, said = _wall_fall_grade(p["O2"], 1, dec)
    (w_lo, w_hi) = p["O2"].range(2)
    mixed_fell, mixed_said = _wall_fall_grade(p["O2"], 3, mixed)
    ok = steady and fell and _in(dec["new_wall_ms"], w_lo, w_hi) and mixed_fell
    out["O2"] = Grade(f"GPU: decode {_interval(dec)}, mixed {_interval(mixed)}; decode {said}; mixed {mixed_said}",
                      verdict(ok), "inside every range" if ok else
                      f"GPU {'inside' if steady else 'outside'} the bound, decode fall "
                      f"{'inside' if fell else 'outside'} its range, its wall {side(dec['new_wall_ms'], w_lo, w_hi)} "
                      f"its, mixed fall {'inside' if mixed_fell else 'outside'} its")
    if "gap" in m:
        gap = m["gap"]
        (r_lo, r_hi), (c_lo, c_hi) = p["O3"].range(0), p["O3"].range(1)
        back, done = gap["step_call_returns"], gap["step_to_completion"]
        ok = _in(back, r_lo, r_hi) and _in(done, c_lo, c_hi)
        out["O3"] = Grade(f"the call returns after {back:.3f} ms, the step completes after {done:.3f} ms "
                          f"({_passes(gap)})", verdict(ok),
                          "inside both ranges" if ok else
                          f"return {side(back, r_lo, r_hi)} its range, completion {side(done, c_lo, c_hi)} its")
    return out


def parallel_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """P1-P4 on fusedlib.bench.roofline.measured_for_parallel; P4 only once the gates and the
    capacity pairs of the second stream (campaign phase "parallel") have rows."""
    if "steps" not in m:
        return {}
    dec, mixed = m["steps"].loc["decode"], m["steps"].loc["mixed"]
    (lo, hi), (limit,) = p["P1"].range(0), p["P1"].fractions(1)
    fall, same = mixed["gpu_fall_ms"], mixed["serial_kernels"] == mixed["parallel_kernels"]
    ok = _in(fall, lo, hi) and same and abs(dec["ratio"] - 1) < limit
    out = {"P1": Grade(f"mixed GPU {mixed['serial_gpu_ms']:.3f} -> {mixed['parallel_gpu_ms']:.3f} ms (median fall "
                       f"{fall:.3f} ms, {_interval(mixed)}), {mixed['serial_kernels']:.0f} -> "
                       f"{mixed['parallel_kernels']:.0f} kernels; decode {_interval(dec)}", verdict(ok),
                       "inside every range" if ok else
                       f"mixed fall {side(fall, lo, hi)} its range, kernels {'the same' if same else 'changed'}, "
                       f"decode {'inside' if abs(dec['ratio'] - 1) < limit else 'outside'} its bound")}
    (w_lo, w_hi), (g_lo, g_hi) = p["P2"].range(0), p["P2"].range(1)
    wall, gpu = dec["serial_wall_ms"], dec["serial_gpu_ms"]
    ok = _in(wall, w_lo, w_hi) and _in(gpu, g_lo, g_hi)
    out["P2"] = Grade(f"decode wall {wall:.3f} ms (rounds {dec['serial_wall_min']:.3f} to {dec['serial_wall_max']:.3f}), "
                      f"GPU {gpu:.3f} ms, {int(dec['n'])} rounds", verdict(ok),
                      f"wall {side(wall, w_lo, w_hi)} its range, GPU {side(gpu, g_lo, g_hi)} its")
    (g_lo, g_hi), (w_lo, w_hi) = p["P3"].range(0), p["P3"].range(1)
    gpu, wall = mixed["parallel_gpu_ms"], mixed["parallel_wall_ms"]
    ok = _in(gpu, g_lo, g_hi) and _in(wall, w_lo, w_hi)
    out["P3"] = Grade(f"mixed with the second stream: GPU {gpu:.3f} ms, wall {wall:.3f} ms", verdict(ok),
                      f"GPU {side(gpu, g_lo, g_hi)} its range, wall {side(wall, w_lo, w_hi)} its")
    if {"gates", "capacity", "step_check"} <= set(m):
        (lo, hi), gates, cap = p["P4"].fractions(1), m["gates"], m["capacity"]
        diff, passed = m["step_check"]["max_abs_diff"], int(gates["passed"].astype(bool).sum())
        ok = diff == 0 and passed == len(gates) and _in(cap["ratio"] - 1, lo, hi)
        out["P4"] = Grade(f"logits max |diff| {diff:g}; gates {passed} of {len(gates)} passed; served at 80/s "
                          f"{_interval(cap)}", verdict(ok),
                          "every part as predicted" if ok else
                          f"logits {'identical' if diff == 0 else 'changed'}, gates {passed} of {len(gates)}, "
                          f"capacity {side(cap['ratio'] - 1, lo, hi)} its range")
    return out


def loop_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """Q1-Q3 on fusedlib.bench.roofline.measured_for_loop."""
    if "steps" not in m:
        return {}
    out = {}
    for key, step in (("Q1", "decode"), ("Q2", "mixed")):
        r = m["steps"].loc[step]
        (lo, hi), above_max = p[key].range(0), p[key].range(1)[0]
        interval, above = r["parallel_interval_ms"], r["parallel_above_gpu_ms"]
        ok = _in(interval, lo, hi) and above <= above_max
        out[key] = Grade(f"{step} interval {interval:.3f} ms (rounds {r['parallel_interval_min']:.3f} to "
                         f"{r['parallel_interval_max']:.3f}), GPU span {r['parallel_gpu_ms']:.3f} ms, at most "
                         f"{above:.3f} ms above it, {int(r['n'])} rounds", verdict(ok),
                         "inside both bounds" if ok else
                         f"interval {side(interval, lo, hi)} its range, {above:.3f} ms above the GPU span "
                         f"against at most {above_max:g}")
    dec, mixed = m["steps"].loc["decode"], m["steps"].loc["mixed"]
    (lo, hi), (limit,) = p["Q3"].range(0), p["Q3"].fractions(1)
    fall = mixed["interval_fall_ms"]
    ok, why = _fall_beside_a_bound(fall, lo, hi, "mixed fall", dec["ratio"], limit, "decode")
    out["Q3"] = Grade(f"mixed interval {mixed['serial_interval_ms']:.3f} -> {mixed['parallel_interval_ms']:.3f} ms "
                      f"(median fall {fall:.3f} ms, {_interval(mixed)}); decode {_interval(dec)}", verdict(ok), why)
    return out


def _fall_beside_a_bound(fall: float, lo: float, hi: float, what: str, ratio: float, limit: float,
                         other: str) -> tuple[bool, str]:
    """Whether `fall` is inside [lo, hi] and the other step's paired ratio within `limit` of 1,
    and the grade's reason."""
    steady = abs(ratio - 1) < limit
    ok = _in(fall, lo, hi) and steady
    return ok, ("inside both bounds" if ok else f"{what} {side(fall, lo, hi)} its range, {other} "
                                                f"{'inside' if steady else 'outside'} its bound")


def prefill_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """R1-R3 and S1 on fusedlib.bench.roofline.measured_for_prefill; R3 only once the gates and
    the GPU tests at its commit have rows, S1 once configuration 5's A/B has."""
    if "lease" not in m:
        return {}
    dec, mixed = (m["lease"].loc[("second stream", step)] for step in ("decode", "mixed"))
    out = {}
    if "kernels" in m:
        packed = m["kernels"].loc["packed_attention_kernel"]
        (lo, hi), (limit,) = p["R1"].fractions(0), p["R1"].fractions(1)
        fall = 1 - packed["new_us"] / packed["base_us"]
        ok, why = _fall_beside_a_bound(fall, lo, hi, "the packed kernel's fall", dec["ratio"], limit, "the decode step")
        out["R1"] = Grade(f"packed kernel {packed['base_us']:.0f} -> {packed['new_us']:.0f} µs a mixed step "
                          f"(-{fall:.1%}); decode step {_interval(dec)}", verdict(ok), why)
    (lo, hi) = p["R2"].range(0)
    fall = mixed["base_gpu_ms"] - mixed["new_gpu_ms"]
    same = mixed["new_kernels"] == mixed["base_kernels"]
    ok = _in(fall, lo, hi) and same
    out["R2"] = Grade(f"mixed step {mixed['base_gpu_ms']:.3f} -> {mixed['new_gpu_ms']:.3f} ms GPU (-{fall:.3f} ms, "
                      f"{_interval(mixed)}), {mixed['base_kernels']:.0f} -> {mixed['new_kernels']:.0f} kernels",
                      verdict(ok), "inside the range, same kernels" if ok else
                      f"the fall {side(fall, lo, hi)} its range" + ("" if same else ", a kernel count changed"))
    if "serial_kernels" in m:
        serial, k = m["serial_lease"].loc[("one-kernel gate_up", "mixed")], m["serial_kernels"]
        (lo, hi), (limit,), (s_lo, s_hi) = p["S1"].fractions(0), p["S1"].fractions(1), p["S1"].range(2)
        packed_fall = 1 - k.loc["packed_attention_kernel", "new_us"] / k.loc["packed_attention_kernel", "base_us"]
        decode_change = k.loc["splitkv_decode_kernel", "new_us"] / k.loc["splitkv_decode_kernel", "base_us"] - 1
        fall = serial["base_gpu_ms"] - serial["new_gpu_ms"]
        ok = _in(packed_fall, lo, hi) and abs(decode_change) < limit and _in(fall, s_lo, s_hi)
        out["S1"] = Grade(f"packed kernel -{packed_fall:.1%}, split-KV decode {decode_change:+.1%}; mixed step "
                          f"{serial['base_gpu_ms']:.3f} -> {serial['new_gpu_ms']:.3f} ms GPU (-{fall:.3f} ms, "
                          f"{_interval(serial)})", verdict(ok), "inside every range" if ok else
                          f"packed fall {side(packed_fall, lo, hi)} its range, decode "
                          f"{'inside' if abs(decode_change) < limit else 'outside'} its bound, step fall "
                          f"{side(fall, s_lo, s_hi)} its range")
    if "gates" in m and "gpu_tests" in m:
        t, g = m["gpu_tests"], m["gates"]
        default = g[(g["attention"] == "triton-parallel") & g["whole_graphs"].eq(True) & g["overlap"].eq(True)]
        tests_ok = t["failed"] == 0 and t["exit_status"] == 0 and t["passed"] > 0
        gates_ok = bool(g["passed"].astype(bool).all()) and len(default) > 0
        ok = tests_ok and gates_ok
        out["R3"] = Grade(f"GPU tests: {t['passed']} passed, {t['failed']} failed, {t['skipped']} skipped; gates "
                          f"{int(g['passed'].astype(bool).sum())} of {len(g)} passed over "
                          f"{g['timestamp'].nunique()} configurations", verdict(ok),
                          "as predicted" if ok else
                          "a GPU test failed" if not tests_ok else "a gate failed, or none ran the default path")
    return out


def _ratio_grade(pred: Prediction, ratio: float, measured: str) -> Grade:
    """A time ratio against its prediction's first quote: "at most x" or "between x and y"."""
    bounds = pred.range(0)
    lo, hi = (0.0, bounds[0]) if len(bounds) == 1 else bounds
    ok = _in(ratio, lo, hi)
    return Grade(measured, verdict(ok), "inside the range" if ok else f"the ratio {side(ratio, lo, hi)} its range")


def _mixed_fall_grade(pred: Prediction, lease: pd.DataFrame) -> Grade:
    """A census A/B of configuration 6 (indexed by (role, step)) against a prediction of the
    mixed step's fall (its first quote, ms) beside a bound on the decode step's change (its
    second, %)."""
    dec, mixed = (lease.loc[("second stream", step)] for step in ("decode", "mixed"))
    (lo, hi), (limit,) = pred.range(0), pred.fractions(1)
    fall = mixed["base_gpu_ms"] - mixed["new_gpu_ms"]
    ok, why = _fall_beside_a_bound(fall, lo, hi, "the mixed step's fall", dec["ratio"], limit, "the decode step")
    return Grade(f"mixed step {mixed['base_gpu_ms']:.3f} -> {mixed['new_gpu_ms']:.3f} ms GPU ({_interval(mixed)}); "
                 f"decode step {_interval(dec)}", verdict(ok), why)


def gate_up_tiles_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """T1 on fusedlib.bench.roofline.measured_for_gate_up_tiles: the best tiles shape's time
    over cuBLAS plus the activation kernel's, inside the range."""
    if "best" not in m:
        return {}
    best, cublas = m["best"], m["cublas"]
    ratio = best["us_per_call"] / cublas["us_per_call"]
    return {"T1": _ratio_grade(p["T1"], ratio, f"best tiles shape {best['us_per_call']:.1f} µs against "
                                               f"{cublas['us_per_call']:.1f} µs a layer at {m['rows']} rows ({ratio:.2f}×)")}


def prefill_group_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """U1 (the chunk after 1,024 cached keys) and U2 (the fresh first chunk) on
    fusedlib.bench.roofline.measured_for_prefill_group: the best group-packed shape's time over
    the one-head shape's."""
    if "cases" not in m:
        return {}
    out = {}
    for key, case in (("U1", "chunk after 2 chunks"), ("U2", "first chunk")):
        if case not in m["cases"].index:
            continue
        c = m["cases"].loc[case]
        ratio = c["group_us"] / c["one_head_us"]
        out[key] = _ratio_grade(p[key], ratio, f"{case}: group-packed {c['group_us']:.1f} µs against one head's "
                                               f"{c['one_head_us']:.1f} µs ({ratio:.2f}×)")
    return out


def prefill_v_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """V1 (the chunk after 1,024 cached keys) and V2 (the fresh first chunk) on
    fusedlib.bench.roofline.measured_for_prefill_v at part 10's 128 keys: V beside K's median
    time over V after the softmax's."""
    if "cases" not in m:
        return {}
    out = {}
    for key, case in (("V1", "chunk after 2 chunks"), ("V2", "first chunk")):
        if (case, 128) not in m["cases"].index:
            continue
        c = m["cases"].loc[(case, 128)]
        out[key] = _ratio_grade(p[key], c["ratio"], f"{case}: {c['after_us']:.1f} -> {c['beside_us']:.1f} µs "
                                                    f"({c['ratio']:.2f}×; pairs {c['ratio_lo']:.2f}-{c['ratio_hi']:.2f}× "
                                                    f"over {int(c['repeats'])} alternations)")
    if "lease" in m:
        out["V3"] = _mixed_fall_grade(p["V3"], m["lease"])
    return out


def prefill_splits_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """W1 (the chunk after 1,024 cached keys) and W2 (the fresh chunk) on
    fusedlib.bench.roofline.measured_for_prefill_splits: two runs a span over one, kernel and
    reduce together; W3 on its census A/B, as V3."""
    if "sweep" not in m:
        return {}
    out = {}
    for key, case in (("W1", "chunk after 2 chunks"), ("W2", "first chunk")):
        if case not in m["sweep"].index:
            continue
        one, two = m["sweep"].loc[case, 1], m["sweep"].loc[case, 2]
        out[key] = _ratio_grade(p[key], two / one, f"{case}: {one:.1f} µs in one run, {two:.1f} in two "
                                                   f"({two / one:.2f}×; medians over {m['repeats']} alternations)")
    if "lease" in m:
        out["W3"] = _mixed_fall_grade(p["W3"], m["lease"])
    return out


# ncu's stall reasons that are waits on memory or on other warps: what X3 predicted would lead.
# ("wait", a fixed-latency dependency on an earlier instruction, is neither.)
MEMORY_WAITS = ("long_scoreboard", "barrier")


def attention_bound_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """Set X on fusedlib.bench.roofline.measured_for_attention_bound: X1 the fastest SDPA
    backend's time over our packed kernel's on the chunk after 1,024 cached keys; X2 the fastest
    SDPA backend's fraction of the copy rate at 32 rows x 1k; X3 the packed kernel's achieved
    occupancy on both chunks and its largest stall; X4 split-KV decode's DRAM throughput and
    occupancy at 1k (the reduce is its own kernel and not counted)."""
    if "probe" not in m:
        return {}
    probe, out = m["probe"], {}
    sdpa = lambda case: probe.loc[case].drop("ours", errors="ignore")  # noqa: E731
    long, dec = "chunk after 2 chunks", "decode 1024"
    if long in probe.index.get_level_values(0):
        peers, ours = sdpa(long), probe.loc[(long, "ours")]
        best = peers["us"].idxmin()
        ratio = peers.loc[best, "us"] / ours["us"]
        out["X1"] = _ratio_grade(p["X1"], ratio, f"{best} {peers.loc[best, 'us']:.1f} µs against ours "
                                                 f"{ours['us']:.1f} µs ({ratio:.2f}×)")
    if dec in probe.index.get_level_values(0):
        peers = sdpa(dec)
        best = peers["fraction_of_copy"].idxmax()
        frac, (lo, hi) = peers.loc[best, "fraction_of_copy"], p["X2"].fractions(0)
        ok = _in(frac, lo, hi)
        out["X2"] = Grade(f"{best} {frac:.1%} of the copy rate; ours {probe.loc[(dec, 'ours'), 'fraction_of_copy']:.1%}",
                          verdict(ok), "inside the range" if ok else f"{side(frac, lo, hi)} the range")
    if "counters" in m:
        c = m["counters"][m["counters"]["call"] == "ours"].set_index(["case", "kernel"])
        packed = c.xs("packed_attention_kernel", level="kernel")
        (limit,) = p["X3"].fractions(0)
        full = packed["occupancy_pct"].max() / 100 < limit
        waits = packed["top_stall"].isin(MEMORY_WAITS).all()
        out["X3"] = Grade("; ".join(f"{case}: {r['occupancy_pct']:.1f}% of warp slots, largest stall "
                                    f"{r['top_stall']} ({r['top_stall_cycles']:.2f} cycles an instruction)"
                                    for case, r in packed.iterrows()),
                          verdict(full and waits),
                          f"occupancy {'under' if full else 'over'} {limit:.0%}; the largest stall "
                          f"{'is' if waits else 'is not'} one of {', '.join(MEMORY_WAITS)}")
        d = c.loc[(dec, "splitkv_decode_kernel")]
        (lo, hi), (occ_limit,) = p["X4"].fractions(0), p["X4"].fractions(1)
        dram_ok, occ_ok = _in(d["dram_pct"] / 100, lo, hi), d["occupancy_pct"] / 100 < occ_limit
        out["X4"] = Grade(f"DRAM {d['dram_pct']:.1f}% of peak over {d['us']:.1f} µs, {d['occupancy_pct']:.1f}% of warp slots",
                          verdict(dram_ok and occ_ok),
                          f"DRAM {side(d['dram_pct'] / 100, lo, hi)} its range; occupancy "
                          f"{'under' if occ_ok else 'over'} {occ_limit:.0%}")
    return out


def unmasked_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """Y1 (the chunk after 1,024 cached keys) and Y2 (the fresh chunk) on
    fusedlib.bench.roofline.measured_for_unmasked: the packed kernel's median time after the
    change over before; Y3 on its census A/B, as V3."""
    if "cases" not in m:
        return {}
    out = {}
    for key, case in (("Y1", "chunk after 2 chunks"), ("Y2", "first chunk")):
        if case in m["cases"].index:
            c = m["cases"].loc[case]
            out[key] = _ratio_grade(p[key], c["ratio"], f"{case}: {c['base']:.1f} -> {c['new']:.1f} µs "
                                                        f"({c['ratio']:.2f}×; medians over {m['rounds']} rounds)")
    if "lease" in m:
        out["Y3"] = _mixed_fall_grade(p["Y3"], m["lease"])
    return out


def prefetch_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """Z1-Z3 and Z5 on fusedlib.bench.roofline.measured_for_prefetch's sweep, Z4 on its census
    A/B: falls of GPU time against the plan without prefetch (or, for Z2 and Z3, the plans
    they compare), inside the predictions' ranges."""
    if "plans" not in m:
        return {}
    plans = m["plans"].set_index(["gate_up_mb", "down_mb", "bulk", "in_rotary"])
    best, out = m["best"], {}
    fall = -best["change"]
    lo, hi = p["Z1"].fractions(0)
    out["Z1"] = Grade(f"fastest plan ({best['gate_up_mb']:g} MB of gate_up, {best['down_mb']:g} MB of down, "
                      f"{'bulk' if best['bulk'] else 'lines'}{', from the rotary kernel' if best['in_rotary'] else ''}): "
                      f"{m['none_ms']:.3f} -> {best['gpu_ms']:.3f} ms GPU ({fall:+.1%} fall)",
                      verdict(_in(fall, lo, hi)), "inside the range" if _in(fall, lo, hi) else
                      f"the fall {side(fall, lo, hi)} its range")
    line, bulk = plans.loc[(24, 0, False, False), "gpu_ms"], plans.loc[(24, 0, True, False), "gpu_ms"]
    out["Z2"] = Grade(f"24 MB, lines {line:.3f} ms, bulk {bulk:.3f} ms", verdict(line > bulk),
                      "lines slower" if line > bulk else "lines not slower")
    alone = plans.loc[(24, 0, True, False), "gpu_ms"]
    (limit,) = p["Z3"].fractions(0)
    changes = {d: plans.loc[(24, d, True, False), "gpu_ms"] / alone - 1 for d in (8, 16)}
    ok = all(abs(c) < limit for c in changes.values())
    out["Z3"] = Grade("; ".join(f"+{d} MB of down: {c:+.1%}" for d, c in changes.items()) + f" (against {alone:.3f} ms)",
                      verdict(ok), "both inside the bound" if ok else "outside the bound")
    if "lease" in m:
        dec, mixed = (m["lease"].loc[("second stream", step)] for step in ("decode", "mixed"))
        (lo, hi), (gate_up_fall,), (mixed_limit,) = p["Z4"].fractions(0), p["Z4"].fractions(1), p["Z4"].fractions(2)
        g = m["decode_kernels"].loc["gate_up_silu_kernel"]
        g_fall = 1 - g["new_us"] / g["base_us"]
        ok = _in(1 - dec["ratio"], lo, hi) and g_fall >= gate_up_fall and abs(mixed["ratio"] - 1) < mixed_limit
        out["Z4"] = Grade(f"decode {dec['base_gpu_ms']:.3f} -> {dec['new_gpu_ms']:.3f} ms GPU ({_interval(dec)}); "
                          f"gate_up {g['base_us']:.0f} -> {g['new_us']:.0f} µs a step ({g_fall:.0%} fall); "
                          f"mixed {_interval(mixed)}", verdict(ok), "all three inside" if ok else "not all three inside")
    worst = m["plans"]["max_abs_diff"].max()
    out["Z5"] = Grade(f"largest logit difference from no prefetch: {worst:g}", verdict(worst == 0),
                      "identical" if worst == 0 else "different")
    return out


def prefetch_after_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AA1 (the fastest plan forked after attention within a bound of no prefetch) and AA2
    (24 MB after attention against 24 MB before it) on roofline.measured_for_prefetch_after."""
    if "plans" not in m:
        return {}
    plans, best = m["plans"].set_index(["gate_up_mb", "after_attention"]), m["best"]
    (limit,) = p["AA1"].fractions(0)
    ok = abs(best["change"]) < limit
    after, before = plans.loc[(24, True), "gpu_ms"], plans.loc[(24, False), "gpu_ms"]
    return {"AA1": Grade(f"fastest after attention ({best['gate_up_mb']:g} MB): {m['none_ms']:.3f} -> "
                         f"{best['gpu_ms']:.3f} ms GPU ({best['change']:+.1%})", verdict(ok),
                         "inside the bound" if ok else "outside the bound"),
            "AA2": Grade(f"24 MB: after attention {after:.3f} ms, before it {before:.3f} ms", verdict(after < before),
                         "after is faster" if after < before else "after is not faster")}


def _fall_and_bound(p: Prediction, lease: pd.DataFrame, falls: str, bounded: str) -> Grade:
    """A census A/B (configuration 6's rows of `lease`) against a prediction whose first quote
    is the range `falls`' GPU time falls by and whose second the bound on `bounded`'s change."""
    f, b = (lease.loc[("second stream", step)] for step in (falls, bounded))
    (lo, hi), (limit,) = p.fractions(0), p.fractions(1)
    ok = _in(1 - f["ratio"], lo, hi) and abs(b["ratio"] - 1) < limit
    return Grade(f"{falls} {f['base_gpu_ms']:.3f} -> {f['new_gpu_ms']:.3f} ms GPU ({_interval(f)}); "
                 f"{bounded} {_interval(b)}", verdict(ok), "both inside" if ok else "not both inside")


def gate_up_prefill_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AB1 and AB2 (the fastest launch shape's fall against cuBLAS and the activation kernel
    at 544 and 160 rows, inside the predictions' ranges) on
    roofline.measured_for_gate_up_prefill's sweep; AB3 (the mixed step's fall inside its range,
    the decode step's change inside its bound) and AB4 (the mixed step after the change at most
    the target's milliseconds) on its census A/B."""
    if "sizes" not in m:
        return {}
    out = {}
    for key, rows in (("AB1", 544), ("AB2", 160)):
        r = m["sizes"].loc[rows]
        fall = 1 - r["ratio"]
        lo, hi = p[key].fractions(0)
        out[key] = Grade(f"{rows} rows: fastest shape {r['best_us']:.1f} µs against {r['cublas_us']:.1f} µs a layer "
                         f"({fall:+.1%} fall)", verdict(_in(fall, lo, hi)),
                         "inside the range" if _in(fall, lo, hi) else f"the fall {side(fall, lo, hi)} its range")
    if "lease" in m:
        out["AB3"] = _fall_and_bound(p["AB3"], m["lease"], "mixed", "decode")
        out["AB4"] = _mixed_under_target(p["AB4"], m["lease"])
    return out


def _mixed_under_target(p: Prediction, lease: pd.DataFrame, quote: int = 0) -> Grade:
    """A census A/B's mixed step after the change against the milliseconds `p`'s quote names."""
    mixed = lease.loc[("second stream", "mixed")]
    (target_ms,) = p.range(quote)
    ok = mixed["new_gpu_ms"] <= target_ms
    return Grade(f"mixed step after the change: {mixed['new_gpu_ms']:.3f} ms GPU", verdict(ok),
                 "at or under the target" if ok else "over the target")


def pdl_prefetch_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AC1 (the fastest decode plan's fall against no PDL inside its range), AC2 (PDL alone
    between the quoted speed-up and slow-down, and down's prefetch beside gate_up's slower than
    gate_up's alone), AC3 (every logit equal; the mixed step under the fastest decode plan
    inside its bound) on roofline.measured_for_pdl_prefetch's sweep; AC4 on its census A/B."""
    if "decode" not in m:
        return {}
    dec, mixed = (m[s].set_index(["pdl", "qkv_k", "o_proj_k", "gate_up_k", "down_k"]) for s in ("decode", "mixed"))
    best = dec["gpu_ms"].idxmin()
    text = lambda k: f"PDL {'on' if k[0] else 'off'}, prefetch {k[1]}/{k[2]}/{k[3]}/{k[4]} columns"  # noqa: E731
    lo, hi = p["AC1"].fractions(0)
    fall = -dec.loc[best, "change"]
    out = {"AC1": Grade(f"fastest plan ({text(best)}): {dec['gpu_ms'].iloc[0]:.3f} -> {dec.loc[best, 'gpu_ms']:.3f} ms GPU "
                        f"({fall:+.1%} fall)", verdict(_in(fall, lo, hi)),
                        "inside the range" if _in(fall, lo, hi) else f"the fall {side(fall, lo, hi)} its range")}
    faster, slower = p["AC2"].fractions(0)
    alone = dec.loc[(True, 0, 0, 0, 0), "change"]
    with_down, without = dec.loc[(True, 384, 384, 256, 256), "gpu_ms"], dec.loc[(True, 384, 384, 256, 0), "gpu_ms"]
    ok = _in(alone, -faster, slower) and with_down > without
    out["AC2"] = Grade(f"PDL alone {alone:+.1%}; down's 256 columns beside gate_up's 256: {with_down:.3f} against "
                       f"{without:.3f} ms", verdict(ok), "both held" if ok else "not both held")
    (limit,) = p["AC3"].fractions(1)
    worst = max(m["decode"]["max_abs_diff"].max(), m["mixed"]["max_abs_diff"].max())
    mixed_change = mixed.loc[best, "change"]
    ok = worst == 0 and abs(mixed_change) < limit
    out["AC3"] = Grade(f"largest logit difference {worst:g}; mixed step under the fastest decode plan {mixed_change:+.1%}",
                       verdict(ok), "both held" if ok else "not both held")
    if "lease" in m:
        out["AC4"] = _fall_and_bound(p["AC4"], m["lease"], "decode", "mixed")
    return out


def blas_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AD1 (the fastest listed algorithm's fall against cuBLAS: at least the first quote on qkv
    and o_proj, inside the second's range on down, under the third on gate_up) and AD2 (the
    saving summed over a step inside its range) on roofline.measured_for_blas's sweep; AD3
    (the mixed step's fall inside its range, the decode step inside its bound) and AD4 (the
    mixed step at most the target) on its census A/B."""
    if "gemms" not in m:
        return {}
    g = m["gemms"]["fall"]
    (least,), (lo, hi), (most,) = (p["AD1"].fractions(i) for i in range(3))
    ok = min(g["qkv"], g["o_proj"]) >= least and _in(g["down"], lo, hi) and g["gate_up"] < most
    out = {"AD1": Grade("fastest listed against cuBLAS: " + ", ".join(f"{name} {-g[name]:+.1%}" for name in g.index),
                        verdict(ok), "all three held" if ok else "not all three held")}
    lo_ms, hi_ms = p["AD2"].range(0)
    out["AD2"] = Grade(f"{m['saving_ms']:.3f} ms a step over {m['layers']} layers", verdict(_in(m["saving_ms"], lo_ms, hi_ms)),
                       f"{side(m['saving_ms'], lo_ms, hi_ms)} the range")
    if "lease" in m:
        out["AD3"] = _fall_and_bound(p["AD3"], m["lease"], "mixed", "decode")
        out["AD4"] = _mixed_under_target(p["AD4"], m["lease"])
    return out


def beside_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AE1 (the sweep's fastest plan's fall against the code before inside its range), AE2 (the
    longest tiles first at 6 programs per SM inside its bound), AE3 (one split per (request,
    KV head) faster than 6 per SM, both longest first) on roofline.measured_for_beside's sweep;
    AE4 (the mixed step's fall inside its range, the decode step inside its bound, the mixed
    step at most the target) on its census A/B."""
    if "plans" not in m:
        return {}
    plans = m["plans"].set_index(["programs_per_sm", "longest_first"])
    best = plans["gpu_ms"].idxmin()
    fall = -plans.loc[best, "change"]
    lo, hi = p["AE1"].fractions(0)
    out = {"AE1": Grade(f"fastest plan ({best[0]:g} per SM, longest first {best[1]}): {plans['gpu_ms'].iloc[0]:.3f} -> "
                        f"{plans.loc[best, 'gpu_ms']:.3f} ms GPU ({fall:+.1%} fall)", verdict(_in(fall, lo, hi)),
                        "inside the range" if _in(fall, lo, hi) else f"the fall {side(fall, lo, hi)} its range")}
    (limit,) = p["AE2"].fractions(0)
    lpt = plans.loc[(6, True), "change"]
    out["AE2"] = Grade(f"longest tiles first at 6 per SM: {lpt:+.1%}", verdict(abs(lpt) < limit),
                       "inside the bound" if abs(lpt) < limit else "outside the bound")
    one, six = plans.loc[(0.25, True), "gpu_ms"], plans.loc[(6, True), "gpu_ms"]
    out["AE3"] = Grade(f"one split {one:.3f} ms against 6 per SM {six:.3f} ms, longest first", verdict(one < six),
                       "faster" if one < six else "slower")
    if "lease" in m:
        both = _fall_and_bound(p["AE4"], m["lease"], "mixed", "decode")
        under = _mixed_under_target(p["AE4"], m["lease"], quote=2)
        ok = both.verdict == under.verdict == verdict(True)
        out["AE4"] = Grade(f"{both.measured}; {under.measured}", verdict(ok), f"{both.why}; {under.why}")
    return out


def pair_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AF1 (the sweep's fastest plan's fall against the code before inside its range), AF2
    (64-position tiles at least the quoted fall faster, 16-position tiles slower), AF3 (decode
    with 8 warps beside the chunk slower than with 4) on roofline.measured_for_pair's sweep; AF4
    (the mixed step's fall inside its range, the decode step inside its bound) on its census A/B."""
    if "plans" not in m:
        return {}
    plans = m["plans"].set_index(["block_m", "decode_block_n", "decode_warps"])
    best = plans["gpu_ms"].idxmin()
    fall = -plans.loc[best, "change"]
    lo, hi = p["AF1"].fractions(0)
    out = {"AF1": Grade(f"fastest plan ({best[0]}-position tiles, decode {best[1]} keys, {best[2]} warps): "
                        f"{plans['gpu_ms'].iloc[0]:.3f} -> {plans.loc[best, 'gpu_ms']:.3f} ms GPU ({fall:+.1%} fall)",
                        verdict(_in(fall, lo, hi)),
                        "inside the range" if _in(fall, lo, hi) else f"the fall {side(fall, lo, hi)} its range")}
    (least,) = p["AF2"].fractions(0)
    tall, short = -plans.loc[(64, 32, 4), "change"], plans.loc[(16, 32, 4), "change"]
    ok = tall >= least and short > 0
    out["AF2"] = Grade(f"64-position tiles {-tall:+.1%}, 16-position tiles {short:+.1%}", verdict(ok),
                       "both held" if ok else "not both held")
    eight = plans.loc[(32, 32, 8), "change"]
    out["AF3"] = Grade(f"decode with 8 warps {eight:+.1%}", verdict(eight > 0), "slower" if eight > 0 else "not slower")
    if "lease" in m:
        out["AF4"] = _fall_and_bound(p["AF4"], m["lease"], "mixed", "decode")
    return out


def order_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AG1 (decode starting before the prefill kernel and the join earlier by at least the
    quoted µs) on roofline.measured_for_order's timelines; AG2 (the mixed step's fall inside its
    range, the decode step inside its bound) on its census A/B; AG3 (two streams against in
    order, every logit equal) on its step check."""
    if "timeline" not in m:
        return {}
    after, before = m["timeline"]["medians"], m["before"]["medians"]
    (least,) = p["AG1"].range(0)
    earlier = before["join_us"] - after["join_us"]
    ok = after["decode_start_us"] < after["prefill_start_us"] and earlier >= least
    out = {"AG1": Grade(f"decode starts at {after['decode_start_us']:.1f} µs, the prefill kernel at "
                        f"{after['prefill_start_us']:.1f}; join {before['join_us']:.1f} -> {after['join_us']:.1f} µs",
                        verdict(ok), "both held" if ok else "not both held")}
    if "lease" in m:
        out["AG2"] = _fall_and_bound(p["AG2"], m["lease"], "mixed", "decode")
    if "step_check" in m:
        diff = m["step_check"]["max_abs_diff"]
        out["AG3"] = Grade(f"two streams against in order: max |d| {diff:g}", verdict(diff == 0),
                           "equal" if diff == 0 else "not equal")
    return out


def chain_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AH1 (the persistent chain within the quoted share of the separate kernels, each at its
    fastest plan), AH2 (weights loaded before the barrier at least the quoted share faster, at
    the persistent arm's fastest shape and grid), AH3 (the fastest arm at least the quoted
    multiple of the bytes floor), AH4 (every plan's output equal to the separate kernels') on
    roofline.measured_for_chain."""
    if "best" not in m:
        return {}
    best, plans = m["best"], m["plans"]
    kernels, persistent = best.loc["kernels", "ms"], best.loc["persistent", "ms"]
    change = persistent / kernels - 1
    (limit,) = p["AH1"].fractions(0)
    out = {"AH1": Grade(f"persistent {persistent:.3f} ms against separate kernels {kernels:.3f} ms ({bd.pct(change)})",
                        verdict(abs(change) <= limit), "inside the bound" if abs(change) <= limit else "outside the bound")}
    shape = best.loc["persistent", ["block_n", "block_k", "num_warps", "num_stages", "grid"]]
    same = plans[(plans["arm"] == "prefetch")
                 & (plans[list(shape.index)] == shape.to_numpy()).all(axis=1)]["ms"].iloc[0]
    fall = 1 - same / persistent
    (least,) = p["AH2"].fractions(0)
    out["AH2"] = Grade(f"weights loaded before the barrier {same:.3f} ms against {persistent:.3f} ({bd.pct(-fall)})",
                       verdict(fall >= least), "at least that much faster" if fall >= least else "not that much faster")
    fastest = best["ms"].min()
    (multiple,) = p["AH3"].range(0)
    over = fastest / m["floor_ms"]
    out["AH3"] = Grade(f"fastest {fastest:.3f} ms, {over:.2f}x the {m['floor_ms']:.3f} ms floor", verdict(over >= multiple),
                       "at least that multiple" if over >= multiple else "under that multiple")
    equal = bool(plans["equal"].all())
    out["AH4"] = Grade(f"{int(plans['equal'].sum())} of {len(plans)} plans equal to the separate kernels",
                       verdict(equal), "all equal" if equal else "not all equal")
    return out


def read_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AI1 (gate_up's and down's fastest read a share of the engine's kernel inside the range),
    AI2 (the same for q/k/v and the output projection), AI3 (over a decode step, the reads at
    least the quoted share of the kernels' time), AI4 (the gate_up read's rate inside its range
    of the copy rate) on roofline.measured_for_reads."""
    if "weights" not in m:
        return {}
    w = m["weights"]
    out = {}
    for key, names in (("AI1", ("gate_up", "down")), ("AI2", ("qkv", "o_proj"))):
        lo, hi = p[key].fractions(0)
        shares = [w.loc[n, "share"] for n in names]
        ok = all(_in(s, lo, hi) for s in shares)
        out[key] = Grade(", ".join(f"{n} {w.loc[n, 'read_us']:.1f} of {w.loc[n, 'engine_us']:.1f} µs ({s:.0%})"
                                   for n, s in zip(names, shares)),
                         verdict(ok), "both inside the range" if ok else "not both inside the range")
    (least,) = p["AI3"].fractions(0)
    step = m["step"]
    out["AI3"] = Grade(f"reads {step['read_us']:.0f} of {step['engine_us']:.0f} µs a step ({step['share']:.0%})",
                       verdict(step["share"] >= least), "at least that share" if step["share"] >= least else "under it")
    lo, hi = p["AI4"].fractions(0)
    frac = w.loc["gate_up", "read_frac"]
    out["AI4"] = Grade(f"gate_up read at {frac:.0%} of the copy rate", verdict(_in(frac, lo, hi)),
                       "inside the range" if _in(frac, lo, hi) else f"{side(frac, lo, hi)} the range")
    return out


def anchor_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AJ1 (our decode step's GPU time below the compiled plain step's by a share inside the
    range), AJ2 (the plain step uncompiled at least the quoted multiple of compiled), AJ4 (both
    plain steps' argmax equal to ours outside ties, logits within the quoted difference) on
    roofline.measured_for_anchors; AJ3 (transformers' step a multiple of ours inside the range)
    where its row is there."""
    if "anchors" not in m:
        return {}
    from .roofline import OURS_ANCHOR, PLAIN_COMPILED, PLAIN_GRAPH

    a = m["anchors"]
    ours, graph, compiled = (a.loc[k, "gpu_ms"] for k in (OURS_ANCHOR, PLAIN_GRAPH, PLAIN_COMPILED))
    below = 1 - ours / compiled
    lo, hi = p["AJ1"].fractions(0)
    out = {"AJ1": Grade(f"ours {ours:.3f} ms, plain compiled {compiled:.3f} ms ({below:.1%} below)",
                        verdict(_in(below, lo, hi)),
                        "inside the range" if _in(below, lo, hi) else f"{side(below, lo, hi)} the range")}
    (least,) = p["AJ2"].range(0)
    out["AJ2"] = Grade(f"plain uncompiled {graph:.3f} ms, {graph / compiled:.2f}x compiled", verdict(graph / compiled >= least),
                       "at least that multiple" if graph / compiled >= least else "under it")
    if "transformers" in m:
        x = m["transformers"]["gpu_ms"] / ours
        lo, hi = p["AJ3"].range(0)
        out["AJ3"] = Grade(f"transformers {m['transformers']['gpu_ms']:.2f} ms a step, {x:.2f}x ours", verdict(_in(x, lo, hi)),
                           "inside the range" if _in(x, lo, hi) else f"{side(x, lo, hi)} the range")
    (limit,) = p["AJ4"].range(0)
    plain = a.loc[[PLAIN_GRAPH, PLAIN_COMPILED]]
    agree = bool((plain["argmax_agree_outside_ties"] == plain["rows_outside_ties"]).all())
    diff = float(plain["max_abs_diff_vs_ours"].max())
    out["AJ4"] = Grade(f"max |d| {diff:.3f}; argmax {int(plain['argmax_agree_outside_ties'].min())} of "
                       f"{int(plain['rows_outside_ties'].min())} rows outside ties", verdict(agree and diff <= limit),
                       "both held" if agree and diff <= limit else "not both held")
    return out


def read_kv_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AK1 (the fastest read of one layer's attention bytes inside its µs range), AK2 (a step
    of those reads a share of the engine's decode attention inside the range), AK3 (those
    reads with set AI's GEMM reads inside the ms range) on roofline.measured_for_read_kv."""
    if "read_us" not in m:
        return {}
    lo, hi = p["AK1"].range(0)
    out = {"AK1": Grade(f"{m['read_us']:.1f} µs for {m['mb']:.1f} MB", verdict(_in(m["read_us"], lo, hi)),
                        "inside the range" if _in(m["read_us"], lo, hi) else f"{side(m['read_us'], lo, hi)} the range")}
    step = m["read_us"] * m["layers"]
    if "engine_us" in m:
        share = step / m["engine_us"]
        lo, hi = p["AK2"].fractions(0)
        out["AK2"] = Grade(f"reads {step:.0f} of the kernels' {m['engine_us']:.0f} µs a step ({share:.0%})",
                           verdict(_in(share, lo, hi)),
                           "inside the range" if _in(share, lo, hi) else f"{side(share, lo, hi)} the range")
    if "gemm_read_us" in m:
        floor = (step + m["gemm_read_us"]) / 1e3
        lo, hi = p["AK3"].range(0)
        out["AK3"] = Grade(f"{m['gemm_read_us'] / 1e3:.2f} + {step / 1e3:.2f} = {floor:.2f} ms", verdict(_in(floor, lo, hi)),
                           "inside the range" if _in(floor, lo, hi) else f"{side(floor, lo, hi)} the range")
    return out


def tma_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AL1 (the fastest TMA shape's time over cuBLAS and the activation kernel's inside the
    range), AL2 (its GEMM rate inside the TFLOP/s range), AL3 (the fastest persistent shape
    within the band of the fastest one-tile-per-program shape) on roofline.measured_for_tma."""
    if "best" not in m:
        return {}
    best, out = m["best"], {}
    ratio = best["us_per_call"] / m["cublas_us"]
    lo, hi = p["AL1"].range(0)
    out["AL1"] = Grade(f"{best['us_per_call']:.1f} against {m['cublas_us']:.1f} µs ({ratio:.2f}×)",
                       verdict(_in(ratio, lo, hi)), f"{side(ratio, lo, hi)} the range")
    lo, hi = p["AL2"].range(0)
    out["AL2"] = Grade(f"{best['tflops']:.0f} TFLOP/s", verdict(_in(best["tflops"], lo, hi)),
                       f"{side(best['tflops'], lo, hi)} the range")
    if "tiles" in m and "persistent" in m:
        gap = m["persistent"]["us_per_call"] / m["tiles"]["us_per_call"] - 1
        band = p["AL3"].fractions(0)[0]
        out["AL3"] = Grade(f"persistent {m['persistent']['us_per_call']:.1f}, one tile a program "
                           f"{m['tiles']['us_per_call']:.1f} µs ({gap:+.1%})", verdict(abs(gap) <= band),
                           "within the band" if abs(gap) <= band else "outside the band")
    return out


def prefill_rates_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AM1 (the fastest kernel's rate after the longest prefix inside the range), AM2 (ours over
    the fastest SDPA backend's time inside the range after every prefix of at least 1,024
    keys), AM3 (the closed pass's floor inside the range) on roofline.closed_floor."""
    if "rates" not in m:
        return {}
    r, out = m["rates"], {}
    longest = r.iloc[-1]
    lo, hi = p["AM1"].range(0)
    out["AM1"] = Grade(f"{longest['best']:.0f} TFLOP/s after {r.index[-1]:,} keys ({longest['sdpa_kernel']})",
                       verdict(_in(longest["best"], lo, hi)), f"{side(longest['best'], lo, hi)} the range")
    long = r[r.index >= 1024]["ours_vs_sdpa"]
    lo, hi = p["AM2"].range(0)
    outside = [f"{k:,}" for k, x in long.items() if not _in(x, lo, hi)]
    out["AM2"] = Grade(", ".join(f"{x:.2f}× after {k:,}" for k, x in long.items()), verdict(not outside),
                       "inside the range at every prefix" if not outside else f"outside it after {', '.join(outside)} keys")
    lo, hi = p["AM3"].range(0)
    out["AM3"] = Grade(f"{m['floor_s']:.2f} s", verdict(_in(m["floor_s"], lo, hi)), f"{side(m['floor_s'], lo, hi)} the range")
    return out


def prefill_long_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AN1 (the sweep's fastest rate after the longest prefix inside the range), AN2 (that
    shape's query tile at least the rows named) on roofline.measured_for_prefill_long."""
    if "cases" not in m:
        return {}
    longest = max(m["cases"])
    best = m["cases"][longest]["best"]
    shape = f"{int(best['block_m'])} x {int(best['block_n'])}, {int(best['num_warps'])} warps, {int(best['num_stages'])} stages"
    lo, hi = p["AN1"].range(0)
    rows = p["AN2"].range(0)[0]
    return {"AN1": Grade(f"{best['tflops']:.0f} TFLOP/s after {longest:,} keys ({shape})",
                         verdict(_in(best["tflops"], lo, hi)), f"{side(best['tflops'], lo, hi)} the range"),
            "AN2": Grade(f"{int(best['block_m'])}-row query tiles", verdict(best["block_m"] >= rows),
                         "as named" if best["block_m"] >= rows else "fewer rows")}


def split_prefill_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AO1 (the fastest split probe's rate after the longest prefix inside the range), AO2 (its
    split count at least the one named), AO3 (on the fresh chunk, at each shape, every split
    count above 1 slower than one split) on roofline.measured_for_split_prefill."""
    if "cases" not in m:
        return {}
    longest = max(m["cases"])
    best = m["cases"][longest]["best"]
    lo, hi = p["AO1"].range(0)
    least = p["AO2"].range(0)[0]
    out = {"AO1": Grade(f"{best['tflops']:.0f} TFLOP/s ({int(best['splits'])} splits, {int(best['block_m'])}-row tiles, "
                        f"{best['us']:.1f} µs) after {longest:,} keys", verdict(_in(best["tflops"], lo, hi)),
                        f"{side(best['tflops'], lo, hi)} the range"),
           "AO2": Grade(f"{int(best['splits'])} splits", verdict(best["splits"] >= least),
                        "as named" if best["splits"] >= least else "fewer")}
    fresh = m["cases"][min(m["cases"])]["splits"]
    faster = [f"{int(r.splits)} splits at {int(r.block_m)} rows" for r in fresh.itertuples() if r.splits > 1
              and r.us < fresh[(fresh["splits"] == 1) & (fresh["block_m"] == r.block_m)]["us"].iloc[0]]
    out["AO3"] = Grade("faster than one split: " + (", ".join(faster) or "none"), verdict(not faster),
                       "every count above 1 slower" if not faster else "some counts above 1 faster")
    return out


def split_parts_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AP1 (on the fresh chunk, 64-row tiles and one run, the split kernel alone over the packed
    kernel inside the range), AP2 (after the longest prefix, 64-row tiles and 4 runs, the split
    kernel alone's rate inside the range) on roofline.measured_for_split_parts."""
    if "probe" not in m:
        return {}
    probe, ours = m["probe"], m["ours_us"]
    fresh, longest = min(ours.index), max(ours.index)
    alone = probe.loc[(fresh, "split kernel alone", 1, 64)]
    ratio = alone["us"] / ours[fresh]
    lo, hi = p["AP1"].range(0)
    out = {"AP1": Grade(f"{alone['us']:.1f} against {ours[fresh]:.1f} µs ({ratio:.2f}×)", verdict(_in(ratio, lo, hi)),
                        f"{side(ratio, lo, hi)} the range")}
    far = probe.loc[(longest, "split kernel alone", 4, 64)]
    lo, hi = p["AP2"].range(0)
    out["AP2"] = Grade(f"{far['tflops']:.0f} TFLOP/s ({far['us']:.1f} µs)", verdict(_in(far["tflops"], lo, hi)),
                       f"{side(far['tflops'], lo, hi)} the range")
    return out


def _split_probe_cases(m: dict, kernel: str, far_runs: int, fresh_runs: int) -> tuple[float, float, float]:
    """The split probe's `kernel` at 64-row tiles (roofline.measured_for_split_parts): its µs after
    the longest prefix at `far_runs`, the packed kernel's there, and on the fresh chunk at
    `fresh_runs` its time over the packed kernel's."""
    probe, ours = m["probe"], m["ours_us"]
    fresh, longest = min(ours.index), max(ours.index)
    return (probe.loc[(longest, kernel, far_runs, 64)]["us"], ours[longest],
            probe.loc[(fresh, kernel, fresh_runs, 64)]["us"] / ours[fresh])


def split_merge_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AQ1 (after the longest prefix, 64-row tiles and 4 runs, the probe merged by tile inside
    the µs range and at most the multiple of the packed kernel's time), AQ2 (on the fresh chunk,
    64-row tiles and one run, its time over the packed kernel's inside the range) on
    roofline.measured_for_split_parts over split_prefill_merge."""
    if "probe" not in m:
        return {}
    far, packed, near = _split_probe_cases(m, "split, merged by tile", 4, 1)
    lo, hi = p["AQ1"].range(0)
    most = p["AQ1"].range(1)[0]
    ok = _in(far, lo, hi) and far / packed <= most
    out = {"AQ1": Grade(f"{far:.1f} µs against the packed kernel's {packed:.1f} ({far / packed:.2f}×)",
                        verdict(ok), "inside the range and under the multiple" if ok else
                        f"{side(far, lo, hi)} the range, {far / packed:.2f}× the packed kernel")}
    lo, hi = p["AQ2"].range(0)
    out["AQ2"] = Grade(f"{near:.2f}× the packed kernel", verdict(_in(near, lo, hi)), f"{side(near, lo, hi)} the range")
    return out


def split_adaptive_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AR1 (after the longest prefix, 64-row tiles and at most 4 runs, the adaptive probe inside
    the µs range), AR2 (on the fresh chunk, the same shape, its time over the packed kernel's
    inside the range) on roofline.measured_for_split_parts over split_prefill_adaptive."""
    if "probe" not in m:
        return {}
    far, packed, near = _split_probe_cases(m, "split, adaptive", 4, 4)
    lo, hi = p["AR1"].range(0)
    out = {"AR1": Grade(f"{far:.1f} µs (the packed kernel {packed:.1f})", verdict(_in(far, lo, hi)),
                        f"{side(far, lo, hi)} the range")}
    lo, hi = p["AR2"].range(0)
    out["AR2"] = Grade(f"{near:.2f}× the packed kernel", verdict(_in(near, lo, hi)), f"{side(near, lo, hi)} the range")
    return out


def runs_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AS1-AS3 (the engine's packed kernel with runs over one run a tile, after the longest
    prefix, on the fresh chunk and after 1,024 keys, inside each range) on the first
    prefill_runs run of roofline.measured_for_runs; AS4 (the census A/B's mixed and decode steps,
    one-kernel gate_up configuration, each changed by less than the bound) on its lease; AS5 (our
    closed pass new over base, paired by round, inside the range) on its closed passes. AS6 (the
    peer bracket) has no rows: the change was not kept, so it was not run."""
    if "first" not in m:
        return {}
    first, out = m["first"]["ratio"], {}
    for key, cached in (("AS1", first.index.max()), ("AS2", first.index.min()), ("AS3", 1024)):
        lo, hi = p[key].range(0)
        r = m["first"].loc[cached]
        where = "on the fresh chunk" if cached == 0 else f"after {cached:,} keys"
        out[key] = Grade(f"{where} {r['runs_us']:.1f} against {r['one_us']:.1f} µs in one run "
                         f"({r['ratio']:.2f}×)", verdict(_in(r["ratio"], lo, hi)), f"{side(r['ratio'], lo, hi)} the range")
    if "lease" in m:
        (limit,) = p["AS4"].fractions(0)
        dec, mixed = (m["lease"].loc[("one-kernel gate_up", step)] for step in ("decode", "mixed"))
        ok = abs(dec["ratio"] - 1) < limit and abs(mixed["ratio"] - 1) < limit
        out["AS4"] = Grade(f"mixed {mixed['base_gpu_ms']:.3f} -> {mixed['new_gpu_ms']:.3f} ms GPU ({_interval(mixed)}); "
                           f"decode {_interval(dec)}", verdict(ok), "both inside the bound" if ok else "not both inside")
    if "closed" in m:
        c = m["closed"]
        lo, hi = p["AS5"].range(0)
        out["AS5"] = Grade(f"{c['base_wall_s']:.3f} -> {c['new_wall_s']:.3f} s ({_interval(c)})",
                           verdict(_in(c["ratio"], lo, hi)), f"{side(c['ratio'], lo, hi)} the range")
    return out


def scorecard_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AT1-AT4 (the engine measured again: each figure inside its range) and AT5 (every figure
    AT1 to AT4 name within the bound of the figure the book published for it) on
    roofline.measured_for_scorecard's figures."""
    if "figures" not in m:
        return {}
    f = m["figures"]
    ms, num, frac = (lambda v: f"{v:.3f} ms"), (lambda v: f"{v:.2f}"), (lambda v: f"{v:.1%}")
    out, named = {}, []
    for key, figures in (("AT1", (("decode_gpu_ms", ms, 0), ("kernels_per_layer", num, 0))),
                         ("AT2", (("mixed_gpu_ms", ms, 0),)),
                         ("AT3", (("loop_decode_ms", ms, 0), ("loop_mixed_ms", ms, 0))),
                         ("AT4", (("attention_1k", frac, 1), ("attention_4k", frac, 1)))):
        got, oks, whys = [], [], []
        for i, (figure, shown, percent) in enumerate(figures):
            lo, hi = p[key].fractions(i) if percent else p[key].range(i)
            x = f.loc[figure, "again"]
            got.append(f"{f.loc[figure, 'what']} {shown(x)}")
            oks.append(_in(x, lo, hi))
            whys.append(f"{side(x, lo, hi)} {shown(lo)} to {shown(hi)}")
            named.append(figure)
        out[key] = Grade("; ".join(got), verdict(all(oks)), "; ".join(whys))
    (bound,) = p["AT5"].fractions(0)
    apart = (f.loc[named, "again"] / f.loc[named, "published"] - 1).abs()
    widest = apart.idxmax()
    out["AT5"] = Grade(f"the widest apart: {f.loc[widest, 'what']}, {apart.max():.1%} from the published figure",
                       verdict(bool((apart <= bound).all())),
                       f"{int((apart <= bound).sum())} of {len(apart)} within {bound:.0%}")
    return out


def final_grades(p: dict[str, Prediction], m: dict) -> dict[str, Grade]:
    """AU1 (the final phase's fused rate and fusion's gain, each inside its range), AU2 (the
    eight draws' gain inside its range) and AU3 (both gains above set E's, with whole graphs
    alone) on roofline.measured_for_final."""
    out = {}
    if "pairs" in m:
        r = m["pairs"]
        lo, hi = p["AU1"].range(0)
        glo, ghi = p["AU1"].range(1)
        gain = (r["ratio"] - 1) * 100
        ok = _in(r["a_median"], lo, hi) and _in(gain, glo, ghi)
        out["AU1"] = Grade(f"fused {r['a_median']:.1f}, chunked {r['b_median']:.1f} requests/s, {_interval(r)}",
                           verdict(ok), f"rate {side(r['a_median'], lo, hi)} its range, gain {side(gain, glo, ghi)} its")
    if "seeds" in m:
        r = m["seeds"]
        lo, hi = p["AU2"].range(0)
        gain = (r["ratio"] - 1) * 100
        out["AU2"] = Grade(f"{_interval(r)} (fused {r['a_median']:.1f}, chunked {r['b_median']:.1f} requests/s)",
                           verdict(_in(gain, lo, hi)), f"{side(gain, lo, hi)} the range")
    if all(k in m for k in ("pairs", "seeds", "whole_pairs", "whole_seeds")):
        more = [m[k]["ratio"] > m[f"whole_{k}"]["ratio"] for k in ("pairs", "seeds")]
        out["AU3"] = Grade(f"five pairs {bd.pct(m['pairs']['ratio'] - 1)} against {bd.pct(m['whole_pairs']['ratio'] - 1)}; "
                           f"eight draws {bd.pct(m['seeds']['ratio'] - 1)} against {bd.pct(m['whole_seeds']['ratio'] - 1)}",
                           verdict(all(more)), f"{sum(more)} of 2 above set E's")
    return out
