"""The README as written: its engine example runs, its path table builds the measured
configurations, its loop figures round the committed rows."""
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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


def test_readme_path_table_is_the_configurations_the_experiments_run():
    """Each row of the README's table of paths, resolved for a GPU, is that part's configuration
    in fusedlib.bench.spec.CONFIGS, and part 10's row is the engine's own default there."""
    from fusedlib.bench.spec import CONFIGS
    from fusedlib.config import EngineConfig

    section = (ROOT / "README.md").read_text().split("## Use the engine", 1)[1]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("part "):
            rows["part" + cells[0].split(":")[0].split()[1]] = (_switches(cells[1]), _switches(cells[2]))
    assert set(rows) == set(CONFIGS)
    for part, (model, engine) in rows.items():
        want = CONFIGS[part]
        if part in ("part10", "part11"):  # "defaults (`...`)": the switches it names are the engine's default
            assert model == {} and EngineConfig(**{k: v for k, v in engine.items() if k not in (
                "max_batch", "chunk_tokens")}).for_device("cuda") == EngineConfig().for_device("cuda")
            engine = {k: v for k, v in engine.items() if k in ("max_batch", "chunk_tokens")}
        got = EngineConfig(**engine).for_device("cuda")
        assert (got.attention, got.cuda_graphs, got.whole_graphs, got.overlap, got.max_batch, got.chunk_tokens) == \
            (want.attention, want.cuda_graphs, want.whole_graphs, want.overlap, want.max_batch, want.chunk_tokens), part
        assert model.get("fused_ops", True) == want.fused_ops, part


def test_readme_is_short_and_leads_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= 8 * 1024
    first = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    assert [line.split("#")[0].strip() for line in first.strip().splitlines()] == ["make book", "make test"]
    assert not re.search(r"\b[0-9a-f]{7,40}\b", text), "a commit hash in the README"
    assert not re.search(r"\b\d+ passed\b|campaign|session|lease", text)
