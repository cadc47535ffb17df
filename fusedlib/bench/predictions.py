"""The book's dated predictions: one YAML file (data/predictions.yaml) that the chapters and
appendices render and the grading reads its thresholds from.

Each prediction was written before the runs that grade it and is never edited after them;
its `quotes` are the exact phrases of its text that a grade takes numbers from, so a grade
cannot drift from what was predicted. Loading checks that every quote is in its text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

PREDICTIONS = Path(__file__).resolve().parents[2] / "data" / "predictions.yaml"
BOOK = Path(__file__).resolve().parents[2] / "book"  # appendix pages a prediction may open instead of a chapter

HELD, MISSED = "HELD", "MISSED"


@dataclass(frozen=True)
class Prediction:
    key: str            # set id + number, e.g. "A3"
    date: str
    chapter: int | str  # the part of the series whose chapter grades it, or the appendix page that does
    title: str
    text: str           # verbatim, after the bold title
    quotes: tuple[str, ...]
    circumstance: str   # when, relative to which runs, it was written (empty: the set's own note)
    note: str           # a dated note added later, if any (empty if none)

    def range(self, i: int) -> list[float]:
        """The numbers the i-th quote names ("between 10 and 18 ms" -> [10.0, 18.0])."""
        return numbers(self.quotes[i])

    def fractions(self, i: int) -> list[float]:
        """The percentages the i-th quote names, as fractions ("within ±3%" -> [0.03])."""
        return [x / 100 for x in numbers(self.quotes[i])]

    def as_written(self) -> str:
        """The prediction as Markdown, exactly as it was first written (bold title, text)."""
        if not self.title:  # a set written as a plain numbered list (set C)
            return self.text
        return f"**{self.title}**{'' if self.text.startswith(':') else ' '}{self.text}"


@dataclass(frozen=True)
class PredictionSet:
    id: str
    title: str
    written: str
    premise: str
    predictions: tuple[Prediction, ...]


@dataclass(frozen=True)
class Grade:
    measured: str
    verdict: str  # HELD or MISSED; a prediction without rows to grade it has no Grade
    why: str


def numbers(text: str) -> list[float]:
    """The numbers a quoted phrase names, in order; signs are the prose's ("+25%" -> 25.0)."""
    return [float(x) for x in re.findall(r"\d+(?:\.\d+)?", text)]


def verdict(ok: bool) -> str:
    return HELD if ok else MISSED


def side(x: float, lo: float, hi: float) -> str:
    return "inside" if lo <= x <= hi else ("above" if x > hi else "below")


def load(path: Path = PREDICTIONS) -> list[PredictionSet]:
    """Every prediction set in the file, checked: unique keys, a chapter number, and each quote
    found verbatim in its prediction's title or text."""
    raw = yaml.safe_load(Path(path).read_text())
    notes = raw.get("notes") or {}
    sets, seen = [], set()
    for s in raw["sets"]:
        preds = []
        for p in s["predictions"]:
            key = f"{s['id']}{p['number']}"
            if key in seen:
                raise ValueError(f"{path}: prediction {key} appears twice")
            seen.add(key)
            chapter = p.get("chapter")
            if not (isinstance(chapter, int) and not isinstance(chapter, bool)
                    or isinstance(chapter, str) and (BOOK / f"{chapter}.md").exists()):
                raise ValueError(f"{path}: prediction {key} has no chapter number or page of book/ "
                                 f"(got {chapter!r})")
            quotes = tuple(p.get("quotes") or ())
            if not quotes:
                raise ValueError(f"{path}: prediction {key} has no quotes to grade it by")
            for q in quotes:
                if q not in f"{p['title']} {p['text']}":
                    raise ValueError(f"{path}: prediction {key}: quote {q!r} is not in its text")
            preds.append(Prediction(key=key, date=str(p["date"]), chapter=p["chapter"], title=p["title"],
                                    text=p["text"], quotes=quotes, circumstance=p.get("circumstance", ""),
                                    note=notes.get(key, "")))
        sets.append(PredictionSet(id=s["id"], title=s["title"], written=s["written"], premise=s["premise"],
                                  predictions=tuple(preds)))
    unknown = set(notes) - seen
    if unknown:
        raise ValueError(f"{path}: notes for unknown predictions {sorted(unknown)}")
    return sets


def by_key(path: Path = PREDICTIONS) -> dict[str, Prediction]:
    return {p.key: p for s in load(path) for p in s.predictions}


def for_chapter(chapter: int | str, path: Path = PREDICTIONS) -> list[Prediction]:
    return [p for s in load(path) for p in s.predictions if p.chapter == chapter]


def _quote_block(p: Prediction) -> str:
    return f"**{p.key}** (written {p.date}). {p.as_written()}"


def chapter_opening(preds: list[Prediction], grades: dict[str, Grade | None]) -> str:
    """A chapter's opening: its predictions as written and dated, each followed by its grade.
    A prediction with no rows to grade it is pointed at the open-predictions appendix rather
    than shown with a placeholder grade."""
    missing = set(grades) - {p.key for p in preds}
    if missing:
        raise ValueError(f"grades for predictions this chapter does not open with: {sorted(missing)}")
    parts = []
    for p in preds:
        g = grades.get(p.key)
        grade = (f"*Graded {g.verdict}*: {g.measured}; {g.why}." if g else
                 "*Open*: the runs that grade it are listed under {doc}`open`.")
        parts.append(f"{_quote_block(p)}\n\n{grade}")
    return "::::{admonition} The predictions, as written, and their grades\n:class: note predictions\n" + \
        "\n\n".join(parts) + "\n::::"


def open_list(preds: list[Prediction], reasons: dict[str, str]) -> str:
    """The open-predictions appendix: each ungraded prediction as written and what it waits for."""
    return "\n\n".join(f"{_quote_block(p)}\n\n*Waits for*: {reasons[p.key]}." for p in preds)


def record(sets: list[PredictionSet]) -> str:
    """Every set as first written: its dated note, its premise, then its predictions in order,
    each with the circumstance it was written in and any later dated note."""
    out = []
    for s in sets:
        out.append(f"## {s.title}\n\n{s.written}\n\n### What they start from\n\n{s.premise}\n\n### The predictions")
        circumstance = None
        for p in s.predictions:
            if p.circumstance and p.circumstance != circumstance:
                out.append(f"*{p.circumstance}*")
            circumstance = p.circumstance or circumstance
            out.append(f"{p.key}. {p.as_written()}")
            if p.note:
                out.append(f"*{p.note}*")
    return "\n\n".join(out)
