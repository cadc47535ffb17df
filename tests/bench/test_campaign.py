"""The campaign driver: ABBA expansion, warm-ups recorded, resume, and the time limit; the
phases' plans, and a tiny version of each run on the CPU."""
import dataclasses
from pathlib import Path

import pytest

from fusedlib.bench import campaign, paired, rows, runs
from fusedlib.bench.spec import SCHEMA_VERSION, RunSpec, stored_options


def _smoke_pairs(n):
    a = RunSpec.build("arrivals", profile="smoke", engine="fused", rate=400.0, n_requests=6, fused_ops=False)
    return campaign.Pairs("smoke: fused vs chunked", a, a.but(engine="chunked"), n)


def test_pairs_expand_to_warmups_then_abba():
    specs = _smoke_pairs(3).specs()
    assert [(s.engine, s.repeat, s.warmup) for s in specs] == [
        ("fused", 0, True), ("chunked", 0, True),
        ("fused", 1, False), ("chunked", 1, False), ("chunked", 2, False), ("fused", 2, False),
        ("fused", 3, False), ("chunked", 3, False)]


def test_comparisons_sharing_a_configuration_get_runs_of_their_own():
    a = _smoke_pairs(2)
    b = campaign.Pairs("smoke: fused alone", a.a, a.a.but(max_batch=8), 2)
    shared = {s.options()["comparison"] for s in a.specs() + b.specs() if s.engine == "fused" and s.max_batch == 32}
    assert shared == {a.name, b.name}


def test_phase_resumes_and_respects_its_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(campaign, "plan", lambda phase, pairs=5: [_smoke_pairs(2)])
    ticks = iter(range(0, 10**6, 100))  # a clock that advances 100 s per reading
    monkeypatch.setattr(campaign.time, "monotonic", lambda: next(ticks))
    # Room for one 100 s run: the first runs, then the driver stops before the next.
    left = campaign.run_phase("fast", tmp_path, limit_s=150)
    assert left == 5
    stored = rows.read_rows(tmp_path / "paired" / "arrivals")
    assert [(r["engine"], r["warmup"]) for r in stored] == [("fused", True)]
    # Again with room: the stored run is skipped, the rest run, and pairs come out of the rows.
    assert campaign.run_phase("fast", tmp_path, limit_s=1e12) == 0
    stored = rows.read_rows(tmp_path / "paired" / "arrivals")
    assert len(stored) == 6 and sum(r["warmup"] for r in stored) == 2
    a, b = paired.pair_runs(stored, "engine", "fused", "chunked", "served_rate")
    assert len(a) == len(b) == 2


# ------------------------------------------------------------------ the phases
REPO = Path(__file__).resolve().parents[2]
NEW_PHASES = [p for p in campaign.PHASES if p not in ("fast", "series")]


def _specs(item):
    return item.specs() if isinstance(item, (campaign.Pairs, campaign.Sweep)) else [item]


@pytest.mark.parametrize("phase", list(campaign.PHASES))
def test_each_phase_builds_valid_distinct_runs(phase):
    specs = campaign.expand(campaign.plan(phase))
    assert specs
    options = [tuple(sorted(s.resolved().options().items())) for s in specs]
    # Two runs with the same options would be one run: the second would be skipped as done.
    assert len(set(options)) == len(options)
    for item in campaign.plan(phase):
        if isinstance(item, (campaign.Pairs, campaign.Sweep)):
            a, b = item.a.given(), item.b.given()
            differ = {k for k in a if a[k] != b[k]}
            # fused vs chunked on one configuration, or one engine across configurations
            assert differ == {"engine"} or (a["engine"] == b["engine"] and differ), (phase, differ)
            assert all(s.comparison == item.name for s in _specs(item))


