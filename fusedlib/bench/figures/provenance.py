"""The provenance page: per rows file, where its rows came from; the pinned packages."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from .data import EXPERIMENTS, REPO, load, rows_dir


def provenance(d: str | Path | None = None) -> pd.DataFrame:
    """Per rows file: its rows, commits, code versions, devices, profile and dates."""
    d = rows_dir(d)
    out = []
    for name in EXPERIMENTS:
        df = load(name, d)
        if not len(df):
            out.append({"file": f"{name}.jsonl", "rows": 0})
            continue
        j = lambda col: ", ".join(sorted({str(x) for x in df[col].dropna()})) if col in df else "-"  # noqa: E731
        dates = sorted(str(t)[:10] for t in df["time_utc"].dropna()) if "time_utc" in df else []
        out.append({"file": f"{name}.jsonl", "rows": len(df), "device": j("device_name"), "profile": j("profile"),
                    "torch": j("torch_version"), "triton": j("triton_version"),
                    "code version": j("code_version"), "commit": j("commit") or "-",
                    "dates": "-" if not dates else (dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}")})
    return pd.DataFrame(out).fillna("-")


def software() -> pd.DataFrame:
    """The packages this checkout pins (pyproject.toml's dependencies); the rows name the torch
    and triton they were measured with."""
    pins = re.findall(r'"([A-Za-z0-9_.\-\[\]]+)==([^"]+)"', (REPO / "pyproject.toml").read_text())
    keep = {"torch", "triton", "transformers", "numpy", "pandas", "jupyter-book", "myst-nb", "papermill"}
    return pd.DataFrame([{"package": p, "version": v} for p, v in pins if p.split("[")[0] in keep])
