"""Experiments on the smoke profile (tiny model, CPU): plumbing and invariants, not speed."""
import statistics
import time
from pathlib import Path

import pytest

from fusedlib.bench import metrics, peer, rows, runs, telemetry, workloads
from fusedlib.bench.spec import PROFILES, RunSpec, SpecError, stored_options
from fusedlib.engine import Engine

SMOKE = PROFILES["smoke"]


def smoke(experiment, **options):
    return RunSpec.build(experiment, profile="smoke", **options)


@pytest.fixture(scope="module")
def tiny():
    return runs.model_for(smoke("closed").resolved())


def _specs(n, seed=0, rate=2000.0):
    base = workloads.mixed(n, seed=seed, lengths=SMOKE.lengths, budget=SMOKE.budget, vocab_size=512)
    return workloads.poisson_arrivals(base, rate, seed=seed)


@pytest.mark.parametrize("kind", ["fused", "chunked"])
def test_open_loop_completes_every_request_with_its_budget(tiny, kind):
    engine = Engine(tiny, kind=kind, chunk_tokens=32, max_batch=8)
    specs = _specs(40, rate=500.0)
    served = runs.serve_open_loop(engine, specs)
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
    served = runs.serve_open_loop(engine, specs)
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


def test_host_meter_samples_the_gpu_through_the_run(monkeypatch):
    samples = iter([(1980.0, 40.0, 300.0), (1500.0, 55.0, 500.0), (1800.0, 50.0, 400.0)])
    monkeypatch.setattr(telemetry, "_gpu_sample", lambda: next(samples, (1800.0, 50.0, 400.0)))
    monkeypatch.setattr(telemetry.HostMeter, "GPU_SAMPLE_S", 0.01)
    with telemetry.HostMeter() as meter:
        time.sleep(0.2)
    f = meter.fields
    assert f["gpu_samples"] >= 3
    assert (f["gpu_sm_clock_mhz_min"], f["gpu_temp_c_max"]) == (1500.0, 55.0)
    assert f["gpu_sm_clock_mhz_median"] == 1800.0 and f["gpu_power_w_median"] == 400.0


def test_host_meter_times_the_launch_cost_outside_the_run(monkeypatch):
    probes = iter([3.0, 4.5])
    monkeypatch.setattr(telemetry, "launch_probe_us", lambda: next(probes))
    monkeypatch.setattr(telemetry, "_gpu_sample", lambda: None)
    with telemetry.HostMeter() as meter:
        pass
    assert (meter.fields["host_launch_us_before"], meter.fields["host_launch_us_after"]) == (3.0, 4.5)


def test_launch_probe_is_the_time_per_launch():
    # Ten times the launches take about ten times as long, so the per-launch figure holds
    # still (within 5x: a shared CI machine is noisy), where a total would grow tenfold; it
    # is a small positive number of microseconds.
    a, b = telemetry.launch_probe_us(n=100), telemetry.launch_probe_us(n=1000)
    assert 0 < a < 1000 and 0 < b < 1000
    assert 1 / 5 < a / b < 5


def test_host_meter_without_a_gpu_query_records_none(monkeypatch):
    monkeypatch.setattr(telemetry, "_gpu_sample", lambda: None)
    with telemetry.HostMeter() as meter:
        pass
    assert meter.fields["gpu_samples"] == 0
    assert meter.fields["gpu_sm_clock_mhz_median"] is None and meter.fields["gpu_temp_c_max"] is None


def test_arrivals_row_with_small_pool(tmp_path):
    gib = 12 * 8192 / 2**30  # 12 blocks of the tiny model's 8 KiB
    spec = smoke("arrivals", engine="fused", rate=1000.0, n_requests=24, pool_gib=gib)
    (row,) = runs.arrivals(spec, out=tmp_path / "a")
    assert row["pool_blocks"] == 12 and row["n_completed"] == 24 and row["rate"] == 1000.0
    assert row["n_output_tokens"] == sum(s.max_new_tokens for s in _specs(24))
    assert row["served_rate"] > 0 and row["queue_wait_p90_s"] > 0
    assert row["git_commit"] and row["profile"] == "smoke" and row["chunk_tokens"] == SMOKE.chunk_tokens
    # What the machine gave the run: CPU time can't exceed wall time on one busy thread by much,
    # and a run this short on an open loop that never idles spends most of its wall on the CPU.
    assert 0 < row["host_cpu_s"] <= 2 * row["host_wall_s"] and row["host_wall_s"] >= row["span_s"] * 0.9
    assert row["host_steal_s"] is None or row["host_steal_s"] >= 0
    assert row["gpu_samples"] == 0 and row["gpu_sm_clock_mhz_median"] is None  # no nvidia-smi on CPU machines
    # Same parameters again: already stored, skipped.
    assert runs.arrivals(spec, out=tmp_path / "a") == []
    assert len(rows.load(tmp_path / "a")) == 1


