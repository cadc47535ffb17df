"""What a notebook calls: run a plan's missing runs where asked, append their rows, show them.

`execute(specs, out, backend=, gpu=, time_limit_s=)`:
  - refuses an unwritable `out` before any run (OSError naming the place);
  - takes a relative `out` as relative to the repository root (`place`);
  - skips every planned run with rows in `<out>/<experiment>.jsonl` for this code version and
    profile (`missing`, the one definition of "done", `make run-all`'s skip check's too);
  - runs the rest in order, here (backend "local": the GPU if any, else the CPU) or on Modal
    (backend "modal", GPU type `gpu`), appending each run's rows as it finishes;
  - with `time_limit_s`, starts no run once less time is left than the longest run so far
    took (so the next call resumes where this one stopped);
  - a run that raises is stored as one row with `error` (counted as done: delete the row to
    retry) and stops the experiment, which then raises.
`check_setup(experiments, profile, backend)` says in one line why runs cannot start here.
`table(out, experiment, profile, columns)` is the current rows as a pandas frame.
"""
from __future__ import annotations

import contextlib
import os
import time
import traceback
from importlib.util import find_spec
from pathlib import Path

from . import rows
from .spec import RunSpec

# experiment -> what it imports beyond the engine and the harness (pyproject.toml's `bench` extra)
NEEDS = {"gates": ("transformers",), "peer": ("transformers",)}
INSTALL_BENCH = "pip install -e '.[bench]'"


def modal_token() -> bool:
    """Whether a Modal token is configured (MODAL_TOKEN_ID or ~/.modal.toml)."""
    config = Path.home() / ".modal.toml"
    in_file = config.exists() and "token_id" in config.read_text(errors="ignore")
    return bool(os.environ.get("MODAL_TOKEN_ID") or in_file)


def has_cuda() -> bool:
    """Whether this machine has a CUDA GPU (torch loads only on this call)."""
    import torch

    return torch.cuda.is_available()


def check_setup(experiments, profile: str, backend: str) -> None:
    """ValueError (one line, saying what to do) where these experiments' runs cannot start
    here: Modal without its package or a token, the full profile without a GPU, a package an
    experiment needs missing."""
    if backend == "modal" and find_spec("modal") is None:
        raise ValueError("backend modal needs the modal package: pip install -e '.[book]'")
    if backend == "modal" and not modal_token():
        raise ValueError("backend modal needs a Modal token: run `modal token new` (or set MODAL_TOKEN_ID)")
    if backend == "local" and profile == "full" and not has_cuda():
        raise ValueError("profile full needs a CUDA GPU and this machine has none: use profile smoke, or backend modal")
    for experiment in experiments:
        missing = [name for name in NEEDS.get(experiment, ()) if find_spec(name) is None]
        if missing:
            raise ValueError(f"{experiment} needs {', '.join(missing)}: {INSTALL_BENCH}")


def place(out) -> Path:
    """A rows folder or `.jsonl` file as a notebook names it: relative to the repository root,
    wherever the notebook runs (papermill starts it in notebooks/)."""
    return Path(rows.CHECKOUT, out)


def current(out, experiment: str, profile: str) -> list[dict]:
    """The rows of this code version and profile in `out`'s file for `experiment`."""
    return rows.current(rows.read(rows.rows_path(place(out), experiment)), profile)


def missing(specs: list[RunSpec], out) -> list[RunSpec]:
    """The planned runs without rows of this code version and profile in `out`."""
    if not specs:
        return []
    have = current(out, specs[0].experiment, specs[0].profile)
    return [s for s in specs if not rows.has_run(have, s)]


def where(backend: str, gpu: str) -> str:
    """The device a backend's runs use, in words."""
    if backend == "modal":
        return f"Modal {gpu}"
    from .telemetry import device_name

    return f"local {device_name()}"


@contextlib.contextmanager
def _measurer(backend: str, gpu: str):
    if backend == "modal":
        from . import remote

        with remote.on_modal(gpu) as measure:
            yield measure
    elif backend == "local":
        from . import use_interpreter_without_gpu

        use_interpreter_without_gpu()  # no GPU: Triton kernels run in its CPU interpreter
        from . import measure

        yield measure.run
    else:
        raise ValueError(f"unknown backend {backend!r}; choose local or modal")


def _label(spec: RunSpec) -> str:
    return " ".join(f"{k}={v}" for k, v in spec.key().items())


def _headline(new: list[dict]) -> str:
    for name, fmt in (("steady_rate", "steady {:.2f} req/s"), ("served_rate", "drain {:.2f} req/s"),
                      ("output_tok_s", "{:.0f} tok/s"),
                      ("gpu_ms", "GPU {:.3f} ms"), ("gpu_us", "{:.1f} us")):
        if new and new[0].get(name) is not None:
            return fmt.format(new[0][name])
    if new and "passed" in new[0]:
        return f"{sum(bool(r.get('passed')) for r in new)} of {len(new)} gates passed"
    return f"{len(new)} rows"


def execute(specs: list[RunSpec], out, backend: str = "local", gpu: str = "H100", time_limit_s: float = 0,
            log=print) -> list[dict]:
    """Run the missing runs of a plan; their rows (see the module's docstring)."""
    if not specs:
        return []
    path = rows.check_writable(rows.rows_path(place(out), specs[0].experiment))
    todo = missing(specs, out)
    log(f"{specs[0].experiment}: {len(specs) - len(todo)} of {len(specs)} planned runs have rows in {path}")
    deadline = time.monotonic() + time_limit_s if time_limit_s else float("inf")
    longest, new_rows = 0.0, []
    with _measurer(backend, gpu) as measure:
        for i, spec in enumerate(todo):
            if deadline - time.monotonic() < longest:
                log(f"time limit: {len(todo) - i} runs left for the next call")
                break
            t0 = time.monotonic()
            try:
                got = measure(spec)
            except Exception as e:
                log(traceback.format_exc())
                rows.append(path, [{**rows.header(spec, None), "error": f"{type(e).__name__}: {e}"[:2000]}])
                raise RuntimeError(f"{_label(spec)} failed ({e}); its error row is in {path}: delete it to "
                                   "run it again") from e
            stamped = [{**rows.header(spec, r.get("device_name")), **r, **spec.key()} for r in got]
            rows.append(path, stamped)
            new_rows += stamped
            took = time.monotonic() - t0
            longest = max(longest, took)
            log(f"  {_label(spec)}: {_headline(got)} ({took:.0f} s)")
    return new_rows


def table(out, experiment: str, profile: str, columns: list[str], **where):
    """This code version's rows of `profile` (those matching `where`), the given columns."""
    import pandas as pd

    have = [r for r in current(out, experiment, profile) if all(r.get(k) == v for k, v in where.items())]
    frame = pd.DataFrame(have)
    return frame[[c for c in columns if c in frame]] if len(frame) else frame
