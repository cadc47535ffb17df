"""Part 7's page: the card and the model's ballpark, the gates, part 7's steps and capacity."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..stats import MISSING, Value, fixed, ratio
from ..text import ms, pct, span, times
from ..workloads import MIXED_BUDGET, MIXED_LENGTHS
from . import chapter
from .data import MODEL, SIZES, collect, datasheet, devices, load, newest, per_rows, rate_runs, rates


@per_rows
def hardware(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """The card's datasheet beside its measured rates, and the model's sizes at those rates."""
    bw, gemm = rates(d)
    sheet = datasheet(d)
    w = SIZES["weight_bytes"]
    chunk = 512 * SIZES["linear_flop_per_token"] + 512 * 511 / 2 * SIZES["attn_flop_per_pair"]
    tb = lambda x: f"{x / 1e12:.2f} TB/s"  # noqa: E731
    tf = lambda x: f"{x / 1e12:.0f} TFLOP/s"  # noqa: E731
    per_byte = lambda x: f"{x:.0f} FLOP/byte"  # noqa: E731
    v = {
        "hw_device": Value(None, devices(load("census", d))),
        "hw_card": Value(None, sheet["card"]),
        "hw_bw_datasheet": fixed(sheet["bandwidth_Bps"], tb),
        "hw_flops_datasheet": fixed(sheet["fp16_flops"], tf),
        "hw_copy_bw": fixed(bw, tb),
        "hw_copy_share": fixed(bw and bw / sheet["bandwidth_Bps"] * 100, pct),
        "hw_gemm_rate": fixed(gemm, tf),
        "hw_gemm_share": fixed(gemm and gemm / sheet["fp16_flops"] * 100, pct),
        "model_weights_gb": fixed(w / 1e9, lambda x: f"{x:.2f} GB"),
        "model_weights_ms_datasheet": fixed(w / sheet["bandwidth_Bps"] * 1e3, ms),
        "model_weights_ms": fixed(bw and w / bw * 1e3, ms),
        "model_kv_kib": fixed(SIZES["kv_bytes_per_token"] / 1024, lambda x: f"{x:.0f} KiB"),
        "model_gflop_per_token": fixed(SIZES["linear_flop_per_token"] / 1e9, lambda x: f"{x:.2f} GFLOP"),
        "chunk_tflop": fixed(chunk / 1e12, lambda x: f"{x:.2f} TFLOP"),
        "chunk_ms_datasheet": fixed(chunk / sheet["fp16_flops"] * 1e3, ms),
        "chunk_ms": fixed(gemm and chunk / gemm * 1e3, ms),
        "ridge_datasheet": fixed(sheet["fp16_flops"] / sheet["bandwidth_Bps"], per_byte),
        "ridge_measured": fixed(gemm and bw and gemm / bw, per_byte),
        "model_layers": fixed(MODEL.num_layers, lambda x: f"{x:.0f}"),
        "wl_lengths": Value(None, ", ".join(f"{n:,}" for n in MIXED_LENGTHS[:-1]) + f" or {MIXED_LENGTHS[-1]:,} tokens"),
        "wl_budgets": Value(None, f"{MIXED_BUDGET[0]} to {MIXED_BUDGET[1]} new tokens"),
    }
    c = rate_runs(d)
    runs = lambda col, f: f"; median of {len(c)} runs, {f(c[col].min())} to {f(c[col].max())}" if len(c) else ""  # noqa: E731
    table = pd.DataFrame([
        {"rate": "memory bandwidth", f"{sheet['card']} datasheet": v["hw_bw_datasheet"].text,
         "measured": v["hw_copy_bw"].text if bw else "-",
         "how measured": "device-to-device copy of 1 GB" + runs("copy_bw_Bps", tb)},
        {"rate": "dense fp16 tensor-core throughput", f"{sheet['card']} datasheet": v["hw_flops_datasheet"].text,
         "measured": v["hw_gemm_rate"].text if gemm else "-",
         "how measured": "large fp16 GEMM (torch.matmul)" + runs("gemm_tflops", lambda x: tf(x * 1e12))},
    ])
    return table, v


@per_rows
def gates(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """Whether every gate passed, and how many passed at part 11's size."""
    g = load("gates", d)
    names = {"gates_passed": MISSING, "gates_b256": MISSING}
    if not len(g):
        return pd.DataFrame(), names
    ok = g["passed"].astype(bool)
    names["gates_passed"] = Value(float(ok.mean()), f"all {len(ok)} gate runs passed" if ok.all() else
                                  f"{int(ok.sum())} of {len(ok)} gate runs passed")
    big = newest("gates", d, "part11")  # part 11's gates of its newest code version
    if len(big):
        okb = big["passed"].astype(bool)
        names["gates_b256"] = Value(float(okb.mean()), f"{int(okb.sum())} of {len(okb)} pass")
    return pd.DataFrame(), names


