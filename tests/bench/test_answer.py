"""The intro's answer: reference figures beside ours, with each machine's floor."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from fusedlib.bench import answer


def _trace_rows():
    rows = []
    # chunked: decode 10 ms, mixed 20 ms (two forwards of 11 and 9); fused: decode 10, mixed 12
    for e, mixed, fw in (("chunked", 0.020, [0.011, 0.009]), ("fused", 0.012, [0.012])):
        for i, (kind, d) in enumerate((("decode", 0.010), ("mixed", mixed), ("decode", 0.010), ("mixed", mixed))):
            rows.append({"engine": e, "record": "step", "step": i, "kind": kind, "n_decode": 32, "duration_s": d,
                         "forward_durations_s": fw if kind == "mixed" else [d], "timestamp": "t",
                         "attention": "triton", "cuda_graphs": False})
        rows.append({"engine": e, "record": "summary", "gap_max_s": 0.05 if e == "chunked" else 0.03,
                     "gap_median_s": 0.010 if e == "chunked" else 0.011, "copy_bandwidth_Bps": 4e12,
                     "weight_bytes": 3e9, "timestamp": "t", "attention": "triton", "cuda_graphs": False})
    return pd.DataFrame(rows)


def test_trace_figures_from_a_small_trace():
    t = answer.trace_figures(_trace_rows())
    assert t["decode_step_fused"] == pytest.approx(0.010) and t["mixed_step_chunked"] == pytest.approx(0.020)
    assert (t["chunk_forward"], t["decode_forward"]) == pytest.approx((0.011, 0.009))
    assert t["gap_median_change"] == pytest.approx(0.1)
    # fused saves 8 ms on each of two mixed steps out of 60 ms of chunked steps
    assert t["trace_saving_share"] == pytest.approx(0.016 / 0.060)
    assert t["step_max_chunked"] == pytest.approx(0.020)


def test_baseline_trace_leaves_out_graphed_and_split_kv_runs():
    rows = _trace_rows()
    other = rows.assign(cuda_graphs=True, timestamp="u", duration_s=rows["duration_s"] / 3)
    assert answer.trace_figures(answer.baseline_trace(pd.concat([rows, other])))["decode_step_fused"] \
        == pytest.approx(0.010)


def test_floor_and_its_bad_input():
    assert answer.floor_s(3.087e9, 600e9) == pytest.approx(5.145e-3)
    with pytest.raises(ValueError, match="positive"):
        answer.floor_s(3.087e9, 0)


def test_reference_file_values_appear_in_their_quotes():
    ref = answer.reference()
    assert ref.gpu == "NVIDIA A10" and ref.bandwidth_Bps == 600e9
    for f in ref.figures.itertuples():
        assert f"{abs(f.value):g}" in f.quote or f"{abs(f.value) * 100:g}" in f.quote, f.id


def test_reference_file_is_checked(tmp_path):
    path = tmp_path / "r.yaml"
    fig = {"id": "x", "what": "x", "value": 1, "unit": "parsecs", "where": "w", "quote": "1"}
    path.write_text(json.dumps({"machine": {"gpu": "g", "bandwidth_Bps": 1, "bandwidth_why": "w"}, "figures": [fig]}))
    with pytest.raises(ValueError, match="unknown units"):
        answer.reference(path)


def test_answer_table_puts_floor_multiples_on_step_times_only():
    ref = answer.Reference("A10", 600e9, "nominal", pd.DataFrame([
        {"id": "decode_step_fused", "what": "decode step", "value": 30.0, "unit": "ms", "where": "p1", "quote": ""},
        {"id": "decode_layout_rows", "what": "attention", "value": 0.3, "unit": "ms", "where": "p2", "quote": ""},
        {"id": "capacity_gain", "what": "gain", "value": 0.11, "unit": "fraction", "where": "p3", "quote": ""},
        {"id": "trace_saving_share", "what": "share", "value": 0.09, "unit": "fraction", "where": "p4", "quote": ""}]))
    table = answer.answer_table(ref, {"decode_step_fused": 20.0, "capacity_gain": 0.5}, a10_floor_ms=5.0,
                                h200_floor_ms=1.0).set_index("figure")
    assert table.loc["decode step", "A10 (reference)"] == "30.0 ms (6.0× floor)"
    assert table.loc["decode step", "H200 (ours)"] == "20.0 ms (20.0× floor)"
    assert table.loc["attention", "A10 (reference)"] == "0.300 ms"
    assert table.loc["attention", "H200 (ours)"] == "no counterpart in our rows"
    assert table.loc["gain", "H200 (ours)"] == "+50%" and table.loc["share", "A10 (reference)"] == "9%"


def _run(engine, served, rate=40.0, experiment=None, graph_chunks=None, ts="t"):
    return {"engine": engine, "rate": rate, "pool_gib": None, "n_requests": 400, "seed": 0, "max_batch": 32,
            "chunk_tokens": 512, "repeat": None, "served_rate": served, "queue_wait_median_s": 1.0,
            "e2e_median_s": 2.0, "git_commit": "c", "timestamp": ts, "experiment": experiment,
            "graph_chunks": graph_chunks}


def test_capacity_by_configuration_has_ratio_and_range_per_configuration():
    eager = pd.DataFrame([{**_run("fused", 8.0), "repeat": 0}, {**_run("fused", 9.0), "repeat": 1},
                          {**_run("chunked", 5.0), "repeat": 0}, {**_run("chunked", 5.0), "repeat": 1}])
    graphed = pd.DataFrame([_run("fused", 20.0, experiment="arrivals", graph_chunks=True),
                            _run("chunked", 16.0, experiment="arrivals", graph_chunks=True)])
    t = answer.capacity_by_configuration(eager, graphed).set_index(["configuration", "engine"])
    assert t.loc[("eager", "fused"), ["median", "min", "max", "runs"]].tolist() == [8.5, 8.0, 9.0, 2]
    assert t.loc[("eager", "fused"), "ratio"] == pytest.approx(1.7)
    assert t.loc[("every forward graphed, split-KV", "chunked"), "ratio"] == pytest.approx(1.25)
    fig = answer.capacity_figure(t.reset_index())
    assert len(fig.axes[0].patches) == 4 and fig.axes[0].get_ylabel() == "served rate (requests/s)"


def test_paired_capacity_and_its_table_from_abba_rows(tmp_path):
    from fusedlib.bench import rows

    new = [{"engine": e, "attention": "triton", "comparison": "part 7: fused vs chunked", "repeat": i, "warmup": i == 0,
            "served_rate": v, "n_requests": 200, "rate": 40.0, "git_commit": "abc", "boot_id": "0123456789",
            "timestamp": f"2026-12-01T00:0{i}:00+00:00"}
           for i, (f, c) in enumerate([(50.0, 1.0), (12.0, 10.0), (11.0, 10.0), (13.2, 11.0)])
           for e, v in (("fused", f), ("chunked", c))]
    rows.append_rows(tmp_path / "paired/arrivals", new)
    t = answer.paired_capacity(tmp_path)
    assert t["label"].tolist() == ["part 7: eager, per-row attention"]
    shown = answer.paired_table(t).iloc[0]
    assert shown["A over B [95% interval]"].startswith("+20% [") and shown["pairs"] == "3" and shown["order"] == "ABBA"
    texts = answer.paired_texts(t.set_index("comparison"))
    assert texts["gain"] == "+20%" and texts["gain_n"] == "3 ABBA pairs of 200 arrivals at 40/s"
    prov = answer.paired_provenance(tmp_path).iloc[0]
    assert (prov["pairs"], prov["warm-ups"], prov["machine (boot)"]) == ("3", "2", "01234567")
    assert len(answer.paired_capacity(tmp_path / "none")) == 0  # no paired rows: an empty table, not an error


def test_interval_reads_as_a_signed_change():
    assert answer.interval(1.46, 1.23, 1.55) == "+46% [+23%, +55%]"


def test_provenance_counts_a_sweeps_pairs_by_rate_and_a_closed_run_once(tmp_path):
    from fusedlib.bench import rows

    base = {"git_commit": "abc", "boot_id": "0123456789", "timestamp": "2026-12-01T00:00:00+00:00"}
    rows.append_rows(tmp_path / "paired/arrivals", [
        {**base, "engine": e, "attention": "triton-balanced", "comparison": "part 10 + overlap sweep: fused vs chunked",
         "repeat": 1, "warmup": False, "rate": r} for r in (80.0, 64.0, 52.0) for e in ("fused", "chunked")])
    rows.append_rows(tmp_path / "paired/closed", [
        {**base, "engine": "fused", "attention": "triton-balanced", "comparison": "closed mixed b8: fused vs chunked",
         "repeat": 1, "warmup": False, "stat": stat} for stat in ("warmup", "run", "median")])
    prov = answer.paired_provenance(tmp_path).set_index("comparison")
    sweep = prov.loc["part 10, the host one step ahead: 28 to 80/s"]
    assert (sweep["pairs"], sweep["order"]) == ("3", "alternating, one pair per rate")
    assert prov.loc["closed mixed b8: fused vs chunked", "pairs"] == "1"


def test_the_headline_is_the_400_arrival_set_and_names_the_other(tmp_path):
    from fusedlib.bench import rows

    def pairs(comparison, n_requests, fused):
        return [{"engine": e, "attention": "triton", "comparison": comparison, "repeat": i, "warmup": i == 0,
                 "served_rate": v, "n_requests": n_requests, "rate": 40.0, "git_commit": "abc", "boot_id": "0123456789",
                 "timestamp": f"2026-12-01T00:0{i}:00+00:00"}
                for i, f in enumerate(fused) for e, v in (("fused", f), ("chunked", 10.0))]

    rows.append_rows(tmp_path / "paired/arrivals", pairs("part 7: fused vs chunked", 200, [20.0, 15.0, 15.0, 15.0]))
    pc = answer.paired_capacity(tmp_path).set_index("comparison")
    assert answer.eager_headline(pc) == "part 7: fused vs chunked"
    assert answer.paired_texts(pc)["gain_other"] == ""  # one set: nothing to set beside it
    rows.append_rows(tmp_path / "paired/arrivals",
                     pairs("part 7, 400 arrivals: fused vs chunked", 400, [20.0, 12.0, 12.0, 12.0]))
    pc = answer.paired_capacity(tmp_path).set_index("comparison")
    texts = answer.paired_texts(pc)
    assert texts["gain"] == "+20%" and texts["gain_n"].endswith("of 400 arrivals at 40/s")
    assert texts["gain_other"].startswith("The same comparison over 200 arrivals") and "do not overlap" in texts["gain_other"]


def test_a_comparison_extended_on_a_second_lease_pools_its_pairs_and_shows_each_lease(tmp_path):
    from fusedlib.bench import rows

    def lease(boot, first_repeat, fused):
        return [{"engine": e, "attention": "triton", "comparison": "part 7, 400 arrivals: fused vs chunked",
                 "repeat": first_repeat + i, "warmup": first_repeat + i == 0, "served_rate": v, "n_requests": 400,
                 "rate": 40.0, "git_commit": "abc", "boot_id": boot, "timestamp": f"2026-12-01T0{first_repeat}:0{i}:00"}
                for i, f in enumerate(fused) for e, v in (("fused", f), ("chunked", 10.0))]

    rows.append_rows(tmp_path / "paired/arrivals", lease("aaaaaaaaaa", 0, [30.0, 12.0, 12.0, 12.0]))
    pc = answer.paired_capacity(tmp_path).set_index("comparison")
    assert answer.paired_texts(pc)["gain_leases"] == ""  # one lease: nothing to split
    rows.append_rows(tmp_path / "paired/arrivals", lease("bbbbbbbbbb", 4, [14.0, 14.0]))
    pc = answer.paired_capacity(tmp_path).set_index("comparison")
    row = pc.loc["part 7, 400 arrivals: fused vs chunked"]
    assert row["n"] == 5 and [c.n for c in row["by_lease"]] == [3, 2]  # the first lease's warm-up is no pair
    text = answer.paired_texts(pc)["gain_leases"]
    assert text.startswith("Its pairs ran on 2 machine leases (3 on the first gave +20% [+20%, +20%]; "
                           "2 on the second gave +40% [+40%, +40%])")
    provenance = answer.paired_provenance(tmp_path)
    assert provenance["machine (boot)"].tolist() == ["aaaaaaaa", "bbbbbbbb"]
