"""One run measured on this machine: `run(spec)` hands it to its experiment's module, each of
which has `run(spec) -> rows` (without the header rows.py adds). The runner calls it here,
the Modal app in its container."""
from __future__ import annotations

from .spec import RunSpec


def run(spec: RunSpec) -> list[dict]:
    from . import census, gates, kernels, peer, runs  # torch and the engine load with the first run
    from .engines import cpu_threads

    by_experiment = {"gates": gates, "census": census, "attention": census, "capacity": runs, "scale": runs,
                     "peer": peer, "soak": runs, "kernels": kernels}
    cpu_threads(spec)
    return by_experiment[spec.experiment].run(spec)
