"""Serving metrics, with vLLM `bench serve` definitions, all in seconds.

A record is one request: a dict or an object (the engine's Request) with `arrival`,
`admitted` and `token_times` (absolute time of every output token). Per request:

  ttft       = token_times[0] - arrival
  e2e        = token_times[-1] - arrival
  itl        = every consecutive token gap, pooled over requests
  queue wait = admitted - arrival

`served_rate` is completed requests over the span from the first arrival to the last
completion (vLLM's `request_throughput`). `goodput_rate` counts only the requests that met
both service levels, over the same span: TTFT <= `TTFT_SLO_S` (1 s) and their own p99 token
gap <= `ITL_SLO_S` (50 ms; a request with one token has no gap and meets it). Percentiles are
numpy's default (linear interpolation), as vLLM's.
"""
from __future__ import annotations

import math

import numpy as np

TTFT_SLO_S = 1.0
ITL_SLO_S = 0.050
PERCENTILES = {"p50": 50, "p90": 90, "p99": 99}


def field(record, name: str):
    """`record.name` for objects, `record[name]` for dicts."""
    return record[name] if isinstance(record, dict) else getattr(record, name)


def _times(record) -> np.ndarray:
    return np.asarray(field(record, "token_times"), dtype=float)


def token_gaps(records) -> np.ndarray:
    """Every consecutive output-token gap, request by request, concatenated."""
    gaps = [np.diff(_times(r)) for r in records]
    return np.concatenate(gaps) if gaps else np.empty(0)


def _stats(name: str, values, which=("p50", "p90", "p99")) -> dict:
    v = np.asarray(values, dtype=float)
    return {f"{name}_{k}_s": float(np.percentile(v, PERCENTILES[k])) if v.size else math.nan for k in which}


def meets_slo(record) -> bool:
    """TTFT <= TTFT_SLO_S and the request's own p99 token gap <= ITL_SLO_S."""
    times = _times(record)
    if not times.size or times[0] - field(record, "arrival") > TTFT_SLO_S:
        return False
    gaps = np.diff(times)
    return not gaps.size or float(np.percentile(gaps, 99)) <= ITL_SLO_S


def summarize(records) -> dict:
    done = [r for r in records if len(field(r, "token_times")) > 0]
    arrival = np.array([field(r, "arrival") for r in done], dtype=float)
    first = np.array([field(r, "token_times")[0] for r in done], dtype=float)
    last = np.array([field(r, "token_times")[-1] for r in done], dtype=float)
    n_out = sum(len(field(r, "token_times")) for r in done)
    span = float(last.max() - min(field(r, "arrival") for r in records)) if done else math.nan
    per_s = (lambda n: n / span) if done and span > 0 else (lambda n: math.nan)
    return {
        "n_completed": len(done),
        "n_output_tokens": n_out,
        "span_s": span,
        "served_rate": per_s(len(done)),
        "goodput_rate": per_s(sum(map(meets_slo, done))),
        "output_tok_s": per_s(n_out),
        **_stats("ttft", first - arrival),
        **_stats("itl", token_gaps(done)),
        **_stats("e2e", last - arrival, which=("p50", "p99")),
        **_stats("queue_wait", [field(r, "admitted") - field(r, "arrival") for r in done], which=("p50",)),
    }
