"""The Modal app: defining it needs no credentials, the image takes its dependencies from
pyproject.toml, and its GPU function's body measures specs on the CPU through `.local()`."""
from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import modal
import pytest

from fusedlib.bench import remote, runner
from fusedlib.bench.spec import RunSpec

REPO = Path(__file__).resolve().parents[2]


def test_app_function_and_default_gpu():
    assert remote.app.name == "fusedlib"
    assert isinstance(remote.measure, modal.Function) and remote.measure._spec_.gpus == "H100"


def test_image_installs_the_core_and_bench_dependencies_without_local_versions():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    needed = project["dependencies"] + project["optional-dependencies"]["bench"]
    assert not [d for d in needed if "+" in d], "no +cpu style local versions"
    spy = """
import json, modal
calls = []
real = modal.Image.pip_install_from_pyproject
def spy(self, path, **kw):
    calls.append([path, kw.get("optional_dependencies")])
    return real(self, path, **kw)
modal.Image.pip_install_from_pyproject = spy
from fusedlib.bench import remote
print(json.dumps(calls))
"""
    out = subprocess.run([sys.executable, "-c", spy], capture_output=True, text=True, check=True, cwd=REPO)
    assert json.loads(out.stdout) == [[str(REPO / "pyproject.toml"), ["bench"]]]


def test_the_gpu_functions_body_measures_specs_here():
    spec = RunSpec.build("capacity", "smoke", config="part10", engine="fused", rate=500, n_requests=4, seed=0, round=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = remote.measure.local([spec.as_dict()])
    assert len(got) == 1 and got[0]["n_completed"] == 4 and got[0]["device_name"] == "cpu"


def test_unknown_backend_is_refused(tmp_path):
    spec = RunSpec.build("attention", "smoke", attention="triton")
    with pytest.raises(ValueError, match="backend"):
        runner.execute([spec], tmp_path, backend="cloud", log=lambda _: None)
