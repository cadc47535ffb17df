"""How a page's figures reach its prose: every named value glued (myst-nb) as the text
`{glue:text}` pastes, every table shown as Markdown. The only place the book's pages glue."""
from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pandas as pd


def page(module: ModuleType, data: str | Path | None = None) -> dict[str, pd.DataFrame]:
    """Glue every value of `module`'s figures (one page's) and return its tables by figure."""
    from myst_nb import glue

    tables, values = module.figures(data)
    for name, value in values.items():
        glue(name, value.text, display=False)
    return tables


def show(table: pd.DataFrame | None, empty: str = "No rows yet.") -> None:
    """A table as Markdown (a real table in the built page), or the note that rows are missing."""
    from IPython.display import Markdown, display

    display(Markdown(empty if table is None or not len(table) else table.to_markdown(index=False, disable_numparse=True)))
