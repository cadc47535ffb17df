"""The harness stays small, its modules import one another in one direction, and the modules
the book's pages import load without torch and triton.

Code lines are counted as tests/test_layout.py counts the engine's, except that docstrings
count as code here (the issue's larger count)."""
from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "fusedlib" / "bench"
# fusedlib/bench/ and scripts/ together, the book's modules included. 4,000 through part 11;
# part 12 adds a chapter (its figures module: ~280 lines for six tables and their verdicts), the
# census's GPU-time denominator, the peer's release of kept engines, open-loop rows' request
# times and the prompt benchmark's packed chunk of several requests (the engine's own shape): 4,400.
BUDGET = 4_400
PAGE_MODULES = tuple(f"figures.{p.stem}" for p in sorted((HARNESS / "figures").glob("*.py")))
BOOK_MODULES = ("stats", "text", "plots", "predictions", *PAGE_MODULES)  # what the pages import


def _engine_layout():
    """tests/test_layout.py, whose code_lines both budgets use (one way to count)."""
    spec = importlib.util.spec_from_file_location("engine_layout", ROOT / "tests" / "test_layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


code_lines = _engine_layout().code_lines


def harness_files() -> list[Path]:
    return sorted([*HARNESS.rglob("*.py"), *(ROOT / "scripts").rglob("*")])


def test_code_lines_count_docstrings_as_code():
    assert code_lines('"""Doc,\nover two."""\nimport os  # c\n\n# c\nx = (1 +\n     2)\n') == 5


def test_the_harness_stays_within_its_budget():
    counts = {str(p.relative_to(ROOT)): code_lines(p.read_text()) for p in harness_files() if p.suffix == ".py"}
    total = sum(counts.values())
    largest = sorted(counts.items(), key=lambda kv: -kv[1])[:5]
    assert total <= BUDGET, f"the harness has {total} code lines (budget {BUDGET}); largest: {largest}"
    assert not (ROOT / "scripts").exists() or sum(len(p.read_text().splitlines())
                                                  for p in (ROOT / "scripts").rglob("*") if p.is_file()) <= 300


def test_no_harness_file_is_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in HARNESS.rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert not long, f"harness files over 400 lines: {long}"


def _imports(path: Path) -> set[str]:
    """The harness modules `path` imports, anywhere in it (relative imports resolved)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module] if node.module else [a.name for a in node.names]
            out.update(n.split(".")[0] for n in names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fusedlib.bench"):
            rest = node.module.split(".")[2:]
            out.update(rest[:1] or [a.name for a in node.names])
    return {m for m in out if (HARNESS / f"{m}.py").exists()} - {path.stem}


def test_no_import_cycles_inside_the_harness():
    graph = {p.stem: _imports(p) for p in HARNESS.glob("*.py") if p.stem not in ("__init__", "__main__")}
    state: dict[str, int] = {}

    def visit(node, trail):
        if state.get(node) == 1:
            raise AssertionError(f"import cycle: {' -> '.join(trail + [node])}")
        if state.get(node) == 2:
            return
        state[node] = 1
        for other in sorted(graph.get(node, ())):
            visit(other, trail + [node])
        state[node] = 2
    for module in sorted(graph):
        visit(module, [])


def test_the_chain_from_runner_to_an_experiment_is_short():
    """runner -> measure (by experiment) -> one experiment module -> the engine: the experiment
    modules import the shared helpers, never one another, and nothing else imports them."""
    graph = {p.stem: _imports(p) for p in HARNESS.glob("*.py")}
    experiments = graph["measure"] - {"engines", "spec"}
    assert experiments == {"census", "gates", "kernels", "peer", "runs"}
    for module in experiments:
        assert not graph[module] & experiments, (module, graph[module] & experiments)
    importers = {m for m, deps in graph.items() if deps & experiments and m not in ("__init__", "__main__")}
    assert importers == {"measure"}, importers
    assert not graph["runner"] & experiments and "measure" in graph["runner"]


BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("torch", "triton"):
            raise ImportError(f"{name} is blocked")
sys.meta_path.insert(0, Block())
"""
# Each module's import, "ok" or its traceback, as JSON.
IMPORT_EACH = BLOCK + """
import importlib, json, traceback
loaded = {}
for module in sys.argv[1:]:
    try:
        importlib.import_module(f"fusedlib.bench.{module}")
        loaded[module] = "ok"
    except Exception:
        loaded[module] = traceback.format_exc()[-2000:]
print(json.dumps(loaded))
"""
WITHOUT_TORCH = ("spec", "rows", "plans", "runner", "runall") + BOOK_MODULES


@pytest.fixture(scope="module")
def loaded_without_torch() -> dict[str, str]:
    """One process imports every module in turn: torch and triton can load in none of them, so
    an import that needs them fails whatever was imported before (a process each took ~8 s)."""
    done = subprocess.run([sys.executable, "-c", IMPORT_EACH, *WITHOUT_TORCH], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("module", WITHOUT_TORCH)
def test_the_pages_and_the_skip_check_load_without_torch(module, loaded_without_torch):
    assert loaded_without_torch[module] == "ok", loaded_without_torch[module]
