"""The Modal app: defining it needs no credentials, its functions mirror the reference's
entrypoints, the image takes its dependencies from pyproject.toml, and every function body
runs on CPU (smoke profile) through `.local()`, returning rows the book can read."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import modal
import pytest

from fusedlib.bench import remote, rows as results

REPO = Path(__file__).resolve().parent.parent
FUNCTIONS = ["fetch_weights", "gate_remote", "kernel_gate", "layout_bench", "splitkv_sweep", "step_trace", "closed",
             "arrival_rate", "sensitivity", "peer"]


def test_app_functions_and_default_gpu():
    assert remote.app.name == "fusedlib"
    for name in FUNCTIONS:
        assert isinstance(getattr(remote, name), modal.Function), name
    assert remote.GPU == "A10"
    assert remote.closed._spec_.gpus == "A10"
    assert remote.fetch_weights._spec_.gpus is None  # the download needs no GPU
    assert "/weights" in remote.closed._spec_.volumes


def test_gpu_is_overridable_at_import():
    env = {**os.environ, "FUSEDLIB_GPU": "H100"}
    out = subprocess.run([sys.executable, "-c", "from fusedlib.bench import remote; print(remote.closed._spec_.gpus)"],
                         env=env, capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "H100"


def test_image_dependencies_come_from_pyproject_without_local_versions():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["dependencies"], "the image installs [project].dependencies"
    assert not [d for d in project["dependencies"] if "+" in d], "no +cpu style local versions"
    # The image reads this exact file (lazily, at build time): no second dependency list.
    source = (REPO / "fusedlib" / "remote.py").read_text()
    assert 'pip_install_from_pyproject(str(REPO / "pyproject.toml"))' in source
    assert "pip_install(" not in source.replace("pip_install_from_pyproject(", "")


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="backend"):
        remote.run(remote.closed, backend="cloud")
    with pytest.raises(ValueError, match="backend"):
        remote.run_map(remote.arrival_rate, [1.0], backend="cloud")


def _check(rows, experiment=None):
    assert rows and all(isinstance(r, dict) for r in rows)
    for r in rows:
        assert r["gpu"] == "cpu" and r["git_commit"] and r["timestamp"]
        if experiment:
            assert r["experiment"] == experiment


def test_closed_body_runs_locally_and_rows_save(tmp_path):
    rows = remote.run(remote.closed, "fused", "mixed", 4, warmups=0, repeats=2, profile="smoke", backend="local")
    _check(rows, "closed")
    assert sorted(r["stat"] for r in rows) == ["median", "run", "run"]
    assert {r["model"] for r in rows} == {"tiny"}  # smoke never asks for the checkpoint
    stem = remote.save(rows, "closed", out_dir=tmp_path)
    assert len(results.load(stem)) == 3


def test_arrivals_fan_out_locally_one_call_per_rate():
    rows = remote.run_map(remote.arrival_rate, [50.0, 200.0], backend="local", engine="chunked",
                          n_requests=12, profile="smoke")
    _check(rows, "arrivals")
    assert [r["rate"] for r in rows] == [50.0, 200.0]
    assert all(r["n_completed"] == 12 and r["pool_gib"] is None for r in rows)
    small = remote.run(remote.arrival_rate, 50.0, engine="fused", n_requests=12, pool_gib=2e-4,
                       profile="smoke", backend="local")
    assert small[0]["pool_gib"] == 2e-4


def test_step_trace_sensitivity_peer_gates_bodies():
    trace = remote.run(remote.step_trace, "chunked", profile="smoke", backend="local")
    _check(trace, "step_trace")
    assert {r["record"] for r in trace} == {"step", "request", "summary"}
    sens = remote.run(remote.sensitivity, "fused", seeds=[0], long_shares=[None, 0.4], n_requests=12,
                      profile="smoke", backend="local")
    _check(sens, "sensitivity")
    assert [r["long_share"] for r in sens] == [None, 0.4]
    peer = remote.run(remote.peer, batch_size=4, profile="smoke", backend="local")
    _check(peer, "peer")
    assert {r["engine"] for r in peer} == {"transformers"}
    gates = remote.run(remote.gate_remote, profile="smoke", backend="local")
    _check(gates)
    assert {r["gate"] for r in gates} >= {"fused_vs_chunked", "mixed_step", "tiny_pool", "poisoning"}
    assert all(r["passed"] for r in gates)
