"""The Modal app: the notebooks' runs on a cloud GPU (backend "modal").

One GPU function, `measure`, runs RunSpecs (as dicts) through `measure.run` in its container
and returns their rows; `on_modal(gpu)` opens the app once and gives the notebook's runner a
function that measures one spec there. The rows' header (code version, commit) is added on
the calling side. The GPU is a parameter: Modal's "A10" is the reference's card, "H100" the rows' in data/.

Defining the app, the image and the function needs no credentials (the tests import this
module and run `measure.local` on the CPU); a Modal call needs a token (`modal token new`).
The image is built from this checkout's pyproject.toml (core and `bench` dependencies).
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import modal

from .spec import RunSpec

CHECKOUT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60 * 60

app = modal.App("fusedlib")
image = (
    modal.Image.debian_slim(python_version="3.11")
    .pip_install_from_pyproject(str(CHECKOUT / "pyproject.toml"), optional_dependencies=["bench"])
    .add_local_python_source("fusedlib")
)


@app.function(image=image, gpu="H100", timeout=TIMEOUT_S)
def measure(specs: list[dict]) -> list[dict]:
    """Each spec's rows, measured in this container, in order."""
    from fusedlib.bench import measure as here, use_interpreter_without_gpu

    use_interpreter_without_gpu()
    return [row for s in specs for row in here.run(RunSpec.from_dict(s))]


@contextlib.contextmanager
def on_modal(gpu: str = "H100"):
    """The app running on Modal; yields `measure_one(spec) -> rows` on a `gpu` container."""
    fn = measure.with_options(gpu=gpu)
    with modal.enable_output(), app.run():
        yield lambda spec: fn.remote([spec.as_dict()])