def test_sweep_warms_up_at_its_first_value_then_alternates_which_side_goes_first():
    a = RunSpec.build("arrivals", profile="smoke", engine="fused", rate=400.0, n_requests=6)
    sweep = campaign.Sweep("smoke sweep", a, a.but(engine="chunked"), "rate", (400.0, 300.0, 200.0))
    assert [(s.engine, s.rate, s.repeat, s.warmup) for s in sweep.specs()] == [
        ("fused", 400.0, 0, True), ("chunked", 400.0, 0, True),
        ("fused", 400.0, 1, False), ("chunked", 400.0, 1, False),
        ("chunked", 300.0, 1, False), ("fused", 300.0, 1, False),
        ("fused", 200.0, 1, False), ("chunked", 200.0, 1, False)]


def test_the_new_phases_measure_part_10_with_overlap_where_the_brief_says():
    part10 = campaign.expand(campaign.plan("part10"))
    gates = [s for s in part10 if s.experiment == "gates"]
    assert gates and all(s.overlap and s.cuda_graphs and s.graph_chunks for s in gates)
    traces = {(s.engine, s.overlap) for s in part10 if s.experiment == "step_trace"}
    assert traces == {(e, o) for e in ("fused", "chunked") for o in (True, False)}
    for phase in ("closed", "peer", "knees", "small_pool", "sensitivity"):
        ours = [s for s in campaign.expand(campaign.plan(phase)) if not s.experiment.startswith("peer")]
        assert ours and all(s.overlap and s.attention == "triton-balanced" for s in ours), phase
    closed = campaign.expand(campaign.plan("closed"))
    cells = {(s.workload, s.batch_size) for s in closed if s.experiment == "closed"}
    assert cells == {("mixed", 8), ("mixed", 32), ("mixed", 64), ("p256", 8), ("p256", 32)}
    # transformers' closed run of the book's batch sits in the same command as ours, warmed twice
    (peer,) = [s for s in closed if s.experiment == "peer"]
    assert (peer.workload, peer.batch_size, peer.warmups) == ("mixed", 64, 2)
    # part 10's target: ours on both sides of the peer, on the same 128 requests
    target = campaign.expand(campaign.plan("peer"))
    assert [s.experiment for s in target] == ["closed", "peer", "closed"]
    assert {(s.workload, s.batch_size) for s in target} == {("mixed_fixed", 128)}
    seeds = {s.seed for s in campaign.expand(campaign.plan("sensitivity"))}
    assert len(seeds) >= 5
    assert {s.rate for s in campaign.expand(campaign.plan("peer_open"))} >= {1.0, 2.0}
    eager = campaign.expand(campaign.plan("eager"))
    assert [s.experiment for s in eager[:1]] == ["gates"] and not eager[0].cuda_graphs  # part 7's gate first
    assert all(s.n_requests == 400 for s in eager if s.experiment == "arrivals")
    decode_graphs = campaign.expand(campaign.plan("decode_graphs"))
    assert all(s.cuda_graphs and not s.graph_chunks and s.attention == "triton-splitkv" for s in decode_graphs)
    # every configuration the book reports, gated at one commit
    gates = campaign.expand(campaign.plan("gates"))
    assert all(s.experiment == "gates" for s in gates)
    assert len({(s.attention, s.cuda_graphs, s.graph_chunks, s.whole_graphs, s.fused_ops, s.gate_up_silu,
                 s.overlap) for s in gates}) == len(gates) == 8
    # the engine the series ends on, first
    assert gates[0].whole_graphs and gates[0].overlap and gates[0].attention == "triton-parallel"
    # the second stream against the same engine without it, past the knees
    parallel = campaign.expand(campaign.plan("parallel", pairs=1))
    arms = {s.attention for s in parallel if s.experiment == "arrivals"}
    assert parallel[0].experiment == "gates" and arms == {"triton-parallel", "triton-balanced"}
    assert all(s.gate_up_silu and s.whole_graphs and s.rate == campaign.SATURATING_RATE
               for s in parallel if s.experiment == "arrivals")
    # whole graphs against piecewise, and fused against chunked with them, both past the knees
    whole = campaign.expand(campaign.plan("whole"))
    assert [s.experiment for s in whole[:3]] == ["gates", "step_trace", "step_trace"] and whole[0].whole_graphs
    arrivals = [s for s in whole if s.experiment == "arrivals"]
    assert {s.rate for s in arrivals} == {campaign.SATURATING_RATE}
    assert {(s.whole_graphs, s.graph_chunks, s.engine) for s in arrivals} == {
        (True, False, "fused"), (False, True, "fused"), (True, False, "chunked")}
    target = campaign.expand(campaign.plan("peer_whole"))
    assert [s.experiment for s in target] == ["closed", "peer", "closed"] and target[0].whole_graphs


