"""Each experiment's planned runs: the paired rounds in ABBA order with a new draw a round,
the scale grid's second stage once the grid has rows."""
from fusedlib.bench import plans
from fusedlib.bench.spec import SERIES


def test_capacity_sweeps_then_pairs_at_the_top_rate_in_abba_order():
    specs = plans.capacity("full", rounds=4, configs=["part10"], rates=[10, 50], n_requests=20)
    assert [(s.rate, s.engine, s.round, s.seed) for s in specs] == [
        (10, "fused", 0, 0), (10, "chunked", 0, 0), (50, "fused", 0, 0), (50, "chunked", 0, 0),
        (50, "chunked", 1, 1), (50, "fused", 1, 1), (50, "fused", 2, 2), (50, "chunked", 2, 2),
        (50, "chunked", 3, 3), (50, "fused", 3, 3)]
    assert {s.n_requests for s in specs} == {20} and {s.max_batch for s in specs} == {32}
    default = plans.capacity("full", rounds=5)
    assert [c for c in dict.fromkeys(s.config for s in default)] == list(SERIES)
    assert len({(s.key()["config"], s.key()["engine"], s.key()["rate"], s.key()["round"]) for s in default}) == \
        len(default)


def test_gates_run_part11_at_its_own_sizes_in_full():
    specs = plans.gates("full")
    assert [s.config for s in specs] == [*SERIES, "part11"]
    assert (specs[-1].max_batch, specs[-1].chunk_tokens) == (256, 8192) and specs[0].max_batch is None
    assert [s.config for s in plans.gates("smoke")] == list(SERIES)


def test_peer_runs_transformers_then_ours_at_each_configurations_sizes():
    specs = plans.peer("full", rounds=2, configs=["part11"])
    assert [(s.engine, s.round) for s in specs] == [("transformers", 0), ("fused", 0), ("chunked", 0),
                                                    ("chunked", 1), ("fused", 1)]
    assert {(s.max_batch, s.chunk_tokens, s.n_requests) for s in specs} == {(256, 8192, 128)}


def test_scale_plans_its_second_stage_from_the_grids_rows():
    grid = plans.scale("smoke", rounds=3)
    assert len(grid) == 2 * 2 * 2 and {s.config for s in grid} == {"part11"}
    rows = [{"engine": "fused", "round": 0, "max_batch": s.max_batch, "chunk_tokens": s.chunk_tokens, "rate": s.rate,
             "served_rate": 10.0 * s.max_batch + s.chunk_tokens} for s in grid if s.engine == "fused"]
    assert plans.best_setting(rows, (2, 4), (16, 32), 2000.0) == (4, 32, 72.0)
    # the sweep's own rows (lower rates) leave the choice as it was
    slower = {**rows[0], "max_batch": 4, "chunk_tokens": 32, "rate": 36.0, "served_rate": 30.0}
    assert plans.best_setting(rows + [slower], (2, 4), (16, 32), 2000.0) == (4, 32, 72.0)
    full = plans.scale("smoke", rounds=3, rows=rows)
    assert full[:len(grid)] == grid
    more = full[len(grid):]
    assert {(s.max_batch, s.chunk_tokens) for s in more} == {(4, 32)}
    assert [(s.rate, s.round) for s in more] == [(36.0, 0), (36.0, 0), (2000.0, 1), (2000.0, 1), (2000.0, 2),
                                                 (2000.0, 2)]
    assert plans.best_setting(rows[:-1], (2, 4), (16, 32), 2000.0) is None


def test_plan_takes_a_notebooks_parameters():
    params = {"backend": "local", "profile": "smoke", "rounds": 1, "configs": ["part7"], "out_dir": "x"}
    assert [s.config for s in plans.plan("census", "smoke", params)] == ["part7", "part7"]
