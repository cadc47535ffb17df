"""Measure one run on this machine: `run(spec)` returns its rows (without the header that
rows.py adds). Where each experiment's runs are defined:

  gates            `gates` below: every correctness gate (gates.py) under the settings
  census           census.step_census, in a Python process of its own (the profiler it
                   ends with would slow every later kernel launch of this one)
  attention        census.attention
  capacity, scale  runs.open_loop: Poisson arrivals of the mixed draw
  peer             runs.closed on our engines, peer.closed on transformers'

`python -m fusedlib.bench.measure SPEC_JSON OUT_JSON` is the census's own process.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from .spec import RunSpec


def gates(spec: RunSpec) -> list[dict]:
    """Every gate under the configuration's settings (at the spec's max_batch and
    chunk_tokens where given, else the gates' small ones); one row per gate."""
    from . import gates as checks
    from .runs import forget_engines, model_for, set_ops
    from .telemetry import machine

    s = spec.settings()
    forget_engines()
    model = set_ops(model_for(spec), s.fused_ops)
    sizes = {k: v for k, v in (("max_batch", spec.max_batch), ("chunk_tokens", spec.chunk_tokens)) if v}
    reports = checks.run_all(model, attention=s.attention, cuda_graphs=s.cuda_graphs, whole_graphs=s.whole_graphs,
                             overlap=s.overlap, **sizes)
    return [{**machine(), **r.row()} for r in reports]


def run(spec: RunSpec) -> list[dict]:
    """Measure one run here; its rows."""
    if spec.experiment == "census":
        return _in_own_process(spec)
    from . import census, peer, runs

    runs.cpu_threads(spec)
    by_experiment = {"gates": gates, "attention": census.attention, "capacity": runs.open_loop,
                     "scale": runs.open_loop, "peer": peer.closed if spec.engine == "transformers" else runs.closed}
    return by_experiment[spec.experiment](spec)


def _in_own_process(spec: RunSpec) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        done = subprocess.run([sys.executable, "-m", "fusedlib.bench.measure", json.dumps(spec.as_dict()), out])
        if done.returncode != 0:
            raise RuntimeError(f"the census run {spec.key()} failed in its own process (exit status {done.returncode})")
        with open(out) as f:
            return json.load(f)


if __name__ == "__main__":  # TRITON_INTERPRET, where the parent set it, comes with the environment
    from .census import step_census
    from .runs import cpu_threads

    spec = RunSpec.from_dict(json.loads(sys.argv[1]))
    cpu_threads(spec)
    rows = step_census(spec)
    with open(sys.argv[2], "w") as f:
        json.dump(rows, f)
