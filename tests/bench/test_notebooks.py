"""The experiment notebooks' sources: pairing them (`make lab` runs `jupytext --sync`) leaves
them as committed; each is named for an experiment and declares the common parameters, its
own defaulting to the plan's (None)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fusedlib.bench import plans
from fusedlib.bench.runall import parameters

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.py"))
COMMON = ("backend", "gpu", "profile", "out_dir", "rounds", "time_limit_s")  # what run-all sets in every notebook


def test_one_notebook_per_experiment_with_the_common_parameters():
    assert [p.stem.split("_", 1)[1] for p in NOTEBOOKS] == list(plans.PLANS)
    assert [p.stem[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06", "07", "08"]
    for path in NOTEBOOKS:
        params = parameters(path)
        assert set(COMMON) <= set(params), path.name
        assert params["profile"] == "smoke" and params["time_limit_s"] == 0 and params["out_dir"] == "data-smoke"
        own = {k: v for k, v in params.items() if k not in COMMON}
        assert all(v is None for v in own.values()), (path.name, own)


def test_a_notebooks_rows_folder_is_relative_to_the_repository_not_to_where_it_runs(tmp_path, monkeypatch):
    """papermill starts a notebook in notebooks/; its default out_dir still names the checkout's
    data-smoke/ (git-ignored), wherever the process started."""
    from fusedlib.bench import runner

    monkeypatch.chdir(tmp_path)
    out = parameters(NOTEBOOKS[0])["out_dir"]
    assert runner.place(out) == REPO / "data-smoke" and runner.place(tmp_path) == tmp_path
    ignored = subprocess.run(["git", "check-ignore", "-q", str(runner.place(out) / "gates.jsonl")], cwd=REPO)
    assert ignored.returncode == 0


@pytest.mark.slow(2)
def test_jupytext_sync_leaves_the_sources_unchanged(tmp_path):
    for path in NOTEBOOKS:
        shutil.copy(path, tmp_path / path.name)
    jupytext = Path(sys.executable).parent / "jupytext"
    subprocess.run([str(jupytext), "--sync", *sorted(str(p) for p in tmp_path.glob("*.py"))],
                   check=True, capture_output=True, cwd=tmp_path)
    changed = [p.name for p in NOTEBOOKS if (tmp_path / p.name).read_text() != p.read_text()]
    assert not changed, f"jupytext --sync rewrites {changed}: run it and commit the result"


@pytest.mark.slow(5)
def test_the_transformers_peer_in_a_notebook_kernel_prints_no_tqdm_warning():
    # In a notebook's kernel without ipywidgets, importing transformers (through tqdm.auto)
    # warned "TqdmWarning: IProgress not found" into the peer's cells.
    code = """
import sys, types, warnings
sys.modules["ipykernel.zmqshell"] = types.ModuleType("ipykernel.zmqshell")  # what tqdm.auto looks for
import IPython
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from fusedlib import load_model
    from fusedlib.bench.hf import to_transformers
    to_transformers(load_model("tiny"))
print(sum("IProgress" in str(w.message) for w in caught))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "0"
