"""One grader for every prediction in data/predictions*.yaml (numpy, pandas and yaml only).

The yaml is the verbatim record: each entry has id, date, chapter, title and text (as first
written). An entry that names the figure grading it carries `figure` (a glue name of the book's
figures, `figures.values()`, or a list of them) and `low` and/or `high` (null for an open side;
lists beside a list of figures), the range its text wrote. Every entry the book shows is graded
on the rows the book is built from, measured on their card; the verdicts (`VERDICTS`):

- "held": every figure lies within its range;
- "missed": a figure lies outside its range;
- "not resolved": an interval straddles a bound, the rows hold no value for a figure, or its
  figures measure something near what it named, not that (`unresolved` says what, in "measured").

An entry naming no figure these rows compute is `UNGRADED`. In the editorial `graded_at` (the rows'
conditions where the text names others) and `edits` (a page's words for a phrase of the text), `{name}`
is that figure's text. An earlier card's grades (`measured`, `verdict`, `graded_on`) are `earlier`'s.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import yaml

from . import figures as book
from .figures.data import DATASHEETS, STATIC, profiles_and_devices

PATHS = (STATIC / "predictions.yaml", STATIC / "predictions_part11.yaml", STATIC / "predictions_part12.yaml",
         STATIC / "predictions_reference.yaml")
# The predictions that decide each chapter's question: quoted in full there, by id here only.
DECIDING = {7: ["A5", "A2", "A3"], 8: ["B3", "REF-1"], 9: ["B2", "B4"], 10: ["AT1", "AT2", "AU2"],
            11: ["P11-1", "P11-2", "P11-3"], 12: ["P12-1", "P12-2", "P12-3", "P12-4"]}
CHAPTERS = {7: "Part 7: one forward per step", 8: "Part 8: split-KV decode", 9: "Part 9: CUDA graphs",
            10: "Part 10: to the roofline", 11: "Part 11: a Hopper GPU's size",
            12: "Part 12: the kernels at Hopper's rates"}
VERDICTS = ("held", "missed", "not resolved")
UNGRADED = "not graded"  # the verdict of an entry no figure of the rows measures
NO_FIGURE = "-"  # the entry names no figure these rows compute


def load(paths=None) -> list[dict]:
    """Every entry, in file order; a later file's entry with an id already seen is skipped."""
    out, seen = [], set()
    env = os.environ.get("FUSEDLIB_PREDICTIONS")  # another record, e.g. a test's
    for path in [Path(p) for p in (paths or (env.split(os.pathsep) if env else PATHS))]:
        if not path.exists():
            continue
        # The C loader where PyYAML has it: the record is ~3k lines, read by every page that grades.
        doc = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or []
        entries = doc.get("predictions", []) if isinstance(doc, dict) else doc
        for e in entries:
            if e.get("id") not in seen:
                seen.add(e.get("id"))
                out.append(dict(e))
    return out


