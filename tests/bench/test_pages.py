"""The appendix pages' library code (fusedlib.bench.*_page, chapters' tables, the format
helpers) on small hand-made rows."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from fusedlib.bench import analysis as bd, arrivals_page, chapters, closed_page, gates_page, sensitivity_page


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
    return pd.DataFrame(rows)


def test_closed_table_marks_a_change_inside_the_spread_unresolved():
    df = closed_rows()
    summ, comp = bd.closed_summary(df), bd.closed_comparison(df)
    t = closed_page.table(summ, comp)
    assert list(t["fused vs chunked"]) == ["-10.0%", "-10.0%"]
    assert set(t["resolved?"]) == {"no: within the spread"}  # 1.0 s apart, runs spread over 2.0 s
    assert t["chunked (s): median (min–max)"].iloc[0] == "10.2 (10.0–12.0)"
    closed_page.figure(summ, df[df["stat"] == "run"])
    assert "one-GPU machine" in closed_page.where_run(df)


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
    assert "past saturation" in arrivals_page.prose(v)


def test_capacity_table_shows_each_engines_range_and_the_ratio_interval():
    configs = pd.DataFrame([{"configuration": "eager", "engine": e, "median": m, "min": m - 1, "max": m + 1,
                             "runs": 3, "ratio": 1.5, "lo": 1.2, "hi": 1.8, "n": 3} for e, m in (("fused", 9.0),
                                                                                                 ("chunked", 6.0))])
    t = chapters.capacity_table(configs).iloc[0]
    assert t["fused (requests/s)"] == "9.00 (8.00–10.0)" and t["fused / chunked"] == "1.50× [1.20, 1.80]"


def test_gate_configurations_count_each_gates_run():
    import pandas as pd

    from fusedlib.bench import gates_page

    rows = pd.DataFrame([
        {"gate": "fused_vs_chunked", "passed": True, "attention": "triton-balanced", "fused_ops": True,
         "cuda_graphs": True, "overlap": True, "flip_locations": 2, "git_commit": "b"},
        {"gate": "mixed_step", "passed": False, "attention": "triton-balanced", "fused_ops": True,
         "cuda_graphs": False, "overlap": False, "git_commit": "b"},
        {"gate": "tiny_pool", "passed": True, "attention": "triton-splitkv", "fused_ops": False,
         "cuda_graphs": True, "git_commit": "a"}])
    t = gates_page.configurations(rows).set_index("attention")
    assert t.loc["triton-balanced", "gates passed"] == "1 of 2"
    assert (t.loc["triton-balanced", "overlap"], t.loc["triton-balanced", "CUDA graphs"]) == ("yes", "every forward")
    assert t.loc["triton-balanced", "tie flips tolerated"] == "2"
    assert (t.loc["triton-splitkv", "overlap"], t.loc["triton-splitkv", "tie flips tolerated"]) == ("no", "")
