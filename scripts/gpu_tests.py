"""Run the GPU-only tests and keep their output as a row-like log:
`python scripts/gpu_tests.py OUT_ROOT NAME [PYTEST PATHS...]` writes
OUT_ROOT/gpu_tests/NAME.log (the command, the GPU, the commit and date, pytest's summary and its
exit status), which `scripts/merge_campaign_rows.py` copies to data/gpu_tests/ and the book's
gates page shows. A log already there is kept: rerunning a campaign phase does not rerun them.
"""
from __future__ import annotations

import datetime
import os
import subprocess
import sys
from pathlib import Path

from fusedlib.bench.telemetry import provenance

DEFAULT_PATHS = ["tests/test_graphs.py", "tests/test_engine_gpu.py", "tests/attention"]


def main(root: str, name: str, paths: list[str]) -> int:
    log = Path(root) / "gpu_tests" / f"{name}.log"
    if log.exists():
        print(f"{log} exists; not rerun")
        return 0
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", *paths]
    proc = subprocess.run(cmd, env={**os.environ, "FUSEDLIB_GPU_TESTS": "1"}, capture_output=True, text=True,
                          timeout=600)
    prov = provenance()
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("\n".join([
        f"# FUSEDLIB_GPU_TESTS=1 python3 -m pytest -q -x {' '.join(paths)}",
        f"# {prov['gpu']}, torch {prov['torch']}, triton {prov['triton']}, commit {prov['git_commit']}, "
        f"{datetime.date.today().isoformat()}",
        proc.stdout.strip(), f"exit status: {proc.returncode}", ""]))
    print(log.read_text())
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:] or DEFAULT_PATHS))
