"""Part 8's page: decode attention beside a copy of its bytes, and part 8's steps and capacity."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..stats import MISSING, Value, fixed
from ..text import ms, pct, sig, span, us
from . import chapter
from .data import MODEL, SIZES, collect, datasheet, load, per_rows, rates

KERNELS = (("triton", "triton"), ("triton-splitkv", "splitkv"), ("triton-parallel", "parallel"))


def attention_table(d: str | Path | None = None) -> pd.DataFrame:
    """Per kernel and context: the median GPU time, its copy's time and their ratio."""
    a = load("attention", d)
    if not len(a):
        return a
    return a.groupby(["backend", "context"], as_index=False)[["gpu_us", "copy_us", "fraction_of_copy", "kv_bytes"]].median()


@per_rows
def attention(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    a = attention_table(d)
    v = {f"att_frac_{short}": MISSING for _, short in KERNELS} | {f"att_1k_{short}": MISSING for _, short in KERNELS}
    v |= {"att_speedup_splitkv": MISSING, "att_speedup_parallel": MISSING, "att_1k_copy": MISSING}
    kv1k = 32 * 1024 * SIZES["kv_bytes_per_token"] / MODEL.num_layers
    bw = rates(d)[0] or datasheet(d)["bandwidth_Bps"]
    v["att_1k_mb"] = fixed(kv1k / 1e6, lambda x: f"{x:.1f} MB")
    v["att_1k_floor"] = fixed(kv1k / bw * 1e6, us)
    v["att_1k_step_floor"] = fixed(MODEL.num_layers * kv1k / bw * 1e3, ms)
    if not len(a):
        return pd.DataFrame(), v
    by = {b: a[a["backend"] == b].set_index("context") for b in a["backend"].unique()}
    for b, short in KERNELS:
        if b in by and len(by[b]):
            f = by[b]["fraction_of_copy"]
            v[f"att_frac_{short}"] = Value(float(f.median()), span(100 * f.min(), 100 * f.max(), pct),
                                           float(f.min()), float(f.max()), len(f))
            if 1024 in by[b].index:
                v[f"att_1k_{short}"] = fixed(float(by[b].loc[1024, "gpu_us"]), us)
    copy1k = a[a["context"] == 1024]["copy_us"]  # timed beside each kernel: one figure, their median
    if len(copy1k):
        v["att_1k_copy"] = fixed(float(copy1k.median()), us)
    for slow, fast, k in (("triton", "triton-splitkv", "att_speedup_splitkv"),
                          ("triton-splitkv", "triton-parallel", "att_speedup_parallel")):
        if slow in by and fast in by:
            r = (by[slow]["gpu_us"] / by[fast]["gpu_us"]).dropna()
            if len(r):
                v[k] = Value(float(r.median()), span(r.min(), r.max(), lambda x: f"{x:.2f}×"),
                             float(r.min()), float(r.max()), len(r))
    table = pd.DataFrame({"kernel": a["backend"], "context (tokens)": a["context"],
                          "attention (µs)": a["gpu_us"].map(sig), "copy of the same bytes (µs)": a["copy_us"].map(sig),
                          "share of copy speed": (100 * a["fraction_of_copy"]).map(pct)})
    return table, v


def figures(d: str | Path | None = None):
    return collect(attention=attention(d=d), steps=chapter.steps("part8", d=d), capacity=chapter.capacity("part8", d=d))
