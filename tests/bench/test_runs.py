"""Each experiment's runs on the smoke profile (tiny model, CPU): plumbing and the row
fields the book reads, not speed."""
import json

import pytest

from fusedlib.bench import census, engines, metrics, runs, workloads
from fusedlib.bench.measure import run as measure_here
from fusedlib.bench.spec import PROFILES, RunSpec
from fusedlib.engine import Engine

SMOKE = PROFILES["smoke"]


def smoke(experiment, **options):
    return RunSpec.build(experiment, "smoke", **options)


@pytest.fixture(scope="module")
def tiny():
    return engines.model_for(smoke("capacity", config="part7"))


def _specs(n, seed=0, rate=2000.0):
    base = workloads.mixed(n, seed=seed, lengths=SMOKE.lengths, budget=SMOKE.budget, vocab_size=512)
    return workloads.poisson_arrivals(base, rate, seed=seed)


@pytest.mark.parametrize("kind", ["fused", "chunked"])
def test_open_loop_completes_every_request_with_its_budget(tiny, kind):
    engine = Engine(tiny, kind=kind, chunk_tokens=32, max_batch=8)
    specs = _specs(40, rate=500.0)
    served = engines.serve_open_loop(engine, specs)
    assert len(served) == len(specs)
    for spec, req in zip(specs, served):
        assert req.finished is not None and len(req.output) == spec.max_new_tokens == len(req.token_times)
        assert req.admitted >= req.arrival and req.token_times[0] >= req.admitted
    arrivals = [r.arrival for r in served]
    assert arrivals == sorted(arrivals)
    assert engine.pool.num_free_blocks == engine.pool.num_blocks


@pytest.mark.parametrize("kind", ["fused", "chunked"])
def test_pool_cap_forces_queueing_and_still_completes(tiny, kind):
    num_blocks = 12  # the largest smoke request (64 + 16 tokens) needs 5 blocks
    engine = Engine(tiny, kind=kind, chunk_tokens=32, max_batch=8, num_blocks=num_blocks)
    specs = _specs(30, seed=1, rate=5000.0)
    served = engines.serve_open_loop(engine, specs)
    assert all(len(r.output) == s.max_new_tokens for r, s in zip(served, specs))
    assert engine.pool.num_free_blocks == num_blocks
    # At each admission, the requests holding blocks fit in the pool, and fewer than
    # max_batch were running: the pool, not the batch, held the queue back.
    peak = 0
    for r in served:
        running = [o for o in served if o.admitted <= r.admitted < o.finished]
        assert sum(engine.pool.blocks_for(o.kv_tokens_needed) for o in running) <= num_blocks
        peak = max(peak, len(running))
    assert peak < engine.config.max_batch
    assert max(r.admitted - r.arrival for r in served) > 0
    admitted_order = [r.rid for r in sorted(served, key=lambda r: (r.admitted, r.rid))]
    assert admitted_order == sorted(admitted_order)  # strict FCFS


def test_open_loop_row_has_the_capacity_fields():
    spec = smoke("capacity", config="part10", engine="chunked", rate=500, n_requests=6, seed=1, round=1)
    row, = measure_here(spec)
    assert row["n_completed"] == 6 and row["max_batch"] == 32 and row["attention"] == "torch"
    # six requests never fill 32 rows: not saturated, whatever the rate
    assert row["saturated"] is False and 0 <= row["steady_fraction"] <= 1
    for name in ("served_rate", "steady_rate", "steady_window_s", "goodput_rate", "ttft_p50_s", "ttft_p99_s",
                 "itl_p50_s", "itl_p99_s", "e2e_p50_s", "n_steps", "decode_step_s_p50", "mixed_step_s_p50", "host_share", "host_ms_per_step_p50",
                 "step_gpu_ms_p50", "device_name"):
        assert name in row, name
    assert row["kernels_compiled_after_construction"] == 0
    assert_steady_from_its_times(row, spec.n_requests)


STEADY = ("steady_rate", "steady_window_s", "steady_fraction", "saturated", "steady_skip")


