"""The README as written: its engine example runs, its path table is `fusedlib.config.PARTS`,
its command-line example writes where git ignores, and .gitignore names only what the tree makes."""
import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow(3)
def test_readme_engine_example_runs():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Use the engine", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) <= 6
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    outputs = ast.literal_eval(done.stdout.strip())  # [[8 ids], [8 ids]]
    assert [len(o) for o in outputs] == [8, 8]
    shown = re.search(r"It prints\n\n```\n(.*?)\n```", section, re.S)
    assert shown, "the README shows what its example prints"
    assert ast.literal_eval(shown.group(1)) == outputs


def _switches(cell: str) -> dict:
    """`a="x", b=True` inside a table cell's backticks as a dict ({} for "defaults")."""
    code = re.search(r"`([^`]*)`", cell)
    if code is None or "=" not in code.group(1):
        return {}
    call = ast.parse(f"f({code.group(1)})", mode="eval").body
    return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}


def test_readme_path_table_is_the_parts_the_experiments_run():
    """Each row of the README's table of paths, resolved for a GPU, is that part's preset in
    fusedlib.config.PARTS (every part, nothing else); a row of "defaults" is what an Engine left
    unset takes on a GPU."""
    from fusedlib.config import PARTS, EngineConfig

    section = (ROOT / "README.md").read_text().split("## Use the engine", 1)[1]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("part "):
            rows["part" + cells[0].split(":")[0].split()[1]] = (cells[1], _switches(cells[1]))
    assert set(rows) == set(PARTS)
    for part, (cell, engine) in rows.items():
        assert EngineConfig(**engine).for_device("cuda") == PARTS[part].for_device("cuda"), part
        if cell.startswith("defaults"):  # "defaults (`...`)": what an Engine left unset takes on a GPU
            assert EngineConfig().for_device("cuda") == PARTS[part].for_device("cuda"), part


def test_readme_command_line_example_writes_where_git_ignores():
    text = (ROOT / "README.md").read_text()
    example = re.search(r"`(python -m fusedlib\.bench [^`]*)`", text).group(1)
    out = re.search(r"--out (\S+)", example).group(1)
    ignored = subprocess.run(["git", "check-ignore", "-q", str(Path(out) / "capacity.jsonl")], cwd=ROOT)
    assert ignored.returncode == 0, f"{out} is not ignored by git"


def test_gitignore_names_only_what_the_tree_makes():
    """Each folder .gitignore roots at the top is one the Makefile, the package or its build
    makes (a stale entry hides whatever later takes its name)."""
    makers = " ".join(p.read_text() for p in [ROOT / "Makefile", ROOT / "pyproject.toml",
                                                *(ROOT / "fusedlib").rglob("*.py")])
    for line in (ROOT / ".gitignore").read_text().splitlines():
        name = line.strip().strip("/")
        if line.startswith("/") and "*" not in name and name != "build":  # build/: setuptools' own
            named = re.search(rf"(?<![\w-]){re.escape(name)}[/\"')]", makers)  # as a path, not a word
            assert named, f".gitignore names {line}, which nothing here makes"


def test_readme_is_short_and_leads_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= 8 * 1024
    first = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    assert [line.split("#")[0].strip() for line in first.strip().splitlines()] == ["make book", "make test"]
    assert not re.search(r"\b[0-9a-f]{7,40}\b", text), "a commit hash in the README"
    assert not re.search(r"\b\d+ passed\b|campaign|session|lease", text)
