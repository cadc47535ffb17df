"""The appendix pages' library code (fusedlib.bench.*_page, chapters' tables, the format
helpers) on small hand-made rows."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from fusedlib.bench import (analysis as bd, arrivals_page, campaign, chapters, closed_page, gates_page, paired_page,
                            sensitivity_page)
from fusedlib.bench.spec import RunSpec


def test_format_helpers_and_their_refusals():
    assert (bd.ms(0.01234), bd.sec(2.5), bd.pct(0.253), bd.pct(0.253, False), bd.times(21.74)) == \
        ("12.3 ms", "2.50 s", "+25.3%", "25.3%", "21.7×")
    for f in (bd.ms, bd.sec, bd.pct):
        with pytest.raises(ValueError):
            f(float("nan"))


def closed_rows():
    rows = []
    for e, base in (("chunked", 10.0), ("fused", 9.0)):
        for w, b in (("mixed", 8), ("p256", 8)):
            for i, x in enumerate((base, base * 1.02, base * 1.2)):
                rows.append({"engine": e, "workload": w, "batch_size": b, "stat": "run", "repeat": i, "wall_s": x,
                             "output_throughput": 1.0, "n_steps": 10, "n_mixed_steps": 4, "git_commit": "c"})
            rows.append({"engine": e, "workload": w, "batch_size": b, "stat": "median", "repeat": None,
                         "wall_s": base * 1.02, "output_throughput": 1.0, "n_steps": 10, "n_mixed_steps": 4,
                         "git_commit": "c"})
    return pd.DataFrame(rows).assign(experiment="closed", profile="full", attention="triton", gpu="NVIDIA H200")


def test_closed_table_marks_a_change_inside_the_spread_unresolved(monkeypatch):
    monkeypatch.setattr(bd, "campaign_of", {"c": 1}.get)
    df = closed_rows()
    summ, comp = bd.closed_summary(df), bd.closed_comparison(df)
    t = closed_page.table(summ, comp)
    assert list(t["fused vs chunked"]) == ["-10.0%", "-10.0%"]
    assert set(t["resolved?"]) == {"no: within the spread"}  # 1.0 s apart, runs spread over 2.0 s
    assert t["chunked (s): median (min–max)"].iloc[0] == "10.2 (10.0–12.0)"
    closed_page.figure(summ, df[df["stat"] == "run"])
    label = closed_page.older_label(df)
    assert label.startswith("Configuration: triton attention, eager (no CUDA graphs), unfused small ops, no overlap")
    assert "in 1 earlier campaign (campaign 1: mixed batch 8, p256 batch 8)" in label
    assert "None of the 2 differences" in closed_page.older_text(summ, comp)


def test_gates_detail_skips_empty_fields_and_the_note_counts_every_run():
    spec = pd.DataFrame([{"gate": "fused_vs_chunked", "attention": "triton", "requests": 12, "flip_locations": 2.0,
                          "atol": None}])
    assert gates_page.with_detail(spec)["detail"].iloc[0] == "requests = 12, flip locations = 2"
    tf = pd.DataFrame([{"gate": "transformers", "attention": "torch", "dtype": "float16", "requests": 6,
                        "fused_identical": 4, "chunked_identical": 5}] * 2)
    note = gates_page.transformers_note(tf, spec, tf.iloc[:1])
    assert "(2 times" in note and "Every time, 4 of 6" in note and "2 tolerated tie flips with triton" in note


def sens_rows(slow_decode=0.016):
    rows = []
    for seed, (f, c) in enumerate(((12.0, 10.0), (11.0, 10.0), (13.0, 10.0))):
        for e, s in (("fused", f), ("chunked", c)):
            rows.append({"engine": e, "seed": seed, "long_share": None, "rate": 40.0, "n_requests": 400,
                         "max_batch": 32, "chunk_tokens": 512, "served_rate": s, "n_long_prompts": 5,
                         "median_decode_step_s": slow_decode if (seed, e) == (2, "chunked") else 0.016,
                         "median_mixed_step_s": 0.03, "timestamp": "T", "git_commit": "c"})
    return pd.DataFrame(rows)


def test_sensitivity_names_and_rings_the_slowed_run():
    wide = bd.sensitivity_wide(sens_rows(slow_decode=0.040))
    assert sensitivity_page.flagged(wide) == {("mixed", 2)}
    text = sensitivity_page.prose(wide)
    assert "mixed seed 2 run" in text and "ranges from +10.0% to +20.0%" in text
    t = sensitivity_page.table(wide)
    assert list(t["fused vs chunked"]) == ["+20.0%", "+10.0%", "+30.0%"] and t["draw"].iloc[2] == "mixed, seed 2"
    sensitivity_page.figure(wide, 400, 40.0)
    assert sensitivity_page.flagged(bd.sensitivity_wide(sens_rows())) == set()


def arrival_rows():
    rows = []
    for rate, (f, c) in {4.0: (3.9, 3.9), 40.0: (8.0, 5.0)}.items():
        for e, s in (("fused", f), ("chunked", c)):
            wait = 0.01 if rate == 4.0 else 20.0
            rows.append({"engine": e, "rate": rate, "pool_gib": None, "n_requests": 400, "seed": 0, "max_batch": 32,
                         "chunk_tokens": 512, "repeat": 0, "served_rate": s, "queue_wait_median_s": wait,
                         "e2e_median_s": wait + 5.0, "n_steps": 100, "n_mixed_steps": 40, "span_s": 50.0,
                         "n_prompt_tokens": 1000, "git_commit": "c", "timestamp": f"T{rate}{e}"})
    return pd.DataFrame(rows)


def test_arrivals_view_pairs_the_engines_and_tabulates_the_sweep():
    v = arrivals_page.view(arrival_rows(), "H200", pd.DataFrame())
    assert v.n_sweep == 400 and float(v.cap["rate"]) == 40.0
    t = arrivals_page.served_table(v)
    assert list(t["fused vs chunked"]) == ["+0.0%", "+60.0%"]
    text = arrivals_page.capacity_text(v)
    assert "both engines are past saturation" in text and "+60.0%" in text


def test_older_sweep_marks_ratios_whose_engines_ran_in_different_campaigns(monkeypatch):
    monkeypatch.setattr(bd, "campaign_of", {"c": 1, "d": 2}.get)
    rows = arrival_rows()
    rows.loc[(rows["rate"] == 4.0) & (rows["engine"] == "fused"), "git_commit"] = "d"
    v = arrivals_page.view(rows, "H200", pd.DataFrame())
    assert arrivals_page.crossed_rates(v) == [4.0]
    assert list(arrivals_page.served_table(v)["fused vs chunked"]) == ["+0.0% †", "+60.0%"]
    assert "At 4/s the two engines' runs came from different campaigns" in arrivals_page.campaigns_label(v)
    assert arrivals_page.crossed_rates(arrivals_page.view(arrival_rows(), "H200", pd.DataFrame())) == []


def test_capacity_table_shows_each_engines_range_and_the_ratio_interval():
    configs = pd.DataFrame([{"configuration": "eager", "engine": e, "median": m, "min": m - 1, "max": m + 1,
                             "runs": 3, "ratio": 1.5, "lo": 1.2, "hi": 1.8, "n": 3} for e, m in (("fused", 9.0),
                                                                                                 ("chunked", 6.0))])
    t = chapters.capacity_table(configs).iloc[0]
    assert t["fused (requests/s)"] == "9.00 (8.00–10.0)" and t["fused / chunked"] == "1.50× [1.20, 1.80]"


def test_gate_configurations_count_each_gates_run():
    import pandas as pd

    from fusedlib.bench import gates_page

    # Two runs at commit b with the same attention and ops (one with whole graphs), one at a.
    rows = pd.DataFrame([
        {"gate": "fused_vs_chunked", "passed": True, "attention": "triton-balanced", "fused_ops": True,
         "cuda_graphs": True, "graph_chunks": True, "overlap": True, "flip_locations": 2, "git_commit": "b",
         "timestamp": "t1"},
        {"gate": "mixed_step", "passed": False, "attention": "triton-balanced", "fused_ops": True,
         "cuda_graphs": False, "overlap": False, "git_commit": "b", "timestamp": "t1"},
        {"gate": "fused_vs_chunked", "passed": True, "attention": "triton-balanced", "fused_ops": True,
         "cuda_graphs": True, "whole_graphs": True, "overlap": True, "flip_locations": 1, "git_commit": "b",
         "timestamp": "t2"},
        {"gate": "tiny_pool", "passed": True, "attention": "triton-splitkv", "fused_ops": False,
         "cuda_graphs": True, "git_commit": "a", "timestamp": "t0"}])
    t = gates_page.configurations(rows)
    assert len(t) == 3
    first, whole = t.iloc[0], t.iloc[1]
    assert (first["gates passed"], first["overlap"], first["CUDA graphs"]) == ("1 of 2", "yes", "every forward, chunks piecewise")
    assert (first["tie flips tolerated"], whole["tie flips tolerated"]) == ("2", "1")
    assert whole["CUDA graphs"] == "every forward, one graph each" and whole["gates passed"] == "1 of 1"
    split = t.iloc[2]
    assert (split["CUDA graphs"], split["overlap"], split["tie flips tolerated"]) == ("decode forwards", "no", "")


# ---------------------------------------------------------------- the paired runs (campaign.Result fixtures)
def result(item, fields, order=None) -> campaign.Result:
    """A comparison whose every run (warm-ups too) has a row: its options, the H200, a timestamp in
    plan order (or `order`'s), and `fields(spec)`."""
    specs = item.specs() if order is None else order(item.specs())
    return campaign.Result(item, {s: {**s.resolved().options(), "gpu": "NVIDIA H200", "timestamp": f"T{i:03d}",
                                      **fields(s)} for i, s in enumerate(specs)})


P10 = campaign.PART10_OVERLAP


def arrivals_pairs(name="t: fused vs chunked", **b_options):
    a = RunSpec.build("arrivals", profile="full", engine="fused", rate=40.0, **P10)
    return campaign.Pairs(name, a, a.but(**({"engine": "chunked"} | b_options)), 3)


def test_ratio_texts_keep_a_small_resolved_change_visible():
    c = paired_page.Comparison(1.0016, 1.0012, 1.002, 5)
    assert paired_page.ratio_text(c) == "1.002× [1.001, 1.002]"
    assert paired_page.comparison_text(c) == "1.002× [1.001, 1.002], n = 5 pairs, resolved"
    assert paired_page.comparison_text(paired_page.Comparison(1.01, 0.97, 1.13, 1)).endswith("n = 1 pair, not resolved")


def test_configuration_and_sides_in_words():
    fc = arrivals_pairs()
    assert paired_page.side_names(fc) == ("fused", "chunked")
    assert paired_page.item_configuration(fc) == ("triton-balanced attention, every forward in CUDA graphs, fused "
                                                  "small ops, host work overlapped with the GPU")
    ov = campaign.Pairs("t: overlap", fc.a, fc.a.but(overlap=False), 2)
    assert paired_page.sides(ov) == "with overlap / without overlap"
    assert paired_page.item_configuration(ov) == ("fused engine, triton-balanced attention, every forward in CUDA "
                                                  "graphs, fused small ops")
    eager = RunSpec.build("arrivals", profile="full", engine="fused", rate=40.0, attention="triton", fused_ops=False)
    assert paired_page.configuration(eager) == ("triton attention, eager (no CUDA graphs), unfused small ops, no "
                                                "overlap of host and GPU")
    # a table's row: empty cells are options the row predates
    row = {"experiment": "arrivals", "profile": "full", "engine": "fused", "rate": 40.0, "attention": "triton",
           "cuda_graphs": float("nan"), "fused_ops": None, "schema_version": 2}
    assert paired_page.row_spec(row).cuda_graphs is False


def test_runs_frame_names_sides_pairs_and_warmups_and_gpu_refuses_two_gpus():
    item = arrivals_pairs()
    r = result(item, lambda s: {"served_rate": 30.0})
    f = paired_page.runs_frame(r)
    assert list(f["side"]) == ["A", "B", "A", "B", "B", "A", "A", "B"]  # warm-ups, then A B B A A B
    assert list(f["pair"]) == [0, 0, 1, 1, 2, 2, 3, 3] and list(f["warmup"]) == [True, True] + [False] * 6
    del r.runs[item.pair_specs()[2][1]]  # the last pair's B never ran
    assert list(paired_page.runs_frame(r)["complete"]) == [False, False, True, True, True, True, False]
    assert paired_page.gpu(r) == "NVIDIA H200"
    r.runs[item.pair_specs()[0][0]]["gpu"] = "NVIDIA A10"
    with pytest.raises(ValueError, match="expected one GPU"):
        paired_page.gpu(r)


def closed_result(workload, batch, ratios):
    a = RunSpec.build("closed", profile="full", engine="fused", workload=workload, batch_size=batch, warmups=1,
                      repeats=1, **P10)
    item = campaign.Pairs(f"closed {workload} b{batch}: fused vs chunked", a, a.but(engine="chunked"), len(ratios))

    def fields(s):
        fused = s.engine == "fused"
        return {"output_throughput": 1000.0 * (ratios[s.repeat - 1] if fused and s.repeat else 1.0),
                "n_mixed_steps": 10, "n_steps": 100 if fused else 80,
                "median_mixed_step_s": (0.005 + 0.001 * s.repeat) if fused else 0.007}
    return result(item, fields)


def test_closed_paired_table_and_texts_say_which_ratios_exclude_one():
    sure, unsure = closed_result("mixed", 8, [1.20, 1.21, 1.19, 1.2, 1.22]), closed_result("p256", 8, [0.9, 1.1, 1.0])
    t = closed_page.paired_table([sure, unsure])
    assert list(t["batch"]) == ["mixed, batch 8", "p256, batch 8"] and list(t["resolved?"]) == ["yes", "no"]
    assert t["fused / chunked [95%]"].iloc[1].startswith("1.000× [0.900, ") and list(t["pairs"]) == ["5", "3"]
    assert list(t["mixed steps"]) == ["10.0%", "10.0%"] and t["chunked (tokens/s)"].iloc[0] == "1,000"
    texts = closed_page.paired_texts([sure, unsure])
    assert texts["closed_verdict"] == ("1 of the 2 ratios excludes 1 (mixed, batch 8); on the other batch these runs "
                                       "cannot tell the engines apart")
    assert texts["closed_pairs"] == "3 to 5" and texts["closed_range"] == "1.000× to 1.200×"
    assert texts["closed_widest"].startswith("p256, batch 8") and texts["closed_mixed_share"] == "10.0% to 10.0%"
    assert (texts["closed_mixed_fused"], texts["closed_mixed_chunked"]) == ("6.00 to 10.00 ms", "7.00 to 7.00 ms")
    assert closed_page.paired_texts([unsure])["closed_verdict"].startswith("None of the 1 ratios excludes 1")
    closed_page.paired_figure([sure, unsure])


def seeds_result(served):
    a = RunSpec.build("sensitivity", profile="full", engine="fused", rate=80.0, **P10)
    item = campaign.Sweep("t seeds", a, a.but(engine="chunked"), "seed", tuple(range(len(served))), pooled=True)
    return result(item, lambda s: {"served_rate": served[s.seed][s.engine == "chunked"], "n_long_prompts": 90})


def test_seeds_pool_per_draw_ratios_and_check_the_runs_are_past_saturation():
    r = seeds_result([(44.0, 40.0), (36.0, 40.0), (40.0, 40.0), (42.0, 40.0)])
    f = sensitivity_page.seeds_frame(r)
    assert list(f["ratio"].round(2)) == [1.1, 0.9, 1.0, 1.05] and list(f["first"]) == ["fused", "chunked"] * 2
    texts = sensitivity_page.seeds_texts(r)
    assert texts["sens_range"] == "0.900× to 1.100×" and texts["sens_n"] == "4" and texts["sens_rate"] == "80"
    assert texts["sens_saturated"].startswith("every run is past saturation")
    assert texts["sens_verdict"].startswith("its interval includes 1")
    assert sensitivity_page.seeds_table(f)["fused / chunked"].iloc[0] == "1.100×"
    sensitivity_page.seeds_figure(r)
    # served faster than the draws' requests arrive (~70/s and up): not a capacity
    fast = sensitivity_page.seeds_texts(seeds_result([(100.0, 90.0)] * 3))
    assert fast["sens_saturated"].startswith("not every run") and fast["sens_verdict"].startswith("its interval excludes")


def arrivals_result(item, waits: dict, served=lambda s: 34.0):
    """Each run's median queue wait by (engine or overlap side, pair); service takes 1 s."""
    def fields(s):
        wait = waits[(s.engine, s.overlap)][s.repeat - 1] if s.repeat else 0.0
        return {"served_rate": served(s), "queue_wait_median_s": wait, "e2e_median_s": wait + 1.0}
    return result(item, fields)


def test_a_run_keeps_up_when_its_median_request_barely_waits():
    item = arrivals_pairs()
    r = arrivals_result(item, {("fused", True): [0.05, 0.09, 0.5], ("chunked", True): [0.0, 0.2, 3.0]})
    t = arrivals_page.run_table(r)
    measured = t[~t["warmup"]].sort_values(["engine", "pair"])
    assert list(measured["keeps_up"]) == [True, False, False, True, True, False]  # chunked, then fused
    assert t["arrived_rate"].iloc[0] == pytest.approx(bd.arrived_rate(400, 40.0, 0))


@pytest.mark.parametrize("waits, says", [
    ({("fused", True): [0.0] * 3, ("chunked", True): [0.0] * 3}, "the arrivals held both"),
    ({("fused", True): [0.0] * 3, ("chunked", True): [2.0] * 3}, "a lower bound on the ratio of their capacities"),
    ({("fused", True): [2.0] * 3, ("chunked", True): [0.0] * 3}, "an upper bound on the ratio of their capacities"),
    ({("fused", True): [2.0] * 3, ("chunked", True): [2.0] * 3}, "both served at capacity"),
])
def test_reading_says_what_the_served_rate_ratio_measures(waits, says):
    r = arrivals_result(arrivals_pairs(), waits)
    assert says in arrivals_page.reading(r)
    assert arrivals_page.reading(r).startswith("The fused engine kept up with the arrivals in ")


def test_pairs_table_counts_the_runs_that_kept_up():
    item = arrivals_pairs("t: overlap", engine="fused", overlap=False)
    r = arrivals_result(item, {("fused", True): [0.0, 0.0, 0.5], ("fused", False): [2.0] * 3},
                        served=lambda s: 34.0 if s.overlap else 32.0)
    (row,) = arrivals_page.pairs_table([r]).to_dict("records")
    assert row["A / B"] == "with overlap / without overlap" and row["kept up (A, B)"] == "2, 0 of 3"
    assert row["A, B (req/s)"] == "34, 32" and row["A / B [95%]"] == "1.062× [1.062, 1.062]"
    assert row["resolved?"] == "yes"
    assert "the engine with overlap at most at its own" in arrivals_page.reading(r)


def sweep_result(rates=(52.0, 44.0, 36.0, 28.0)):
    a = RunSpec.build("arrivals", profile="full", engine="fused", rate=rates[0], **P10)
    item = campaign.Sweep("t sweep", a, a.but(engine="chunked"), "rate", rates)
    served = {52.0: (37.0, 36.0), 44.0: (36.0, 35.0), 36.0: (31.0, 31.0), 28.0: (24.0, 24.0)}
    wall = {52.0: 0.008, 44.0: 0.007, 36.0: 0.006, 28.0: 0.005}

    def fields(s):
        fused = s.engine == "fused"
        return {"served_rate": served[s.rate][not fused] + (5.0 if s.warmup else 0.0),
                "queue_wait_median_s": 1.0 if s.rate > 40 else 0.001, "e2e_median_s": 1.6 if s.rate > 40 else 0.6,
                "median_mixed_step_s": wall[s.rate] if fused else 0.007, "median_decode_step_s": 0.002,
                "median_mixed_step_gpu_s": wall[s.rate] - 0.0002 if fused else 0.0072 - 0.0001 * s.rate / 52,
                "gpu_sm_clock_mhz_min": 1980.0}
    return result(item, fields)


def test_knees_find_where_each_engine_stops_keeping_up():
    runs = arrivals_page.run_table(sweep_result())
    k = arrivals_page.knees(runs)
    assert k.loc["fused", "kept_up_to"] == 36.0 and k.loc["fused", "n_past"] == 2
    assert (k.loc["fused", "past_min"], k.loc["fused", "past_median"]) == (36.0, 36.5)
    assert k.loc["chunked", "past_max"] == 36.0
    # a run that fails below a rate that keeps up: the knee is below the first failure
    noisy = runs.copy()
    noisy.loc[(noisy["engine"] == "chunked") & (noisy["rate"] == 28.0), "keeps_up"] = False
    assert np.isnan(arrivals_page.knees(noisy).loc["chunked", "kept_up_to"])
    t = arrivals_page.sweep_table(runs)
    assert list(t["offered"]) == ["28", "36", "44", "52"]
    assert list(t["kept up"]) == ["chunked, fused"] * 2 + ["neither"] * 2
    assert t["fused / chunked"].iloc[3] == f"{37 / 36:.3f}×"
    arrivals_page.sweep_figure(runs), arrivals_page.speed_figure(runs)


def test_sweep_texts_name_the_knees_the_warmups_and_whether_slow_steps_are_the_gpus():
    sweep = sweep_result()
    t = arrivals_page.sweep_texts(sweep, [], seeds_result([(44.0, 40.0), (36.0, 40.0), (40.0, 40.0)]))
    assert t["arr_knee_fused"] == "36/s offered" and t["arr_sweep_rates"] == "52 down to 28"
    assert t["arr_sat_chunked"] == "35 to 36 requests/s (median 35.5) at the 2 rates above"
    assert t["arr_warm"] == "at 52/s, fused 42.0 and chunked 41.0 requests/s"  # in the order they ran
    assert t["arr_seeds"].startswith("over 3 draws offered at 80/s, ")
    assert t["arr_mixed_fused"] == "5.00 to 8.00 ms (GPU time 4.80 to 7.80 ms), slowest in its 52/s run"
    assert "slow on the GPU, not on the host" in t["arr_speed_reading"] and t["arr_clock"] == "1980 MHz"
    for s, row in sweep.runs.items():  # the GPU time no longer follows the wall time
        if s.engine == "fused":
            row["median_mixed_step_gpu_s"] = 0.012 - row["median_mixed_step_s"]
    assert "does not follow it" in arrivals_page.sweep_texts(sweep, [])["arr_speed_reading"]


# ---------------------------------------------------------------- the pages themselves
APPENDICES = ["closed.md", "arrivals.md", "sensitivity.md"]


def prose_of(page: str) -> str:
    """A page's own Markdown, code cells left out."""
    import re
    text = (bd.ROOT / "book" / page).read_text()
    return re.sub(r"```\{code-cell\}.*?\n```\n", "", text, flags=re.S)


@pytest.mark.parametrize("page", APPENDICES)
def test_appendix_prose_speaks_of_the_engine_not_the_process(page):
    import re
    assert not re.findall(r"\b(sessions?|commits?|campaign phases?|git)\b", prose_of(page), re.I)


def test_appendix_pages_glue_every_key_from_the_committed_rows():
    import re
    data = bd.ROOT / "data"
    results = {phase: paired_page.results(phase, data)
               for phase in ("closed", "part10", "small_pool", "knees", "sensitivity", "closed_whole", "seeds_whole")}
    (sweep,), (seeds,) = results["knees"], results["sensitivity"]
    arrivals = arrivals_page.sweep_texts(sweep, results["part10"] + results["small_pool"], seeds)
    # the section's opening names the first comparison's runs (400 arrivals), not the small pool's (200)
    assert arrivals["arr_requests"] == "400" and arrivals["arr_engine_pool_size"].startswith("0.5 GiB")
    (seeds_whole,) = results["seeds_whole"]
    texts = {"closed.md": closed_page.paired_texts(results["closed"])
             | closed_page.paired_texts(results["closed_whole"], "closedw"),
             "arrivals.md": arrivals,
             "sensitivity.md": sensitivity_page.seeds_texts(seeds) | sensitivity_page.seeds_texts(seeds_whole, "sensw")}
    for page, computed in texts.items():
        used = set(re.findall(r"\{glue:text\}`([^`]+)`", prose_of(page)))
        assert used and used <= set(computed), (page, used - set(computed))


def test_peer_open_runs_list_each_rate_with_its_warmups(tmp_path):
    from fusedlib.bench import paired_page, rows

    rows.append_rows(tmp_path / "paired/peer_arrivals", [
        {"rate": r, "n_requests": 100, "served_rate": s, "queue_wait_median_s": q, "itl_median_s": 0.1,
         "ttft_median_s": 0.3, "e2e_median_s": 18.0, "warmup_wall_s": [30.2, 22.6]}
        for r, s, q in ((1.0, 0.7, 0.06), (2.0, 1.2, 0.08))])
    df = paired_page.peer_open_runs(tmp_path)
    assert df["rate"].tolist() == [2.0, 1.0] and df["warm-ups (s)"].iloc[0] == "30, 23"
    text = paired_page.peer_open_text(df)
    assert "0.08 s at 2/s, 0.06 s at 1/s" in text and "100 ms, 100 ms" in text
    assert paired_page.peer_open_runs(tmp_path / "none").empty


def test_every_code_reference_in_the_book_names_something_that_exists():
    import importlib
    import re

    missing = []
    for page in sorted((bd.ROOT / "book").glob("*.md")):
        for ref in set(re.findall(r"`(fusedlib(?:\.[A-Za-z_]\w*)+)`", page.read_text())):
            parts = ref.split(".")
            for i in range(len(parts), 0, -1):  # the longest importable module, then attributes
                try:
                    obj, rest = importlib.import_module(".".join(parts[:i])), parts[i:]
                    break
                except ImportError:
                    continue
            try:
                for name in rest:
                    obj = getattr(obj, name)
            except AttributeError:
                missing.append(f"{page.name}: {ref}")
    assert not missing, missing
