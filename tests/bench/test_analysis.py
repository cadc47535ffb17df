"""The book's shared row helpers (book/bookdata.py) on small hand-made tables."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from fusedlib.bench import rows as results

from fusedlib.bench import analysis as bookdata


def _run(engine, served, repeat, timestamp, commit="c3", rate=40.0):
    return {"engine": engine, "rate": rate, "pool_gib": None, "n_requests": 400, "seed": 0, "max_batch": 32,
            "chunk_tokens": 512, "repeat": repeat, "served_rate": served, "queue_wait_median_s": 10.0 * served,
            "e2e_median_s": 12.0 * served, "git_commit": commit, "timestamp": timestamp}


def test_run_medians_collapse_repeats_to_medians_with_their_spread():
    runs = pd.DataFrame([_run("fused", 9.0, 0, "T1", "old"), _run("chunked", 5.0, 0, "T2"),
                         _run("fused", 7.0, 1, "T3"), _run("chunked", 6.0, 1, "T4"),
                         _run("fused", 7.5, 2, "T5"), _run("chunked", 4.0, 2, "T6"),
                         _run("fused", 6.0, None, "T7", rate=10.0)])
    m = bookdata.run_medians(runs).set_index(["engine", "rate"])
    assert len(m) == 3 and "repeat" not in m
    fused = m.loc[("fused", 40.0)]
    assert (fused["served_rate"], fused["runs"], fused["served_min"], fused["served_max"]) == (7.5, 3, 7.0, 9.0)
    assert fused["git_commit"] == "c3"  # other columns from the newest run
    assert m.loc[("fused", 10.0), "runs"] == 1
    # paired() takes the runs themselves and keeps their count and spread
    pair = bookdata.paired(runs).set_index("rate").loc[40.0]
    assert (pair["runs_fused"], pair["served_min_chunked"], pair["served_max_chunked"]) == (3, 4.0, 6.0)
    assert abs(pair["gain"] - (7.5 / 5.0 - 1)) < 1e-12


def test_campaigns_split_where_no_row_was_written_for_a_while(tmp_path, monkeypatch):
    rows = [_run("fused", 8.0, 0, "2026-11-30T00:00:00+00:00", "a"),
            _run("chunked", 5.0, 0, "2026-11-30T00:20:00+00:00", "a+dirty"),
            _run("fused", 8.0, 1, "2026-11-30T02:00:00+00:00", "b")]
    results.append_rows(str(tmp_path / "arrivals" / "runs"), rows[:2])
    results.append_rows(str(tmp_path / "closed" / "runs"), rows[2:])
    monkeypatch.setattr(bookdata, "DATA", tmp_path)
    c = bookdata.campaigns()
    assert list(c["campaign"]) == [1, 2]
    assert list(c["commits"]) == [["a", "a+dirty"], ["b"]]
    assert list(c["rows"]) == [2, 1]
    assert bookdata.campaign_of("b") == 2 and bookdata.campaign_of("zzz") is None


def test_arrived_rate_is_the_draws_own_rate():
    from fusedlib.bench import workloads
    specs = workloads.mixed(40, seed=2, lengths=(4,), budget=(4, 4), vocab_size=8)
    times = [s.arrival for s in workloads.poisson_arrivals(specs, rate=5.0, seed=2)]
    assert bookdata.arrived_rate(40, 5.0, 2) == pytest.approx(39 / times[-1])
    assert bookdata.arrived_rate(40, 10.0, 2) == pytest.approx(2 * bookdata.arrived_rate(40, 5.0, 2))


def test_capacity_by_configuration_splits_eager_and_graphed_runs_at_the_graphed_rate():
    eager = pd.DataFrame([_run("fused", 8.0, None, "t1"), _run("chunked", 5.0, None, "t2"),
                          _run("fused", 4.0, None, "t3", rate=4.0), _run("chunked", 4.0, None, "t4", rate=4.0)])
    graphed = pd.DataFrame([{**_run("fused", 11.0, None, "t5"), "experiment": "arrivals"},
                            {**_run("chunked", 10.0, None, "t6"), "experiment": "arrivals"},
                            {**_run("fused", 20.0, None, "t7"), "experiment": "arrivals", "graph_chunks": True},
                            {**_run("chunked", 16.0, None, "t8"), "experiment": "arrivals", "graph_chunks": True},
                            {**_run("fused", 1.0, None, "t9"), "experiment": "step_trace"}])
    got = bookdata.capacity_by_configuration(eager, graphed)
    assert [name for name, *_ in got] == ["eager", "decode graphs, split-KV", "every forward graphed, split-KV"]
    assert [len(rows) for _, rows, _ in got] == [2, 2, 2]  # the 4/s runs and the step-trace row left out
    assert [round(pair["gain"], 3) for *_, pair in got] == [0.6, 0.1, 0.25]
    assert bookdata.capacity_by_configuration(eager, graphed.iloc[0:0]) == []


def test_the_one_campaign_capacity_prediction_is_open_until_both_configurations_share_a_campaign(monkeypatch, tmp_path):
    eager = pd.DataFrame([_run("fused", 8.0, None, "2026-11-30T00:00:00+00:00", "a"),
                          _run("chunked", 5.0, None, "2026-11-30T00:01:00+00:00", "a")])
    graphed = pd.DataFrame([{**_run("fused", 20.0, None, "2026-11-30T00:02:00+00:00", "b"),
                             "experiment": "arrivals", "graph_chunks": True},
                            {**_run("chunked", 16.0, None, "2026-11-30T00:03:00+00:00", "b"),
                             "experiment": "arrivals", "graph_chunks": True}])
    campaign = {"a": 1, "b": 2}
    monkeypatch.setattr(bookdata, "campaign_of", lambda commit: campaign[commit])
    monkeypatch.setattr(bookdata, "DATA", tmp_path)  # no part 10 rows: set C is open
    part10 = [f"C{i}" for i in range(1, 7)]
    overlap = [f"D{i}" for i in range(1, 8)]  # no overlap rows in the paired campaign: set D is open
    # set P's gates and capacity pairs (open until arrivals with the second stream), set Q's loop
    # and set R's A/B (until their rows exist), and set AS's peer bracket and set F's runs past
    # the census (never made, always open), set AT's scorecard run
    never = ["P4"] + [f"Q{i}" for i in range(1, 4)] + [f"R{i}" for i in range(1, 4)] + ["S1"] \
        + [f"AT{i}" for i in range(1, 6)] + ["AU1", "AU2", "AU3", "AS6"] + [f"F{i}" for i in range(4, 8)]
    overlap += never
    assert bookdata.same_machine_capacity(eager, graphed) is None
    assert list(bookdata.open_predictions(eager, graphed)) == ["B11"] + part10 + overlap
    campaign["b"] = 1
    ep, gp, camp = bookdata.same_machine_capacity(eager, graphed)
    assert (ep["gain"], gp["gain"], camp) == (pytest.approx(0.6), pytest.approx(0.25), 1)
    assert list(bookdata.open_predictions(eager, graphed)) == part10 + overlap
    (tmp_path / "roofline").mkdir()
    (tmp_path / "roofline" / "census.jsonl").write_text("{}\n")
    assert list(bookdata.open_predictions(eager, graphed)) == overlap
    (tmp_path / "paired").mkdir()
    (tmp_path / "paired" / "arrivals.jsonl").write_text('{"overlap": false}\n')
    assert list(bookdata.open_predictions(eager, graphed)) == overlap  # rows, but none with overlap
    (tmp_path / "paired" / "arrivals.jsonl").write_text('{"overlap": true}\n')
    (tmp_path / "paired" / "sensitivity.jsonl").write_text('{"overlap": true}\n')
    assert list(bookdata.open_predictions(eager, graphed)) == ["D5", "D6"] + never
    (tmp_path / "paired" / "closed.jsonl").write_text('{"overlap": true}\n')
    assert list(bookdata.open_predictions(eager, graphed)) == ["D6"] + never
    (tmp_path / "paired" / "peer.jsonl").write_text('{"workload": "mixed_fixed"}\n')
    assert list(bookdata.open_predictions(eager, graphed)) == never
    (tmp_path / "paired" / "arrivals.jsonl").write_text('{"overlap": true, "attention": "triton-parallel"}\n')
    assert list(bookdata.open_predictions(eager, graphed)) == never[1:]
    (tmp_path / "roofline" / "loop.jsonl").write_text('{"step": "decode"}\n')
    assert list(bookdata.open_predictions(eager, graphed)) == never[4:]
    (tmp_path / "roofline" / "prefill_ab.jsonl").write_text('{"step": "mixed"}\n')
    assert list(bookdata.open_predictions(eager, graphed)) == never[7:]
    (tmp_path / "roofline" / "prefill_serial_ab.jsonl").write_text('{"step": "mixed"}\n')
    assert list(bookdata.open_predictions(eager, graphed)) == never[8:]
    (tmp_path / "roofline" / "scorecard_census.jsonl").write_text('{"step": "mixed"}\n')
    assert list(bookdata.open_predictions(eager, graphed)) == never[13:]
    with open(tmp_path / "paired" / "sensitivity.jsonl", "a") as f:  # set AU's eight draws, not its pairs
        f.write('{"overlap": true, "comparison": "part 10 as the series ends seeds: fused vs chunked"}\n')
    assert list(bookdata.open_predictions(eager, graphed)) == ["AU1", "AU3"] + never[16:]
    with open(tmp_path / "paired" / "arrivals.jsonl", "a") as f:
        f.write('{"overlap": true, "comparison": "part 10 as the series ends: fused vs chunked"}\n')
    assert list(bookdata.open_predictions(eager, graphed)) == never[16:]