def assert_steady_from_its_times(row: dict, n_requests: int) -> dict:
    """The row's request_times, one entry per request, give its steady fields again once
    stored (through JSON); returns those times."""
    times = json.loads(json.dumps(row))["request_times"]
    assert set(times) == {"arrival", "admitted", "finished"}
    assert all(len(v) == n_requests for v in times.values())
    assert times["arrival"] == sorted(times["arrival"]) and times["arrival"][0] == 0.0
    assert metrics.steady_from_times(times, row["max_batch"]) == {k: row[k] for k in STEADY}
    return times


def test_a_burst_on_two_rows_is_saturated_and_its_steady_window_inside_the_run():
    # 12 requests at once on 2 rows: the queue stays non-empty until the last admission
    row, = measure_here(smoke("scale", config="part11", engine="fused", max_batch=2, chunk_tokens=16, rate=1e5,
                             n_requests=12, seed=0, round=0))
    assert row["saturated"] is True and row["steady_fraction"] >= 0.5 and row["steady_rate"] > 0
    start, end = row["steady_window_s"]
    assert 0 < start < end <= row["span_s"]
    times = assert_steady_from_its_times(row, 12)
    later = metrics.steady_from_times(times, 2, skip=4)
    assert later["saturated"] and later["steady_window_s"][0] > start and later["steady_window_s"][1] == end
    assert metrics.steady_from_times(times, 2, skip=12)["steady_rate"] is None  # more than the stretch holds


def test_steady_from_a_smoke_runs_times_is_its_steady_at_the_clocks_resolution(tiny):
    engine = Engine(tiny, kind="fused", chunk_tokens=32, max_batch=8)
    served = engines.serve_open_loop(engine, _specs(40, seed=3, rate=2000.0))
    times = metrics.request_times(served)
    got = metrics.steady(served, 8)
    assert got["saturated"] and metrics.steady_from_times(times, 8) == got
    # Kept to 1 us, the times order every admission, arrival and completion as the clock did.
    first = min(r.arrival for r in served)
    clock = {"arrival": [r.arrival - first for r in served], "admitted": [r.admitted - first for r in served],
             "finished": [r.token_times[-1] - first for r in served]}
    exact = metrics.steady_from_times(clock, 8)
    assert (exact["saturated"], exact["steady_fraction"]) == (got["saturated"], got["steady_fraction"])
    assert exact["steady_window_s"] == pytest.approx(got["steady_window_s"], abs=1e-6)
    assert exact["steady_rate"] == pytest.approx(got["steady_rate"], rel=1e-4)


def test_closed_rows_for_ours_and_transformers():
    ours, = measure_here(smoke("peer", config="part10", engine="fused", n_requests=3, round=0))
    theirs, = measure_here(smoke("peer", config="part10", engine="transformers", n_requests=3, round=0))
    for row in (ours, theirs):
        assert row["workload"] == "closed_mixed" and row["batch"] == 32 and row["wall_s"] > 0
        assert row["n_output_tokens"] == 3 * SMOKE.peer_new_tokens and row["transformers_version"]
    assert theirs["attention"] == "transformers"


@pytest.mark.slow(4)
def test_census_in_its_own_process_rows():
    got = measure_here(smoke("census", config="part7", engine="chunked"))
    steps = {r["step"]: r for r in got if r["record"] == "step"}
    assert set(steps) == {"decode", "mixed"}
    assert (steps["mixed"]["n_forwards"], steps["decode"]["n_forwards"]) == (2, 1)
    assert steps["decode"]["decode_rows"] == 4 and steps["mixed"]["chunk_tokens"] == 16
    for row in steps.values():
        assert row["n"] == census.CENSUS["smoke"]["n"] and row["wall_ms"] > 0 and row["n_kernels"] > 0
        assert row["flops"] > 0 and row["copy_bw_Bps"] > 0 and row["gemm_tflops"] > 0
    classes = [(r["step"], r["kernel_class"]) for r in got if r["record"] == "kernel_class"]
    assert len(classes) == 2 * len(census.KERNEL_CLASSES)
    # the chunked mixed step reads the weights twice
    assert steps["mixed"]["weight_bytes"] == 2 * steps["decode"]["weight_bytes"]


