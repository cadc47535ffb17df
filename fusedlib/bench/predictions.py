"""One grader for every prediction in data/predictions.yaml (numpy, pandas and yaml only).

The yaml is the verbatim record: each entry has id, date, chapter, title, text (as first
written), and either a recorded `measured` and `verdict`, or a live grade: `figure` (a name
in `analysis.FIGURES`), `low` and/or `high` (null for an open side) and the `commit` it was
written at. A live entry is graded on the rows the book reads:

- "no rows": the figure has no value yet;
- "not resolved": the figure's interval straddles one of the bounds;
- "held": the value lies within [low, high]; else "missed".
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import yaml

from . import analysis

PATHS = (analysis.STATIC / "predictions.yaml", analysis.STATIC / "predictions_part11.yaml")
LIVE = ("held", "missed", "not resolved", "no rows")


def load(paths=None) -> list[dict]:
    """Every entry, in file order; a later file's entry with an id already seen is skipped."""
    out, seen = [], set()
    for path in [Path(p) for p in (paths or PATHS)]:
        if not path.exists():
            continue
        doc = yaml.safe_load(path.read_text()) or []
        entries = doc.get("predictions", []) if isinstance(doc, dict) else doc
        for e in entries:
            if e.get("id") in seen:
                continue
            seen.add(e.get("id"))
            out.append(dict(e))
    return out


def grade(entry: dict, figures: Mapping | None = None) -> tuple[str, str]:
    """(measured, verdict) for one entry: live from its figure, or as recorded."""
    if not entry.get("figure"):
        return str(entry.get("measured") or "-"), str(entry.get("verdict") or "-")
    figures = analysis.FIGURES if figures is None else figures
    v = figures[entry["figure"]]  # an unknown name is an error in the record, not a verdict
    if v.value is None:
        return analysis.NO_ROWS, "no rows"
    low, high = entry.get("low"), entry.get("high")
    for bound in (low, high):
        if bound is not None and v.lo is not None and v.hi is not None and v.lo < bound < v.hi:
            return v.text, "not resolved"
    held = (low is None or v.value >= low) and (high is None or v.value <= high)
    return v.text, "held" if held else "missed"


def graded(entries: list[dict] | None = None, figures: Mapping | None = None) -> list[dict]:
    entries = load() if entries is None else entries
    out = []
    for e in entries:
        measured, verdict = grade(e, figures)
        out.append(e | {"measured": measured, "verdict": verdict})
    return out


def table(entries: list[dict], with_id: bool = True) -> pd.DataFrame:
    """id (optionally), date, claim (the text as written, after its title), measured, verdict."""
    rows = []
    for e in entries:
        claim = f"**{e['title']}**: {e['text']}" if e.get("title") else e.get("text", "")
        row = {"id": e.get("id"), "date": e.get("date"), "claim": claim,
               "measured": e.get("measured"), "verdict": e.get("verdict")}
        if not with_id:
            row.pop("id")
        rows.append(row)
    return pd.DataFrame(rows)


def pick(ids: list[str], entries: list[dict] | None = None) -> list[dict]:
    """The entries with these ids, in this order (a chapter's deciding predictions)."""
    by = {e["id"]: e for e in (graded() if entries is None else entries)}
    missing = [i for i in ids if i not in by]
    if missing:
        raise KeyError(f"no prediction {missing} in the record")
    return [by[i] for i in ids]


def show(entries: list[dict]) -> None:
    """A chapter's deciding predictions as written, each with its date, measurement and verdict
    (the ids stay in the appendix)."""
    from IPython.display import Markdown, display

    if not entries:
        display(Markdown("No predictions recorded for this chapter yet."))
        return
    lines = []
    for e in entries:
        lines.append(f"- *Written {e.get('date')}.* **{e.get('title', '')}**: {e['text']}  \n"
                     f"  Measured: {e['measured']}. Verdict: **{e['verdict']}**.")
    display(Markdown("\n".join(lines)))
