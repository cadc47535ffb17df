"""What the experiments share: the model (one alive at a time), the engines of one
configuration, the pool they are sized with, the workload draws, and the settings a row
records. Experiment modules import this and the engine, never one another.

Engines compile and capture at construction (`warmup=True`), so no measured step compiles.
"""
from __future__ import annotations

import gc
import time
from collections import deque
from dataclasses import asdict, replace
from functools import lru_cache

import torch

from . import workloads
from .spec import RunSpec
from .telemetry import version
from ..config import CPU_DEFAULTS, EngineConfig
from ..engine import Engine
from ..weights import load_model

SWITCHES = tuple(CPU_DEFAULTS)  # the settings that make a configuration (attention, graphs, ops, overlap)
# What each serving row records of its settings.
ROW_SETTINGS = SWITCHES + ("max_batch", "chunk_tokens", "kv_block_size")

_engines: dict = {}  # EngineConfig -> Engine, of one configuration at a time


@lru_cache(maxsize=1)  # one model at a time: a 1.5B model is 3 GiB of GPU memory
def _model(name: str, device: str, dtype: str):
    return load_model(name, device=device, dtype=getattr(torch, dtype), seed=0)


def model_for(spec: RunSpec):
    p = spec.profile_spec
    return _model(p.model, p.device, p.dtype)


def pool_gib(spec: RunSpec, max_batch: int) -> float:
    """A KV pool that holds `max_batch` of the workload's longest requests at once."""
    p, cfg = spec.profile_spec, model_for(spec).config
    per_token = cfg.num_layers * 2 * cfg.num_kv_heads * cfg.head_dim * torch.finfo(getattr(torch, p.dtype)).bits // 8
    longest = max(p.lengths) + max(p.budget[1], p.peer_new_tokens) + 64
    return max(max_batch, 4) * longest * per_token * 1.1 / 2**30


def cpu_threads(spec: RunSpec) -> None:
    if spec.profile_spec.device == "cpu":
        # The tiny model's ops are too small to split, and on a shared CPU OpenMP threads
        # spin-waiting for a descheduled peer made steps 100x slower.
        torch.set_num_threads(1)


def make_engine(spec: RunSpec, settings: EngineConfig | None = None, cached: bool = True) -> Engine:
    """An engine of `settings` (default: the spec's), its pool sized by `pool_gib`; with `cached`,
    kept for the next run of the same configuration (one of other settings drops the others)."""
    s = settings or spec.settings()
    s = replace(s, pool_gib=pool_gib(spec, s.max_batch))
    if cached and s in _engines:
        return _engines[s]
    if not cached or any(replace(k, kind=s.kind) != s for k in _engines):
        forget_engines()
    engine = Engine(model_for(spec), config=s)
    if cached:
        _engines[s] = engine
    return engine


def forget_engines() -> None:
    """Drop the kept engines and give their pools back to the device before something else
    takes memory (another engine; transformers, whose cache is sized from free memory)."""
    _engines.clear()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def switch_fields(settings: EngineConfig) -> dict:
    return {name: getattr(settings, name) for name in SWITCHES}


def settings_fields(spec: RunSpec) -> dict:
    """The settings a serving row records (its switches and sizes)."""
    s = asdict(spec.settings())
    return {name: s[name] for name in ROW_SETTINGS}


def mixed_draw(spec: RunSpec, n: int, seed: int, fixed_budget: int | None = None) -> workloads.Workload:
    p = spec.profile_spec
    budget = (fixed_budget, fixed_budget) if fixed_budget else p.budget
    return workloads.mixed(n, seed=seed, lengths=p.lengths, budget=budget, vocab_size=model_for(spec).config.vocab_size)


def closed_draw(spec: RunSpec) -> workloads.Workload:
    """The peer's closed workload: `n_requests` mixed prompts with the profile's fixed budget."""
    return mixed_draw(spec, spec.n_requests, 0, spec.profile_spec.peer_new_tokens)


def closed_fields(wall: float, n_out: int, spec: RunSpec) -> dict:
    return {"workload": "closed_mixed", "batch": spec.max_batch, "wall_s": wall, "n_output_tokens": n_out,
            "output_tok_s": n_out / wall, "transformers_version": version("transformers")}


def serve_open_loop(engine: Engine, trace: workloads.Workload, on_step=None) -> list:
    """Replay an arrival trace against the engine's clock: before each step, admit every
    request whose arrival time has passed (stamped with its trace arrival); when idle, sleep
    until the next arrival. `on_step()`, where given, runs after every step. Returns the
    Requests."""
    pending, served = deque(trace), []
    t0 = engine.clock()
    while pending or engine.has_work():
        now = engine.clock()
        while pending and t0 + pending[0].arrival <= now:
            s = pending.popleft()
            served.append(engine.add_request(s.prompt, s.max_new_tokens, arrival=t0 + s.arrival))
        if engine.has_work():
            engine.step()
            if on_step is not None:
                on_step()
        elif pending:
            time.sleep(max(0.0, t0 + pending[0].arrival - engine.clock()))
    return served
