"""The appendix of changes tried and not kept: data/not_kept.csv as written (no rows read)."""
from __future__ import annotations

import pandas as pd

from .data import STATIC


def not_kept() -> pd.DataFrame:
    path = STATIC / "not_kept.csv"
    return pd.read_csv(path).fillna("-") if path.exists() else pd.DataFrame()
