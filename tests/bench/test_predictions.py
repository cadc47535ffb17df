"""The one grader over data/predictions.yaml, on a small synthetic record."""
from __future__ import annotations

import re

import pytest
import yaml

from fusedlib.bench import figures as F, predictions as P, stats as S

V = S.Value
FIGS = {
    "rate": V(95.0, "95 requests/s", 90.0, 99.0, 5, 0.94),
    "gain": V(5.0, "+5.0%", 1.0, 9.0, 5, 0.95),
    "wide": V(5.0, "+5.0%", -3.0, 13.0, 5, 0.95),
    "share": V(0.07, "7%"),
    "none": S.MISSING,
}
RECORD = [
    {"id": "X-1", "date": "2026-12-05", "chapter": 11, "title": "t", "text": "between 70 and 110",
     "figure": "rate", "low": 70, "high": 110, "commit": "abc"},
    {"id": "X-2", "date": "2026-12-05", "chapter": 11, "title": "t", "text": "between 10 and 20",
     "figure": "gain", "low": 10, "high": 20, "commit": "abc"},
    {"id": "X-3", "date": "2026-12-05", "chapter": 11, "title": "t", "text": "above 2", "figure": "wide",
     "low": 2, "high": None, "commit": "abc"},
    {"id": "X-4", "date": "2026-12-05", "chapter": 11, "title": "t", "text": "under 10%", "figure": "share",
     "low": None, "high": 0.10, "commit": "abc"},
    {"id": "X-5", "date": "2026-12-05", "chapter": 11, "title": "t", "text": "x", "figure": "none", "low": 1,
     "high": 2, "commit": "abc"},
    {"id": "Y-1", "date": "2026-11-30", "chapter": 7, "title": "old", "text": "y", "set": "A",
     "measured": "12.0 ms", "verdict": "held"},
]


@pytest.fixture
def record(tmp_path):
    path = tmp_path / "predictions.yaml"
    path.write_text(yaml.safe_dump({"predictions": RECORD}))
    return P.load([path])


def test_entries_are_graded_against_their_figures_on_the_rows_card(record):
    graded = P.graded(record, figures=FIGS)
    got = {e["id"]: (e["measured"], e["verdict"]) for e in graded}
    on = {e["id"]: e["graded_on"] for e in graded}  # the card of the rows an entry was graded on; none without a figure
    assert set(on[i] for i in ("X-1", "X-2", "X-3", "X-4", "X-5")) == {P.card()} and on["Y-1"] == P.NO_FIGURE
    assert got["X-1"] == ("95 requests/s", "held")
    assert got["X-2"] == ("+5.0%", "missed")
    assert got["X-3"] == ("+5.0%", "not resolved")  # the interval straddles the bound 2
    assert got["X-4"] == ("7%", "held")  # one-sided, no interval
    assert got["X-5"] == (S.NO_ROWS, "not resolved")
    assert got["Y-1"] == (P.NO_FIGURE, P.UNGRADED)  # its recorded grade is an earlier card's, not these rows'


def test_several_figures_hold_only_together():
    e = {"id": "M-1", "figure": ["rate", "share"], "low": [70, None], "high": [110, 0.05]}
    assert P.grade(e, FIGS) == ("95 requests/s; 7%", "missed")
    assert P.grade(e | {"high": [110, 0.10]}, FIGS)[1] == "held"
    assert P.grade(e | {"figure": ["rate", "wide"], "low": [70, 2], "high": [110, None]}, FIGS)[1] == "not resolved"
    with pytest.raises(ValueError):
        P.grade(e | {"low": [70, None, 1]}, FIGS)


def test_an_entry_measured_on_another_design_than_it_named_is_not_resolved():
    e = {"id": "W-1", "figure": "rate", "low": 70, "high": 110, "unresolved": "another kernel than it named"}
    assert P.grade(e, FIGS) == ("95 requests/s (another kernel than it named)", "not resolved")
    assert P.grade({k: v for k, v in e.items() if k != "unresolved"}, FIGS) == ("95 requests/s", "held")


