"""The engine stays small and stands alone.

`fusedlib/` minus `fusedlib/bench/` is the engine. It is meant to be read in an afternoon, so
its size is a budget in code lines: every line a reader has to follow, docstrings included
(blank lines and comments are not counted). And it imports nothing from the measuring harness.
"""
from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "fusedlib"
# 1,750 until part 12: the doors (a model that is not one, Triton without a GPU), the whole-step
# graphs' named sections and the Hopper prompt kernel's tile choice bought about 40 lines.
CODE_LINE_BUDGET = 1_800
SKIPPED_TOKENS = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                  tokenize.DEDENT, tokenize.ENDMARKER}


def code_lines(source: str) -> int:
    """Lines holding at least one token that is not a comment or layout (docstrings count)."""
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in SKIPPED_TOKENS:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines)


def engine_files() -> list[Path]:
    return sorted(p for p in ENGINE.rglob("*.py") if "bench" not in p.relative_to(ENGINE).parts)


def test_code_lines_count_code_only():
    source = '''"""Module docstring,
over two lines."""
import os  # a comment


def f(x):
    """Docstring."""
    # a comment line
    return (x +
            1)
'''
    # the module docstring's two lines, import, def, the docstring, and the return statement's two.
    assert code_lines(source) == 7


def test_the_engine_stays_within_its_code_line_budget():
    counts = {str(p.relative_to(ROOT)): code_lines(p.read_text()) for p in engine_files()}
    assert "fusedlib/engine.py" in counts and "fusedlib/attention/triton_kernels.py" in counts
    assert not [p for p in counts if p.startswith("fusedlib/bench/")]
    total = sum(counts.values())
    largest = sorted(counts.items(), key=lambda item: -item[1])[:5]
    assert total <= CODE_LINE_BUDGET, f"engine has {total} code lines (budget {CODE_LINE_BUDGET}); largest: {largest}"


def _imported_modules(path: Path, source: str | None = None) -> list[str]:
    """Absolute names of the modules `path` (or `source`, as if at `path`) imports, relative
    imports resolved."""
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]  # ("fusedlib", "attention")
    names = []
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else ()
            module = ".".join([*base, *([node.module] if node.module else [])])
            names += [module] + [f"{module}.{alias.name}" for alias in node.names]
    return names


def test_the_engine_imports_nothing_from_the_harness():
    harness = {path: [m for m in _imported_modules(path) if m.startswith("fusedlib.bench")]
               for path in engine_files()}
    assert not {str(p.relative_to(ROOT)): ms for p, ms in harness.items() if ms}
    # The check sees relative imports, as a harness module inside the package would write them.
    assert "fusedlib.bench.rows" in _imported_modules(ENGINE / "attention" / "x.py", "from ..bench import rows")


@pytest.mark.slow(3)
def test_the_engine_serves_with_the_harness_dependencies_absent():
    # A fresh interpreter in which pandas, matplotlib, modal and transformers cannot be
    # imported (nor the harness itself): the README's engine example still runs.
    import subprocess
    import sys

    script = """
import importlib.abc, sys
BLOCKED = ("pandas", "matplotlib", "modal", "transformers", "fusedlib.bench")
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.startswith(BLOCKED):
            raise ImportError(f"{name} is blocked")
sys.meta_path.insert(0, Block())
from fusedlib import Engine, load_model
engine = Engine(load_model("tiny"), kind="fused", max_batch=4, chunk_tokens=16, attention="torch")
out = engine.generate([[1, 2, 3], [4, 5, 6, 7]], max_new_tokens=3)
assert [len(o) for o in out] == [3, 3], out
print("served", [m for m in BLOCKED if m in sys.modules])
"""
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "served []"