def test_resume_compares_whole_specs(tmp_path):
    # A stored all-graphs run, or a stored repeat, must not make the run without it look done
    # (campaign s4 skipped its decode-graphs runs this way); every option counts.
    base = smoke("arrivals", rate=40.0).resolved()
    stored = {**base.row_fields(), "graph_chunks": True, "cuda_graphs": True, "repeat": 1}
    rows.append_rows(tmp_path / "a", [stored])
    assert runs.already_done(tmp_path / "a", base.but(cuda_graphs=True, graph_chunks=True, repeat=1).resolved())
    assert not runs.already_done(tmp_path / "a", base.but(cuda_graphs=True, graph_chunks=True).resolved())
    assert not runs.already_done(tmp_path / "a", base.but(repeat=1).resolved())
    assert not runs.already_done(tmp_path / "a", base)
    assert not runs.already_done(tmp_path / "a", base.but(seed=1, cuda_graphs=True, graph_chunks=True,
                                                          repeat=1).resolved())


def test_resume_reads_rows_from_before_the_schema_with_defaults(tmp_path):
    # A schema-1 row recorded graph_chunks and repeat only when set: without them it is the
    # first run without piecewise graphs, and matches exactly that spec.
    spec = smoke("arrivals", rate=40.0).resolved()
    old = {k: v for k, v in spec.row_fields().items() if k not in ("schema_version", "graph_chunks", "repeat")}
    rows.append_rows(tmp_path / "a", [old])
    assert runs.already_done(tmp_path / "a", spec)
    assert not runs.already_done(tmp_path / "a", spec.but(repeat=1).resolved())


def test_every_published_row_reads_back_as_a_spec():
    # Old rows in data/ load with defaults for options they lack, into specs that build.
    from fusedlib.bench.spec import RESULT_SETS, stored_options

    seen = 0
    for result_set in set(RESULT_SETS.values()) | {"beyond/arrivals", "beyond/step_trace"}:
        for row in rows.read_rows(Path(__file__).resolve().parents[2] / "data" / result_set):
            options = stored_options(row)
            if options is None:
                continue  # gates and kernel rows: checks, not runs to resume
            given = {k: v for k, v in options.items()
                     if not (options["experiment"].startswith("peer") and k in ("engine", "attention"))}
            assert RunSpec.build(**given).resolved().options() == options
            seen += 1
    assert seen > 100


def test_closed_rows_runs_and_median(tmp_path):
    got = runs.closed(smoke("closed", engine="chunked", workload="p256", batch_size=6, warmups=1, repeats=3),
                      out=tmp_path / "c")
    (warmup,) = [r for r in got if r["stat"] == "warmup"]  # recorded, left out of the median
    measured = [r for r in got if r["stat"] == "run"]
    (median,) = [r for r in got if r["stat"] == "median"]
    assert warmup["pass"] == 0 and [r["pass"] for r in measured] == [1, 2, 3] and median["pass"] is None
    assert median["wall_s"] == statistics.median(r["wall_s"] for r in measured)
    assert all(r["n_output_tokens"] == 6 * SMOKE.p256_budget for r in got)
    assert measured[0]["n_steps"] > 0 and measured[0]["n_forwards"] >= measured[0]["n_steps"]
    assert all(r["host_wall_s"] >= r["wall_s"] and r["host_cpu_s"] > 0 for r in measured)
    assert "host_wall_s" not in median  # a reading of one pass, not of the median
    assert len(rows.load(tmp_path / "c")) == 5


def test_closed_rows_from_before_schema_4_numbered_passes_not_runs(tmp_path):
    # Until schema 4 a closed row's `repeat` numbered the passes inside one run; such rows
    # are the run with repeat 0 (the only one there was), whatever their pass.
    spec = smoke("closed", workload="p256", batch_size=6).resolved()
    old = [{**spec.row_fields(), "schema_version": 3, "stat": stat, "repeat": number}
           for stat, number in (("run", 3), ("median", None))]
    for r in old:
        for name in ("warmup", "comparison", "overlap"):
            del r[name]
    rows.append_rows(tmp_path / "c", old)
    assert all(stored_options(r) == spec.options() for r in rows.read_rows(tmp_path / "c"))
    assert runs.already_done(tmp_path / "c", spec)
    assert not runs.already_done(tmp_path / "c", spec.but(repeat=3).resolved())