def test_step_model_counts_by_hand():
    from fusedlib.config import PRESETS

    cfg = PRESETS["tiny"]
    one = census.step_model(cfg, [], [10], 1, 2)
    kv = 2 * cfg.num_kv_heads * cfg.head_dim * 2 * cfg.num_layers
    assert one["kv_bytes"] == 10 * kv
    assert one["classes"]["attention"][1] == 4 * 10 * cfg.num_heads * cfg.head_dim * cfg.num_layers
    assert one["classes"]["lm_head"][1] == 2 * cfg.hidden_size * cfg.vocab_size
    chunk = census.step_model(cfg, [(0, 4)], [], 2, 2)  # causal: 1 + 2 + 3 + 4 keys
    assert chunk["classes"]["attention"][1] == 4 * 10 * cfg.num_heads * cfg.head_dim * cfg.num_layers
    assert chunk["weight_bytes"] == 2 * one["weight_bytes"]


def test_kernel_classes_by_name_and_lm_head_by_size():
    events = [("nvjet_hsh_128x64", 5.0), ("triton_splitkv_decode_kernel", 3.0), ("add_rms_norm_kernel", 1.0),
              ("nvjet_hsh_256x128", 100.0), ("Memcpy", 1.0), ("argmax_kernel", 1.0)]
    got = census._classify(events, n_lm_head=1)
    assert got["gemm"] == (1, 5.0) and got["lm_head"] == (1, 100.0) and got["attention"] == (1, 3.0)
    assert got["norm_rotary_act"] == (1, 1.0) and got["other"] == (2, 2.0)


def test_steady_kernel_classes_split_attention_and_idle_is_the_gaps():
    events = [("prompt_attention_kernel", 7.0), ("splitkv_decode_kernel", 3.0), ("splitkv_reduce_kernel", 1.0),
              ("nvjet_hsh_128x64", 5.0), ("Memcpy DtoH", 2.0)]
    got = census._classify(events, n_lm_head=0, split_attention=True)
    assert got["prompt_attention"] == (1, 7.0) and got["decode_attention"] == (2, 4.0)
    assert got["gemm"] == (1, 5.0) and got["other"] == (1, 2.0) and "attention" not in got
    # two streams overlapping over [0, 10), then a gap, then [12, 13)
    assert census.busy_us([("a", 0.0, 6.0), ("b", 4.0, 6.0), ("c", 1.0, 2.0), ("d", 12.0, 1.0)]) == 11.0


@pytest.mark.slow(4)
def test_saturated_census_rows_by_class():
    from fusedlib.bench import plans

    spec, = plans.census("smoke", configs=["part11"])
    assert spec.rate is not None and spec.engine == "fused"
    got = measure_here(spec)
    assert [r["kernel_class"] for r in got] == list(census.STEADY_CLASSES)
    assert all(r["record"] == "steady_class" and r["window_steps"] == census.STEADY["smoke"]["steps"] for r in got)
    assert len({r["window_s"] for r in got}) == 1 and got[0]["window_s"] > 0
    assert all(r["window_gpu_s"] is None for r in got)  # a CPU: shares of the window's wall time
    assert all(r["share"] == pytest.approx(r["gpu_s"] / r["window_s"]) for r in got)
    by = {r["kernel_class"]: r for r in got}
    assert by["gemm"]["flops"] > 0 and by["gemm"]["tflops"] > 0 and by["idle"]["gpu_s"] >= 0


def test_attention_rows_beside_a_copy():
    got = measure_here(smoke("attention", attention="triton-splitkv"))
    assert [r["context"] for r in got] == list(census.ATTENTION["smoke"]["contexts"])
    assert {r["config"] for r in got} == {"part8"}
    assert all(r["kv_bytes"] > 0 and r["copy_us"] > 0 and r["fraction_of_copy"] > 0 for r in got)


def test_gates_rows_pass_with_their_detail():
    got = measure_here(smoke("gates", config="part10"))
    assert [r["gate"] for r in got] == ["fused_vs_chunked", "mixed_step", "tiny_pool", "poisoning", "transformers"]
    assert all(r["passed"] and isinstance(r["detail"], str) for r in got)


