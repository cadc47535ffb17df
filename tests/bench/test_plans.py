"""Each experiment's planned runs: offered rates around a capacity estimate, the paired rounds
in ABBA order with a new draw a round, the peer interleaved with ours, the scale grid's
second stage once the grid has rows, the minima the full profile must meet, and what a plan
will take on the device."""
import pytest

from fusedlib.bench import plans
from fusedlib.bench.spec import ENGINES, SERIES, SpecError


def test_capacity_sweeps_then_pairs_at_the_top_rate_in_abba_order():
    specs = plans.capacity("full", rounds=4, configs=["part10"], rates=[10, 50], n_requests=20)
    assert [(s.rate, s.engine, s.round, s.seed) for s in specs] == [
        (10, "fused", 0, 0), (10, "chunked", 0, 0), (50, "fused", 0, 0), (50, "chunked", 0, 0),
        (50, "chunked", 1, 1), (50, "fused", 1, 1), (50, "fused", 2, 2), (50, "chunked", 2, 2),
        (50, "chunked", 3, 3), (50, "fused", 3, 3)]
    assert {s.n_requests for s in specs} == {20} and {s.max_batch for s in specs} == {32}
    default = plans.capacity("full")
    assert [c for c in dict.fromkeys(s.config for s in default)] == [*SERIES, "part12"]
    assert len({tuple(s.key().values()) for s in default}) == len(default)


def test_capacity_offers_multiples_of_the_configurations_estimate():
    specs = plans.capacity("full", configs=["part10"])
    estimate = plans.DEFAULTS["full"]["capacity"]["capacity"]["part10"]
    rates = sorted({s.rate for s in specs})
    assert rates == [round(m * estimate, 1) for m in (0.8, 1.0, 1.25, 1.5, 2.0)]
    assert {s.rate for s in specs if s.round > 0} == {rates[-1]}
    with pytest.raises(SpecError, match="no capacity estimate for part11"):
        plans.capacity("full", configs=["part11"])
    with pytest.raises(SpecError, match="no capacity estimate for max_batch 512 x chunk_tokens 2048"):
        plans.scale("full", batches=[512], chunks=[2048], rate=400.0)  # the sweep would need one
    assert {s.rate for s in plans.scale("full", batches=[512], chunks=[2048], rate=400.0, sweep_rates=[100.0])} == \
        {400.0}


def test_peer_runs_transformers_then_ours_each_round():
    specs = plans.peer("full", rounds=3, configs=["part11"])
    assert [(s.engine, s.round) for s in specs] == [
        ("transformers", 0), ("fused", 0), ("chunked", 0), ("transformers", 1), ("chunked", 1), ("fused", 1),
        ("transformers", 2), ("fused", 2), ("chunked", 2)]
    assert {(s.max_batch, s.chunk_tokens) for s in specs} == {(256, 8192)}


def _grid_rows(specs, steady):
    return [{"engine": s.engine, "round": 0, "max_batch": s.max_batch, "chunk_tokens": s.chunk_tokens,
             "rate": s.rate, "steady_rate": steady(s)} for s in specs]


def test_scale_plans_its_second_stage_from_the_grids_steady_rates():
    grid = plans.scale("smoke", rounds=3)
    assert len(grid) == 2 * 2 and {(s.config, s.engine, s.rate) for s in grid} == {("part11", "fused", 80.0)}
    rows = _grid_rows(grid, lambda s: 10.0 * s.max_batch + s.chunk_tokens)
    cells = {(s.max_batch, s.chunk_tokens): s.rate for s in grid}
    assert plans.best_setting(rows, cells) == (4, 32)
    # a faster row at another rate (the sweep's) leaves the choice as it was
    assert plans.best_setting(rows + [{**rows[0], "rate": 20.0, "steady_rate": 999.0}], cells) == (4, 32)
    assert plans.best_setting(rows[:-1], cells) is None
    full = plans.scale("smoke", rounds=3, rows=rows)
    assert full[:len(grid)] == grid
    more = full[len(grid):]
    assert {(s.max_batch, s.chunk_tokens) for s in more} == {(4, 32)}
    assert [(s.engine, s.rate, s.round) for s in more] == [
        ("chunked", 80.0, 0), ("chunked", 80.0, 1), ("fused", 80.0, 1), ("fused", 80.0, 2), ("chunked", 80.0, 2),
        ("fused", 20.0, 0)]


