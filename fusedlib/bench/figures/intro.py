"""The intro's page: the series at a glance (every part's steps, capacity and fusion's gain) and
the reference's A10 figures beside ours."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from ..stats import Value, fixed, ratio, short_gain
from ..text import cell, pct, rate, sig, times
from . import chapter, part07, part11, part12
from .data import LABEL, PARTS, STATIC, collect, newest, per_rows


def _num(v: Value) -> str:
    return cell(v.value)


def _runs(capacity: Value, arrivals: Value, rows: pd.DataFrame) -> str:
    """A capacity's n for a table cell: runs × arrivals per run, and its steady window from `rows`."""
    if capacity.value is None or not len(rows):
        return "-"
    how = "steady" + (f" after {skip:,}" if (skip := chapter.window_skip(rows)) else "")
    return f"{capacity.n or 1} × {arrivals.value:,.0f}, {how}" if arrivals.value is not None else f"{capacity.n or 1}, {how}"


@per_rows
def series(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """One row per part: the decode and mixed steps beside their floors, kernels per layer,
    capacity and fusion's gain."""
    vals = chapter.part_values(PARTS, d)
    rows = []
    for c in PARTS:
        t = lambda k: vals[f"{chapter.prefix(c)}_{k}"]  # noqa: E731
        rows.append({"part": LABEL[c], "decode step, serving (ms)": _num(t("decode_step")),
                     "decode GPU, census (ms)": _num(t("decode_gpu")), "bytes floor (ms)": _num(t("decode_floor")),
                     "mixed GPU (ms)": _num(t("mixed_gpu")), "FLOP floor (ms)": _num(t("mixed_floor")),
                     "kernels per layer": _num(t("kernels_per_layer")),
                     "capacity fused / chunked (req/s)": f"{_num(t('capacity_fused'))} / {_num(t('capacity_chunked'))}",
                     "runs × arrivals": _runs(t("capacity_fused"), t("n_requests"), newest("capacity", d, c)),
                     "fusion's gain": short_gain(t("fusion_gain"))})
    sc = part11.scale(d=d)[1]
    best, chunk = sc["p11_best_fused_rate"], sc["p11_chunked_at_best"]
    rows.append({"part": LABEL["part11"] + (f" (best: {sc['p11_best_setting'].text})" if best.value else ""),
                 "capacity fused / chunked (req/s)": "-" if best.value is None else f"{sig(best.value)} / {_num(chunk)}",
                 "runs × arrivals": _runs(best, sc["p11_best_n_requests"], part11.best_rows(d)),
                 "fusion's gain": short_gain(sc["p11_fusion_gain_best"])})
    p12 = part12.capacity(d=d)[1]
    best = p12["p12_best_fused_steady_rate"]
    rows.append({"part": LABEL["part12"] + (f" ({sc['p11_best_setting'].text})" if best.value else ""),
                 "capacity fused / chunked (req/s)": "-" if best.value is None else
                 f"{sig(best.value)} / {_num(p12['p12_capacity_chunked'])}",
                 "runs × arrivals": _runs(best, p12["p12_n_requests"], newest("capacity", d, "part12")),
                 "fusion's gain": short_gain(p12["p12_fusion_gain_best"])})
    v = {"series_decode_speedup": chapter.change(vals["p10_decode_step"], vals["p07_decode_step"])[0]}
    return pd.DataFrame(rows).fillna("-"), v  # parts 11-12 have no step census at the reference's shapes


def reference_figures() -> dict[str, dict]:
    """The reference's own A10 figures, from its text (data/reference/a10.yaml), by id."""
    ref = yaml.safe_load((STATIC / "reference" / "a10.yaml").read_text())
    return {x["id"]: x for x in ref["figures"]} | {"_machine": ref["machine"], "_source": ref["source"]}


@per_rows
def reference(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """The reference's A10 figures (its own measurements, from its text) beside ours."""
    r = reference_figures()
    val = lambda k: r[k]["value"]  # noqa: E731
    vals = chapter.part_values(("part7", "part10"), d)
    hw = part07.hardware(d=d)[1]
    a10_read = val("weight_read")
    w = hw["model_weights_ms"].value
    mult = lambda k: cell(ratio(vals[k].value, w), times)  # noqa: E731
    g = lambda k: _num(vals[k])  # noqa: E731
    rows = [
        ("capacity, fused (req/s)", sig(val("capacity_fused")), g("p07_capacity_fused"), g("p10_capacity_fused")),
        ("capacity, two forwards (req/s)", sig(val("capacity_chunked")), g("p07_capacity_chunked"), g("p10_capacity_chunked")),
        ("fusion's capacity gain", pct(100 * val("capacity_gain"), True), short_gain(vals["p07_fusion_gain"]),
         short_gain(vals["p10_fusion_gain"])),
        ("pure decode step (ms)", sig(val("decode_step_fused")), g("p07_decode_step"), g("p10_decode_step")),
        ("mixed step, fused (ms)", sig(val("mixed_step_fused")), g("p07_mixed_wall"), g("p10_mixed_wall")),
        ("mixed step, two forwards (ms)", sig(val("mixed_step_chunked")), g("p07_mixed_chunked_wall"),
         g("p10_mixed_chunked_wall")),
        ("reading the weights once (ms)", sig(val("weight_read")), cell(w), cell(w)),
        ("decode step / weight read", times(val("decode_step_fused") / a10_read), mult("p07_decode_step"),
         mult("p10_decode_step")),
    ]
    card = hw["hw_card"].text
    table = pd.DataFrame(rows, columns=["figure", "A10, the reference's", f"{card}, part 7's engine",
                                        f"{card}, part 10's engine"])
    v = {
        "a10_gain": fixed(100 * val("capacity_gain"), lambda x: pct(x, True)),
        "a10_capacity_fused": fixed(val("capacity_fused"), rate),
        "a10_capacity_chunked": fixed(val("capacity_chunked"), rate),
        "a10_decode_multiple": fixed(val("decode_step_fused") / a10_read, times),
        "ours_decode_multiple": fixed(ratio(vals["p07_decode_step"].value, w), times),
    }
    return table, v


def figures(d: str | Path | None = None):
    return collect(series=series(d=d), reference=reference(d=d))