def test_rows_of_the_phases_already_run_still_count_as_done():
    # data/paired holds schema-3 rows (before overlap, and before closed took repeat): the
    # series phase is done there, and so are the fast phase's gates and step traces (its
    # arrivals ran before runs carried a comparison name, so those would run again).
    out = REPO / "data"
    assert campaign.show_plan("series", out) == []
    left = campaign.show_plan("fast", out)
    assert left and {s.experiment for s in left} == {"arrivals"}
    assert all(s.comparison for s in left)
    before_overlap = [r for r in rows.read_rows(out / "paired" / "arrivals") if r["schema_version"] == 3]
    assert before_overlap
    for row in before_overlap:
        assert "overlap" not in row
        spec = RunSpec.build(**stored_options(row))
        assert runs.already_done(out / "paired" / "arrivals", spec.resolved())
        assert not runs.already_done(out / "paired" / "arrivals", spec.but(overlap=True).resolved())


def _smoke(spec: RunSpec) -> RunSpec:
    """The same run, scaled to the tiny model on the CPU: no graphs, the reference attention
    and ops, a few requests at rates the tiny model's scale (x10), small batches."""
    given = spec.given()
    changes = {"profile": "smoke", "model": None}
    if "attention" in given:  # named, as in the full plan: gate rows name the attention they ran
        changes["attention"] = "torch"
    if "fused_ops" in given:
        changes["fused_ops"] = None
    if given.get("cuda_graphs"):
        changes.update(cuda_graphs=False, graph_chunks=False, whole_graphs=False)
    if given.get("rate") is not None:
        changes["rate"] = given["rate"] * 10
    if "n_requests" in given:
        changes["n_requests"] = 6
    if given.get("pool_gib") is not None:
        changes["pool_gib"] = 24 * 8192 / 2**30  # 24 of the tiny model's 8 KiB blocks: a few requests
    if given.get("batch_size") is not None:
        changes["batch_size"] = min(given["batch_size"], 6)
    return RunSpec.build(**{**given, **changes})


def _tiny(items: list) -> list:
    """The phase on the smoke profile, cut to one item of each kind (a plain run per
    experiment, Pairs with one pair, a Sweep over two values): every kind of run the phase
    makes, at a test's cost."""
    kinds, out = set(), []
    for item in items:
        kind = (type(item), item.experiment if isinstance(item, RunSpec) else item.a.experiment)
        if kind in kinds:
            continue
        kinds.add(kind)
        if isinstance(item, RunSpec):
            out.append(_smoke(item))
        elif isinstance(item, campaign.Pairs):
            out.append(dataclasses.replace(item, a=_smoke(item.a), b=_smoke(item.b), pairs=1))
        else:
            out.append(dataclasses.replace(item, a=_smoke(item.a), b=_smoke(item.b), values=item.values[:2]))
    return out


