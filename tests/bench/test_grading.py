"""fusedlib.bench.grading on small hand-made rows: each grade reads its range from the
prediction's quotes and fails when the rows fall outside it."""
from __future__ import annotations

import pandas as pd
import pytest

from fusedlib.bench import grading, steps
from fusedlib.bench.predictions import Prediction

from test_steps import trace  # tests/bench is on sys.path (pytest prepend import mode)


def pred(text, *quotes):
    return Prediction(key="X1", date="2026-11-30", chapter=7, title="t", text=text, quotes=quotes, circumstance="",
                      note="")


def table(chunked_decode, fused_decode, chunked_mixed=(0.030,), fused_mixed=(0.018,), extra=()):
    base = pd.concat([trace("chunked", decode=chunked_decode, mixed=chunked_mixed),
                      trace("fused", decode=fused_decode, mixed=fused_mixed), *extra])
    return steps.summary(steps.combined_traces(base, pd.DataFrame()))


A1 = pred("(32 rows): between 10 and 18 ms for both, within 3% of each other.", "32 rows", "between 10 and 18 ms",
          "within 3%")


def test_pure_decode_step_held_and_missed():
    assert grading.pure_decode_step(A1, table((0.016,), (0.0162,))).verdict == "HELD"
    assert grading.pure_decode_step(A1, table((0.016,), (0.017,))).verdict == "MISSED"  # 6% apart
    assert grading.pure_decode_step(A1, table((0.020,), (0.020,))).verdict == "MISSED"  # outside the range


def test_loaded_step_saving_reads_percentages_as_fractions():
    p = pred("between 35% and 50% cheaper", "between 35% and 50% cheaper")
    assert grading.loaded_step_saving(p, table((0.01,), (0.01,), (0.030,), (0.018,))).verdict == "HELD"  # 40%
    assert grading.loaded_step_saving(p, table((0.01,), (0.01,), (0.030,), (0.025,))).verdict == "MISSED"


def test_a_grade_without_rows_is_open_not_failed():
    p = pred("between 3 and 6 ms", "between 3 and 6 ms")
    assert grading.decode_in_range(p, table((0.01,), (0.01,)), "decode graphs, split-KV") is None
    assert grading.capacity_gain(pred("between 15% and 35% above", "x", "between 15% and 35% above"),
                                 pd.DataFrame()) is None


def test_splitkv_eager_compares_each_engine_with_its_own_per_row_step():
    sk = [trace(e, "triton-splitkv", decode=(d,)) for e, d in (("chunked", 0.0165), ("fused", 0.0190))]
    p = pred("within ±10%", "within ±10%")
    g = grading.splitkv_eager(p, table((0.016,), (0.016,), extra=sk))
    assert g.verdict == "MISSED" and "+18.8%" in g.measured  # the fused engine's step grew by more than 10%


def arrivals(fused, chunked, rate=40.0):
    rows = [{"engine": e, "rate": rate, "pool_gib": None, "n_requests": 400, "seed": 0, "repeat": i,
             "served_rate": s, "queue_wait_median_s": 50.0, "e2e_median_s": 60.0, "n_steps": 100,
             "n_mixed_steps": 40, "span_s": 10.0, "n_prompt_tokens": 1, "timestamp": f"T{i}{e}"}
            for e, runs in (("fused", fused), ("chunked", chunked)) for i, s in enumerate(runs)]
    return pd.DataFrame(rows)


def test_capacity_gain_is_the_ratio_of_medians_with_an_unpaired_interval():
    p = pred("(400 Poisson arrivals): between 15% and 35% above", "400 Poisson arrivals", "between 15% and 35% above")
    g = grading.capacity_gain(p, arrivals([12.0, 12.5, 11.5], [10.0, 10.2, 9.8]))
    assert g.verdict == "HELD" and "+20.0%" in g.measured and "(unpaired)" in g.measured
    assert grading.capacity_gain(p, arrivals([16.0, 16.5, 15.5], [10.0, 10.2, 9.8])).verdict == "MISSED"


def test_repeated_capacity_needs_two_runs_and_a_narrow_spread():
    p = pred("(at 40/s, 400 requests): less than 10% of their median, between 20% and 45% above",
             "at 40/s, 400 requests", "less than 10% of their median", "between 20% and 45% above")
    assert grading.repeated_capacity(p, arrivals([12.0], [10.0])) is None
    assert grading.repeated_capacity(p, arrivals([12.0, 12.1, 12.2], [9.0, 9.1, 9.2])).verdict == "HELD"
    assert grading.repeated_capacity(p, arrivals([10.0, 12.1, 14.0], [9.0, 9.1, 9.2])).verdict == "MISSED"


def test_reference_grades_restate_each_claim_and_grade_it_on_our_rows():
    refs = grading.reference_predictions()
    assert {r["id"] for r in refs} == {"R1", "R2", "R3", "R4", "R5"}
    t = table((0.016,), (0.0162,), (0.030,), (0.019,))
    layout = pd.DataFrame([{"kernel": "rows", "median_ms": 0.16}, {"kernel": "splitkv", "median_ms": 0.04}])
    g = grading.reference_grades(refs, t, arrivals([8.5, 8.6, 8.4], [5.0, 5.1, 4.9]), layout).set_index("grade")
    graded = grading.reference_grades(refs, t, arrivals([8.5, 8.6, 8.4], [5.0, 5.1, 4.9]), layout)
    # decode step unchanged, capacity resolved upward: the part 6 claim is wrong here too
    assert list(graded["grade"][:4]) == ["WRONG", "HELD", "MISSED", "HELD"]
    assert graded["grade"].iloc[4] == "open"  # no eager split-KV trace in these rows
    assert len(g)


def test_reference_predictions_reject_an_entry_without_its_location(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("predictions:\n  - id: R9\n    claim: x\n")
    with pytest.raises(ValueError, match="R9 lacks"):
        grading.reference_predictions(path)


def test_roofline_grades_read_set_c_quotes_from_the_books_file():
    from fusedlib.bench.predictions import by_key

    m = {"kernels_per_layer": 10.7, "decode_gpu_ms": 2.3, "decode_host_ms": 0.1, "attention_worst": 0.3,
         "mixed_gpu_ms": 5.0, "mixed_wall_ms": 10.0, "fused_capacity": 30.0, "gain_part10": 1.1, "gain_part9": 1.3}
    g = {k: v.verdict for k, v in grading.roofline_grades(by_key(), m).items()}
    assert g == {"C1": "HELD", "C2": "HELD", "C3": "HELD", "C4": "MISSED", "C5": "MISSED", "C6": "HELD"}
    # 0.7 ms of host gap is outside "within 0.6 ms"; a gain no smaller than part 9's misses C6.
    worse = grading.roofline_grades(by_key(), m | {"decode_host_ms": 0.7, "gain_part10": 1.3})
    assert (worse["C3"].verdict, worse["C6"].verdict) == ("MISSED", "MISSED")
