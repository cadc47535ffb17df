"""Part 10's page: the roofline of part 10's steps and kernel classes, the transformers peer,
and part 10's steps and capacity."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..stats import MISSING, Value, fixed, median, multiple
from ..text import cell, pct, sig
from . import chapter
from .data import PARTS, collect, load, newest, per_rows, rates


def roofline_points(d: str | Path | None = None, config: str = "part10", engine: str = "fused") -> pd.DataFrame:
    """Each step kind and each kernel class of `config`'s `engine` as a roofline point: FLOPs,
    bytes, GPU time, arithmetic intensity (FLOP/byte) and attained FLOP/s."""
    # Kernel classes without modelled bytes or FLOPs are left out; one engine's rows only, never
    # an average of two engines' kernels.
    c = load("census", d)
    if not len(c) or "record" not in c:
        return pd.DataFrame()
    pts = []
    s = c[(c["record"] == "step") & (c["config"] == config) & (c["engine"] == engine)]
    for step, r in s.groupby("step"):
        pts.append({"point": f"{step} step", "kind": "step", "step": step, "flops": r["flops"].median(),
                    "bytes": (r["weight_bytes"] + r["kv_bytes"]).median(), "gpu_ms": r["gpu_ms"].median()})
    k = c[(c["record"] == "kernel_class") & (c["config"] == config) & (c["engine"] == engine)]
    for (step, cls), r in k.groupby(["step", "kernel_class"]):
        pts.append({"point": f"{cls} ({step})", "kind": cls, "step": step, "flops": r["flops"].median(),
                    "bytes": r["bytes"].median(), "gpu_ms": r["gpu_ms"].median()})
    p = pd.DataFrame(pts)
    if not len(p):
        return p
    p = p.dropna(subset=["flops", "bytes", "gpu_ms"])
    p = p[(p["flops"] > 0) & (p["bytes"] > 0) & (p["gpu_ms"] > 0)].copy()
    p["intensity"] = p["flops"] / p["bytes"]
    p["attained"] = p["flops"] / (p["gpu_ms"] / 1e3)
    return p.reset_index(drop=True)


@per_rows
def roofline(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    bw, gemm = rates(d)
    p = roofline_points(d)
    v = {f"rf_{step}_{k}": MISSING for step in ("decode", "mixed") for k in ("intensity", "attained", "roof_share")}
    v |= {"rf_gemm_share_decode": MISSING, "rf_gemm_share_mixed": MISSING}
    if not len(p) or bw is None:
        return pd.DataFrame(), v
    p["roof"] = np.minimum(gemm, bw * p["intensity"])
    p["share"] = p["attained"] / p["roof"]
    for step in ("decode", "mixed"):
        r = p[(p["kind"] == "step") & (p["step"] == step)]
        if len(r):
            r = r.iloc[0]
            v[f"rf_{step}_intensity"] = fixed(r["intensity"], lambda x: f"{sig(x, 2)} FLOP/byte")
            v[f"rf_{step}_attained"] = fixed(r["attained"] / 1e12, lambda x: f"{sig(x)} TFLOP/s")
            v[f"rf_{step}_roof_share"] = fixed(100 * r["share"], pct)
    c = load("census", d)
    k = c[(c["record"] == "kernel_class") & (c["config"] == "part10") & (c["engine"] == "fused")]
    for step in ("decode", "mixed"):
        ks = k[k["step"] == step]
        if len(ks):
            v[f"rf_gemm_share_{step}"] = fixed(100 * ks[ks["kernel_class"] == "gemm"]["gpu_ms"].sum() / ks["gpu_ms"].sum(), pct)
    table = pd.DataFrame({"point": p["point"], "FLOP/byte": p["intensity"].map(lambda x: sig(x, 2)),
                          "attained (TFLOP/s)": (p["attained"] / 1e12).map(sig),
                          "share of the roof above it": (100 * p["share"]).map(lambda x: cell(x, pct))})
    return table, v


@per_rows
def peer(config: str, d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """Our fused engine against transformers' continuous batching on the same closed workload."""
    p = chapter.prefix(config)
    names = {"peer_ratio": MISSING, "peer_tok_s": MISSING, "peer_transformers_tok_s": MISSING, "peer_batch": MISSING,
             "peer_n_requests": MISSING, "peer_new_tokens": MISSING}
    df = newest("peer", d)
    if not len(df):
        return pd.DataFrame(), {f"{p}_{k}": x for k, x in names.items()}
    t = df[df["config"] == config]
    ours = t[t["engine"] == "fused"].set_index("round")["output_tok_s"]
    hf = t[t["engine"] == "transformers"].set_index("round")["output_tok_s"]
    both = ours.to_frame("ours").join(hf.to_frame("hf"), how="inner").dropna()
    names["peer_ratio"] = multiple(both["ours"], both["hf"])
    names["peer_tok_s"] = median(ours, "tokens/s")
    names["peer_transformers_tok_s"] = median(hf, "tokens/s")
    b = t[t["engine"] == "fused"]["batch"]
    names["peer_batch"] = fixed(float(b.max()) if len(b) else None, lambda x: f"{x:.0f}")
    n = t["n_requests"] if "n_requests" in t else pd.Series(dtype=float)
    names["peer_n_requests"] = fixed(float(n.median()) if len(n) else None, lambda x: f"{x:,.0f}")
    per = (t["n_output_tokens"] / t["n_requests"]).median() if len(t) and "n_output_tokens" in t else None
    names["peer_new_tokens"] = fixed(per, lambda x: f"{x:,.0f}")
    table = t.groupby(["engine", "batch"], as_index=False, dropna=False)["output_tok_s"].agg(["median", "count"])
    table = pd.DataFrame({"engine": table["engine"], "batch": table["batch"],
                          "output tokens/s (median)": table["median"].map(sig), "runs": table["count"]})
    return table, {f"{p}_{k}": x for k, x in names.items()}


