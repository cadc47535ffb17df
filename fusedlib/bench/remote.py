"""The Modal app: thin wrappers that run the experiments on a cloud GPU and return rows.

Each function body is one call into `fusedlib.experiments` (or `kernel_bench`, `gates`)
and returns that call's rows; the local entrypoints, and `run`/`run_map` for notebooks,
write them under `data/`. Nothing here times, loops over requests or computes a metric.

    modal run fusedlib/remote.py::download_weights     # once: Qwen2.5-1.5B into a Volume
    modal run fusedlib/remote.py::gates
    modal run fusedlib/remote.py::kernels
    modal run fusedlib/remote.py::trace --engine-name chunked,fused
    modal run fusedlib/remote.py::main --engine fused --batch-size 8,32
    modal run fusedlib/remote.py::arrivals --engine fused --rates 4,5,6,7,8,10,20,40

Defining the app, image, volume and functions needs no credentials: the tests import this
module and call the bodies with `.local()` on CPU (profile "smoke"). `.remote()`, `.map()`
and `modal run` need a Modal token. The GPU defaults to Modal's "A10", the reference
writeup's card; `FUSEDLIB_GPU=H100` at import or `--gpu H100` per entrypoint picks another.
On Modal the full profile loads the real Qwen/Qwen2.5-1.5B checkpoint from the Volume
(`model` column "Qwen/Qwen2.5-1.5B"); the smoke profile uses the tiny random preset.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import modal

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data"
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
        from .rows import git_commit

        env["FUSEDLIB_GIT_COMMIT"] = git_commit()
    return env


# One place for dependencies: pyproject.toml's [project] list, read at image build time on
# the launching machine (Modal reads the file lazily), then the local package on top.
image = (
    modal.Image.debian_slim(python_version="3.11")
    .pip_install_from_pyproject(str(REPO / "pyproject.toml"))
    .env(_image_env())
    .add_local_python_source("fusedlib")
)

on_gpu = app.function(image=image, gpu=GPU, volumes={WEIGHTS_MOUNT: weights_volume}, timeout=TIMEOUT_S)


def _model(profile: str, model: str) -> str | None:
    """The checkpoint for a profile: the real one at full size, the profile's own otherwise."""
    return model or (MODEL_ID if profile == "full" else None)


# ----------------------------------------------------------------------------- functions
@app.function(image=image, volumes={WEIGHTS_MOUNT: weights_volume}, timeout=TIMEOUT_S)
def fetch_weights(model_id: str = MODEL_ID) -> str:
    """Download a checkpoint into the Volume (a no-op once it is there)."""
    from huggingface_hub import snapshot_download

    path = snapshot_download(model_id, allow_patterns=["config.json", "*.safetensors",
                                                        "*.safetensors.index.json"])
    weights_volume.commit()
    return path


@on_gpu
def gate_remote(profile: str = "full", model: str = "") -> list[dict]:
    """Every correctness gate, under the torch reference and the profile's attention backend."""
    from fusedlib.bench import runs as experiments

    return experiments.gates(profile, model=_model(profile, model))


@on_gpu
def kernel_gate(profile: str = "full") -> list[dict]:
    """Triton kernels against the torch reference at the model's attention shape."""
    from fusedlib.bench import kernels as kernel_bench

    return kernel_bench.kernel_gate(profile=profile)


@on_gpu
def layout_bench(profile: str = "full") -> list[dict]:
    """One decode attention call as rows, packed and split-KV on one cache state."""
    from fusedlib.bench import kernels as kernel_bench

    return kernel_bench.decode_layout_bench(profile=profile)


@on_gpu
def splitkv_sweep(profile: str = "full") -> list[dict]:
    """Split-KV launch shapes on the layout bench's cache state."""
    from fusedlib.bench import kernels as kernel_bench

    return kernel_bench.splitkv_sweep(profile=profile)


@on_gpu
def step_trace(engine: str = "fused", profile: str = "full", model: str = "", attention: str = "",
               cuda_graphs: bool = False, graph_chunks: bool = False) -> list[dict]:
    """Sync-accurate per-step timing on the disturbance workload (attention "": the profile's)."""
    from fusedlib.bench import runs as experiments

    return experiments.step_trace(engine, profile=profile, model=_model(profile, model), attention=attention or None,
                                  cuda_graphs=cuda_graphs, graph_chunks=graph_chunks)


