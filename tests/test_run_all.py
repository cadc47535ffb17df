"""`make run-all`'s path, notebooks -> rows: the driver executes a notebook with papermill,
or as a script where papermill is missing, and skips it once its planned runs have rows;
`make -n run-all` names every notebook and `make help` every target."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fusedlib.bench import rows
from fusedlib.bench.runall import run_script

REPO = Path(__file__).resolve().parents[1]
HEADER = ("schema_version", "experiment", "profile", "code_version", "commit", "device_name", "time_utc", "config",
          "engine", "round")


def _notebook(tmp_path: Path, name: str, **params) -> Path:
    """A copy of a notebook with some parameters' defaults changed (small runs)."""
    text = (REPO / "notebooks" / name).read_text()
    for key, value in params.items():
        text, n = re.subn(rf"^{key} = .*$", f"{key} = {value!r}", text, count=1, flags=re.M)
        assert n == 1, key
    (tmp_path / "nb").mkdir(exist_ok=True)
    path = tmp_path / "nb" / name
    path.write_text(text)
    return path


def _run_all(tmp_path, *notebooks, env=None, args=()):
    cmd = [sys.executable, "-m", "fusedlib.bench.runall", "--profile", "smoke", "--backend", "local", "--rounds", "2",
           "--out-dir", str(tmp_path / "rows"), "--executed", str(tmp_path / "executed"), *args, *map(str, notebooks)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env={**os.environ, **(env or {})},
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow(13)
def test_papermill_runs_a_notebook_its_rows_have_the_header_and_a_rerun_skips_it(tmp_path):
    nb = _notebook(tmp_path, "04_capacity.py", rates=[500.0], n_requests=3)
    out = _run_all(tmp_path, nb, args=("--configs", "part10"))  # `make run-all CONFIGS=part10`
    assert "device local cpu, profile smoke" in out and "papermill" in out and "every notebook complete" in out
    assert re.search(r"estimate 04_capacity: 4 runs to go, about \d+ s", out)
    got = rows.read(tmp_path / "rows" / "capacity.jsonl")
    assert [(r["config"], r["engine"], r["round"]) for r in got] == [
        ("part10", "fused", 0), ("part10", "chunked", 0), ("part10", "chunked", 1), ("part10", "fused", 1)]
    for row in got:
        assert all(k in row for k in HEADER) and row["schema_version"] == 7 and row["device_name"] == "cpu"
        assert row["code_version"] == rows.code_version() and row["goodput_rate"] is not None
        assert {"steady_rate", "steady_window_s", "steady_fraction", "saturated", "served_rate"} <= set(row)
    assert (tmp_path / "executed" / "04_capacity.ipynb").exists()
    assert "skip 04_capacity: all 4 planned runs have rows" in _run_all(tmp_path, nb, args=("--configs", "part10"))


@pytest.mark.slow(7)
def test_without_papermill_a_notebook_runs_as_a_script(tmp_path):
    blocked = tmp_path / "blocked"
    (blocked / "papermill").mkdir(parents=True)
    (blocked / "papermill" / "__init__.py").write_text("raise ImportError('not here')\n")
    nb = _notebook(tmp_path, "03_attention.py", backends=["triton"])
    out = _run_all(tmp_path, nb, env={"PYTHONPATH": f"{blocked}{os.pathsep}{REPO}"})
    assert "notebooks as scripts" in out and "fraction_of_copy" in out  # the table, printed
    got = rows.read(tmp_path / "rows" / "attention.jsonl")
    assert {r["backend"] for r in got} == {"triton"} and all(k in got[0] for k in HEADER)


def test_run_script_replaces_the_parameters_and_prints_the_last_value(tmp_path, capsys):
    nb = tmp_path / "x.py"
    nb.write_text('# %% [markdown]\n# # title\n\n# %% tags=["parameters"]\na = 1\nb = 2\n\n# %%\na + b\n')
    run_script(nb, {"a": 10})
    assert capsys.readouterr().out.strip() == "12"


def test_an_unwritable_out_dir_is_refused_before_any_notebook(tmp_path):
    (tmp_path / "file").write_text("")
    done = subprocess.run([sys.executable, "-m", "fusedlib.bench.runall", "--profile", "smoke", "--backend", "local",
                           "--out-dir", str(tmp_path / "file" / "rows"), str(REPO / "notebooks" / "01_gates.py")],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 2 and "cannot write rows" in done.stderr and "== 01_gates" not in done.stdout


def test_an_unknown_configuration_is_refused_before_any_notebook(tmp_path):
    done = subprocess.run([sys.executable, "-m", "fusedlib.bench.runall", "--profile", "smoke", "--backend", "local",
                           "--out-dir", str(tmp_path), "--configs", "part13", str(REPO / "notebooks" / "04_capacity.py")],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 2 and "config: must be one of" in done.stderr and "== 04_capacity" not in done.stdout



@pytest.mark.parametrize("argv,says", [
    (["--profile", "bogus"], "argument --profile: invalid choice: 'bogus'"),
    (["--experiments", "bogus"], "unknown experiment 'bogus'; experiments are gates, census"),
    (["--experiments", "gates bogus"], "unknown experiment 'bogus'"),
    (["--experiments", ""], "unknown experiment ''"),
    (["--experiments", "capacity", "--rounds", "0"], "rounds: must be an integer >= 1, got 0"),
    (["--experiments", "capacity", "--time-limit", "-1"], "--time-limit: must be a number of seconds >= 0"),
    (["--experiments", "capacity", "--profile", "full", "--backend", "local"], "profile full needs a CUDA GPU"),
])
def test_run_all_names_the_wrong_value_in_one_line(argv, says, tmp_path, capsys, monkeypatch):
    from fusedlib.bench import runall

    monkeypatch.setattr(runall, "execute", lambda *a: pytest.fail("a notebook ran"))
    with pytest.raises(SystemExit) as e:
        runall.main(["--backend", "local", "--out-dir", str(tmp_path), *argv])
    err = capsys.readouterr().err
    assert e.value.code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def test_make_run_all_hands_its_variables_to_the_driver_as_given():
    make = subprocess.run(["make", "-n", "run-all", "PROFILE=bogus", "EXPERIMENTS=bogus"], capture_output=True,
                          text=True, cwd=REPO, check=True).stdout
    assert "fusedlib.bench.runall" in make and "--profile bogus" in make and '--experiments "bogus"' in make


def test_make_dry_run_names_every_experiment_and_help_every_target():
    make = subprocess.run(["make", "-n", "run-all", "PROFILE=smoke"], capture_output=True, text=True, cwd=REPO,
                          check=True).stdout
    from fusedlib.bench.plans import PLANS

    assert f'--experiments "{" ".join(PLANS)}"' in make
    assert "fusedlib.bench.runall" in make and "--rounds" not in make and "--configs" not in make
    some = subprocess.run(["make", "-n", "run-all", "EXPERIMENTS=capacity peer", "CONFIGS=part10", "ROUNDS=3"],
                          capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert '--configs "part10"' in some and "--rounds 3" in some and '--experiments "capacity peer"' in some
    helped = subprocess.run(["make", "help"], capture_output=True, text=True, cwd=REPO, check=True).stdout
    makefile = (REPO / "Makefile").read_text()
    targets = set(re.search(r"^\.PHONY: (.*)$", makefile, re.M).group(1).split())
    assert targets == set(re.findall(r"^\s+make (\S+)", helped, re.M))
    assert "SYSTEM_PYTHON" in helped and "TIME_LIMIT" in helped
    assert {"book", "test", "run-all", "clean", "wheels", "help"} <= targets


def test_make_book_hands_the_rows_folder_to_the_pages(tmp_path):
    dry = subprocess.run(["make", "-n", "book", f"DATA={tmp_path}"], capture_output=True, text=True, cwd=REPO,
                         check=True).stdout
    assert f"FUSEDLIB_DATA={tmp_path}" in dry
