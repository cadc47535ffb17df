"""The predictions file: every quote a grade reads is in its prediction's text, and the
renderings show each prediction as written."""
from __future__ import annotations

import pytest

from fusedlib.bench import predictions as pr

SMALL = """
sets:
  - id: A
    title: "Before the runs"
    written: "Written 2026-11-30, before the runs."
    premise: "What we knew."
    predictions:
      - number: 1
        date: "2026-11-30"
        chapter: 7
        title: "Decode step"
        text: ": between 10 and 18 ms, within 3% of each other."
        quotes: ["between 10 and 18 ms", "within 3%"]
      - number: 2
        date: "2026-12-01"
        chapter: 9
        circumstance: "Added after the first runs."
        title: "Capacity"
        text: "(400 requests): at least 2 times."
        quotes: ["at least 2 times"]
notes:
  A2: "A later note."
"""


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(SMALL)
    return path


def test_the_books_predictions_load_with_every_quote_in_its_text():
    sets = pr.load()
    keys = [p.key for s in sets for p in s.predictions]
    assert keys == [f"A{i}" for i in range(1, 8)] + [f"B{i}" for i in range(1, 12)] + [f"C{i}" for i in range(1, 7)] \
        + [f"D{i}" for i in range(1, 8)] + [f"E{i}" for i in range(1, 6)] \
        + [f"F{i}" for i in range(1, 8)] + [f"G{i}" for i in range(1, 6)] + [f"H{i}" for i in range(1, 5)] \
        + [f"I{i}" for i in range(1, 5)] + [f"J{i}" for i in range(1, 5)] + [f"K{i}" for i in range(1, 5)] \
        + [f"L{i}" for i in range(1, 5)] + [f"M{i}" for i in range(1, 4)] + [f"N{i}" for i in range(1, 5)] \
        + [f"O{i}" for i in range(1, 4)] + [f"P{i}" for i in range(1, 5)] + [f"Q{i}" for i in range(1, 4)] \
            + [f"R{i}" for i in range(1, 4)] + ["S1", "T1", "U1", "U2", "V1", "V2", "V3", "W1", "W2", "W3", "X1", "X2", "X3", "X4", "Y1", "Y2", "Y3",
                                                   "Z1", "Z2", "Z3", "Z4", "Z5", "AA1", "AA2",
                                                   "AB1", "AB2", "AB3", "AB4", "AC1", "AC2", "AC3", "AC4",
                                                   "AD1", "AD2", "AD3", "AD4", "AE1", "AE2", "AE3", "AE4",
                                                   "AF1", "AF2", "AF3", "AF4", "AG1", "AG2", "AG3",
                                                   "AH1", "AH2", "AH3", "AH4", "AI1", "AI2", "AI3", "AI4",
                                                   "AJ1", "AJ2", "AJ3", "AJ4", "AK1", "AK2", "AK3",
                                                   "AL1", "AL2", "AL3", "AM1", "AM2", "AM3",
                                                   "AN1", "AN2", "AO1", "AO2", "AO3",
                                                   "AP1", "AP2", "AQ1", "AQ2", "AR1", "AR2",
                                                   "AS1", "AS2", "AS3", "AS4", "AS5", "AS6",
                                                   "AT1", "AT2", "AT3", "AT4", "AT5", "AU1", "AU2", "AU3"]
    for s in sets:
        for p in s.predictions:
            assert p.date == {"D": "2026-12-01", "E": "2026-12-01", "F": "2026-12-02", "G": "2026-12-02",
                              "H": "2026-12-02", "I": "2026-12-02", "J": "2026-12-02", "K": "2026-12-02",
                              "L": "2026-12-02", "M": "2026-12-02", "N": "2026-12-02", "O": "2026-12-02",
                              "P": "2026-12-02", "Q": "2026-12-03", "R": "2026-12-03", "S": "2026-12-03",
                              "T": "2026-12-03", "U": "2026-12-03", "V": "2026-12-03",
                              "W": "2026-12-03", "X": "2026-12-03", "Y": "2026-12-03", "Z": "2026-12-03", "AA": "2026-12-03",
                              "AB": "2026-12-03", "AC": "2026-12-03", "AD": "2026-12-04", "AE": "2026-12-04", "AF": "2026-12-04", "AG": "2026-12-04",
                              "AH": "2026-12-04", "AI": "2026-12-04",
                              "AJ": "2026-12-04", "AK": "2026-12-04",
                              "AL": "2026-12-04", "AM": "2026-12-04",
                              "AN": "2026-12-04", "AO": "2026-12-04",
                              "AP": "2026-12-04", "AQ": "2026-12-04", "AR": "2026-12-04",
                              "AS": "2026-12-04", "AT": "2026-12-04", "AU": "2026-12-04"}.get(s.id, "2026-11-30")
            assert p.chapter in (7, 8, 9, 10, "closed", "peer", "sensitivity")


def test_part_10_predictions_are_copied_verbatim_from_their_dated_file():
    """Set C is data/roofline/PREDICTION.md's list, line wraps joined; rendered without a title."""
    c = pr.load()[2]
    assert "written 2026-11-30, before any GPU run of the fused ops" in c.title
    assert c.predictions[0].as_written() == c.predictions[0].text
    assert c.predictions[1].text.startswith("Graphed 32-row decode step GPU time: between 2.0 and 2.8 ms")


def test_ranges_are_read_from_the_quotes(small):
    p = pr.by_key(small)["A1"]
    assert p.range(0) == [10.0, 18.0] and p.fractions(1) == [0.03]
    assert p.as_written() == "**Decode step**: between 10 and 18 ms, within 3% of each other."
    assert pr.by_key(small)["A2"].as_written() == "**Capacity** (400 requests): at least 2 times."


@pytest.mark.parametrize("edit,message", [
    (("within 3%\"]", "within 5%\"]"), "quote 'within 5%' is not in its text"),
    (("number: 2", "number: 1"), "A1 appears twice"),
    (("chapter: 9", "chapter: nine"), "no chapter number"),
    (("A2: ", "A9: "), "notes for unknown predictions"),
])
def test_a_malformed_file_is_refused_with_the_reason(small, edit, message):
    small.write_text(SMALL.replace(*edit))
    with pytest.raises(ValueError, match=message):
        pr.load(small)


def test_chapter_opening_shows_each_prediction_and_its_grade_or_points_to_open(small):
    preds = pr.by_key(small)
    text = pr.chapter_opening([preds["A1"]], {"A1": pr.Grade("12 ms and 12.1 ms", pr.HELD, "both inside")})
    assert "**A1** (written 2026-11-30). **Decode step**: between 10 and 18 ms" in text
    assert "*Graded HELD*: 12 ms and 12.1 ms; both inside." in text
    assert "{doc}`open`" in pr.chapter_opening([preds["A2"]], {"A2": None})
    with pytest.raises(ValueError, match="A2"):
        pr.chapter_opening([preds["A1"]], {"A2": None})


def test_record_keeps_circumstances_and_later_notes(small):
    text = pr.record(pr.load(small))
    assert text.index("Written 2026-11-30, before the runs.") < text.index("A1. **Decode step**")
    assert text.index("*Added after the first runs.*") < text.index("A2. **Capacity**") < text.index("*A later note.*")


def test_verdict_and_side():
    assert pr.verdict(True) == "HELD" and pr.verdict(False) == "MISSED"
    assert [pr.side(x, 1, 2) for x in (0.5, 1, 2.5)] == ["below", "inside", "above"]