@on_gpu
def step_profile(engine: str = "fused", profile: str = "full", model: str = "", attention: str = "",
                 cuda_graphs: bool = False, graph_chunks: bool = False) -> list[dict]:
    """The step trace's workload under torch.profiler: kernels and host ops per step."""
    from fusedlib.bench import runs as experiments

    return experiments.step_profile(engine, profile=profile, model=_model(profile, model),
                                    attention=attention or None, cuda_graphs=cuda_graphs, graph_chunks=graph_chunks)


@on_gpu
def closed(engine: str = "fused", workload: str = "mixed", batch_size: int = 32, seed: int = 0,
           max_batch: int = 32, chunk_tokens: int = 0, warmups: int = 2, repeats: int = 5,
           profile: str = "full", model: str = "") -> list[dict]:
    """A closed batch timed to completion (the reference's `main`). chunk_tokens 0: the profile's."""
    from fusedlib.bench import runs as experiments

    return experiments.closed(engine, workload, batch_size, seed=seed, max_batch=max_batch,
                              chunk_tokens=chunk_tokens or None, warmups=warmups, repeats=repeats,
                              profile=profile, model=_model(profile, model))


@on_gpu
def arrival_rate(rate: float, engine: str = "fused", n_requests: int = 400, seed: int = 0,
                 pool_gib: float = 0.0, max_batch: int = 32, chunk_tokens: int = 0,
                 profile: str = "full", model: str = "", attention: str = "",
                 cuda_graphs: bool = False, graph_chunks: bool = False, repeat: int = 0) -> list[dict]:
    """One Poisson arrival rate (pool_gib 0: the default pool; attention "": the profile's;
    repeat k > 0: the k-th extra run of the same configuration); `arrivals` maps it over rates."""
    from fusedlib.bench import runs as experiments

    return experiments.arrivals(engine, rate, n_requests=n_requests, seed=seed, pool_gib=pool_gib or None,
                                max_batch=max_batch, chunk_tokens=chunk_tokens or None,
                                profile=profile, model=_model(profile, model), attention=attention or None,
                                cuda_graphs=cuda_graphs, graph_chunks=graph_chunks, repeat=repeat)


@on_gpu
def sensitivity(engine: str = "fused", seeds: tuple = (0, 1, 2), long_shares: tuple = (0.0, 0.2, 0.4),
                n_requests: int = 400, profile: str = "full", model: str = "") -> list[dict]:
    """Capacity across workload draws: seeds and shares of the longest prompts."""
    from fusedlib.bench import runs as experiments

    return experiments.sensitivity(engine, seeds=tuple(seeds), long_shares=tuple(long_shares),
                                   n_requests=n_requests, profile=profile, model=_model(profile, model))


@on_gpu
def peer(batch_size: int = 64, workload: str = "mixed", seed: int = 0, profile: str = "full",
         model: str = "") -> list[dict]:
    """transformers' continuous batching on the closed run's requests, same weights."""
    from fusedlib.bench import runs as experiments

    return experiments.peer_transformers(batch_size=batch_size, workload=workload, seed=seed,
                                         profile=profile, model=_model(profile, model))


@on_gpu
def peer_arrival_rate(rate: float, n_requests: int = 400, seed: int = 0, profile: str = "full",
                      model: str = "") -> list[dict]:
    """transformers' continuous batching, open loop: the arrivals experiment's requests and times."""
    from fusedlib.bench import runs as experiments

    return experiments.peer_arrivals(rate, n_requests=n_requests, seed=seed, profile=profile,
                                     model=_model(profile, model))


# ----------------------------------------------------------------------------- callers
def _on(fn, gpu: str):
    return fn if gpu == GPU else fn.with_options(gpu=gpu)


def _local(fn, *args, **kwargs) -> list[dict]:
    with warnings.catch_warnings():  # "no access to the mounted Volume": the body does not need it
        warnings.filterwarnings("ignore", message=".*executing locally.*", category=UserWarning)
        return fn.local(*args, **kwargs)