def test_foreseen_plans_scales_second_stage_at_the_estimates_best_until_rows_choose():
    grid = plans.scale("full")
    assert {(s.max_batch, s.chunk_tokens) for s in grid} == {(b, c) for b in (32, 64, 128, 256)
                                                              for c in (512, 2048, 8192)}
    assert {(s.max_batch, s.n_requests) for s in grid} == {(32, 600), (64, 1500), (128, 1500), (256, 2000)}
    ahead = plans.foreseen("scale", "full", {})
    assert {(s.max_batch, s.chunk_tokens) for s in ahead[len(grid):]} == {(256, 2048)}  # the larger estimate
    measured = _grid_rows(grid, lambda s: 100.0 if (s.max_batch, s.chunk_tokens) == (256, 8192) else 90.0)
    chosen = plans.foreseen("scale", "full", {}, rows=measured)
    assert {(s.max_batch, s.chunk_tokens) for s in chosen[len(grid):]} == {(256, 8192)}


def _open_runs():
    return [*plans.capacity("full"), *plans.foreseen("scale", "full", {})]


def _pairs_at_top(specs) -> int:
    """Rounds with both engines at the highest offered rate."""
    top = max(s.rate for s in specs)
    return sum({s.engine for s in specs if s.round == r and s.rate == top} == set(ENGINES)
               for r in {s.round for s in specs})


def test_the_full_profile_meets_the_arrivals_and_pairs_minima():
    for s in _open_runs():
        assert s.n_requests >= (400 if s.max_batch <= 32 else 1500), s
    for config in SERIES:
        specs = [s for s in plans.capacity("full") if s.config == config]
        assert _pairs_at_top(specs) >= (5 if config == "part10" else 3), config
        rates = sorted({s.rate for s in specs})  # a sweep that brackets the estimate: below it and past it
        estimate = plans.CAPACITY_ESTIMATES[config]
        assert len(rates) >= (5 if config == "part10" else 3) and rates[0] < estimate and rates[-2] > estimate
        chunked = {s.rate for s in specs if s.engine == "chunked"}
        assert chunked == {rates[-1]} if config != "part10" else chunked == set(rates), config
    scale = plans.foreseen("scale", "full", {})
    best = [s for s in scale if (s.max_batch, s.chunk_tokens) == (scale[-1].max_batch, scale[-1].chunk_tokens)]
    assert _pairs_at_top(best) >= 5 and len({s.rate for s in best}) >= 5
    for config in plans.DEFAULTS["full"]["peer"]["configs"]:
        order = [s.engine for s in plans.peer("full", configs=[config])]
        assert order.count("transformers") >= 3
        # interleaved: ours run between any two of transformers' runs
        between = "".join("t" if e == "transformers" else "o" for e in order)
        assert "tt" not in between and between.startswith("t") and between.count("o") >= 6


