"""The appendix of changes tried and not kept: data/not_kept.csv as written (no rows read)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .data import STATIC, collect


def not_kept() -> pd.DataFrame:
    path = STATIC / "not_kept.csv"
    return pd.read_csv(path).fillna("-") if path.exists() else pd.DataFrame()


def figures(d: str | Path | None = None):
    return collect(not_kept=(not_kept(), {}))
