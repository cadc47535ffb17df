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


# Each part's settings as the chapters compare them: the model's fused_ops, and the engine's
# (attention, cuda_graphs, whole_graphs, overlap) resolved on a GPU.
PARTS = {"part 7": (False, ("triton", False, False, False)), "part 8": (False, ("triton-splitkv", False, False, False)),
         "part 9": (False, ("triton-splitkv", True, False, False)),
         "part 10": (True, ("triton-parallel", True, True, True))}


def test_readme_path_table_builds_the_configurations_the_chapters_compare():
    """Each row of the README's table of paths, resolved for a GPU, is that part's settings, and
    part 10's row is the engine's own default there."""
    from fusedlib.config import EngineConfig

    section = (ROOT / "README.md").read_text().split("## Use the engine", 1)[1]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("part "):
            rows[cells[0].split(":")[0]] = (_switches(cells[1]), _switches(cells[2]))
    assert set(rows) == set(PARTS)
    for part, (fused_ops, settings) in PARTS.items():
        model, engine = rows[part]
        got = EngineConfig(**engine).for_device("cuda")
        assert (got.attention, got.cuda_graphs, got.whole_graphs, got.overlap) == settings, part
        assert model.get("fused_ops", True) == fused_ops and set(model) <= {"fused_ops"}, part  # True: CUDA's default
    assert EngineConfig(**rows["part 10"][1]).for_device("cuda") == EngineConfig().for_device("cuda")


def test_readme_loop_figures_round_the_committed_rows():
    """The README's two serving-loop figures are the committed loop rows (roofline/loop_prefill,
    the engine part 10 ends on) rounded to a tenth of a millisecond, as the book glues them."""
    from fusedlib.bench import chapters, roofline
    from fusedlib.bench.analysis import DATA

    text = " ".join((ROOT / "README.md").read_text().split())
    found = re.search(r"decode step at ~[\d.]+k context costs about ([\d.]+) ms and a mixed step .*? about ([\d.]+) ms",
                      text)
    assert found, "the README's loop sentence moved"
    t = chapters.prefill_texts(roofline.measured_for_prefill(DATA))
    rows = [float(t[key].removesuffix(" ms")) for key in ("rf_loop_dec", "rf_loop_mixed")]
    assert [float(x) for x in found.groups()] == [round(x, 1) for x in rows]
