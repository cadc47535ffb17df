"""One run measured on this machine: `run(spec)` hands it to its experiment's module, each of
which has `run(spec) -> rows` (without the header rows.py adds). The runner calls it here,
the Modal app in its container."""
from __future__ import annotations

import importlib

from .spec import RunSpec

# experiment -> the module that measures its runs
MODULES = {"gates": "gates", "census": "census", "attention": "census", "capacity": "runs", "scale": "runs",
           "peer": "peer"}


def run(spec: RunSpec) -> list[dict]:
    from .engines import cpu_threads

    cpu_threads(spec)
    return importlib.import_module(f"{__package__}.{MODULES[spec.experiment]}").run(spec)
