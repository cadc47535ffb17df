"""The book's answer: the reference's A10 figures (data/reference/a10.yaml) beside ours on the
H200, each step time also as a multiple of its machine's weight-read floor, so the two
machines compare even though their absolute times do not.

The floor of a machine is the time to read the model's weights once at its memory bandwidth:
nothing that reads every weight per forward can be faster. The A10's bandwidth is the
reference's own (its nominal 600 GB/s); ours is the copy rate measured in the same run as the
step trace.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from . import analysis as bd
from .campaign import FINAL_FUSED_VS_CHUNKED, FINAL_SEEDS, WHOLE_FUSED_VS_CHUNKED, WHOLE_SEEDS, WHOLE_VS_PIECEWISE
from .paired import Comparison, compare_groups

REFERENCE = Path(__file__).resolve().parents[2] / "data" / "reference" / "a10.yaml"
FULL_ROWS = 32  # the reference's (and our) decode batch: a pure decode step with every row busy


@dataclass(frozen=True)
class Reference:
    gpu: str
    bandwidth_Bps: float
    bandwidth_why: str
    figures: pd.DataFrame  # id, what, value, unit, where, quote


def reference(path: Path = REFERENCE) -> Reference:
    raw = yaml.safe_load(Path(path).read_text())
    figs = pd.DataFrame(raw["figures"])
    if figs["id"].duplicated().any():
        raise ValueError(f"{path}: figure ids repeat: {sorted(figs.loc[figs['id'].duplicated(), 'id'])}")
    bad = set(figs["unit"]) - {"ms", "req/s", "fraction"}
    if bad:
        raise ValueError(f"{path}: unknown units {sorted(bad)} (ms, req/s or fraction)")
    m = raw["machine"]
    return Reference(m["gpu"], float(m["bandwidth_Bps"]), m["bandwidth_why"], figs)


def floor_s(weight_bytes: float, bandwidth_Bps: float) -> float:
    """Seconds to read the weights once at the given bandwidth."""
    if weight_bytes <= 0 or bandwidth_Bps <= 0:
        raise ValueError(f"weight bytes and bandwidth must be positive, got {weight_bytes} and {bandwidth_Bps}")
    return weight_bytes / bandwidth_Bps


def baseline_trace(trace: pd.DataFrame) -> pd.DataFrame:
    """The step trace the reference's figures compare with: eager, per-row decode attention
    (the reference's configuration), the newest run of each engine; eager torch attention in
    rows that hold no per-row traces (the CPU smoke runs)."""
    t = trace
    if "cuda_graphs" in t:
        t = t[~t["cuda_graphs"].astype("boolean").fillna(False).astype(bool)]
    if "attention" in t:
        # The CPU smoke rows run torch attention only: their eager traces stand in there.
        t = t[t["attention"] == ("triton" if (t["attention"] == "triton").any() else "torch")]
    return bd.latest(t, ["engine"])


def trace_figures(trace: pd.DataFrame, full_rows: int = FULL_ROWS) -> dict[str, float]:
    """From one step trace per engine: step medians by kind (the pure decode step at full
    batch), the chunked engine's two forwards in a mixed step, the longest step, token gaps,
    fusion's saving as a share of the chunked run, and the machine's copy bandwidth and the
    weights' bytes as the trace recorded them. Times in seconds."""
    out = {}
    steps = trace[trace["record"] == "step"]
    summary = trace[trace["record"] == "summary"].set_index("engine")
    for e in ("chunked", "fused"):
        s = steps[steps["engine"] == e]
        dec = s[(s["kind"] == "decode") & (s["n_decode"] == full_rows)]
        out[f"decode_step_{e}"] = float(dec["duration_s"].median())
        out[f"mixed_step_{e}"] = float(s.loc[s["kind"] == "mixed", "duration_s"].median())
        out[f"step_max_{e}"] = float(s["duration_s"].max())
        out[f"gap_max_{e}"] = float(summary.loc[e, "gap_max_s"])
        out[f"gap_median_{e}"] = float(summary.loc[e, "gap_median_s"])
    mixed = steps[(steps["engine"] == "chunked") & (steps["kind"] == "mixed")]
    forwards = [f for f in mixed.get("forward_durations_s", pd.Series(dtype=object)) if isinstance(f, list) and len(f) == 2]
    if forwards:
        out["chunk_forward"], out["decode_forward"] = (float(x) for x in np.median(np.array(forwards), axis=0))
    out["gap_median_change"] = out["gap_median_fused"] / out["gap_median_chunked"] - 1
    by_step = steps.pivot_table(index="step", columns="engine", values="duration_s")
    out["trace_saving_share"] = float((by_step["chunked"] - by_step["fused"]).sum() / by_step["chunked"].sum())
    for column, key in (("copy_bandwidth_Bps", "bandwidth_Bps"), ("weight_bytes", "weight_bytes")):
        if column in summary and summary[column].notna().any():
            out[key] = float(summary[column].median())
    return out


def capacity(arrivals: pd.DataFrame) -> tuple[pd.Series, Comparison] | None:
    """The capacity comparison: at the highest offered rate both engines ran (default pool,
    the most requests), every run of each engine there, fused over chunked served rate as a
    ratio of medians with its interval. These runs were not interleaved ABBA, so the interval
    is compare_groups' (each engine resampled on its own). None without such a rate."""
    pair = bd.capacity_pair(arrivals)
    if pair is None:
        return None
    d = bd.default_pool(arrivals)[0]
    at = d[(d["rate"] == pair["rate"]) & (d["n_requests"] == pair["n_requests"])]
    runs = {e: at.loc[at["engine"] == e, "served_rate"].to_numpy(float) for e in ("fused", "chunked")}
    return pair, compare_groups(runs["fused"], runs["chunked"])


def our_figures(trace: pd.DataFrame, arrivals: pd.DataFrame, closed: pd.DataFrame, layout: pd.DataFrame,
                full_rows: int = FULL_ROWS) -> dict[str, float]:
    """Our value for every figure id of the reference that our rows answer, in the reference's
    units (ms, req/s, fractions); absent ids have no rows here."""
    out = {}
    if len(trace):
        t = trace_figures(baseline_trace(trace), full_rows)
        out.update({k: v * 1e3 if k.startswith(("decode_step", "mixed_step", "step_max", "gap_max", "chunk_forward",
                                                   "decode_forward")) else v for k, v in t.items()
                    if not k.startswith("gap_median_") or k == "gap_median_change"})
        if "weight_bytes" in t and "bandwidth_Bps" in t:
            out["weight_read"] = floor_s(t["weight_bytes"], t["bandwidth_Bps"]) * 1e3
    cap = capacity(arrivals) if len(arrivals) else None
    if cap is not None:
        pair, comp = cap
        out["capacity_fused"] = float(pair["served_rate_fused"])
        out["capacity_chunked"] = float(pair["served_rate_chunked"])
        out["capacity_gain"] = comp.change
    small = bd.paired(bd.default_pool(arrivals)[1]) if len(arrivals) else pd.DataFrame()
    if len(small):
        out["small_pool_gain"] = float(small.sort_values("rate").iloc[-1]["gain"])
    comp = bd.closed_comparison(closed) if len(closed) else pd.DataFrame()
    for workload, batch, key in (("mixed", 32, "closed_mixed_b32"), ("p256", 8, "closed_uniform_b8"),
                                 ("p256", 32, "closed_uniform_b32")):
        hit = comp[(comp["workload"] == workload) & (comp["batch_size"] == batch)] if len(comp) else comp
        if len(hit):
            out[key] = float(hit["change"].iloc[0])
    if len(layout):
        lb = layout.groupby("kernel")["median_ms"].median()
        for kernel, key in (("rows", "decode_layout_rows"), ("packed", "decode_layout_packed")):
            if kernel in lb:
                out[key] = float(lb[kernel])
    return out


def _fmt(value: float, unit: str, signed: bool = True) -> str:
    if unit == "fraction":
        return f"{value:+.0%}" if signed else f"{value:.0%}"
    return f"{bd.sig3(value)} {unit}"


def per_step(figure_id: str, unit: str) -> bool:
    """Whether a figure is the time of a whole step or forward (so a floor multiple means
    something); a per-layer kernel time is not."""
    return unit == "ms" and not figure_id.startswith("decode_layout")


def answer_table(ref: Reference, ours: dict[str, float], a10_floor_ms: float, h200_floor_ms: float) -> pd.DataFrame:
    """One row per reference figure: what it is, the reference's A10 value, ours on the H200,
    each step time with its multiple of its machine's floor, and where the reference says it.
    A figure our rows do not answer reads as such, never as a number."""
    rows = []
    for f in ref.figures.itertuples():
        signed = not f.id.endswith("_share")  # a share of a run, not a change
        a10 = _fmt(f.value, f.unit, signed)
        h200 = _fmt(ours[f.id], f.unit, signed) if f.id in ours else "no counterpart in our rows"
        if per_step(f.id, f.unit):
            a10 += f" ({f.value / a10_floor_ms:.1f}× floor)"
            if f.id in ours:
                h200 += f" ({ours[f.id] / h200_floor_ms:.1f}× floor)"
        rows.append({"figure": f.what, "A10 (reference)": a10, "H200 (ours)": h200, "in the reference": f.where})
    return pd.DataFrame(rows)


def capacity_by_configuration(arrivals: pd.DataFrame, beyond: pd.DataFrame) -> pd.DataFrame:
    """Served rate at the top offered rate per engine configuration (eager, decode graphs,
    every forward graphed) and engine: median, min and max over its runs, and the fused/chunked
    ratio of medians with its interval (compare_groups: the runs were not interleaved ABBA)."""
    rows = []
    for name, runs, _ in bd.capacity_by_configuration(arrivals, beyond):
        served = {e: runs.loc[runs["engine"] == e, "served_rate"].to_numpy(float) for e in ("fused", "chunked")}
        if not all(len(v) for v in served.values()):
            continue
        comp = compare_groups(served["fused"], served["chunked"])
        for e, v in served.items():
            rows.append({"configuration": name, "engine": e, "median": float(np.median(v)), "min": float(v.min()),
                         "max": float(v.max()), "runs": len(v), "ratio": comp.ratio, "lo": comp.lo, "hi": comp.hi,
                         "n": comp.n, "rate": float(runs["rate"].iloc[0]),
                         "n_requests": int(runs["n_requests"].iloc[0])})
    return pd.DataFrame(rows)


def capacity_figure(table: pd.DataFrame):
    """The headline figure: served rate per configuration, one bar per engine, the runs'
    range drawn as an interval, each configuration's fused/chunked ratio written above it."""
    import matplotlib.pyplot as plt

    configs = list(dict.fromkeys(table["configuration"]))
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for i, e in enumerate(("chunked", "fused")):
        d = table[table["engine"] == e].set_index("configuration").reindex(configs)
        x = np.arange(len(configs)) + (i - 0.5) * 0.38
        ax.bar(x, d["median"], width=0.38, color=bd.color(e), label=f"{e} engine")
        ax.errorbar(x, d["median"], yerr=[d["median"] - d["min"], d["max"] - d["median"]], fmt="none",
                    ecolor="black", capsize=3, lw=1)
    for j, c in enumerate(configs):
        r = table[table["configuration"] == c].iloc[0]
        top = table.loc[table["configuration"] == c, "max"].max()
        ax.text(j, top * 1.04, f"fused/chunked {r['ratio']:.2f}× [{r['lo']:.2f}, {r['hi']:.2f}]", ha="center",
                fontsize=8)
    ax.set_xticks(np.arange(len(configs)), configs)
    ax.set_ylabel("served rate (requests/s)")
    ax.set_ylim(0, table["max"].max() * 1.18)
    r = table.iloc[0]
    ax.set_title(f"Capacity: {r['n_requests']} requests offered at {r['rate']:g}/s (bars: median; lines: runs' range)")
    ax.legend(loc="upper left")
    return fig


def headline(trace: pd.DataFrame, arrivals: pd.DataFrame, closed: pd.DataFrame, layout: pd.DataFrame,
             beyond: pd.DataFrame, ref: Reference,
             paired: pd.DataFrame | None = None) -> tuple[dict[str, str], pd.DataFrame, pd.DataFrame]:
    """The intro's glued texts, its capacity-by-configuration table and the reference-beside-ours
    table, from the newest rows. The capacity headline is the paired part-7 comparison
    (paired_capacity) where there is one, else the unpaired runs. Rows that lack a figure (the
    CPU smoke rows: no copy bandwidth, no graphed runs) leave its texts out; the page reads them
    as not measured."""
    ours = our_figures(trace, arrivals, closed, layout)
    pc = paired.set_index("comparison") if paired is not None and len(paired) else pd.DataFrame()
    if eager_headline(pc):
        p7 = pc.loc[eager_headline(pc)]
        ours |= {"capacity_fused": float(p7["a_median"]), "capacity_chunked": float(p7["b_median"]),
                 "capacity_gain": float(p7["ratio"] - 1)}
    figs = ref.figures.set_index("id")["value"]
    texts = {"a10_gain": f"{figs['capacity_gain']:.0%}", "a10_bw": f"{ref.bandwidth_Bps / 1e9:.0f} GB/s",
             "a10_bw_why": ref.bandwidth_why}
    h200_floor = ours.get("weight_read")
    a10_floor = None
    if h200_floor is not None:
        weights = trace_figures(baseline_trace(trace))["weight_bytes"]
        a10_floor = floor_s(weights, ref.bandwidth_Bps) * 1e3
        texts.update({"a10_multiple": f"{figs['decode_step_fused'] / a10_floor:.0f}×",
                      "h200_multiple": f"{ours['decode_step_fused'] / h200_floor:.0f}×",
                      "h200_bw": f"{ours['bandwidth_Bps'] / 1e12:.2f} TB/s", "weights_gb": f"{weights / 1e9:.3f} GB",
                      "a10_floor": f"{a10_floor:.2f} ms", "h200_floor": f"{h200_floor:.2f} ms"})
    cap = capacity(arrivals)
    if cap is not None:
        pair, comp = cap
        texts["unpaired_gain"] = (f"{interval(comp.ratio, comp.lo, comp.hi)} over {comp.n} runs per engine of "
                                  f"{int(pair['n_requests'])} arrivals")
    if eager_headline(pc):
        texts.update(paired_texts(pc))
    elif cap is not None:
        comp = cap[1]
        texts.update({"gain": f"{comp.change:+.0%}", "gain_interval": f"{comp.lo - 1:+.0%} to {comp.hi - 1:+.0%}",
                      "gain_n": f"{comp.n} runs per engine, unpaired"})
    configs = capacity_by_configuration(arrivals, beyond)
    if len(configs):
        last = configs["configuration"].iloc[-1]
        graphed = configs[configs["configuration"] == last].set_index("engine")
        texts.update({"graphed_name": str(last), "graphed_fused": f"{graphed.loc['fused', 'median']:.1f} requests/s",
                      "graphed_ratio": f"{graphed.loc['fused', 'ratio']:.2f}× [{graphed.loc['fused', 'lo']:.2f}, "
                                       f"{graphed.loc['fused', 'hi']:.2f}]"})
    beside = answer_table(ref, ours, a10_floor, h200_floor) if h200_floor is not None else pd.DataFrame()
    return texts, configs, beside


# Fusion's eager gain, the book's headline: part 7's pairs over 400 arrivals (the workload of
# every other capacity run, and twice the length of a run over 200, so one slow stretch of the
# host weighs half as much) where they ran, else its first pairs, over 200 arrivals.
EAGER_COMPARISONS = ("part 7, 400 arrivals: fused vs chunked", "part 7: fused vs chunked")
# The comparisons of every forward as one graph (book/whole.md), offered 80/s.
WHOLE_COMPARISONS = (WHOLE_VS_PIECEWISE, WHOLE_FUSED_VS_CHUNKED, WHOLE_SEEDS)
# Fused against chunked with the engine the series ends on (the intro's), offered 80/s.
FINAL_COMPARISONS = (FINAL_FUSED_VS_CHUNKED, FINAL_SEEDS)


def eager_headline(pc: pd.DataFrame) -> str | None:
    """The comparison (an index of `pc`) that gives the headline gain, None if none ran."""
    return next((c for c in EAGER_COMPARISONS if c in pc.index), None)


def _pairs_text(r: pd.Series) -> str:
    return f"{int(r['n'])} ABBA pairs of {int(r['n_requests'])} arrivals at {r['rate']:g}/s"


def _leases_text(by_lease: list) -> str:
    """How a comparison's pairs split over machine leases, each lease's own ratio beside the
    pooled one; empty when they all ran on one lease."""
    if len(by_lease) < 2:
        return ""
    each = "; ".join(f"{c.n} on the {ORDINALS[i]} gave {interval(c.ratio, c.lo, c.hi)}" for i, c in enumerate(by_lease))
    text = (f"Its pairs ran on {len(by_lease)} machine leases ({each}): each pair's two runs share a lease, so "
            "the pairs pool.")
    if (by_lease[0].hi - by_lease[0].lo) / 2 > 0.10:
        text += (" The first lease's interval was wider than ±10 points, which is why the later pairs ran; "
                 "stopping once an interval is narrow enough favours a narrow one, so read the pooled interval "
                 "as a little optimistic.")
    return text


ORDINALS = ("first", "second", "third", "fourth", "fifth")


def paired_texts(pc: pd.DataFrame) -> dict[str, str]:
    """The headline's texts from the paired comparisons (indexed by comparison): fusion's gain
    eager with its interval, pairs and arrivals, the interval's half-width in points, the other
    eager set's gain (`gain_other`; empty when one ran), and the graphed parts' fused capacity
    and gain."""
    name = eager_headline(pc)
    p7 = pc.loc[name]
    half = (p7["hi"] - p7["lo"]) / 2
    out = {"gain": f"{p7['ratio'] - 1:+.0%}", "gain_interval": f"{p7['lo'] - 1:+.0%} to {p7['hi'] - 1:+.0%}",
           "gain_n": _pairs_text(p7), "gain_half_width": f"±{half * 100:.0f} points",
           "gain_width_vs_target": "wider than" if half > 0.10 else "within", "gain_other": "",
           "gain_leases": _leases_text(p7["by_lease"])}
    other = [c for c in EAGER_COMPARISONS if c in pc.index and c != name]
    if other:
        r = pc.loc[other[0]]
        overlap = r["lo"] <= p7["hi"] and p7["lo"] <= r["hi"]
        out["gain_other"] = (f"The same comparison over {int(r['n_requests'])} arrivals, on another machine lease, "
                             f"gave {interval(r['ratio'], r['lo'], r['hi'])}; the intervals "
                             f"{'overlap' if overlap else 'do not overlap'}, and the estimate is the set with the "
                             "longer runs, in which one slow stretch of the host weighs less.")
    for key, name in (("p9", "part 9: fused vs chunked"), ("p10", "part 10: fused vs chunked"),
                      ("p10o", "part 10 + overlap seeds: fused vs chunked"),
                      ("p10w", WHOLE_SEEDS), ("p10f", FINAL_SEEDS), ("p10fp", FINAL_FUSED_VS_CHUNKED)):
        if name in pc.index:
            r = pc.loc[name]
            out |= {f"{key}_fused": f"{r['a_median']:.1f} requests/s", f"{key}_gain": interval(r["ratio"], r["lo"], r["hi"]),
                    f"{key}_n": f"{int(r['n'])} pairs"}
    return out


# What each paired comparison of data/paired measures, as the book names it.
PAIRED_LABELS = {"part 7: fused vs chunked": "part 7: eager, per-row attention",
                 "part 7, 400 arrivals: fused vs chunked": "part 7: eager, per-row attention",
                 "decode graphs: fused vs chunked": "part 9: decode graphs, split-KV",
                 "part 9: fused vs chunked": "part 9: every forward graphed, split-KV",
                 "part 10: fused vs chunked": "part 10: fused ops, balanced decode, graphed",
                 "fused: part 10 vs part 9": "fused engine: part 10 over part 9",
                 "part 10: overlap vs not": "fused engine, part 10: the host one step ahead or not",
                 "part 10 + overlap: fused vs chunked": "part 10, the host one step ahead: at 40/s",
                 "part 10 + overlap seeds: fused vs chunked": "part 10, the host one step ahead: 8 seeds at 80/s",
                 "part 10 + overlap sweep: fused vs chunked": "part 10, the host one step ahead: 28 to 80/s",
                 WHOLE_VS_PIECEWISE: "fused engine, part 10: every forward one graph or piecewise",
                 WHOLE_FUSED_VS_CHUNKED: "part 10, every forward one graph: at 80/s",
                 WHOLE_SEEDS: "part 10, every forward one graph: 8 seeds at 80/s",
                 FINAL_FUSED_VS_CHUNKED: "part 10 as the series ends: at 80/s",
                 FINAL_SEEDS: "part 10 as the series ends: 8 seeds at 80/s"}


def paired_capacity(data: Path = bd.DATA) -> pd.DataFrame:
    """The paired capacity comparisons (fusedlib.bench.roofline.capacity_comparisons: ABBA
    pairs, warm-ups dropped, bootstrap interval of the median pair ratio) with the book's names."""
    from . import roofline, rows as rowsio

    if not rowsio.read_rows(Path(data) / "paired/arrivals"):
        return pd.DataFrame(columns=["comparison", "label", "a_median", "b_median", "ratio", "lo", "hi", "n",
                                     "resolved", "interleaved", "n_requests", "rate", "by_lease", "boots"])
    t = roofline.capacity_comparisons(data)
    return t.assign(label=[PAIRED_LABELS.get(c, c) for c in t["comparison"]])


def interval(ratio: float, lo: float, hi: float) -> str:
    """A ratio as a change with its interval: 1.46, 1.23, 1.55 -> "+46% [+23%, +55%]"."""
    return f"{ratio - 1:+.0%} [{lo - 1:+.0%}, {hi - 1:+.0%}]"


def paired_table(t: pd.DataFrame) -> pd.DataFrame:
    """paired_capacity as a reader's table: each side's median served rate, the change with its
    95% interval, the pairs, and whether the sides were interleaved."""
    return pd.DataFrame({
        "comparison": t["label"],
        "arrivals at 40/s": [f"{n} at {r:g}/s" for n, r in zip(t["n_requests"], t["rate"])],
        "A, B (requests/s)": [f"{a:.1f}, {b:.1f}" for a, b in zip(t["a_median"], t["b_median"])],
        "A over B [95% interval]": [interval(*x) for x in zip(t["ratio"], t["lo"], t["hi"])],
        "pairs": t["n"].astype(int).astype(str),
        "order": ["ABBA" if i else "not interleaved" for i in t["interleaved"]]}).rename(
        columns={"arrivals at 40/s": "arrivals"})


def paired_figure(t: pd.DataFrame):
    """The headline figure: per part, each engine's median served rate (left) and the fused
    over chunked ratio with its bootstrap 95% interval (right)."""
    import matplotlib.pyplot as plt

    fc = t[t["comparison"].str.endswith("fused vs chunked")]
    # "part 7, 400 arrivals" -> "part 7": the arrivals follow in each tick.
    names = [c.split(":")[0].split(",")[0].replace(" whole graphs", " whole").replace(" as the series ends", " final")
             .replace(" seeds", ", seeds") for c in fc["comparison"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.8), gridspec_kw={"width_ratios": [1.3, 1]})
    x = np.arange(len(fc))
    for i, (e, col) in enumerate((("chunked", "b_median"), ("fused", "a_median"))):
        left.bar(x + (i - 0.5) * 0.38, fc[col], width=0.38, color=bd.color(e), label=f"{e} engine")
    # one tick per comparison, slanted so eight of them stay legible side by side
    slant = dict(fontsize=7, rotation=40, ha="right", rotation_mode="anchor")
    ticks = [f"{n}, {r} at {rate:g}/s" for n, r, rate in zip(names, fc["n_requests"], fc["rate"])]
    left.set_xticks(x, ticks, **slant)
    left.set_ylabel("served rate (requests/s)")
    left.set_title("Capacity (median of pairs)", fontsize=9)
    left.legend(loc="upper left", fontsize=8)
    right.errorbar(x, fc["ratio"], yerr=[fc["ratio"] - fc["lo"], fc["hi"] - fc["ratio"]], fmt="o", color="black",
                   capsize=4)
    right.axhline(1, color="grey", lw=0.8, ls="--")
    right.set_xticks(x, ticks, **slant)
    right.set_xlim(-0.5, len(fc) - 0.5)
    right.set_ylabel("fused / chunked (×)")
    right.set_title("Ratio, 95% interval, ABBA pairs", fontsize=9)
    fig.tight_layout()
    return fig


def paired_provenance(data: Path = bd.DATA) -> pd.DataFrame:
    """Where each paired comparison ran (arrivals, closed and seed runs): its code version,
    machine (boot id, shortened), pairs and recorded warm-ups, first and last row, and how its
    sides were ordered."""
    from . import rows as rowsio

    frames = [pd.DataFrame(rowsio.read_rows(Path(data) / "paired" / stem)) for stem in ("arrivals", "closed", "sensitivity")]
    df = pd.concat([f for f in frames if len(f)], ignore_index=True) if any(len(f) for f in frames) else pd.DataFrame()
    if not len(df):
        return pd.DataFrame()
    df["comparison"] = df["comparison"].fillna("")
    first = df["comparison"] == ""  # the first phase names its comparisons by configuration
    df.loc[first, "comparison"] = np.where(df.loc[first, "attention"] == "triton-balanced",
                                           "part 10: fused vs chunked", "fused: part 10 vs part 9")
    if "stat" in df:  # a closed run's passes: one row per run counts
        df = df[df["stat"].isna() | (df["stat"] == "median")]
    out = []
    for (name, commit, boot), d in df.groupby(["comparison", "git_commit", "boot_id"], sort=False):
        runs = d[~d["warmup"].astype(bool)]
        sweep = " sweep" in name or " seeds" in name  # one pair per rate or seed, the first side alternating
        pairs = runs["rate" if " sweep" in name else "seed"].nunique() if sweep else runs["repeat"].nunique()
        order = ("not interleaved" if name.startswith("fused:") else
                 "alternating, one pair per " + ("rate" if " sweep" in name else "seed") if sweep else "ABBA")
        out.append({"comparison": PAIRED_LABELS.get(name, name), "code version": commit, "machine (boot)": boot[:8],
                    "pairs": str(pairs), "warm-ups": str(int(d["warmup"].astype(bool).sum())),
                    "rows (UTC)": f"{d['timestamp'].min()[:16].replace('T', ' ')} to {d['timestamp'].max()[11:16]}",
                    "order": order})
    return pd.DataFrame(out)
