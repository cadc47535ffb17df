"""What every book page shares: the committed rows, one GPU's worth of them, and output
that renders as real tables and figures. Pages import this (they execute with book/ as
their working directory) and do their own plotting; nothing here measures anything.

`FUSEDLIB_DATA` points the book at another rows folder (e.g. `data-smoke/` after a CPU
`make run-all`); by default it reads the published `data/`.
"""
from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from fusedlib import results

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("FUSEDLIB_DATA", ROOT / "data")).resolve()
PREFERRED_GPU = os.environ.get("FUSEDLIB_BOOK_GPU", "H200")
ENGINE_COLORS = {"fused": "#1f77b4", "chunked": "#ff7f0e", "transformers": "#2ca02c"}

matplotlib.rcParams.update({
    "figure.dpi": 110, "savefig.dpi": 110, "figure.figsize": (7.5, 3.6),
    "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
    "legend.frameon": False,
})


def rel(path: Path) -> str:
    """A path as the reader knows it: relative to the repository root."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def load(experiment: str) -> pd.DataFrame:
    """Every row under `<data>/<experiment>/`: each `<stem>.jsonl` result set, read with
    `fusedlib.results.load`, with the stem in a `result_set` column."""
    folder = DATA / experiment
    frames = [results.load(folder / p.name[: -len(".jsonl")]).assign(result_set=p.name[: -len(".jsonl")])
              for p in sorted(folder.glob("*.jsonl"))]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def one_gpu(df: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The rows of one GPU, so a table never mixes cards: the preferred one (H200 unless
    FUSEDLIB_BOOK_GPU says otherwise) when present, else the one with the most rows."""
    if df.empty or "gpu" not in df:
        return df, "unknown GPU"
    gpus = df["gpu"].fillna("unknown").astype(str)
    preferred = sorted({g for g in gpus if PREFERRED_GPU.lower() in g.lower()})
    gpu = preferred[0] if preferred else gpus.value_counts().index[0]
    return df[gpus == gpu].reset_index(drop=True), gpu


def rows_for(experiment: str) -> tuple[pd.DataFrame, str]:
    """`load` then `one_gpu`; prints where the rows came from (or that there are none)."""
    df, gpu = one_gpu(load(experiment))
    if df.empty:
        no_rows(experiment)
    else:
        commits = sorted(df["git_commit"].astype(str).unique()) if "git_commit" in df else []
        note = f" at commit{'s' if len(commits) > 1 else ''} {', '.join(commits)}" if commits else ""
        display(Markdown(f"{len(df)} rows from `{rel(DATA / experiment)}/`, measured on **{gpu}**{note}."))
    return df, gpu


def no_rows(experiment: str) -> None:
    display(Markdown(
        f"```{{note}}\nNo rows yet in `{rel(DATA / experiment)}/`: this page shows its table and "
        f"figure once the experiment's notebook has written rows there (`make run-all`).\n```"))


def table(df: pd.DataFrame, columns: list[str] | None = None, floatfmt: str = ".3g") -> None:
    """A DataFrame as a MyST table (rendered because nb_render_markdown_format is myst)."""
    if columns is not None:
        df = df[[c for c in columns if c in df]]
    display(Markdown(df.to_markdown(index=False, floatfmt=floatfmt)))


def show(fig) -> None:
    """Show a figure once, as PNG, and release it."""
    fig.tight_layout()
    plt.show()
    plt.close(fig)


def color(engine: str) -> str:
    return ENGINE_COLORS.get(engine, "#7f7f7f")
