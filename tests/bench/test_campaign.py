"""The campaign driver: ABBA expansion, warm-ups recorded, resume, and the time limit."""
from fusedlib.bench import campaign, paired, rows
from fusedlib.bench.spec import RunSpec


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


def test_every_planned_spec_is_valid_and_engines_compare_on_one_configuration():
    for phase in ("fast", "series"):
        for item in campaign.plan(phase):
            if isinstance(item, campaign.Pairs):
                a, b = item.a.given(), item.b.given()
                differ = {k for k in a if a[k] != b[k]}
                # fused vs chunked on one configuration, or one engine across configurations
                assert differ == {"engine"} or (a["engine"] == b["engine"] and differ), (phase, differ)


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
