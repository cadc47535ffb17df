"""The Modal app: defining it needs no credentials, the image takes its dependencies from
pyproject.toml, and its GPU function's body runs run specs on CPU (smoke profile) through
`.local()`, returning rows the book can read."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import modal
import pytest

from fusedlib.bench import remote
from fusedlib.bench.rows import load
from fusedlib.bench.spec import RESULT_SETS, RunSpec

REPO = Path(__file__).resolve().parents[2]


def smoke(experiment, **options):
    return RunSpec.build(experiment, profile="smoke", **options)


def test_app_functions_and_default_gpu():
    assert remote.app.name == "fusedlib"
    for name in ("fetch_weights", "measure"):
        assert isinstance(getattr(remote, name), modal.Function), name
    assert remote.GPU == "A10"
    assert remote.measure._spec_.gpus == "A10"
    assert remote.fetch_weights._spec_.gpus is None  # the download needs no GPU
    assert "/weights" in remote.measure._spec_.volumes


def test_gpu_is_overridable_at_import():
    env = {**os.environ, "FUSEDLIB_GPU": "H100"}
    out = subprocess.run([sys.executable, "-c", "from fusedlib.bench import remote; print(remote.measure._spec_.gpus)"],
                         env=env, capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "H100"


def test_image_installs_the_core_and_bench_dependencies_without_local_versions():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    needed = project["dependencies"] + project["optional-dependencies"]["bench"]
    assert not [d for d in needed if "+" in d], "no +cpu style local versions"
    # The image's one pip step reads this checkout's pyproject.toml with the bench extra.
    spy = """
import json, modal
calls = []
real = modal.Image.pip_install_from_pyproject
def spy(self, path, **kw):
    calls.append([path, kw.get("optional_dependencies")])
    return real(self, path, **kw)
modal.Image.pip_install_from_pyproject = spy
modal.Image.pip_install = lambda *a, **k: calls.append(["pip_install", a[1:]])
from fusedlib.bench import remote
print(json.dumps(calls))
"""
    out = subprocess.run([sys.executable, "-c", spy], capture_output=True, text=True, check=True, cwd=REPO)
    assert json.loads(out.stdout) == [[str(REPO / "pyproject.toml"), ["bench"]]]


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="backend"):
        remote.run(smoke("closed"), backend="cloud")
    with pytest.raises(ValueError, match="backend"):
        remote.run_map([smoke("arrivals", rate=1.0)], backend="cloud")


def _check(rows, experiment=None):
    assert rows and all(isinstance(r, dict) for r in rows)
    for r in rows:
        assert r["gpu"] == "cpu" and r["git_commit"] and r["timestamp"]
        if experiment:
            assert r["experiment"] == experiment


def test_closed_body_runs_locally_and_rows_save(tmp_path):
    rows = remote.run(smoke("closed", engine="fused", batch_size=4, warmups=0, repeats=2), backend="local")
    _check(rows, "closed")
    assert sorted(r["stat"] for r in rows) == ["median", "run", "run"]
    assert {r["model"] for r in rows} == {"tiny"}  # smoke never asks for the checkpoint
    stem = remote.save(rows, RESULT_SETS["closed"], tmp_path)
    assert stem == tmp_path / "closed" / "runs" and len(load(stem)) == 3


def test_arrivals_fan_out_locally_one_call_per_rate():
    base = smoke("arrivals", engine="chunked", rate=50.0, n_requests=12)
    rows = remote.run_map([base.but(rate=r) for r in (50.0, 200.0)], backend="local")
    _check(rows, "arrivals")
    assert [r["rate"] for r in rows] == [50.0, 200.0]
    assert all(r["n_completed"] == 12 and r["pool_gib"] is None for r in rows)
    small = remote.run(base.but(engine="fused", pool_gib=2e-4), backend="local")
    assert small[0]["pool_gib"] == 2e-4


def test_step_trace_sensitivity_peer_gates_bodies():
    trace = remote.run(smoke("step_trace", engine="chunked"), backend="local")
    _check(trace, "step_trace")
    assert {r["record"] for r in trace} == {"step", "request", "summary"}
    sens = remote.run([smoke("sensitivity", engine="fused", long_share=s, n_requests=12) for s in (None, 0.4)],
                      backend="local")
    _check(sens, "sensitivity")
    assert [r["long_share"] for r in sens] == [None, 0.4]
    peer = remote.run(smoke("peer", batch_size=4), backend="local")
    _check(peer, "peer")
    assert {r["engine"] for r in peer} == {"transformers"}
    gates = remote.run(smoke("gates"), backend="local")
    _check(gates)
    assert {r["gate"] for r in gates} >= {"fused_vs_chunked", "mixed_step", "tiny_pool", "poisoning"}
    assert all(r["passed"] for r in gates)