def capacity_reading(gain: Value, what: str = "that saving") -> str:
    """What a part's capacity runs say of fusion's gain end to end, chosen from its interval."""
    if gain.value is None:
        return f"End to end, these rows hold no paired capacity runs, so how much of serving time {what} covers is left open here."
    if gain.lo is None:
        return f"End to end, one pair of capacity runs gives no interval, so how much of serving time {what} covers is left open here."
    if not gain.resolved:
        return (f"End to end, these capacity runs do not resolve fusion's gain (its interval runs from {gain.lo:+.1f}% "
                f"to {gain.hi:+.1f}%), so how much of serving time {what} covers is left open here.")
    if gain.lo > 0:
        return f"End to end, {what} shows in capacity: the fused engine serves {gain.value:+.1f}% more."
    return f"End to end, the fused engine serves less ({gain.value:+.1f}%): {what} does not reach serving time here."


@per_rows
def readings(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """The page's conclusions, each chosen from the figures it rests on."""
    st, cap = chapter.steps("part7", d=d)[1], chapter.capacity("part7", d=d)[1]
    decode, mixed, two = (st[f"p07_{k}"].value for k in ("decode_wall", "mixed_wall", "mixed_chunked_wall"))
    grown, doubled = ratio(mixed, decode), ratio(two, mixed)
    if grown is None or doubled is None:
        cost = "These rows hold no step times to say what a forward's cost is made of."
    else:
        fixed_cost = grown < 1.5 and doubled > 1.6
        chunk = st["p07_mixed_shape"].value
        cost = (f"The fused mixed step, which carries a {chunk:,.0f}-token chunk, is {times(grown)} the pure decode step, and "
                f"the chunked engine's two forwards cost {times(doubled)} the fused engine's one: a forward's cost "
                + ("here is mostly fixed, whatever tokens it carries." if fixed_cost else
                   "here grows with the tokens it carries."))
    s, serving = chapter.step_rows(d), st["p07_decode_step"]
    fused, two = (chapter.repeats(chapter._one(s, "part7", engine, "decode")) for engine in ("fused", "chunked"))
    if None in (fused.value, two.value):
        same = "These rows hold no decode step of both engines to compare."
    else:
        known = None not in (fused.lo, two.lo)
        within = known and two.lo <= fused.value <= two.hi and fused.lo <= two.value <= fused.hi
        same = (f"The pure decode step is the same single forward in both engines; the census times it at "
                f"{fused.text} fused and {two.text} chunked"
                + (f" (repeats {span(fused.lo, fused.hi, ms)} and {span(two.lo, two.hi, ms)}), " if known else ", ")
                + ("each median inside the other's repeats: eager steps set by the host vary." if within else
                   "a median outside the other's repeats: one census ran the same code slower.")
                + (f" Serving, the capacity runs time it at {serving.text}: the later chapters compare eager decode "
                   "steps on this figure." if serving.value is not None else ""))
    v = {"p07_forward_cost": Value(grown, cost), "p07_decode_same": Value(None, same),
         "p07_capacity_reading": Value(None, capacity_reading(cap["p07_fusion_gain"]))}
    return pd.DataFrame(), v


def figures(d: str | Path | None = None):
    return collect(hardware=hardware(d=d), gates=gates(d=d), steps=chapter.steps("part7", d=d),
                   capacity=chapter.capacity("part7", d=d), readings=readings(d=d))