def test_conditions_and_glosses_are_filled_from_the_figures_and_shown_with_the_note(monkeypatch):
    """`graded_at` and `edits` read `{name}` as that figure's text without its interval; a chapter
    prints the conditions after the card and the note (less its asides) on a line of its own."""
    figs = FIGS | {"offered": V(22.0, "22.0 requests/s"), "ceiling": V(150.0, "150 requests/s (at the GEMM rate)")}
    e = {"id": "G-1", "date": "2026-12-05", "chapter": 9, "title": "t", "text": ": at rate 40, under the ~139 ceiling",
         "figure": "gain", "low": 1, "high": 9, "graded_at": "at {offered} offered",
         "edits": {"~139": "~139 [here: {ceiling}]"},
         "note": "Note added 2026-12-06 (the prediction above is unchanged): graded on x (benchmarks/NOTES.md: y)."}
    (g,) = P.graded([e], figures=figs)
    assert g["graded_at"] == "at 22.0 requests/s offered"
    assert g["text"] == ": at rate 40, under the ~139 [here: 150 requests/s] ceiling"
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda m: shown.append(m.data))
    P.show([g, {**g, "graded_at": "", "note": None}])
    lines = shown[0].splitlines()
    assert lines[1] == f"  Measured on the {P.card()}, at 22.0 requests/s offered: +5.0%. Verdict: **held**.  "
    assert lines[2] == "  *Note added 2026-12-06:* graded on x."
    assert lines[4] == f"  Measured on the {P.card()}: +5.0%. Verdict: **held**." and len(lines) == 5
    assert P.table([g])["measured"][0] == "at 22.0 requests/s offered: +5.0%"
    with pytest.raises(KeyError):
        P.graded([e | {"graded_at": "at {nonesuch}"}], figures=figs)


def test_an_unknown_figure_is_an_error(record):
    with pytest.raises(KeyError):
        P.grade(record[0] | {"figure": "nonesuch"}, FIGS)