@pytest.mark.parametrize("phase", NEW_PHASES)
def test_a_tiny_version_of_each_phase_runs_resumes_and_reports(phase, tmp_path, monkeypatch):
    items = _tiny(campaign.plan(phase))
    monkeypatch.setitem(campaign.PHASES, phase, lambda pairs: items)
    assert campaign.run_phase(phase, tmp_path, limit_s=1e12) == 0
    assert campaign.show_plan(phase, tmp_path) == []  # every run stored: nothing left
    assert campaign.run_phase(phase, tmp_path, limit_s=1e12) == 0
    lines = campaign.report(phase, tmp_path)
    compared = [i for i in items if not isinstance(i, RunSpec)]
    assert len(lines) == sum(len(i.values) if isinstance(i, campaign.Sweep) and not i.pooled else 1
                             for i in compared)
    assert not any("no complete pair" in line for line in lines)
    for experiment in {s.experiment for s in campaign.expand(items)}:
        stored = rows.read_rows(tmp_path / "paired" / experiment)
        assert stored and all(r["profile"] == "smoke" and r["schema_version"] == SCHEMA_VERSION for r in stored)
        if experiment == "closed":  # warm-up passes are recorded, and left out of the median
            assert {r["stat"] for r in stored} == {"warmup", "run", "median"}


def test_report_pairs_closed_runs_by_their_median_rows(tmp_path, monkeypatch):
    a = RunSpec.build("closed", profile="smoke", engine="fused", workload="p256", batch_size=4,
                      warmups=1, repeats=2)
    item = campaign.Pairs("smoke closed: fused vs chunked", a, a.but(engine="chunked"), 2)
    monkeypatch.setitem(campaign.PHASES, "closed", lambda pairs: [item])
    assert campaign.run_phase("closed", tmp_path, limit_s=1e12) == 0
    stored = rows.read_rows(tmp_path / "paired" / "closed")
    assert len(stored) == 6 * 4  # 6 runs: a warm-up pass, two measured, their median
    values = campaign.measured(tmp_path, [s for pair in item.pair_specs() for s in pair])
    medians = {(r["engine"], r["repeat"]): r["output_throughput"] for r in stored
               if r["stat"] == "median" and not r["warmup"]}
    assert {(s.engine, s.repeat): v for s, v in values.items()} == medians
    (line,) = campaign.report("closed", tmp_path)
    assert line.startswith("smoke closed: fused vs chunked: fused / chunked: output_throughput ") and "n=2" in line


def test_results_pair_stored_rows_and_leave_out_warmups_and_unfinished_pairs(tmp_path, monkeypatch):
    item = _smoke_pairs(3)
    served = {("fused", 0): 99.0, ("chunked", 0): 1.0, ("fused", 1): 12.0, ("chunked", 1): 10.0,
              ("fused", 2): 11.0, ("chunked", 2): 10.0, ("fused", 3): 13.0}  # pair 3's chunked run never finished
    rows.append_rows(tmp_path / "paired" / "arrivals",
                     [{**s.resolved().row_fields(), "served_rate": served[(s.engine, s.repeat)]}
                      for s in item.specs() if (s.engine, s.repeat) in served])
    monkeypatch.setitem(campaign.PHASES, "fast", lambda pairs: [item])
    (result,) = campaign.results("fast", tmp_path)
    assert len(result.runs) == 7  # every stored run, the warm-ups too
    assert [(a.repeat, b.repeat) for a, b in result.pairs()] == [(1, 1), (2, 2)]
    assert result.values() == ([12.0, 11.0], [10.0, 10.0])  # the warm-ups' 99 / 1 is no pair
    c = result.comparison()
    assert c.n == 2 and 1.1 <= c.ratio <= 1.2
    (line,) = campaign.report("fast", tmp_path)
    assert f"served_rate {c.describe()}" in line


def test_a_sweep_over_rates_has_no_pooled_comparison():
    a = RunSpec.build("arrivals", profile="smoke", engine="fused", rate=400.0, n_requests=6)
    sweep = campaign.Sweep("smoke sweep", a, a.but(engine="chunked"), "rate", (400.0, 300.0))
    runs = {s: {"served_rate": 5.0} for s in sweep.specs()}
    assert len(campaign.Result(sweep, runs).pairs()) == 2
    assert campaign.Result(sweep, runs).comparison() is None
    pooled = dataclasses.replace(sweep, pooled=True)
    assert campaign.Result(pooled, {s: {"served_rate": 5.0} for s in pooled.specs()}).comparison().n == 2
