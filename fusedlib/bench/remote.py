"""The Modal app: run experiments on a cloud GPU and bring their rows back.

One GPU function, `measure`, runs a list of run specifications (spec.RunSpec) through
`runs.run` and returns their rows; `run` and `run_map` call it here (backend "local": its
body, in-process) or on Modal, and `save` appends rows under a data folder. Nothing here
times, loops over requests, computes a metric or declares an option.

    modal run fusedlib/bench/remote.py::download_weights     # once: Qwen2.5-1.5B into a Volume
    modal run fusedlib/bench/remote.py::gates
    modal run fusedlib/bench/remote.py::kernels
    modal run fusedlib/bench/remote.py::trace --engine-name chunked,fused
    modal run fusedlib/bench/remote.py::main --engine fused --batch-size 8,32
    modal run fusedlib/bench/remote.py::arrivals --engine fused --rates 4,5,6,7,8,10,20,40

Defining the app, image, volume and functions needs no credentials: the tests import this
module and run `measure` with backend "local" on CPU (profile "smoke"). Modal calls and
`modal run` need a Modal token. The GPU defaults to Modal's "A10", the reference writeup's
card; `FUSEDLIB_GPU=H100` at import or `--gpu H100` per entrypoint picks another. On Modal
the full profile loads the real Qwen/Qwen2.5-1.5B checkpoint from the Volume (`model`
column "Qwen/Qwen2.5-1.5B") unless a spec names a model; smoke uses the tiny random preset.
The image is built from this source checkout's pyproject.toml (core and `bench` dependencies).
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import modal

from .cli import comma_list
from .spec import RESULT_SETS, RunSpec

CHECKOUT = Path(__file__).resolve().parents[2]  # the image is built from a source checkout
GPU = os.environ.get("FUSEDLIB_GPU", "A10")
MODEL_ID = "Qwen/Qwen2.5-1.5B"
WEIGHTS_MOUNT = "/weights"
TIMEOUT_S = 2 * 60 * 60

app = modal.App("fusedlib")

# Fetched once (`download_weights`); every GPU container mounts it as the Hugging Face
# cache, so `weights.load_model("Qwen/Qwen2.5-1.5B")` finds the checkpoint there.
weights_volume = modal.Volume.from_name("fusedlib-weights", create_if_missing=True)


def _image_env() -> dict[str, str]:
    env = {"HF_HOME": f"{WEIGHTS_MOUNT}/hf", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    if modal.is_local():  # containers have no .git: rows carry the launching checkout's commit
        from .telemetry import git_commit

        env["FUSEDLIB_GIT_COMMIT"] = git_commit()
    return env


# One place for dependencies: pyproject.toml's core list and its `bench` extra, read at
# image build time on the launching machine (Modal reads the file lazily), then the package.
image = (
    modal.Image.debian_slim(python_version="3.11")
    .pip_install_from_pyproject(str(CHECKOUT / "pyproject.toml"), optional_dependencies=["bench"])
    .env(_image_env())
    .add_local_python_source("fusedlib")
)


# ----------------------------------------------------------------------------- functions
@app.function(image=image, volumes={WEIGHTS_MOUNT: weights_volume}, timeout=TIMEOUT_S)
def fetch_weights(model_id: str = MODEL_ID) -> str:
    """Download a checkpoint into the Volume (a no-op once it is there)."""
    from huggingface_hub import snapshot_download

    path = snapshot_download(model_id, allow_patterns=["config.json", "*.safetensors",
                                                        "*.safetensors.index.json"])
    weights_volume.commit()
    return path


@app.function(image=image, gpu=GPU, volumes={WEIGHTS_MOUNT: weights_volume}, timeout=TIMEOUT_S)
def measure(specs: list[dict]) -> list[dict]:
    """Run the specs (as `RunSpec.given()` dicts) in order here; their rows. The full
    profile's default model is the real checkpoint from the Volume."""
    from fusedlib.bench import runs, use_interpreter_without_gpu

    use_interpreter_without_gpu()
    built = [RunSpec.build(**s) for s in specs]
    return runs.run([s.but(model=MODEL_ID) if s.profile == "full" and s.model is None and "model" in s.given()
                     else s for s in built])


# ----------------------------------------------------------------------------- callers
def _on(gpu: str):
    return measure if gpu == GPU else measure.with_options(gpu=gpu)


def _local(specs: list[RunSpec]) -> list[dict]:
    with warnings.catch_warnings():  # "no access to the mounted Volume": the body does not need it
        warnings.filterwarnings("ignore", message=".*executing locally.*", category=UserWarning)
        return measure.local([s.given() for s in specs])