def test_soak_loses_nothing_and_leaves_the_pool_free():
    from fusedlib.bench import plans

    spec, = plans.soak("smoke")
    row, = measure_here(spec)
    assert row["n_requests"] == spec.n_requests >= 40
    assert row["n_lost"] == 0 and row["pool_free_after"] is True
    assert row["kernels_compiled_after_construction"] == 0
    assert row["peak_mem_1k_bytes"] is None and row["peak_mem_end_bytes"] is None  # no GPU: no reading
    assert_steady_from_its_times(row, spec.n_requests)


@pytest.mark.slow(2)
def test_prompt_kernel_rows_beside_sdpa_checked_first():
    from fusedlib.bench import kernels

    got = measure_here(smoke("kernels", kernel="prompt"))
    cases = kernels.KERNELS["smoke"]["prompt"]
    assert [[tuple(x) for x in r["pieces"]] for r in got] == [list(c) for c in cases]
    for r in got:
        assert r["tflops"] > 0 and r["max_abs_err"] <= kernels.TOLERANCE[kernels.torch.float16]
        assert r["flops"] == 4 * r["heads"] * r["head_dim"] * sum(kernels.causal_pairs(p, c) for p, c in r["pieces"])
        assert r["chunk"] == sum(c for _, c in r["pieces"])
        if len(r["pieces"]) > 1:  # a packed chunk of several requests: no SDPA anchor, no single context
            assert r["sdpa_tflops"] is r["context"] is r["prefix"] is None
            continue
        assert (r["prefix"], r["context"]) == (r["pieces"][0][0], sum(r["pieces"][0]))
        timed = {b: r[f"sdpa_{b}_tflops"] for b in kernels.SDPA_BACKENDS if r[f"sdpa_{b}_tflops"] is not None}
        skipped = [b for b in kernels.SDPA_BACKENDS if b not in timed]
        assert r["sdpa_tflops"] == max(timed.values(), default=None)
        assert all(f"{b}: " in r["sdpa_skipped"] for b in skipped)  # each backend timed or named


def test_causal_pairs_by_hand():
    from fusedlib.bench.kernels import causal_pairs

    assert causal_pairs(0, 4) == 1 + 2 + 3 + 4 and causal_pairs(2, 2) == 3 + 4


@pytest.mark.slow(2)
def test_decode_and_gemm_kernel_rows():
    from fusedlib.bench import kernels
    from fusedlib.config import PRESETS

    decode = measure_here(smoke("kernels", kernel="decode"))
    cases = kernels.KERNELS["smoke"]["decode"]
    assert [(r["rows"], r["context"]) for r in decode] == [(n, None if c == kernels.MIXED else c) for n, c in cases]
    assert all(r["fraction_of_copy"] > 0 and r["backend"] == kernels.ENGINE_ATTENTION for r in decode)
    # the mixed case: one row per context in flight, its bytes and mean over those rows
    (n_rows, _), = [case for case in cases if case[1] == kernels.MIXED]
    mixed, = [r for r in decode if r["contexts"] == "mixed"]
    p, cfg = PROFILES["smoke"], PRESETS["tiny"]
    contexts = workloads.in_flight_contexts(n_rows, 0, p.lengths, p.budget)
    assert len(set(contexts)) > 1 and mixed["rows"] == n_rows and mixed["context_mean"] == sum(contexts) / n_rows
    assert mixed["kv_bytes"] == sum(contexts) * cfg.num_kv_heads * cfg.head_dim * 2 * 2  # K and V in fp16
    assert {r["contexts"] for r in decode if r is not mixed} == {"fixed"}
    gemm = measure_here(smoke("kernels", kernel="gemm"))
    assert [r["layer"] for r in gemm] == ["qkv", "o_proj", "gate_up", "down", "lm_head"]
    assert all(r["fraction_of_matmul"] > 0 and r["flops"] == 2 * r["m"] * r["n"] * r["k"] for r in gemm)
    chunk, rows = kernels.KERNELS["smoke"]["step"]
    assert {r["m"] for r in gemm} == {chunk + rows - 1, rows}
