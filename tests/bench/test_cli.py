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
    (["capacity", "--configs", "part12"], "config: must be one of"),
    (["capacity", "--rates", "fast"], "--rates"),
    (["census", "--rates", "4"], "--rates does not apply to census"),
])
def test_a_bad_value_stops_before_any_run(argv, says, tmp_path, fake, capsys):
    with pytest.raises(SystemExit) if "fast" in argv else _nothing():
        code = cli.main([*argv, "--profile", "smoke", "--out", str(tmp_path)])
        assert code == 2
    assert says in capsys.readouterr().err and fake == []


def test_an_unwritable_out_stops_before_any_run(tmp_path, fake, capsys):
    (tmp_path / "file").write_text("")
    assert cli.main(["capacity", "--profile", "smoke", "--out", str(tmp_path / "file" / "x")]) == 2
    assert "cannot write rows" in capsys.readouterr().err and fake == []


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
