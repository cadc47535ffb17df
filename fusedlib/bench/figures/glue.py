"""How a page's figures reach its prose: every named value glued (myst-nb) as the text
`{glue:text}` pastes, every table shown as Markdown, and a note at the top of the page when its
rows are not the series' measurements. The only place the book's pages glue."""
from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pandas as pd

from ..stats import NO_ROWS
from .data import gpu_time, profiles_and_devices, rows_dir

NO_GPU_TIME = "(no GPU time in these rows)"


def rows_note(data: str | Path | None = None) -> str | None:
    """One line saying what the rows are when they are not the series' measurements: a smoke
    run's, or rows without GPU time; None for a GPU's full-profile rows (or no rows at all)."""
    profiles, names = profiles_and_devices(data)
    if not names:
        return None
    smoke = "smoke" in profiles
    if gpu_time(data):
        return ("**Built from a smoke run's rows:** tiny shapes that check the pipeline end to end, not the "
                "series' measurements.") if smoke else None
    what = "a smoke run's rows, measured on a CPU" if smoke else "rows measured on a CPU"
    return (f"**Built from {what}:** they carry no GPU time, so this page's GPU times, floors, rates and the "
            "conclusions drawn from them read \"no GPU time\" instead of figures.")


def note(data: str | Path | None = None) -> None:
    """Show `rows_note` at the top of a page, if there is one."""
    from IPython.display import Markdown, display

    line = rows_note(data)
    if line:
        display(Markdown(line))


def page(module: ModuleType, data: str | Path | None = None) -> dict[str, pd.DataFrame]:
    """Show the rows' note, glue every value of `module`'s figures (one page's) and return its
    tables by figure."""
    from myst_nb import glue

    folder = rows_dir(data)
    note(folder)
    missing = NO_ROWS if gpu_time(folder) or not profiles_and_devices(folder)[1] else NO_GPU_TIME
    tables, values = module.figures(folder)
    for name, value in values.items():
        glue(name, missing if value.text == NO_ROWS else value.text, display=False)
    return tables


def show(table: pd.DataFrame | None, empty: str = "No rows yet.") -> None:
    """A table as Markdown (a real table in the built page), or the note that rows are missing."""
    from IPython.display import Markdown, display

    display(Markdown(empty if table is None or not len(table) else table.to_markdown(index=False, disable_numparse=True)))