def test_a_later_file_does_not_repeat_an_id(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(yaml.safe_dump(RECORD[:2]))
    b.write_text(yaml.safe_dump({"predictions": RECORD[1:3]}))
    assert [e["id"] for e in P.load([a, b])] == ["X-1", "X-2", "X-3"]


def test_pick_keeps_the_order_asked_and_table_has_the_columns(record):
    picked = P.pick(["X-3", "X-1"], P.graded(record, figures=FIGS))
    assert [e["id"] for e in picked] == ["X-3", "X-1"]
    assert list(P.table(picked).columns) == ["id", "date", "claim", "measured", "on", "verdict"]
    with pytest.raises(KeyError):
        P.pick(["nope"], record)


def test_a_pipe_in_a_claim_stays_in_its_cell_and_openings_skip_the_setup():
    e = {"id": "Z-1", "date": "2026-12-05", "chapter": 7, "title": "", "text": "x", "measured": "max |d| 0.017"}
    assert P.table([e])["measured"][0] == "max \\|d\\| 0.017"
    assert P.opening("Census configuration 6 with the swap, alternated: the mixed step falls", 4) == "the mixed step falls"


def test_the_committed_record_names_only_known_figures():
    known = F.values()
    for e in P.load():
        if e.get("figure"):
            names = e["figure"] if isinstance(e["figure"], list) else [e["figure"]]
            assert set(names) <= set(known), e["id"]
            assert e.get("low") is not None or e.get("high") is not None, e["id"]
        editorial = " ".join([e.get("graded_at") or "", *(e.get("edits") or {}).values()])
        assert set(re.findall(r"\{(\w+)\}", editorial)) <= set(known), e["id"]
        # A gloss giving this book's figure for an earlier one reads it from the rows, never typed.
        assert not re.search(r"here: (?!\{\w+\}\])", editorial), e["id"]


def test_every_verdict_is_one_of_the_three_words_and_names_the_card_of_its_rows(tmp_path):
    """An entry a figure grades gets one of the three verdicts; one no figure measures is "not
    graded", never "not resolved" (that is for a measured entry the rows do not decide)."""
    from tests.bench import synthetic_rows

    for d in (None, synthetic_rows.write(tmp_path)):
        graded = P.graded(d=d)
        assert {e["verdict"] for e in graded if e.get("figure")} <= set(P.VERDICTS)
        assert {e["verdict"] for e in graded if not e.get("figure")} == {P.UNGRADED}
        assert {e["graded_on"] for e in graded if e.get("figure")} == {P.card(d)}, d
        assert {e["graded_on"] for e in graded if not e.get("figure")} <= {P.NO_FIGURE}
    table, others = P.earlier()
    assert "open" not in set(table["verdict"]) and "open" not in others and P.UNGRADED in others


def test_the_appendix_defines_each_verdict_word_once():
    from tests import book_pages as B

    text = " ".join(B.prose("predictions").split())
    for word in (*P.VERDICTS, P.UNGRADED):
        assert text.count(f"*{word}*") == 1, word


def test_a_chapter_verdict_comes_from_the_chapter_rows_not_an_earlier_card():
    """Each deciding entry's measured figure is the chapter's figure on these rows, and on these
    rows' card: an entry graded from an earlier card's record (its frozen `measured`) fails."""
    from fusedlib.bench.figures.data import DATASHEETS, EXPERIMENTS, load

    values, frozen = F.values(), {e["id"]: e for e in P.load() if e.get("graded_on")}
    cards = {DATASHEETS[n]["card"] for x in EXPERIMENTS for n in set(load(x).get("device_name", []))}
    assert len(cards) == 1, cards  # the chapters' rows come from one card
    for chapter in P.DECIDING:
        for e in P.deciding(chapter):
            assert e["graded_on"] == cards.copy().pop() != frozen.get(e["id"], {}).get("graded_on"), e["id"]
            names = e["figure"] if isinstance(e["figure"], list) else [e["figure"]]
            assert e["measured"] == "; ".join(values[n].text for n in names) + (
                f" ({e['unresolved']})" if e.get("unresolved") else ""), e["id"]


_COUNTS = {"three": 3, "five": 5, "eight": 8}
# What a claim's text can name about the runs grading it: (pattern, what the chapter's rows say).
_CONDITIONS = {
    "rate": (r"\brate (\d+)\b|\bat (\d+)/s", lambda v, p: v.get(f"{p}_pair_rate")),
    "arrivals": (r"(?<![\d.])(\d+) (?:Poisson arrivals|requests[,)])", lambda v, p: v.get(f"{p}_n_requests")),
    "draws": (r"\b(\w+) workload draws\b", lambda v, p: v.get(f"{p}_fusion_gain")),
    "seed": (r"\bseed (\d+)", lambda v, p: v.get(f"{p}_fusion_gain")),
}


def _unsaid(e: dict, chapter: int, values: dict) -> list[str]:
    """The conditions an entry's text names that its chapter's rows were not taken at."""
    out = []
    for what, (pattern, figure) in _CONDITIONS.items():
        for m in re.finditer(pattern, e["text"]):
            named = next(g for g in m.groups() if g)
            named = float(_COUNTS.get(named, named))
            v = figure(values, f"p{chapter:02d}")
            rows = None if v is None else {"draws": v.n, "seed": named if v.varied and "one workload draw" in v.varied
                                           else None}.get(what, v.value)
            if rows != named:
                out.append(what)
    return out


def test_a_deciding_entry_graded_at_other_conditions_than_it_names_says_which():
    """Each rate, arrival count, number of draws or seed a chapter's deciding entry names either
    is the one its chapter's rows were taken at, or the entry carries `graded_at` saying which."""
    values = F.values()
    assert _unsaid({"text": "(rate 40, 400 requests, mixed seed 0)"}, 9, values) == ["rate", "seed"]
    assert _unsaid({"text": "Over eight workload draws at 80/s"}, 10, values) == ["rate", "draws"]
    for chapter in P.DECIDING:
        for e in P.deciding(chapter):
            unsaid = _unsaid(e, chapter, values)
            assert not unsaid or e.get("graded_at"), (e["id"], unsaid)


def test_a_chapter_says_when_an_entry_was_added_after_related_runs(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda m: shown.append(m.data))
    added = {"id": "Z-2", "date": "2026-12-06", "title": "t", "text": "x", "measured": "1", "verdict": "held",
             "circumstance": "Added 2026-12-06 after a sweep run alone (notes: 79.8%), and before any engine run."}
    P.show([added, {**added, "circumstance": None}])
    first, second = shown[0].splitlines()[0::2]
    assert first.startswith("- *Written 2026-12-06, after a sweep run alone.*")
    assert second.startswith("- *Written 2026-12-06.*")


def test_the_appendix_names_an_untitled_claim_by_its_label_else_its_opening(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda m: shown.append(m.data))
    untitled = {"id": "Z-3", "date": "2026-12-06", "chapter": 10, "title": "", "measured": "1", "verdict": "held",
                "text": "Kernels per layer in a graphed 32-row decode step: between 9 and 13."}
    P.appendix([untitled | {"label": "Graphed decode kernels per layer"}, untitled | {"id": "Z-4"}])
    claims = {line.split("|")[1].strip(): line.split("|")[3].strip() for line in shown[0].splitlines()
              if line.startswith("| Z-")}
    assert claims == {"Z-3": "Graphed decode kernels per layer", "Z-4": "Kernels per layer in a graphed …"}


def test_every_committed_entry_has_a_title_or_a_short_capitalized_label():
    for e in P.load():
        name = e.get("title") or e.get("label") or ""
        assert e.get("title") or len(name.split()) <= 5, e["id"]
        assert name[:1].isupper(), e["id"]