def _listed(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def grade(entry: dict, figures: Mapping) -> tuple[str, str]:
    """(measured, verdict) for one entry from its figures (`figures`: glue name -> Value)."""
    if not entry.get("figure"):
        return NO_FIGURE, UNGRADED
    names = _listed(entry["figure"])
    lows, highs = (b * len(names) if len(b) == 1 else b  # one bound for every figure
                   for b in (_listed(entry.get("low")), _listed(entry.get("high"))))
    if not len(names) == len(lows) == len(highs):
        raise ValueError(f"{entry.get('id')}: {len(names)} figures but {len(lows)} lows and {len(highs)} highs")
    values = [figures[n] for n in names]  # an unknown name is an error in the record, not a verdict
    measured = "; ".join(v.text for v in values)
    verdicts = []
    for v, low, high in zip(values, lows, highs):
        straddles = v.lo is not None and v.hi is not None and any(
            b is not None and v.lo < b < v.hi for b in (low, high))
        if v.value is None or straddles:
            verdicts.append("not resolved")
        else:
            verdicts.append("held" if (low is None or v.value >= low) and (high is None or v.value <= high) else "missed")
    verdict = "missed" if "missed" in verdicts else "not resolved" if "not resolved" in verdicts else "held"
    if entry.get("unresolved"):  # measured, but not the thing it named: no verdict either way
        return f"{measured} ({entry['unresolved']})", "not resolved"
    return measured, verdict


def filled(text: str, figures: Mapping) -> str:
    """An editorial text with each `{name}` replaced by that figure's text, its interval left out."""
    return re.sub(r"\{(\w+)\}", lambda m: figures[m[1]].text.split(" (")[0], text)


def card(d=None) -> str:
    """The card the rows folder's rows were measured on, by its datasheet's short name where it
    has one ("-" without rows)."""
    names = sorted(profiles_and_devices(d)[1])
    return " and ".join(DATASHEETS[n]["card"] if n in DATASHEETS else n for n in names) or "-"


def graded(entries: list[dict] | None = None, d=None, figures: Mapping | None = None) -> list[dict]:
    """Every entry with its measured figure and verdict, graded on the figures of the rows folder
    `d` (default: the one the book reads) and named by those rows' card (`graded_on`; "-" where no
    figure of the rows grades it), `graded_at` and `edits` (in its text) filled from the same figures.
    `figures` stands in for the folder's figures where a test supplies its own."""
    entries = load() if entries is None else entries
    if figures is None:
        figures = book.values(d) if any(e.get("figure") for e in entries) else {}
    on, out = card(d), []
    for e in entries:  # an entry no figure of these rows measures names no card
        measured, verdict = grade(e, figures)
        text = e.get("text", "")
        for written, shown in (e.get("edits") or {}).items():
            text = text.replace(written, filled(shown, figures))
        out.append(e | dict(text=text, measured=measured, verdict=verdict, graded_on=on if e.get("figure") else NO_FIGURE,
                            graded_at=filled(e.get("graded_at") or "", figures)))
    return out


def earlier(entries: list[dict] | None = None) -> tuple[pd.DataFrame, str]:
    """The grades an earlier card's rows gave, as recorded: a table of the entries this book
    grades from a figure (part, claim by title, label or opening words, measured, verdict, card; a
    recorded "open", its rows never taken, reads "not graded"), and one line counting the others' verdicts."""
    kept = [e for e in (load() if entries is None else entries) if e.get("graded_on")]
    said = lambda v: UNGRADED if v == "open" else v  # noqa: E731
    rows = [{"part": e.get("chapter"), "claim": _cell(named(e, 8)),
             "measured": _cell(e.get("measured")), "verdict": said(e.get("verdict")), "on": e.get("graded_on")}
            for e in kept if e.get("figure")]
    rest = [e for e in kept if not e.get("figure")]
    counts = {v: n for v in (*VERDICTS, UNGRADED) if (n := sum(said(e.get("verdict")) == v for e in rest))}
    cards = " and ".join(sorted({str(e["graded_on"]) for e in rest}))
    line = (f"The other {len(rest)} entries, on the {cards}: " + ", ".join(f"{n} {v}" for v, n in counts.items())
            + "; each with its figure in `data/predictions*.yaml`.") if rest else ""
    table = pd.DataFrame(rows, columns=["part", "claim", "measured", "verdict", "on"]).fillna("-")
    return table, line


def _cell(text) -> str | None:
    """Text for a Markdown table cell: a `|` inside it (as in "max |d|") must not split the cell."""
    return None if text is None else str(text).replace("|", "\\|")


def table(entries: list[dict]) -> pd.DataFrame:
    """id, date, claim (the text as written, after its title), measured (after the conditions it
    was graded at, where it names them), the card it was measured on, verdict."""
    return pd.DataFrame([{"id": e.get("id"), "date": e.get("date"), "claim": _cell(titled(e)),
                          "measured": _cell(f"{e['graded_at']}: {e['measured']}" if e.get("graded_at") else e.get("measured")),
                          "on": e.get("graded_on") or "-", "verdict": e.get("verdict")} for e in entries])


def titled(e: dict) -> str:
    """Title and text as one claim; a text written to follow its title (": ..." or "(...)") does."""
    text, title = e.get("text", ""), e.get("title")
    if not title:
        return text
    return f"**{title}**{text}" if text.startswith(":") else f"**{title}** {text}" if text.startswith("(") \
        else f"**{title}**: {text}"


def pick(ids: list[str], entries: list[dict] | None = None) -> list[dict]:
    """The entries with these ids, in this order (a chapter's deciding predictions)."""
    by = {e["id"]: e for e in (graded() if entries is None else entries)}
    if missing := [i for i in ids if i not in by]:
        raise KeyError(f"no prediction {missing} in the record")
    return [by[i] for i in ids]


def deciding(chapter: int) -> list[dict]:
    return pick(DECIDING[chapter])


# Words of the record's working notes (machine loans, change sets, commits) that the appendix's
# short form stops before; the yaml keeps the whole text.
_NOTES = re.compile(r"\b(?:sessions?|leases?|campaigns?|sittings?|set [A-Z]{1,2}\d*|tree|"
                    r"(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40})\b|\(\s*$")


# A claim that opens by naming the harness's setup ("Census configuration 6 ..., alternated:")
# starts, in the appendix's short form, at its claim after the colon.
_SETUP = re.compile(r"^[^:]*\bcensus configuration \d+[^:]*:\s*", re.I)


def opening(text: str, words: int = 12) -> str:
    """A claim's first words, for the appendix's table: at most `words`, stopping before any
    working note (the yaml keeps the whole text)."""
    text = _SETUP.sub("", text.lstrip(":( "))
    w = text.split()
    short = " ".join(w[:words])
    m = _NOTES.search(short)
    cut = short[:m.start()].rstrip(" ,;:(") if m else short
    return cut if cut == " ".join(w) else cut + " …"


def named(e: dict, words: int) -> str:
    """An entry's name in a table: its title, else its label, else its text's first `words` words."""
    return e.get("title") or e.get("label") or opening(e.get("text", ""), words)


def appendix(entries: list[dict] | None = None) -> None:
    """One table per chapter: id, date, claim (its title, label or opening words: the chapters quote
    their deciding ones in full), measured, verdict."""
    from IPython.display import Markdown, display

    entries = graded() if entries is None else entries
    out = []
    for chapter in sorted({str(e.get("chapter")) for e in entries}, key=lambda c: (not c.isdigit(), c.zfill(3))):
        rows = [e | {"title": None, "text": named(e, 6)} for e in entries if str(e.get("chapter")) == chapter]
        name = CHAPTERS.get(int(chapter), f"Part {chapter}") if chapter.isdigit() else chapter.capitalize()
        out.append(f"**{name}**\n\n" + table(rows).fillna("-").to_markdown(index=False, disable_numparse=True))
    display(Markdown("\n\n".join(out) or "No predictions recorded yet."))


# A note's asides a chapter leaves out: that the text is unchanged (it is shown as written) and
# the working notes it cites.
_ASIDES = re.compile(r" \((?:the prediction above is unchanged|benchmarks/[^)]*)\)")


def show(entries: list[dict]) -> None:
    """A chapter's deciding predictions as written, each with its date, measurement (at the
    conditions it was graded at, where they differ), verdict and note (the ids stay in the appendix)."""
    from IPython.display import Markdown, display

    lines = []
    for e in entries:
        on = e.get("graded_on") or "-"
        # An entry added after related runs says which, in its circumstance's first clause.
        after = re.sub(r"^Added \S+ ", ", ", e.get("circumstance", "").split(" (")[0]) if e.get("circumstance") else ""
        at = f", {e['graded_at']}" if e.get("graded_at") else ""
        head, _, note = _ASIDES.sub("", e.get("note") or "").partition(": ")
        lines.append(f"- *Written {e.get('date')}{after}.* {titled(e)}  \n"
                     f"  Measured{'' if on == '-' else f' on the {on}'}{at}: {e['measured']}. Verdict: **{e['verdict']}**."
                     + (f"  \n  *{head}:* {note}" if note else ""))
    display(Markdown("\n".join(lines) or "No predictions recorded for this chapter yet."))
