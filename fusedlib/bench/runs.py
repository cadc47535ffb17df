"""The open loop (capacity and scale): Poisson arrivals of the mixed draw served on one
engine, one row a run (without the header rows.py adds). The paired comparisons alternate
fused and chunked engines of one configuration, both kept (engines.make_engine).

Timing: the engine's clock (time.perf_counter), its steps' records for step times.
"""
from __future__ import annotations

import statistics
import time
from collections import deque

from . import metrics, workloads
from .engines import make_engine, mixed_draw, settings_fields
from .spec import RunSpec
from .telemetry import machine
from ..engine import Engine


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


def run(spec: RunSpec) -> list[dict]:
    """A capacity or scale run: `n_requests` of the mixed draw (seed `seed`) arriving as a Poisson process at `rate`/s.
    The same seed gives the same requests at every rate. One row: metrics.summarize's fields
    (its served_rate is the drain rate), metrics.steady's (the steady rate) and step_fields'."""
    engine = make_engine(spec)
    trace = workloads.poisson_arrivals(mixed_draw(spec, spec.n_requests, spec.seed), spec.rate, seed=spec.seed)
    with engine.record_steps() as steps:
        served = serve_open_loop(engine, trace)
    return [{**machine(), **settings_fields(spec), **metrics.summarize(served),
             **metrics.steady(served, engine.config.max_batch), **step_fields(steps, engine.config.max_batch),
             "kernels_compiled_after_construction": engine.kernels_compiled_since_construction()}]
