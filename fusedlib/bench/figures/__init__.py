"""The book's figures, one module per page: rows in, tables and named values out (`figures(data)`
-> (tables, values by glue name)); a figure another page needs comes from its page. No torch.

  data.py      the rows folder as DataFrames, the model's shape, the card's datasheet
  chapter.py   what every chapter of parts 7-10 shows for its part: steps and capacity
  intro.py part07.py ... part12.py   one per page that glues values (`PAGES`); not_kept.py
  provenance.py the appendices' tables; glue.py how a page glues its values and shows its tables
"""
from __future__ import annotations

from pathlib import Path

from ..stats import Value
from . import intro, part07, part08, part09, part10, part11, part12
from .data import collect

PAGES = {"intro": intro, "part07": part07, "part08": part08, "part09": part09, "part10": part10, "part11": part11,
         "part12": part12}


def values(data: str | Path | None = None) -> dict[str, Value]:
    """Every page's named values, glue name -> Value (the predictions' grader reads these)."""
    return collect(**{page: module.figures(data) for page, module in PAGES.items()})[1]


def owners(data: str | Path | None = None) -> dict[str, str]:
    """Glue name -> the page that glues it."""
    return {name: page for page, module in PAGES.items() for name in module.figures(data)[1]}