def run(fn, *args, backend: str = "modal", gpu: str = GPU, **kwargs) -> list[dict]:
    """Call one function here (backend "local": its body, in-process) or on Modal."""
    if backend == "local":
        return _local(fn, *args, **kwargs)
    if backend != "modal":
        raise ValueError(f"unknown backend {backend!r}; choose local or modal")
    with modal.enable_output(), app.run():
        return _on(fn, gpu).remote(*args, **kwargs)


def run_map(fn, items, backend: str = "modal", gpu: str = GPU, **kwargs) -> list[dict]:
    """`fn(item, **kwargs)` for every item: one container each on Modal, a loop locally.
    Returns every call's rows, in item order."""
    items = list(items)
    if backend == "local":
        return [row for item in items for row in _local(fn, item, **kwargs)]
    if backend != "modal":
        raise ValueError(f"unknown backend {backend!r}; choose local or modal")
    with modal.enable_output(), app.run():
        return [row for rows in _on(fn, gpu).map(items, kwargs=kwargs) for row in rows]


def save(rows: list[dict], experiment: str, stem: str = "runs", out_dir: str | Path = DATA) -> Path:
    """Append rows to `<out_dir>/<experiment>/<stem>.{jsonl,csv}`."""
    from fusedlib.bench import rows as results

    path = Path(out_dir) / experiment / stem
    results.append_rows(path, rows)
    print(f"{len(rows)} rows -> {path}.jsonl")
    return path


def _list(text, cast=str) -> list:
    return [cast(x) for x in str(text).split(",") if x.strip()]


# --------------------------------------------------------------- `modal run` entrypoints
@app.local_entrypoint()
def download_weights(model_id: str = MODEL_ID):
    print(fetch_weights.remote(model_id))


@app.local_entrypoint()
def gates(gpu: str = GPU, profile: str = "full", out_dir: str = str(DATA)):
    save(_on(gate_remote, gpu).remote(profile), "gates", out_dir=out_dir)


@app.local_entrypoint()
def kernels(gpu: str = GPU, profile: str = "full", out_dir: str = str(DATA)):
    save(_on(kernel_gate, gpu).remote(profile), "kernels", "kernel_gate", out_dir)
    save(_on(layout_bench, gpu).remote(profile), "kernels", "layout_bench", out_dir)
    save(_on(splitkv_sweep, gpu).remote(profile), "kernels", "splitkv_sweep", out_dir)


@app.local_entrypoint()
def trace(engine_name: str = "chunked,fused", gpu: str = GPU, profile: str = "full",
          out_dir: str = str(DATA)):
    for rows in _on(step_trace, gpu).map(_list(engine_name), kwargs={"profile": profile}):
        save(rows, "step_trace", out_dir=out_dir)


@app.local_entrypoint()
def main(engine: str = "fused", prompts: str = "mixed", mixed_seed: int = 0, batch_size: str = "8,32",
         max_batch: int = 32, chunk_tokens: int = 512, gpu: str = GPU, profile: str = "full",
         out_dir: str = str(DATA)):
    """The reference's `main`: closed runs, one container per batch size."""
    calls = [(engine, prompts, b, mixed_seed, max_batch, chunk_tokens) for b in _list(batch_size, int)]
    for rows in _on(closed, gpu).starmap(calls, kwargs={"profile": profile}):
        save(rows, "closed", out_dir=out_dir)


@app.local_entrypoint()
def arrivals(engine: str = "fused", rates: str = "4,5,6,7,8,10,20,40", n_requests: int = 400,
             max_batch: int = 32, chunk_tokens: int = 512, pool_gib: float = 0.0, seed: int = 0,
             gpu: str = GPU, profile: str = "full", out_dir: str = str(DATA)):
    """Poisson arrival sweep, one container per rate; `--pool-gib 0.5` is the small-pool control."""
    kwargs = dict(engine=engine, n_requests=n_requests, seed=seed, pool_gib=pool_gib,
                  max_batch=max_batch, chunk_tokens=chunk_tokens, profile=profile)
    for rows in _on(arrival_rate, gpu).map(_list(rates, float), kwargs=kwargs):
        save(rows, "arrivals", out_dir=out_dir)
