"""The command line: its help cites no commit, --out names a folder or a file, and a bad
value or an unwritable place stops it before any run with one line naming the problem."""
import re

import pytest

from fusedlib.bench import cli, measure, rows, runner


@pytest.fixture
def fake(monkeypatch):
    calls = []
    monkeypatch.setattr(measure, "run", lambda spec: calls.append(spec) or [{"device_name": "cpu", "x": 1}])
    return calls


def test_help_cites_no_commit_hashes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    assert "capacity" in text and "--out" in text
    assert not re.search(r"\b[0-9a-f]{7,40}\b", text), "a commit hash in --help"


def test_out_folder_with_a_trailing_slash_gets_the_experiments_file(tmp_path, fake, capsys):
    assert cli.main(["attention", "--profile", "smoke", "--backends", "triton", "--out", f"{tmp_path}/rows/"]) == 0
    assert [r["attention"] for r in rows.read(tmp_path / "rows" / "attention.jsonl")] == ["triton"]
    assert not (tmp_path / "rows" / ".jsonl").exists()
    assert cli.main(["attention", "--profile", "smoke", "--backends", "triton", "--out", f"{tmp_path}/rows/"]) == 0
    assert len(fake) == 1  # the second call found its row


@pytest.mark.parametrize("argv,says", [
    (["capacity", "--configs", "part13"], "config: must be one of"),
    (["capacity", "--rates", "fast"], "--rates"),
    (["census", "--rates", "4"], "--rates does not apply to census"),
])
def test_a_bad_value_stops_before_any_run(argv, says, tmp_path, fake, capsys):
    with pytest.raises(SystemExit) if "fast" in argv else _nothing():
        code = cli.main([*argv, "--profile", "smoke", "--out", str(tmp_path)])
        assert code == 2
    assert says in capsys.readouterr().err and fake == []


@pytest.mark.parametrize("argv,says", [
    (["capacity", "--rounds", "0"], "rounds: must be an integer >= 1, got 0"),
    (["peer", "--rounds", "-1"], "rounds: must be an integer >= 1, got -1"),
    (["scale", "--time-limit", "-1"], "--time-limit: must be a number of seconds >= 0"),
])
def test_rounds_and_time_limits_out_of_range_stop_before_any_run(argv, says, tmp_path, fake, capsys):
    with pytest.raises(SystemExit) if "--time-limit" in argv else _nothing():
        assert cli.main([*argv, "--profile", "smoke", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and fake == []


def test_a_setup_this_machine_cannot_run_stops_before_any_run(tmp_path, fake, capsys, monkeypatch):
    """The full profile without a GPU, Modal without a token, an experiment's package missing:
    one line saying what to do, no run, no row."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("MODAL_TOKEN_ID", raising=False)
    real = runner.find_spec
    monkeypatch.setattr(runner, "find_spec", lambda name: None if name == "transformers" else real(name))
    for argv, says in [(["capacity", "--profile", "full"], "profile full needs a CUDA GPU"),
                       (["capacity", "--profile", "full", "--backend", "modal"], "needs a Modal token: run `modal token new`"),
                       (["peer", "--profile", "smoke"], "peer needs transformers: pip install -e '.[bench]'"),
                       (["gates", "--profile", "smoke"], "gates needs transformers")]:
        assert cli.main([*argv, "--out", str(tmp_path / "rows")]) == 2, argv
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1, (argv, err)
    assert fake == [] and not list((tmp_path / "rows").glob("*.jsonl"))


def test_an_unwritable_out_stops_before_any_run(tmp_path, fake, capsys):
    (tmp_path / "file").write_text("")
    assert cli.main(["capacity", "--profile", "smoke", "--out", str(tmp_path / "file" / "x")]) == 2
    assert "cannot write rows" in capsys.readouterr().err and fake == []


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