def _check_backend(backend: str) -> None:
    if backend not in ("local", "modal"):
        raise ValueError(f"unknown backend {backend!r}; choose local or modal")


def run(specs: RunSpec | list[RunSpec], backend: str = "modal", gpu: str = GPU) -> list[dict]:
    """Run specs in order in one place: here (backend "local") or in one Modal container."""
    _check_backend(backend)
    specs = [specs] if isinstance(specs, RunSpec) else list(specs)
    if backend == "local":
        return _local(specs)
    with modal.enable_output(), app.run():
        return _on(gpu).remote([s.given() for s in specs])


def run_map(specs: list[RunSpec], backend: str = "modal", gpu: str = GPU) -> list[dict]:
    """Each spec in a container of its own on Modal (in parallel), or one after another
    here; every spec's rows, in spec order."""
    _check_backend(backend)
    specs = list(specs)
    if backend == "local":
        return _local(specs)
    with modal.enable_output(), app.run():
        return [row for rows in _on(gpu).map([[s.given()] for s in specs]) for row in rows]


def save(rows: list[dict], result_set: str, out_dir: str | Path) -> Path:
    """Append rows to `<out_dir>/<result_set>.{jsonl,csv}` (result_set e.g. "arrivals/runs")."""
    from . import rows as row_files

    path = Path(out_dir) / result_set
    row_files.append_rows(path, rows)
    print(f"{len(rows)} rows -> {path}.jsonl")
    return path


def _data(out_dir: str | None, profile: str) -> Path:
    from .rows import data_dir

    return Path(out_dir) if out_dir else data_dir(profile)


# --------------------------------------------------------------- `modal run` entrypoints
# out_dir: the rows folder (default: rows.data_dir, data/ for full in a source checkout).
@app.local_entrypoint()
def download_weights(model_id: str = MODEL_ID):
    print(fetch_weights.remote(model_id))


@app.local_entrypoint()
def gates(gpu: str = GPU, profile: str = "full", out_dir: str | None = None):
    save(_on(gpu).remote([{"experiment": "gates", "profile": profile}]), RESULT_SETS["gates"],
         _data(out_dir, profile))


@app.local_entrypoint()
def kernels(gpu: str = GPU, profile: str = "full", out_dir: str | None = None):
    for experiment in ("kernel_gate", "layout_bench", "splitkv_sweep"):
        save(_on(gpu).remote([{"experiment": experiment, "profile": profile}]), RESULT_SETS[experiment],
             _data(out_dir, profile))


@app.local_entrypoint()
def trace(engine_name: str = "chunked,fused", gpu: str = GPU, profile: str = "full", out_dir: str | None = None):
    specs = [RunSpec.build("step_trace", engine=e, profile=profile) for e in comma_list("engine")(engine_name)]
    for rows in _on(gpu).map([[s.given()] for s in specs]):
        save(rows, RESULT_SETS["step_trace"], _data(out_dir, profile))


@app.local_entrypoint()
def main(engine: str = "fused", prompts: str = "mixed", mixed_seed: int = 0, batch_size: str = "8,32",
         max_batch: int = 32, chunk_tokens: int = 512, gpu: str = GPU, profile: str = "full",
         out_dir: str | None = None):
    """The reference's `main`: closed runs, one container per batch size."""
    specs = [RunSpec.build("closed", engine=engine, workload=prompts, seed=mixed_seed, batch_size=b,
                           max_batch=max_batch, chunk_tokens=chunk_tokens, profile=profile)
             for b in comma_list("batch_size")(batch_size)]
    for rows in _on(gpu).map([[s.given()] for s in specs]):
        save(rows, RESULT_SETS["closed"], _data(out_dir, profile))


@app.local_entrypoint()
def arrivals(engine: str = "fused", rates: str = "4,5,6,7,8,10,20,40", n_requests: int = 400,
             max_batch: int = 32, chunk_tokens: int = 512, pool_gib: float | None = None, seed: int = 0,
             gpu: str = GPU, profile: str = "full", out_dir: str | None = None):
    """Poisson arrival sweep, one container per rate; `--pool-gib 0.5` is the small-pool control."""
    specs = [RunSpec.build("arrivals", engine=engine, rate=r, n_requests=n_requests, seed=seed, pool_gib=pool_gib,
                           max_batch=max_batch, chunk_tokens=chunk_tokens, profile=profile)
             for r in comma_list("rate")(rates)]
    for rows in _on(gpu).map([[s.given()] for s in specs]):
        save(rows, RESULT_SETS["arrivals"], _data(out_dir, profile))
