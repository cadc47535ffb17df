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


def test_live_entries_are_graded_against_their_figure(record):
    got = {e["id"]: (e["measured"], e["verdict"]) for e in P.graded(record, FIGS, card="NVIDIA H100 80GB HBM3")}
    on = {e["id"]: e["graded_on"] for e in P.graded(record, FIGS, card="NVIDIA H100 80GB HBM3")}
    assert on["X-1"] == "NVIDIA H100 80GB HBM3" and on["Y-1"] == "-"  # live: the rows' card; recorded: its own
    assert got["X-1"] == ("95 requests/s", "held")
    assert got["X-2"] == ("+5.0%", "missed")
    assert got["X-3"] == ("+5.0%", "not resolved")  # the interval straddles the bound 2
    assert got["X-4"] == ("7%", "held")  # one-sided, no interval
    assert got["X-5"] == (S.NO_ROWS, "no rows")
    assert got["Y-1"] == ("12.0 ms", "held")  # recorded verdict kept


def test_an_unknown_figure_is_an_error(record):
    with pytest.raises(KeyError):
        P.grade(record[0] | {"figure": "nonesuch"}, FIGS)


def test_a_later_file_does_not_repeat_an_id(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(yaml.safe_dump(RECORD[:2]))
    b.write_text(yaml.safe_dump({"predictions": RECORD[1:3]}))
    assert [e["id"] for e in P.load([a, b])] == ["X-1", "X-2", "X-3"]


def test_pick_keeps_the_order_asked_and_table_has_the_columns(record):
    picked = P.pick(["X-3", "X-1"], P.graded(record, FIGS))
    assert [e["id"] for e in picked] == ["X-3", "X-1"]
    assert list(P.table(picked).columns) == ["id", "date", "claim", "measured", "on", "verdict"]
    assert "id" not in P.table(picked, with_id=False).columns
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
            assert e["figure"] in known, e["id"]
            assert e.get("low") is not None or e.get("high") is not None, e["id"]
