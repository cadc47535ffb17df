"""Part 8's page: decode attention beside a copy of its bytes, and part 8's steps and capacity."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..stats import MISSING, Value, fixed
from ..text import cell, ms, pct, sig, span, us
from . import chapter
from .data import MODEL, SIZES, collect, datasheet, load, per_rows, rates

# The band the chapter's deciding prediction gave the eager decode step against part 7's: within ±10%
# (graded, as here, on the serving decode step of `chapter.serving_decode`).
BAND = 0.10
KERNELS = (("triton", "triton"), ("triton-splitkv", "splitkv"), ("triton-parallel", "parallel"))


def attention_table(d: str | Path | None = None) -> pd.DataFrame:
    """Per kernel and context: the median GPU time, its copy's time and their ratio (a GPU's
    rows only: on a CPU the bench times no kernel worth comparing to a copy)."""
    a = load("attention", d)
    if len(a) and "device_name" in a:
        a = a[a["device_name"] != "cpu"]
    if not len(a):
        return pd.DataFrame()
    return a.groupby(["backend", "context"], as_index=False)[["gpu_us", "copy_us", "fraction_of_copy", "kv_bytes"]].median()


@per_rows
def attention(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    a = attention_table(d)
    v = {f"att_frac_{short}": MISSING for _, short in KERNELS} | {f"att_1k_{short}": MISSING for _, short in KERNELS}
    v |= {"att_speedup_splitkv": MISSING, "att_speedup_parallel": MISSING, "att_1k_copy": MISSING,
          "att_parallel_vs_splitkv": MISSING}
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
    v["att_1k_copy"] = fixed(float(copy1k.median()), us)  # (none: nan, so MISSING)
    for slow, fast, k in (("triton", "triton-splitkv", "att_speedup_splitkv"),
                          ("triton-splitkv", "triton-parallel", "att_speedup_parallel")):
        if slow in by and fast in by:
            r = (by[slow]["gpu_us"] / by[fast]["gpu_us"]).dropna()
            if len(r):
                v[k] = Value(float(r.median()), span(r.min(), r.max(), lambda x: f"{x:.2f}×"),
                             float(r.min()), float(r.max()), len(r))
    speed = v["att_speedup_parallel"].value
    v["att_parallel_vs_splitkv"] = Value(speed, "these rows do not compare it with split-KV" if speed is None else
                                         "about as fast as split-KV" if abs(speed - 1) <= 0.1 else
                                         "faster than split-KV" if speed > 1 else "slower than split-KV")
    table = pd.DataFrame({"kernel": a["backend"], "context (tokens)": a["context"],
                          "attention (µs)": a["gpu_us"].map(sig), "copy of the same bytes (µs)": a["copy_us"].map(sig),
                          "share of copy speed": (100 * a["fraction_of_copy"]).map(lambda x: cell(x, pct))})
    return table, v


@per_rows
def readings(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """The page's conclusions, each chosen from the figures it rests on and their ranges."""
    s7, s8 = chapter.steps("part7", d=d)[1], chapter.steps("part8", d=d)[1]
    c7, c8 = chapter.capacity("part7", d=d)[1], chapter.capacity("part8", d=d)[1]
    (fused, fp), (two, tp) = (chapter.change(s8[f"p08_{k}"], s7[f"p07_{k}"]) for k in ("mixed_wall", "mixed_chunked_wall"))
    mixed = ("These rows hold no mixed steps with their ranges in both parts." if MISSING in (fused, two) else
             f"Against part 7's census mixed steps (their repeats' ranges), the fused engine's takes "
             f"{s8['p08_mixed_wall'].text}, {fused.text}, and the chunked engine's {s8['p08_mixed_chunked_wall'].text}, "
             f"{two.text}" + (": the two engines' mixed steps moved in opposite directions." if
                              fp.resolved and tp.resolved and (fp.value > 0) != (tp.value > 0) else "."))
    v = {"p08_mixed_moves": Value(None, mixed)}
    step, band = s8["p08_decode_change_pct"], 100 * BAND
    if step.value is None:
        host = "These rows hold no decode steps of both parts to compare."
    elif step.lo > band:
        host = ("The step grew instead. One more launch a layer (the merge) is a small part of nearly forty; these "
                "rows do not establish why it grew: the kernel change, the host's speed when each part ran, or both.")
    elif step.hi < -band:
        host = "The step shortened, so some of that saving, or a faster host, reached it; these rows do not separate the two."
    elif step.lo >= -band and step.hi <= band:
        host = "The step stayed within the band, as the host that sets it predicts."
    else:
        host = f"Whether the step stayed within ±{band:.0f}% of part 7's is not resolved: it changed by {step.text}."
    v["p08_step_reading"] = Value(step.value, host)
    cap = [chapter.change(c8[f"p08_capacity_{e}"], c7[f"p07_capacity_{e}"])[1] for e in ("fused", "chunked")]
    word = lambda p: ("higher" if p.lo > 0 else "lower") if p.resolved else "not resolved as higher or lower"  # noqa: E731
    v["p08_capacity_moves"] = Value(None, "These rows hold no capacity runs of both parts to compare." if MISSING in cap else
                                    f"In capacity against part 7, the fused engine's is {word(cap[0])} ({cap[0].text}), "
                                    f"the chunked engine's {word(cap[1])} ({cap[1].text}).")
    return pd.DataFrame(), v


def figures(d: str | Path | None = None):
    return collect(attention=attention(d=d), steps=chapter.steps("part8", d=d), capacity=chapter.capacity("part8", d=d),
                   readings=readings(d=d))
