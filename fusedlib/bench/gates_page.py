"""The gates appendix (book/gates.md): each gate's verdict with its details, and the
informational fp16 comparison with transformers."""
from __future__ import annotations

import pandas as pd

DETAIL = ("requests", "requests_differing", "flip_locations", "max_abs_err", "atol", "steps", "fcfs", "complete",
          "pool_free", "same_tokens_as_large_pool", "differing_requests", "fused_identical", "chunked_identical")


def with_detail(d: pd.DataFrame) -> pd.DataFrame:
    """The rows with a `detail` column: every recorded detail field that has a value, as text."""
    cols = [c for c in DETAIL if c in d]

    def text(r):
        return ", ".join(f"{k.replace('_', ' ')} = {v:.3g}" if isinstance(v, float) else f"{k.replace('_', ' ')} = {v}"
                         for k, v in r.items() if v is not None and v == v and v != "")
    return d.assign(detail=d[cols].apply(text, axis=1) if cols else "")


def transformers_note(all_rows: pd.DataFrame, spec: pd.DataFrame, info: pd.DataFrame) -> str:
    """What the fp16 comparisons with transformers found, every time they ran, and the near-ties
    our own two engines met on the same weights."""
    every = all_rows[(all_rows["gate"] == "transformers") & (all_rows["dtype"].astype(str) != "float32")]
    same = (every[["fused_identical", "chunked_identical"]].astype(int).nunique() == 1).all()
    r = info.iloc[0]
    fvc = spec[spec["gate"] == "fused_vs_chunked"].set_index("attention")
    flips = fvc["flip_locations"].dropna().astype(int) if "flip_locations" in fvc else pd.Series(dtype=int)
    n, dtype = int(r["requests"]), r["dtype"]
    return (f"**Informational: transformers in {dtype}.** Gate 5 also ran on the {dtype} model ({len(every)} "
            f"time{'s' if len(every) > 1 else ''}, each with the engines on "
            f"{', '.join(sorted(every['attention'].astype(str).unique()))} attention). "
            + (f"Every time, {int(r['fused_identical'])} of {n} requests were token-identical to transformers for "
               f"the fused engine and {int(r['chunked_identical'])} of {n} for the chunked engine" if same else
               f"The latest found {int(r['fused_identical'])} of {n} requests identical for the fused engine and "
               f"{int(r['chunked_identical'])} for the chunked one")
            + ". These rows count matching requests; they do not record where the others part from transformers, "
            "so they cannot show the cause. "
            + (f"Near-ties do occur in {dtype} on these weights: between our own two engines, the fused_vs_chunked "
               f"gate found {int(flips.max())} tolerated tie flip{'s' if flips.max() > 1 else ''} with "
               f"{flips.idxmax()} attention. " if len(flips) and flips.max() > 0 else "")
            + "Gate 5 as specified, in fp32 on the tiny model, runs in `make test`.")


def configurations(rows: pd.DataFrame) -> pd.DataFrame:
    """The gates of each configuration the chapters measure (rows of data/paired/gates): per
    configuration (one gates run: its attention, ops and code version), how many gates ran and
    passed, the tie flips fused against chunked tolerated, and whether graphs and overlap were on
    in any of its gates (the mixed-step gate runs one eager step whatever the configuration)."""
    if rows.empty:
        return pd.DataFrame()
    df = rows.copy()
    for flag in ("cuda_graphs", "graph_chunks", "whole_graphs", "overlap"):
        df[flag] = df[flag].fillna(False).astype(bool) if flag in df else False
    out = []
    # One gates run writes its rows at once: one timestamp per configuration gated.
    for (attention, fused_ops, commit, _), g in df.groupby(["attention", "fused_ops", "git_commit", "timestamp"],
                                                          sort=False):
        graphs = ("every forward, one graph each" if g["whole_graphs"].any() else
                  "every forward, chunks piecewise" if g["graph_chunks"].any() else
                  "decode forwards" if g["cuda_graphs"].any() else "none")
        fvc = g[g["gate"] == "fused_vs_chunked"]
        out.append({"attention": attention, "fused ops": "yes" if fused_ops else "no",
                    "CUDA graphs": graphs, "overlap": "yes" if g["overlap"].any() else "no",
                    "gates passed": f"{int(g['passed'].astype(bool).sum())} of {len(g)}",
                    "tie flips tolerated": str(int(fvc["flip_locations"].sum())) if len(fvc) else "",
                    "code version": commit})
    return pd.DataFrame(out)
