"""What the notebooks call: missing runs only, rows appended run by run, a time limit that
stops before a run, a failed run stored as an error row, an unwritable place refused first."""
import pytest

from fusedlib.bench import measure, rows, runner
from fusedlib.bench.plans import capacity

SPECS = capacity("smoke", rounds=2, configs=["part7"], rates=[50], n_requests=3)


@pytest.fixture
def fake(monkeypatch):
    calls = []

    def run(spec):
        calls.append(spec)
        return [{"device_name": "cpu", "served_rate": 1.0 + spec.round}]
    monkeypatch.setattr(measure, "run", run)
    return calls


def test_runs_append_as_they_finish_and_a_rerun_runs_only_the_missing(tmp_path, fake):
    runner.execute(SPECS[:2], tmp_path, log=lambda _: None)
    assert len(rows.read(tmp_path / "capacity.jsonl")) == 2
    assert runner.missing(SPECS, tmp_path) == SPECS[2:]
    new = runner.execute(SPECS, tmp_path, log=lambda _: None)
    assert fake == SPECS and len(new) == 2
    got = rows.read(tmp_path / "capacity.jsonl")
    assert [(r["engine"], r["round"], r["served_rate"], r["max_batch"]) for r in got] == [
        ("fused", 0, 1.0, 32), ("chunked", 0, 1.0, 32), ("chunked", 1, 2.0, 32), ("fused", 1, 2.0, 32)]
    assert not runner.missing(SPECS, tmp_path)


def test_the_time_limit_stops_before_a_run_it_cannot_finish(tmp_path, monkeypatch, fake):
    clock = iter(range(0, 1000, 10))  # every run takes 10 s of this clock
    monkeypatch.setattr(runner.time, "monotonic", lambda: next(clock))
    said = []
    runner.execute(SPECS, tmp_path, time_limit_s=25, log=said.append)
    assert len(fake) == 1 and "3 runs left" in said[-1]


def test_a_failed_run_is_an_error_row_and_stops_the_experiment(tmp_path, monkeypatch):
    def boom(spec):
        raise ValueError("no")
    monkeypatch.setattr(measure, "run", boom)
    with pytest.raises(RuntimeError, match="delete it to run it again"):
        runner.execute(SPECS, tmp_path, log=lambda _: None)
    got = rows.read(tmp_path / "capacity.jsonl")
    assert [r["error"] for r in got] == ["ValueError: no"] and got[0]["round"] == 0
    assert runner.missing(SPECS, tmp_path) == SPECS[1:]


def test_an_unwritable_out_is_refused_before_any_run(tmp_path, fake):
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError, match="cannot write rows"):
        runner.execute(SPECS, tmp_path / "file", log=lambda _: None)
    assert fake == []


def test_table_shows_this_code_versions_rows(tmp_path, fake):
    runner.execute(SPECS[:2], tmp_path, log=lambda _: None)
    rows.append(tmp_path / "capacity.jsonl", [{**rows.read(tmp_path / "capacity.jsonl")[0], "code_version": "old"}])
    frame = runner.table(tmp_path, "capacity", "smoke", ["engine", "served_rate", "nothing"])
    assert list(frame.columns) == ["engine", "served_rate"] and len(frame) == 2


def test_a_row_keeps_its_own_value_where_the_run_left_an_option_unset(tmp_path, monkeypatch):
    # A step census leaves chunk_tokens unset: its rows carry each step's own chunk, and the run
    # still counts as done; the saturated census sets it, and its rows carry the setting.
    from fusedlib.bench.spec import RunSpec

    step = RunSpec.build("census", "smoke", config="part7", engine="fused")
    saturated = RunSpec.build("census", "smoke", config="part11", engine="fused", max_batch=4, chunk_tokens=32,
                              rate=100.0, n_requests=8, seed=0)
    monkeypatch.setattr(measure, "run", lambda spec: [{"device_name": "cpu", "step": "mixed", "chunk_tokens": 16},
                                                      {"device_name": "cpu", "step": "decode", "chunk_tokens": 0}])
    runner.execute([step, saturated], tmp_path, log=lambda _: None)
    got = rows.read(tmp_path / "census.jsonl")
    assert [r["chunk_tokens"] for r in got] == [16, 0, 32, 32]
    assert not runner.missing([step, saturated], tmp_path)
