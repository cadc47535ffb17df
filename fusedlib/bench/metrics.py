"""Serving metrics, with vLLM `bench serve` definitions, all in seconds.

A record is one request: a dict or an object (the engine's Request) with `arrival`,
`admitted` and `token_times` (absolute time of every output token). Per request:

  ttft       = token_times[0] - arrival
  e2e        = token_times[-1] - arrival
  itl        = every consecutive token gap, pooled over requests
  queue wait = admitted - arrival

`served_rate` is completed requests over the span from the first arrival to the last
completion (vLLM's `request_throughput`): the drain rate, empty pipeline and emptying batch
included, not a capacity (`steady` is). `goodput_rate` counts, over the same span, the
requests with TTFT <= `TTFT_SLO_S` (1 s) and their own p99 token gap <= `ITL_SLO_S` (50 ms;
one token: no gap, met). Percentiles are numpy's default (linear), as vLLM's.
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


# A run is saturated when its longest backlogged stretch holds at least this share of its
# completions: a queue that formed now and then below capacity leaves shorter stretches.
SATURATED_MIN_FRACTION = 0.5


# Request times are kept to 1 us, not coarser: a completion frees a row that the next step
# takes tens of microseconds later (the engine stamps `admitted` at the step's start); at
# 0.1 ms the two often round to one instant, the waiting request counts as admitted when the
# completion comes, and the window's end moves (by a few percent of the rate on a smoke run).
TIME_DIGITS = 6
REQUEST_TIMES = ("arrival", "admitted", "finished")


def request_times(records) -> dict:
    """Per request, in arrival order, seconds after the first arrival rounded to TIME_DIGITS:
    `arrival`, `admitted` (None if never admitted) and `finished`, its last token's time (None
    without tokens). What an open-loop row keeps, and what `steady` reads."""
    records = sorted(records, key=lambda r: field(r, "arrival"))
    first = min((float(field(r, "arrival")) for r in records), default=0.0)

    def since(t):
        return None if t is None else round(float(t) - first, TIME_DIGITS)
    return {"arrival": [since(field(r, "arrival")) for r in records],
            "admitted": [since(field(r, "admitted")) for r in records],
            "finished": [since(field(r, "token_times")[-1] if len(field(r, "token_times")) else None) for r in records]}


def steady(records, max_batch: int) -> dict:
    """The steady rate of served records: `steady_from_times` on their `request_times`."""
    return steady_from_times(request_times(records), max_batch)


def steady_from_times(times: dict, max_batch: int, skip: int | None = None) -> dict:
    """The steady rate: completions per second while the engine is backlogged, from `times` (`request_times`'s
    dict, as an open-loop row keeps it). `saturated`: the backlogged stretch holds SATURATED_MIN_FRACTION of the
    completions or more; if not, the rate runs from the pipeline's fill to the last arrival (below). Returns
    `steady_rate` (None under two instants), `steady_window_s` ([start, end] or None), the rest."""
    # A completion is backlogged when, at its instant, an arrived request still waits and the
    # batch is full (at least `max_batch` requests admitted and not finished before it, itself
    # included): the row it frees is taken at the next step. The window is the longest stretch
    # of backlogged completions less its first `skip` (default `max_batch`). It leaves out the
    # pipeline's fill and the tail after the queue empties (what makes `served_rate`, the drain
    # rate, low), and the first batch's wave: past capacity the batch fills at once and its
    # requests finish together, spread by their budgets, slower than the steady rate (a 256-row
    # queue offered 4x reads 4-5% low without the skip: tests/bench/test_metrics.py). The rate
    # is event to event: completions after the window's first instant over its length. (Capacity
    # runs size the pool for `max_batch` of the longest requests: the bound is the rows.)
    skip = max_batch if skip is None else skip
    if not isinstance(skip, int) or skip < 0:
        raise ValueError(f"skip must be a non-negative integer, got {skip!r}")
    lengths = {k: len(times[k]) for k in REQUEST_TIMES if k in times}
    if len(lengths) < len(REQUEST_TIMES) or len(set(lengths.values())) != 1:
        raise ValueError(f"times must hold lists {', '.join(REQUEST_TIMES)} of one length, got lengths {lengths}")
    arrival, admitted, finished = (np.asarray(times[k], dtype=float) for k in REQUEST_TIMES)  # None reads as nan
    done = ~np.isnan(finished)  # the requests with tokens
    if not done.any():
        return dict(steady_rate=None, steady_window_s=None, steady_fraction=0.0, saturated=False, steady_skip=0)
    first_arrival = min(times["arrival"])
    e2e = (finished - arrival)[done]  # each request's latency, before the times are sorted apart
    arrival, admitted, finished = (np.sort(x[done]) for x in (arrival, admitted, finished))
    waiting = np.searchsorted(arrival, finished, "right") - np.searchsorted(admitted, finished, "right")
    in_batch = np.searchsorted(admitted, finished, "right") - np.searchsorted(finished, finished, "left")
    start, stop = _longest_run((waiting > 0) & (in_batch >= max_batch))
    if stop - start < SATURATED_MIN_FRACTION * len(finished):
        # Below saturation the engine serves what arrives. Counted from the first completion, the
        # rate would read low by the spread of latencies (short requests finish first while long ones
        # are still in flight: 3-11% at 256 rows). The window opens once the pipeline has filled, the
        # 99th-percentile latency after the first arrival (at most half the arrivals' span), and
        # closes at the last arrival; the rate is its completions over its length.
        opens = arrival[0] + min(float(np.percentile(e2e, 99)), (arrival[-1] - arrival[0]) / 2)
        inside, length = np.count_nonzero((finished > opens) & (finished <= arrival[-1])), arrival[-1] - opens
        return {"steady_rate": float(inside / length) if length > 0 and inside else None, "saturated": False,
                "steady_window_s": [float(opens - first_arrival), float(arrival[-1] - first_arrival)],
                "steady_fraction": inside / len(finished), "steady_skip": 0}
    w = finished[start + skip:stop]  # the backlogged stretch less the first batch's wave
    return {"steady_rate": float(np.count_nonzero(w > w[0]) / (w[-1] - w[0])) if w.size and w[-1] > w[0] else None,
            "steady_window_s": [float(w[0] - first_arrival), float(w[-1] - first_arrival)] if w.size else None,
            "steady_fraction": w.size / len(finished), "saturated": True, "steady_skip": skip}


def _longest_run(flags: np.ndarray) -> tuple[int, int]:
    """[start, stop) of the longest run of True in `flags` ((0, 0) when there is none)."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], np.asarray(flags, dtype=int), [0]])))
    if not edges.size:
        return 0, 0
    i = int(np.argmax(edges[1::2] - edges[::2]))  # the first of the longest
    return int(edges[2 * i]), int(edges[2 * i + 1])
