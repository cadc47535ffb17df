"""Part 10's page: the roofline of part 10's steps and kernel classes, the transformers peer,
and part 10's steps and capacity."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..stats import MISSING, Value, fixed, median, multiple
from ..text import pct, sig
from . import chapter
from .data import collect, load, per_rows, rates


def roofline_points(d: str | Path | None = None, config: str = "part10") -> pd.DataFrame:
    """Each step kind and each kernel class of `config` as a roofline point: FLOPs, bytes,
    GPU time, arithmetic intensity (FLOP/byte) and attained FLOP/s. Kernel classes without
    modelled bytes or FLOPs are left out."""
    c = load("census", d)
    if not len(c) or "record" not in c:
        return pd.DataFrame()
    pts = []
    s = c[(c["record"] == "step") & (c["config"] == config) & (c["engine"] == "fused")]
    for step, r in s.groupby("step"):
        pts.append({"point": f"{step} step", "kind": "step", "step": step, "flops": r["flops"].median(),
                    "bytes": (r["weight_bytes"] + r["kv_bytes"]).median(), "gpu_ms": r["gpu_ms"].median()})
    k = c[(c["record"] == "kernel_class") & (c["config"] == config)]
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
    k = c[(c["record"] == "kernel_class") & (c["config"] == "part10")]
    for step in ("decode", "mixed"):
        ks = k[k["step"] == step]
        if len(ks):
            v[f"rf_gemm_share_{step}"] = fixed(100 * ks[ks["kernel_class"] == "gemm"]["gpu_ms"].sum() / ks["gpu_ms"].sum(), pct)
    table = pd.DataFrame({"point": p["point"], "FLOP/byte": p["intensity"].map(lambda x: sig(x, 2)),
                          "attained (TFLOP/s)": (p["attained"] / 1e12).map(sig),
                          "share of the roof above it": (100 * p["share"]).map(pct)})
    return table, v


@per_rows
def peer(config: str, d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """Our fused engine against transformers' continuous batching on the same closed workload."""
    p = chapter.prefix(config)
    names = {"peer_ratio": MISSING, "peer_tok_s": MISSING, "peer_transformers_tok_s": MISSING, "peer_batch": MISSING}
    df = load("peer", d)
    if not len(df):
        return pd.DataFrame(), {f"{p}_{k}": x for k, x in names.items()}
    ours = df[(df["engine"] == "fused") & (df["config"] == config)].set_index("round")["output_tok_s"]
    hf = df[(df["engine"] == "transformers") & (df["config"] == config)].set_index("round")["output_tok_s"]
    both = ours.to_frame("ours").join(hf.to_frame("hf"), how="inner").dropna()
    if len(both):
        names["peer_ratio"] = multiple(both["ours"], both["hf"])
    names["peer_tok_s"] = median(ours, "tokens/s")
    names["peer_transformers_tok_s"] = median(hf, "tokens/s")
    b = df[(df["engine"] == "fused") & (df["config"] == config)]["batch"]
    names["peer_batch"] = fixed(float(b.max()) if len(b) else None, lambda x: f"{x:.0f}")
    t = df[df["config"] == config]
    table = t.groupby(["engine", "batch"], as_index=False, dropna=False)["output_tok_s"].agg(["median", "count"])
    table = pd.DataFrame({"engine": table["engine"], "batch": table["batch"],
                          "output tokens/s (median)": table["median"].map(sig), "runs": table["count"]})
    return table, {f"{p}_{k}": x for k, x in names.items()}


def figures(d: str | Path | None = None):
    return collect(steps=chapter.steps("part10", d=d), roofline=roofline(d=d), capacity=chapter.capacity("part10", d=d),
                   peer=peer("part10", d=d))