def test_mixed_fixed_is_the_mixed_prompts_with_one_budget():
    spec = smoke("closed", workload="mixed_fixed").resolved()
    fixed = runs.spec_workload(spec, "mixed_fixed", 20, 0, 512)
    mixed = runs.spec_workload(spec, "mixed", 20, 0, 512)
    assert [len(r.prompt) for r in fixed] == [len(r.prompt) for r in mixed]
    assert {r.max_new_tokens for r in fixed} == {SMOKE.p256_budget}


def test_step_trace_rows_and_accounting():
    traces = {k: runs.step_trace(smoke("step_trace", engine=k, warmups=0)) for k in ("chunked", "fused")}
    for kind, trace in traces.items():
        steps = [r for r in trace if r["record"] == "step"]
        reqs = [r for r in trace if r["record"] == "request"]
        (summary,) = [r for r in trace if r["record"] == "summary"]
        assert len(reqs) == workloads.DISTURBANCE_REQUESTS
        assert summary["n_steps"] == len(steps) == summary["n_decode_steps"] + summary["n_mixed_steps"] + summary["n_chunk_steps"]
        assert all(len(r["token_gaps_s"]) == r["n_output_tokens"] - 1 for r in reqs)
        forwards = {"fused": 1, "chunked": 2}[kind]
        assert all(r["n_forwards"] == forwards for r in steps if r["kind"] == "mixed")
    # Same scheduler, same plans: the two engines take the same steps.
    kinds = {k: [r["kind"] for r in trace if r["record"] == "step"] for k, trace in traces.items()}
    assert kinds["chunked"] == kinds["fused"]
    fusion = metrics.accounting(traces["chunked"], traces["fused"])[-1]
    assert fusion["loaded_steps"] == kinds["chunked"].count("mixed")


def test_accounting_arithmetic_by_hand():
    def steps(durations):
        return [{"record": "step", "kind": k, "duration_s": d} for k, d in durations]
    chunked = steps([("chunk", 0.040), ("mixed", 0.060), ("mixed", 0.064), ("mixed", 0.070),
                     ("decode", 0.030), ("decode", 0.030)])  # run time 0.294 s
    fused = steps([("chunk", 0.041), ("mixed", 0.050), ("mixed", 0.052), ("mixed", 0.058),
                   ("decode", 0.031), ("decode", 0.031)])
    acc = metrics.accounting(chunked, fused)
    kinds = {(r["engine"], r["kind"]): r for r in acc if r["record"] == "kind"}
    assert kinds[("chunked", "mixed")]["n_steps"] == 3
    assert kinds[("chunked", "mixed")]["median_s"] == pytest.approx(0.064)
    assert kinds[("fused", "decode")]["total_s"] == pytest.approx(0.062)
    fusion = acc[-1]
    # median mixed 0.064 - 0.052 = 0.012 s per loaded step, x 3 loaded steps = 0.036 s,
    # of 0.294 s of chunked step time = 12.24 %
    assert fusion["saved_per_loaded_step_s"] == pytest.approx(0.012)
    assert fusion["saved_total_s"] == pytest.approx(0.036)
    assert fusion["run_time_chunked_s"] == pytest.approx(0.294)
    assert fusion["share_of_run"] == pytest.approx(0.036 / 0.294)
    assert fusion["loaded_share_of_steps"] == pytest.approx(0.5)


def test_sensitivity_fixes_long_share_and_resumes(tmp_path):
    specs = [smoke("sensitivity", engine="fused", seed=seed, long_share=share, rate=2000.0, n_requests=16)
             for seed in (0, 1) for share in (None, 0.5)]
    got = runs.run(specs, out=tmp_path / "s")
    assert [(r["seed"], r["long_share"]) for r in got] == [(0, None), (0, 0.5), (1, None), (1, 0.5)]
    assert all(r["n_long_prompts"] == 8 for r in got if r["long_share"] == 0.5)
    assert all(r["n_completed"] == 16 for r in got)
    assert runs.run(specs, out=tmp_path / "s") == []


def test_transformers_peer_generates_every_token():
    warmup, run, median = peer.closed(smoke("peer", batch_size=6, warmups=1, repeats=1))
    assert (warmup["stat"], warmup["pass"], run["pass"]) == ("warmup", 0, 1)
    assert median["wall_s"] == run["wall_s"]  # the warm-up pass is left out
    specs = workloads.mixed(6, seed=0, lengths=SMOKE.lengths, budget=SMOKE.budget, vocab_size=512)
    assert run["n_output_tokens"] == sum(s.max_new_tokens for s in specs)
    assert median["stat"] == "median" and median["output_throughput"] > 0
    assert median["engine"] == "transformers"


