"""The one grader over data/predictions.yaml, on a small synthetic record."""
from __future__ import annotations

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
    assert got["Y-1"] == (P.NO_FIGURE, "not resolved")  # its recorded grade is an earlier card's, not these rows'


def test_several_figures_hold_only_together():
    e = {"id": "M-1", "figure": ["rate", "share"], "low": [70, None], "high": [110, 0.05]}
    assert P.grade(e, FIGS) == ("95 requests/s; 7%", "missed")
    assert P.grade(e | {"high": [110, 0.10]}, FIGS)[1] == "held"
    assert P.grade(e | {"figure": ["rate", "wide"], "low": [70, 2], "high": [110, None]}, FIGS)[1] == "not resolved"
    with pytest.raises(ValueError):
        P.grade(e | {"low": [70, None, 1]}, FIGS)


def test_an_entry_awaiting_its_rows_is_not_graded_on_older_ones():
    e = {"id": "W-1", "figure": "rate", "low": 70, "high": 80, "awaits": "rows with the new decode shape"}
    assert P.grade(e, FIGS) == ("awaits rows with the new decode shape", "not resolved")
    assert P.grade({k: v for k, v in e.items() if k != "awaits"}, FIGS) == ("95 requests/s", "missed")


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


def test_every_verdict_is_one_of_the_three_words_and_names_the_card_of_its_rows(tmp_path):
    from tests.bench import synthetic_rows

    for d in (None, synthetic_rows.write(tmp_path)):
        graded = P.graded(d=d)
        assert {e["verdict"] for e in graded} <= set(P.VERDICTS)
        assert {e["graded_on"] for e in graded if e.get("figure")} == {P.card(d)}, d
        assert {e["graded_on"] for e in graded if not e.get("figure")} <= {P.NO_FIGURE}
    table, others = P.earlier()
    assert "open" not in set(table["verdict"]) and "open" not in others


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
            assert e["measured"] == "; ".join(values[n].text for n in names), e["id"]


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
