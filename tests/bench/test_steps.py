"""fusedlib.bench.steps on small hand-made step traces."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fusedlib.bench import steps


def trace(engine, attention="triton", graphs=None, chunks=None, decode=(0.010, 0.012), mixed=(0.020,),
          few=(0.009,), commit="c1", ts="2026-11-30T01:00:00+00:00"):
    rows, n = [], 0
    for d in decode:
        rows.append({"kind": "decode", "n_decode": steps.FULL_ROWS, "duration_s": d})
    for d in few:
        rows.append({"kind": "decode", "n_decode": 4, "duration_s": d})
    for d in mixed:
        rows.append({"kind": "mixed", "n_decode": 16, "duration_s": d,
                     "forward_durations_s": [d * 0.6, d * 0.4] if engine == "chunked" else [d]})
    for r in rows:
        r.update({"engine": engine, "attention": attention, "record": "step", "step": n, "git_commit": commit,
                  "timestamp": ts, "experiment": "step_trace"})
        if graphs is not None:
            r["cuda_graphs"] = graphs
        if chunks is not None:
            r["graph_chunks"] = chunks
        n += 1
    return pd.DataFrame(rows)


def test_combined_traces_fill_missing_flags_and_keep_the_newest_trace():
    old = trace("fused", decode=(0.5,), ts="2026-11-30T00:00:00+00:00")
    base = pd.concat([old, trace("fused"), trace("chunked")])
    variants = trace("fused", "triton-splitkv", graphs=True, chunks=True)
    t = steps.combined_traces(base, variants)
    assert set(t["cuda_graphs"]) == {False, True} and t["graph_chunks"].dtype == bool
    table = steps.summary(t)
    assert list(table["configuration"]) == ["eager, per-row", "eager, per-row", "every forward graphed, split-KV"]
    assert steps.lookup(table, "eager, per-row", "fused", "decode_full_s") == pytest.approx(0.011)  # old trace dropped
    assert np.isnan(steps.lookup(table, "eager, split-KV", "fused", "decode_full_s"))


def test_summary_takes_the_chunked_engines_two_forwards_and_the_full_batch_only():
    table = steps.summary(steps.combined_traces(pd.concat([trace("chunked"), trace("fused")]), pd.DataFrame()))
    assert steps.lookup(table, "eager, per-row", "chunked", "first_forward_s") == pytest.approx(0.012)
    assert np.isnan(steps.lookup(table, "eager, per-row", "fused", "second_forward_s"))
    assert steps.lookup(table, "eager, per-row", "fused", "n_full") == 2
    assert steps.lookup(table, "eager, per-row", "fused", "decode_all_s") == pytest.approx(0.010)


def test_label_of_rejects_an_unnamed_configuration():
    with pytest.raises(ValueError, match="no configuration"):
        steps.label_of("torch", True, True)


def test_decode_floor_counts_weights_and_the_steps_kv_at_the_bandwidth():
    s = trace("fused").assign(kv_positions=1000.0)
    f = steps.decode_floor(s, weight_bytes=1e9, kv_pos_bytes=1e3, bandwidth_Bps=1e12)
    assert f["floor_s"] == pytest.approx((1e9 + 1e6) / 1e12)
    assert f["multiple"] == pytest.approx(0.011 / f["floor_s"])
    with pytest.raises(ValueError, match="no pure decode steps"):
        steps.decode_floor(s, 1e9, 1e3, 1e12, full_rows=7)


def test_step_growth_compares_few_rows_with_a_full_batch():
    g = steps.step_growth(trace("fused", decode=(0.011,), few=(0.010,)))
    assert g["few_rows"] == 4 and g["growth"] == pytest.approx(0.1)


def test_copy_bandwidth_prefers_the_traces_own_measurement():
    t = pd.DataFrame([{"record": "summary", "copy_bandwidth_Bps": 4e12}])
    layout = pd.DataFrame([{"copy_bandwidth_gbs": 3000.0}])
    assert steps.copy_bandwidth(t, layout)[0] == 4e12
    assert steps.copy_bandwidth(t.drop(columns="copy_bandwidth_Bps"), layout)[0] == 3e12
    with pytest.raises(ValueError, match="no copy bandwidth"):
        steps.copy_bandwidth(t.drop(columns="copy_bandwidth_Bps"), pd.DataFrame())


def test_model_bytes_of_the_full_model():
    n, weights, kv = steps.model_bytes()
    assert weights == 2 * n and kv == 28 * 2 * 2 * 128 * 2
    assert n == 1_543_714_304  # Qwen2.5-1.5B, tied embeddings
    assert steps.model_bytes("tiny", "float32")[1] == 4 * steps.model_bytes("tiny", "float32")[0]
    assert steps.model_bytes("tiny", "float64")[1] == 8 * steps.model_bytes("tiny", "float64")[0]  # asks torch


@pytest.mark.parametrize("preset", ["qwen2.5-1.5b", "tiny"])  # tied and untied head
def test_parameters_counts_what_the_model_holds(preset):
    import torch

    from fusedlib.config import PRESETS
    from fusedlib.model import Qwen2Model

    with torch.device("meta"):
        model = Qwen2Model(PRESETS[preset])
    assert steps.parameters(PRESETS[preset]) == sum(p.numel() for p in model.parameters())


def test_readable_summary_writes_ms_and_a_dash_for_no_second_forward():
    table = steps.summary(steps.combined_traces(pd.concat([trace("chunked"), trace("fused")]), pd.DataFrame()))
    r = steps.readable_summary(table).set_index("engine")
    assert r.loc["fused", "mixed: 2nd forward (ms)"] == "—" and r.loc["chunked", "mixed (ms)"] == "20.0"


def test_layout_table_pairs_each_kernel_with_rows_by_round():
    # Round 2 ran slow for every kernel alike: paired by round, splitkv stays at half of rows.
    rows = [{"kernel": k, "round": r, "median_ms": ms * (3 if r == 2 else 1), "kv_bytes_floor_ms": 0.01,
             "median_ms_back_to_back": ms / 2, "host_ms": 0.02}
            for r in range(5) for k, ms in (("rows", 0.2), ("splitkv", 0.1))]
    t = steps.layout_table(pd.DataFrame(rows)).set_index("kernel")
    assert list(t.index) == ["rows", "splitkv"] and (t["rounds"] == 5).all()
    c = t.loc["splitkv", "ratio_vs_rows"]
    assert (c.ratio, c.lo, c.hi, c.n) == (0.5, 0.5, 0.5, 5) and c.resolved
    assert t.loc["splitkv", "median_ms"] == 0.1 and t.loc["rows", "ratio_vs_rows"].ratio == 1.0
    assert t.loc["splitkv", "bandwidth_fraction"] == pytest.approx(0.1)


def test_layout_table_reads_rows_from_before_rounds_as_one_round():
    t = steps.layout_table(pd.DataFrame([{"kernel": "rows", "median_ms": 0.2, "kv_bytes_floor_ms": 0.01},
                                         {"kernel": "packed", "median_ms": 0.6, "kv_bytes_floor_ms": 0.01}]))
    c = t.set_index("kernel").loc["packed", "ratio_vs_rows"]
    assert c.n == 1 and c.ratio == pytest.approx(3.0) and not c.resolved
