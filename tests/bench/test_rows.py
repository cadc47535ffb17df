"""Rows on disk: one JSONL file per experiment, appended run by run, read back; the header."""
import json
import os

import pytest

from fusedlib.bench import rows
from fusedlib.bench.spec import RunSpec

SPEC = RunSpec.build("capacity", "smoke", config="part7", engine="fused", rate=40, n_requests=3, seed=0, round=0)


def test_rows_append_and_read_back_with_nan_as_null(tmp_path):
    path = tmp_path / "x.jsonl"
    rows.append(path, [{"a": 1, "b": float("nan")}])
    rows.append(path, [{"a": 2}])
    assert rows.read(path) == [{"a": 1, "b": None}, {"a": 2}]
    assert rows.read(tmp_path / "none.jsonl") == []


def test_a_torn_last_line_is_skipped_and_cut_at_the_next_append(tmp_path):
    path = tmp_path / "x.jsonl"
    rows.append(path, [{"a": 1}])
    with open(path, "a") as f:
        f.write('{"a": 2, "b"')  # killed mid-write
    assert rows.read(path) == [{"a": 1}]
    rows.append(path, [{"a": 3}])
    assert rows.read(path) == [{"a": 1}, {"a": 3}]


@pytest.mark.parametrize("out,expected", [("d/", "d/capacity.jsonl"), ("d", "d/capacity.jsonl"),
                                          ("d/mine.jsonl", "d/mine.jsonl")])
def test_out_is_a_folder_of_experiment_files_or_one_file(out, expected):
    assert str(rows.rows_path(out, "capacity")) == expected


def test_an_unwritable_place_is_refused(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError, match="cannot write rows"):
        rows.check_writable(tmp_path / "file" / "capacity.jsonl")  # a file where the folder would be
    if os.getuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(OSError):
            rows.check_writable(locked / "capacity.jsonl")


def test_the_header_and_resume_match_a_run_by_its_key(tmp_path):
    row = {**rows.header(SPEC, "cpu"), "served_rate": 1.0}
    assert {k: row[k] for k in ("schema_version", "experiment", "profile", "config", "engine", "round")} == \
        {"schema_version": 7, "experiment": "capacity", "profile": "smoke", "config": "part7", "engine": "fused",
         "round": 0}
    assert len(row["code_version"]) == 12 and row["device_name"] == "cpu"
    assert rows.has_run([row], SPEC) and not rows.has_run([row], RunSpec.from_dict({**SPEC.as_dict(), "round": 1}))
    stale = {**row, "code_version": "0" * 12}
    assert rows.current([row, stale, {**row, "profile": "full"}], "smoke") == [row]


def test_code_version_covers_code_and_notebooks_not_data(tmp_path):
    for rel in ("fusedlib/a.py", "notebooks/01_x.py", "data/rows.jsonl"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("1")
    before = rows.code_version.__wrapped__(tmp_path)
    (tmp_path / "data/rows.jsonl").write_text(json.dumps({"new": 1}))
    assert rows.code_version.__wrapped__(tmp_path) == before
    (tmp_path / "notebooks/01_x.py").write_text("2")
    assert rows.code_version.__wrapped__(tmp_path) != before


def test_data_dir_is_the_env_var_else_the_checkouts_folder_by_profile(monkeypatch, tmp_path):
    monkeypatch.delenv("FUSEDLIB_DATA", raising=False)
    assert rows.data_dir("full").name == "data" and rows.data_dir("smoke").name == "data-smoke"
    monkeypatch.setenv("FUSEDLIB_DATA", str(tmp_path))
    assert rows.data_dir("full") == tmp_path


def test_the_commit_says_when_the_sources_differ_from_it(tmp_path, monkeypatch):
    """A checkout whose row-making sources differ from its commit is named "<commit>+modified":
    the commit alone would claim code that did not run."""
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("no git on this machine")
    monkeypatch.delenv("FUSEDLIB_GIT_COMMIT", raising=False)
    git = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)  # noqa: E731
    (tmp_path / "fusedlib").mkdir()
    (tmp_path / "fusedlib" / "engine.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    rows.git_commit.cache_clear()
    assert rows.git_commit(tmp_path) == head
    (tmp_path / "fusedlib" / "engine.py").write_text("x = 2\n")
    rows.git_commit.cache_clear()
    assert rows.git_commit(tmp_path) == f"{head}+modified"
    rows.git_commit.cache_clear()