CLASS_NAME = {"gemm": "GEMMs", "attention": "attention", "norm_rotary_act": "norms, rotary and activations",
              "lm_head": "the LM head", "other": "other kernels"}


def _one_or_each(by_step: dict[str, str], what: str) -> str:
    """'the class <what> is X in both steps', or X in one and Y in the other."""
    name = lambda k: CLASS_NAME.get(by_step[k], by_step[k])  # noqa: E731
    if by_step["decode"] == by_step["mixed"]:
        return f"the class {what} is {name('decode')} in both steps"
    return f"the class {what} is {name('decode')} in the decode step and {name('mixed')} in the mixed step"


@per_rows
def readings(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """The page's conclusions, each chosen from the figures it rests on."""
    v = {}
    bw, gemm = rates(d)
    p = roofline_points(d)
    classes = p[p["kind"] != "step"] if len(p) else p
    if bw is None or not len(classes) or set(classes["step"]) != {"decode", "mixed"}:
        v["rf_reading"] = Value(None, "These rows place no kernel class on the roofline.")
    else:
        classes = classes.assign(share=classes["attained"] / np.minimum(gemm, bw * classes["intensity"]))
        c = load("census", d)
        k = c[(c["record"] == "kernel_class") & (c["config"] == "part10") & (c["engine"] == "fused")]
        largest = {s: g.loc[g["gpu_ms"].idxmax(), "kernel_class"] for s, g in k.groupby("step")}
        lowest = {s: g.loc[g["share"].idxmin(), "kind"] for s, g in classes.groupby("step")}
        text = f"{_one_or_each(largest, 'taking the most GPU time')}, and {_one_or_each(lowest, 'furthest below its roof')}."
        v["rf_reading"] = Value(None, text[0].upper() + text[1:])
    vals = chapter.part_values(PARTS, d)
    named = lambda c, k: vals[f"{chapter.prefix(c)}_{k}"]  # noqa: E731
    gains = {c: named(c, "fusion_gain") for c in PARTS}
    savings = {c: named(c, "mixed_saving").value for c in PARTS}  # % shorter than the chunked step
    apart = [c for c in gains if savings[c] is not None and savings[c] > 5 and gains[c].value is not None
             and not (gains[c].resolved and gains[c].lo > 0)]
    if any(savings[c] is None or gains[c].value is None for c in gains):
        stage = "These rows do not hold every part's mixed steps and paired capacity runs to follow it stage by stage."
    elif apart:
        parts = " and ".join(c.removeprefix("part") for c in apart)
        stage = (f"it does not move with the mixed-step saving stage by stage: at part{'s' if len(apart) > 1 else ''} {parts} "
                 "the fused mixed step was still clearly the shorter while the gain was not resolved above zero. "
                 "These rows do not establish what else sets it.")
    else:
        stage = "it follows the mixed-step saving: wherever the fused mixed step is clearly the shorter, the gain is resolved above zero."
    v["p10_stage_reading"] = Value(None, stage)
    return pd.DataFrame(), v


def figures(d: str | Path | None = None):
    return collect(steps=chapter.steps("part10", d=d), roofline=roofline(d=d), capacity=chapter.capacity("part10", d=d),
                   peer=peer("part10", d=d), readings=readings(d=d))
