"""The open loop (capacity, scale and soak): Poisson arrivals of the mixed draw served on
one engine, one row a run (without the header rows.py adds). The paired comparisons alternate
fused and chunked engines of one configuration, both kept (engines.make_engine). The soak
serves many requests past capacity on an engine of its own and counts what was lost.

Timing: the engine's clock (time.perf_counter), its steps' records for step times.
"""
from __future__ import annotations

import statistics

from . import metrics, workloads
from .engines import make_engine, mixed_draw, serve_open_loop, settings_fields
from .spec import RunSpec
from .telemetry import machine


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
    for name, seconds in (("host_ms_per_step_p50", _median(r.host_s for r in full)),
                          ("step_gpu_ms_p50", _median(r.gpu_s() for r in full))):
        out[name] = None if seconds is None else seconds * 1e3
    return out


def run(spec: RunSpec) -> list[dict]:
    """A soak run (`soak`), or a capacity or scale run: `n_requests` of the mixed draw (seed `seed`) arriving as a Poisson process at `rate`/s.
    The same seed gives the same requests at every rate. One row: metrics.summarize's fields
    (its served_rate is the drain rate), metrics.steady's (the steady rate) and step_fields';
    like the soak's, it keeps `request_times`, which metrics.steady_from_times reads again."""
    if spec.experiment == "soak":
        return soak(spec)
    engine = make_engine(spec)
    trace = workloads.poisson_arrivals(mixed_draw(spec, spec.n_requests, spec.seed), spec.rate, seed=spec.seed)
    with engine.record_steps() as steps:
        served = serve_open_loop(engine, trace)
    times = metrics.request_times(served)
    return [{**machine(), **settings_fields(spec), **metrics.summarize(served),
             **metrics.steady_from_times(times, engine.config.max_batch), **step_fields(steps, engine.config.max_batch),
             "request_times": times,
             "kernels_compiled_after_construction": engine.kernels_compiled_since_construction()}]


SOAK_CHECKPOINT = 1000  # completions after which the soak reads peak GPU memory the first time


def soak(spec: RunSpec) -> list[dict]:
    """On a fresh engine: the requests lost (admitted, not finished with their budget), the pool
    wholly free after, peak GPU memory after min(SOAK_CHECKPOINT, n/10) completions and at
    the end (None on CPU), kernels compiled after construction."""
    import torch

    engine = make_engine(spec, cached=False)
    on_gpu = spec.profile_spec.device == "cuda"
    checkpoint, peak_at_checkpoint = min(SOAK_CHECKPOINT, spec.n_requests // 10), []
    if on_gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()

    def read_peak():
        if not peak_at_checkpoint and engine.num_finished >= checkpoint:
            peak_at_checkpoint.append(torch.cuda.max_memory_allocated() if on_gpu else None)
    trace = workloads.poisson_arrivals(mixed_draw(spec, spec.n_requests, spec.seed), spec.rate, seed=spec.seed)
    with engine.record_steps() as steps:
        served = serve_open_loop(engine, trace, on_step=read_peak)
    lost = sum(r.error is not None or r.finished is None or len(r.output) != r.max_new_tokens for r in served)
    pool = engine.pool
    times = metrics.request_times(served)
    return [{**machine(), **settings_fields(spec), **metrics.steady_from_times(times, engine.config.max_batch),
             "request_times": times, "n_requests": len(served), "n_lost": lost, "n_steps": len(steps),
             "pool_free_after": not engine.has_work() and pool.num_free_blocks == pool.num_blocks,
             "mem_checkpoint_completions": checkpoint, "peak_mem_1k_bytes": peak_at_checkpoint[0],
             "peak_mem_end_bytes": torch.cuda.max_memory_allocated() if on_gpu else None,
             "kernels_compiled_after_construction": engine.kernels_compiled_since_construction()}]
