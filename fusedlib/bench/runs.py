"""Serving runs on this machine: the model and engines they share, the open loop (capacity
and scale) and the closed workload (the peer's, on our engines). Each returns its rows
without the header rows.py adds. One model is alive at a time, and up to two engines of one
configuration (the paired comparisons alternate fused and chunked on the same settings).

Timing: time.perf_counter, read after a device sync where a step does not end in one.
Engines compile and capture at construction (`warmup=True`), so no measured step compiles.
"""
from __future__ import annotations

import gc
import statistics
import time
from collections import deque
from functools import lru_cache

import torch

from . import metrics, workloads
from .spec import RunSpec
from .telemetry import machine, sync, version
from ..engine import Engine
from ..weights import load_model

_engines: dict = {}  # (settings, kind) -> Engine, of one configuration at a time


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


def set_ops(model, fused_ops: bool):
    """The model's ops for a configuration (the cached model is shared by every engine)."""
    model.fused_ops = fused_ops
    return model


def forget_engines() -> None:
    _engines.clear()


def cpu_threads(spec: RunSpec) -> None:
    if spec.profile_spec.device == "cpu":
        # The tiny model's ops are too small to split, and on a shared CPU OpenMP threads
        # spin-waiting for a descheduled peer made steps 100x slower.
        torch.set_num_threads(1)


def make_engine(spec: RunSpec, kind: str | None = None, max_batch: int | None = None,
                chunk_tokens: int | None = None, cached: bool = True) -> Engine:
    """The spec's engine, its pool sized by `pool_gib`; with `cached`, kept for the next run of
    the same settings (a run of other settings drops every cached engine first)."""
    s = spec.settings()
    max_batch, chunk_tokens, kind = max_batch or s.max_batch, chunk_tokens or s.chunk_tokens, kind or spec.engine
    key = (s, max_batch, chunk_tokens, kind)
    if cached and key in _engines:
        return _engines[key]
    if not cached or any(k[:3] != key[:3] for k in _engines):
        _engines.clear()
    model = set_ops(model_for(spec), s.fused_ops)
    gc.collect()  # a dropped engine's pool goes back before the next one takes its own
    if spec.profile_spec.device == "cuda":
        torch.cuda.empty_cache()
    engine = Engine(model, kind=kind, max_batch=max_batch, chunk_tokens=chunk_tokens, attention=s.attention,
                    cuda_graphs=s.cuda_graphs, whole_graphs=s.whole_graphs, overlap=s.overlap,
                    pool_gib=pool_gib(spec, max_batch))
    if cached:
        _engines[key] = engine
    return engine


def settings_fields(spec: RunSpec) -> dict:
    s = spec.settings()
    return {"attention": s.attention, "cuda_graphs": s.cuda_graphs, "whole_graphs": s.whole_graphs,
            "fused_ops": s.fused_ops, "overlap": s.overlap, "max_batch": s.max_batch, "chunk_tokens": s.chunk_tokens}


def mixed_draw(spec: RunSpec, n: int, seed: int, fixed_budget: int | None = None) -> workloads.Workload:
    p = spec.profile_spec
    budget = (fixed_budget, fixed_budget) if fixed_budget else p.budget
    return workloads.mixed(n, seed=seed, lengths=p.lengths, budget=budget, vocab_size=model_for(spec).config.vocab_size)


# ------------------------------------------------------------------------------ open loop
def serve_open_loop(engine: Engine, trace: workloads.Workload) -> list:
    """Replay an arrival trace against the engine's clock: before each step, admit every
    request whose arrival time has passed (stamped with its trace arrival); when idle, sleep
    until the next arrival. Returns the Requests."""
    pending, served = deque(trace), []
    t0 = engine.clock()
    while pending or engine.has_work():
        now = engine.clock()
        while pending and t0 + pending[0].arrival <= now:
            s = pending.popleft()
            served.append(engine.add_request(s.prompt, s.max_new_tokens, arrival=t0 + s.arrival))
        if engine.has_work():
            engine.step()
        elif pending:
            time.sleep(max(0.0, t0 + pending[0].arrival - engine.clock()))
    return served


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def step_fields(records: list, max_batch: int) -> dict:
    """Step counts, median decode and mixed step wall (`StepRecord.duration`) and GPU time, the
    host's share of the loop (sum of `host_s` over the first step's start to the last one's
    end), and at the largest batch (decode steps of `max_batch` rows, else all decode steps)
    the host's and the GPU's time per step."""
    out = {"n_steps": len(records)}
    for kind in ("decode", "mixed"):
        mine = [r for r in records if r.kind == kind]
        out[f"n_{kind}_steps"] = len(mine)
        out[f"{kind}_step_s_p50"] = _median(r.duration for r in mine)
        out[f"{kind}_step_gpu_s_p50"] = _median(r.gpu_s() for r in mine)
    span = records[-1].start + records[-1].duration - records[0].start if records else 0
    out["host_share"] = sum(r.host_s for r in records) / span if span > 0 else None
    decodes = [r for r in records if r.kind == "decode"]
    full = [r for r in decodes if r.n_decode == max_batch] or decodes
    out["largest_batch_decode_rows"] = max((r.n_decode for r in full), default=None)
    host_full = _median(r.host_s for r in full)
    gpu_full = _median(r.gpu_s() for r in full)
    out["host_ms_per_step_p50"] = None if host_full is None else host_full * 1e3
    out["step_gpu_ms_p50"] = None if gpu_full is None else gpu_full * 1e3
    return out


def open_loop(spec: RunSpec) -> list[dict]:
    """`n_requests` of the mixed draw (seed `seed`) arriving as a Poisson process at `rate`/s.
    The same seed gives the same requests at every rate. One row: metrics.summarize's fields
    (its served_rate is the drain rate), metrics.steady's (the steady rate) and step_fields'."""
    engine = make_engine(spec)
    trace = workloads.poisson_arrivals(mixed_draw(spec, spec.n_requests, spec.seed), spec.rate, seed=spec.seed)
    with engine.record_steps() as steps:
        served = serve_open_loop(engine, trace)
    return [{**machine(), **settings_fields(spec), **metrics.summarize(served),
             **metrics.steady(served, engine.config.max_batch), **step_fields(steps, engine.config.max_batch),
             "kernels_compiled_after_construction": engine.kernels_compiled_since_construction()}]


# ------------------------------------------------------------------------------ closed
def closed(spec: RunSpec) -> list[dict]:
    """The peer's closed workload on our engine: `n_requests` mixed prompts with the profile's
    fixed budget, all submitted at once; one discarded warm-up pass, then one timed pass."""
    engine = make_engine(spec)
    draw = mixed_draw(spec, spec.n_requests, 0, spec.profile_spec.peer_new_tokens)
    prompts, budgets = [r.prompt for r in draw], [r.max_new_tokens for r in draw]
    walls = []
    for _ in range(2):
        sync(spec.profile_spec.device)
        t0 = time.perf_counter()
        engine.generate(prompts, budgets)
        sync(spec.profile_spec.device)
        walls.append(time.perf_counter() - t0)
    return [{**machine(), **settings_fields(spec), **closed_fields(walls[-1], sum(budgets), spec),
             "warmup_wall_s": walls[0]}]


def closed_fields(wall: float, n_out: int, spec: RunSpec) -> dict:
    return {"workload": "closed_mixed", "batch": spec.max_batch, "wall_s": wall, "n_output_tokens": n_out,
            "output_tok_s": n_out / wall, "transformers_version": version("transformers")}