def test_transformers_peer_open_loop_serves_the_arrivals_requests(tmp_path):
    spec = smoke("peer_arrivals", rate=400.0, n_requests=10)
    (row,) = peer.arrivals(spec, out=tmp_path / "p")
    ours = runs.arrivals(smoke("arrivals", engine="fused", rate=400.0, n_requests=10))[0]
    # The same requests: same prompt and output token counts as our engine's run of that rate.
    assert row["n_completed"] == 10 and row["engine"] == "transformers"
    assert (row["n_prompt_tokens"], row["n_output_tokens"]) == (ours["n_prompt_tokens"], ours["n_output_tokens"])
    assert row["served_rate"] > 0 and row["queue_wait_median_s"] >= 0 and row["ttft_median_s"] > 0
    assert len(row["warmup_wall_s"]) == 2 and all(w > 0 for w in row["warmup_wall_s"])  # recorded, not counted
    assert peer.arrivals(spec, out=tmp_path / "p") == []


def test_overlap_reaches_the_engine_and_serves_the_same_tokens(tmp_path):
    spec = smoke("arrivals", engine="fused", rate=400.0, n_requests=12)
    assert runs.make_engine(spec.but(overlap=True).resolved()).config.overlap is True
    assert runs.make_engine(spec.resolved()).config.overlap is False
    (plain,) = runs.arrivals(spec, out=tmp_path / "a")
    (overlapped,) = runs.arrivals(spec.but(overlap=True), out=tmp_path / "a")  # not taken for the stored run
    assert (plain["overlap"], overlapped["overlap"]) == (False, True)
    for field in ("n_completed", "n_prompt_tokens", "n_output_tokens"):
        assert overlapped[field] == plain[field], field
    # The step trace with overlap stamps steps on the host's clock and takes the same steps.
    trace = {o: [(r["kind"], r["n_decode"]) for r in runs.step_trace(smoke("step_trace", engine="fused", warmups=0,
                                                                         overlap=o)) if r["record"] == "step"]
             for o in (False, True)}
    assert trace[True] == trace[False]


def test_gates_with_overlap_pass_and_each_row_names_its_own(tmp_path):
    got = runs.gates(smoke("gates", overlap=True), out=tmp_path / "g")
    assert all(r["passed"] for r in got), [r for r in got if not r["passed"]]
    overlap = {r["gate"]: r.get("overlap") for r in got}
    # The mixed-step gate calls the model directly and transformers' gate builds plain engines.
    assert overlap == {"fused_vs_chunked": True, "tiny_pool": True, "poisoning": True, "mixed_step": False,
                       "transformers": None}


def test_full_profile_needs_a_gpu(monkeypatch):
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    with pytest.raises(SpecError, match="smoke"):
        runs.check_here(RunSpec.build("closed", profile="full"))


def test_step_profile_names_each_steps_work(tmp_path):
    # 8 rows and a 128-token chunk budget: decode-only steps come early, between mixed ones,
    # so a short window holds every kind of step (the profiler is what costs here).
    setup = dict(engine="chunked", attention="torch", max_batch=8, chunk_tokens=128)
    trace = runs.step_trace(smoke("step_trace", **setup))
    planned = [(r["kind"], r["n_decode"]) for r in trace if r["record"] == "step"]
    # A window of the first steps: only those are profiled and get rows.
    window = 12
    assert len(planned) > window
    spec = smoke("step_profile", **setup, top_ops=5, profiled_steps=window)
    got = runs.step_profile(spec, out=tmp_path / "p")
    steps = [r for r in got if r["record"] == "step"]
    assert [r["step"] for r in steps] == list(range(window))
    # The same workload, the same plan: the profiled run takes the step trace's steps.
    assert [(r["kind"], r["n_decode"]) for r in steps] == planned[:window]
    assert all(r["profiled_wall_s"] > 0 for r in steps)
    assert all(r["n_kernels"] == 0 and r["device_s"] == 0 for r in steps)  # a CPU run launches no kernel
    ops = [r for r in got if r["record"] == "ops"]
    kinds = {r["kind"] for r in steps}
    assert kinds == {"chunk", "mixed", "decode"}
    assert {(r["kind"], r["part"]) for r in ops} == {(k, p) for k in kinds for p in ("fastest quarter", "slowest quarter")}
    for r in ops:
        assert 0 < len(r["top_ops"]) <= 5 and all(o["self_cpu_s_per_step"] > 0 for o in r["top_ops"])
        assert any(o["op"].startswith("aten::") for o in r["top_ops"])
    slow = {r["kind"]: r["wall_s_median"] for r in ops if r["part"] == "slowest quarter"}
    fast = {r["kind"]: r["wall_s_median"] for r in ops if r["part"] == "fastest quarter"}
    assert all(slow[k] >= fast[k] for k in kinds)
    assert runs.step_profile(spec, out=tmp_path / "p") == []