def test_estimate_seconds_counts_runs_engine_builds_and_the_model():
    costs = plans.COSTS["full"]
    cap = plans.DEFAULTS["full"]["capacity"]["capacity"]["part10"]
    specs = plans.capacity("full", rounds=2, configs=["part10"], rates=[cap / 2, 2 * cap], n_requests=400)
    runs = sum(plans.run_seconds(s) for s in specs)
    # one setting: the first engine is built once, the chunked one once, then both are kept
    assert plans.estimate_seconds(specs) == pytest.approx(
        costs["model_load_s"] + costs["first_build_s"] + costs["engine_build_s"] + runs)
    below, past = plans.run_seconds(specs[0]), plans.run_seconds(specs[2])
    assert below == pytest.approx(400 / (cap / 2) + 32 / cap + costs["run_overhead_s"])
    assert past == pytest.approx(400 / cap + 32 / cap + costs["run_overhead_s"])
    # a run at another setting drops both engines: the scale grid builds one a cell
    grid = plans.scale("full", batches=[256], chunks=[2048, 8192])
    assert plans.estimate_seconds(grid) == pytest.approx(
        costs["model_load_s"] + costs["first_build_s"] + costs["engine_build_s"]
        + sum(plans.run_seconds(s) for s in grid))
    peer = plans.peer("full", rounds=3, configs=["part10"])
    assert plans.estimate_seconds(peer) == pytest.approx(
        costs["model_load_s"] + 3 * costs["transformers_build_s"] + costs["first_build_s"]
        + costs["engine_build_s"] + sum(plans.run_seconds(s) for s in peer))
    assert plans.estimate_seconds([]) == 0
    with pytest.raises(ValueError, match="no time estimate for gates"):
        plans.estimate_seconds(plans.gates("full"))


def test_plan_takes_a_notebooks_parameters():
    params = {"backend": "local", "profile": "smoke", "rounds": 1, "configs": ["part7"], "out_dir": "x"}
    assert [s.config for s in plans.plan("census", "smoke", params)] == ["part7", "part7"]


def test_part12_plans_and_their_estimates():
    costs = plans.COSTS["full"]
    soak, = plans.soak("full")
    cap = plans.DEFAULTS["full"]["capacity"]["capacity"]["part12"]
    assert (soak.config, soak.engine, soak.max_batch, soak.chunk_tokens) == ("part12", "fused", 256, 2048)
    assert soak.n_requests >= 10_000 and soak.rate == pytest.approx(2 * cap, abs=0.05)
    assert plans.estimate_seconds([soak]) == pytest.approx(
        costs["model_load_s"] + costs["first_build_s"] + soak.n_requests / cap + 256 / cap + costs["run_overhead_s"])
    kernels = plans.kernels("full")
    assert [s.kernel for s in kernels] == ["prompt", "decode", "gemm"]
    assert plans.estimate_seconds(kernels) == pytest.approx(sum(costs["kernel_s"].values()))
    census = plans.census("full")
    steady = [s for s in census if s.rate is not None]
    assert [(s.config, s.engine, s.max_batch, s.chunk_tokens) for s in steady] == [
        ("part11", "fused", 256, 2048), ("part12", "fused", 256, 2048)]
    assert [s.rate for s in steady] == [2 * plans.DEFAULTS["full"]["scale"]["capacity"][(256, 2048)], 2 * cap]
    assert {s.config for s in census if s.rate is None} == set(plans.SERIES)
    own = costs["model_load_s"] + costs["first_build_s"] + costs["profile_s"]
    assert plans.estimate_seconds(steady[1:]) == pytest.approx(
        own + steady[1].n_requests / cap + 256 / cap + costs["run_overhead_s"])
    capacity = plans.capacity("full", configs=["part12"])
    assert {(s.max_batch, s.chunk_tokens, s.n_requests) for s in capacity} == {(256, 2048, 2000)}
    assert len([s for s in capacity if s.round > 0]) == 2 * 4
    with pytest.raises(ValueError, match="no time estimate for census"):
        plans.estimate_seconds(census)  # the step census has none


def test_gates_run_each_part_at_its_sizes_and_part12_also_at_part11s_budget():
    sizes = [(s.config, s.max_batch, s.chunk_tokens) for s in plans.gates("full", configs=["part7", "part11", "part12"])]
    assert sizes == [("part7", None, None), ("part11", 256, 8192), ("part12", 256, 2048), ("part12", 256, 8192)]
