"""The experiment notebooks' sources: pairing them (`make lab` runs `jupytext --sync`)
leaves them as committed, and each builds its runs from the run specification."""
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.py"))


def test_jupytext_sync_leaves_the_sources_unchanged(tmp_path):
    for path in NOTEBOOKS:
        shutil.copy(path, tmp_path / path.name)
    jupytext = Path(sys.executable).parent / "jupytext"
    subprocess.run([str(jupytext), "--sync", *sorted(str(p) for p in tmp_path.glob("*.py"))],
                   check=True, capture_output=True, cwd=tmp_path)
    changed = [p.name for p in NOTEBOOKS if (tmp_path / p.name).read_text() != p.read_text()]
    assert not changed, f"jupytext --sync rewrites {changed}: run it and commit the result"
    assert len(NOTEBOOKS) == 8


def test_the_transformers_peer_in_a_notebook_kernel_prints_no_tqdm_warning():
    # In a notebook's kernel without ipywidgets, importing transformers (through tqdm.auto)
    # warned "TqdmWarning: IProgress not found" into the gates' and the peer's cells.
    code = """
import sys, types, warnings
sys.modules["ipykernel.zmqshell"] = types.ModuleType("ipykernel.zmqshell")  # what tqdm.auto looks for
import IPython
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from fusedlib import load_model
    from fusedlib.bench.peer import to_transformers
    to_transformers(load_model("tiny"))
print(sum("IProgress" in str(w.message) for w in caught))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "0"
