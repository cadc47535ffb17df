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
DATA = (ROOT / (os.environ.get("FUSEDLIB_DATA") or "data")).resolve()  # relative: to the repo root
PREFERRED_GPU = os.environ.get("FUSEDLIB_BOOK_GPU", "H200")
ENGINE_COLORS = {"fused": "#1f77b4", "chunked": "#ff7f0e", "transformers": "#2ca02c"}

matplotlib.rcParams.update({
    # 7 in at 100 dpi is the article column's width at a 1280-pixel window: text stays legible.
    "figure.dpi": 100, "savefig.dpi": 100, "figure.figsize": (7, 3.4), "font.size": 9,
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
    """Every row under `<data>/<experiment>/`, one result set per file stem, with the stem
    in a `result_set` column. A set's JSONL (the source of truth) is read with
    `fusedlib.results.load`; a set committed as CSV only is read from the CSV."""
    folder = DATA / experiment
    stems = sorted({p.name.rsplit(".", 1)[0] for p in folder.glob("*.jsonl")} |
                   {p.name.rsplit(".", 1)[0] for p in folder.glob("*.csv")})
    frames = []
    for stem in stems:
        jsonl = folder / f"{stem}.jsonl"
        df = results.load(folder / stem) if jsonl.exists() else pd.read_csv(folder / f"{stem}.csv")
        if len(df):
            frames.append(df.assign(result_set=stem))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def prediction(experiment: str) -> None:
    """Show `<data>/<experiment>/PREDICTION.md`, written before the run, as written."""
    path = DATA / experiment / "PREDICTION.md"
    if path.exists():
        text = path.read_text().strip()
        title, _, body = text.partition("\n")
        display(Markdown(f"::::{{admonition}} {title.lstrip('# ').strip()}\n:class: note\n"
                         f"{body.strip()}\n\n(From `{rel(path)}`.)\n::::"))


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


def latest(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Only the newest measurement of each configuration: per `keys` group, the rows that
    share the group's latest timestamp (a re-run replaces, never averages with, the old)."""
    if df.empty or "timestamp" not in df:
        return df
    keys = [k for k in keys if k in df]
    newest = df.groupby(keys, dropna=False)["timestamp"].transform("max") if keys else df["timestamp"].max()
    return df[df["timestamp"] == newest].reset_index(drop=True)


NO_ROWS = "No rows yet"  # tests/test_book.py looks for this on pages whose data is missing


def no_rows(experiment: str, result_set: str | None = None) -> None:
    where = rel(DATA / experiment) + (f"/{result_set}.*" if result_set else "/")
    say(f"```{{note}}\n{NO_ROWS} in `{where}`: this part of the page shows its table and figure "
        f"once the experiment's notebook has written rows there (`make run-all`).\n```")


def say(text: str) -> None:
    """Computed prose: a Markdown paragraph built from the rows."""
    display(Markdown(text))


def table(df: pd.DataFrame, columns: dict[str, str] | list[str] | None = None, floatfmt: str = ".3g") -> None:
    """A DataFrame as a MyST table (a real <table> because nb_render_markdown_format is
    myst). `columns` picks columns, in order; a dict also relabels them."""
    if columns is not None:
        labels = columns if isinstance(columns, dict) else {c: c for c in columns}
        df = df[[c for c in labels if c in df]].rename(columns=labels)
    display(Markdown(df.to_markdown(index=False, floatfmt=floatfmt)))


def show(fig) -> None:
    """Show a figure once, as PNG, and release it."""
    fig.tight_layout()
    plt.show()
    plt.close(fig)


def color(engine: str) -> str:
    return ENGINE_COLORS.get(engine, "#7f7f7f")
