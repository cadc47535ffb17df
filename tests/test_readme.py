"""The README's engine example runs as written."""
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
