"""Serving metrics, with vLLM `bench serve` definitions, all in seconds.

A record is one request: a dict or an object (the engine's Request) with `arrival`,
`admitted`, `token_times` (absolute time of every output token) and either `prompt_len`
or `prompt`. Per request:

  ttft       = token_times[0] - arrival
  e2e        = token_times[-1] - arrival                 (latency)
  tpot       = (e2e - ttft) / (n_out - 1)                (requests with n_out == 1 skipped)
  itl        = every consecutive token gap, pooled over requests
  queue wait = admitted - arrival

Throughputs are over the span from the first arrival to the last completion; a request is
completed once it has a token (records are taken at the end of a run). `served_rate` is the
writeup's name for vLLM's `request_throughput`; both are kept so either table reads directly.

Percentiles are numpy's default (method="linear": interpolate between the two nearest
ranks), the same as vLLM's `np.percentile` calls.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

PERCENTILES = {"median": 50, "p90": 90, "p99": 99}


def field(record, name: str):
    """`record.name` for objects, `record[name]` for dicts."""
    return record[name] if isinstance(record, dict) else getattr(record, name)


def prompt_len(record) -> int:
    if isinstance(record, dict):
        return record["prompt_len"] if "prompt_len" in record else len(record["prompt"])
    return record.prompt_len if hasattr(record, "prompt_len") else len(record.prompt)


def token_gaps(records) -> np.ndarray:
    """Every consecutive output-token gap, request by request, concatenated."""
    gaps = [np.diff(np.asarray(field(r, "token_times"), dtype=float)) for r in records]
    return np.concatenate(gaps) if gaps else np.empty(0)


def _stats(name: str, values, which=("median", "p90", "p99")) -> dict:
    v = np.asarray(values, dtype=float)
    return {f"{name}_{k}_s": float(np.percentile(v, PERCENTILES[k])) if v.size else math.nan for k in which}


def summarize(records) -> dict:
    done = [r for r in records if len(field(r, "token_times")) > 0]
    arrival = np.array([field(r, "arrival") for r in done], dtype=float)
    first = np.array([field(r, "token_times")[0] for r in done], dtype=float)
    last = np.array([field(r, "token_times")[-1] for r in done], dtype=float)
    n_out = np.array([len(field(r, "token_times")) for r in done])
    ttft = first - arrival
    e2e = last - arrival
    multi = n_out > 1
    tpot = (e2e[multi] - ttft[multi]) / (n_out[multi] - 1)
    itl = token_gaps(done)
    queue = [field(r, "admitted") - field(r, "arrival") for r in done]
    span = float(last.max() - min(field(r, "arrival") for r in records)) if done else math.nan
    rate = len(done) / span if done and span > 0 else math.nan
    # The served rate above also counts the drain after the last arrival, which pulls it under
    # the offered rate even when the engine keeps up. Completions while requests still arrive,
    # over that window, read the offered rate below saturation and the capacity past it.
    arrivals = [field(r, "arrival") for r in records]
    window = max(arrivals) - min(arrivals) if arrivals else 0.0
    in_window = int((last <= max(arrivals)).sum()) if done else 0
    return {
        "n_requests": len(records),
        "n_completed": len(done),
        "n_output_tokens": int(n_out.sum()),
        "n_prompt_tokens": int(sum(prompt_len(r) for r in records)),
        "span_s": span,
        "request_throughput": rate,
        "served_rate": rate,
        "window_served_rate": in_window / window if window > 0 else math.nan,
        "output_throughput": int(n_out.sum()) / span if done and span > 0 else math.nan,
        **_stats("ttft", ttft),
        **_stats("tpot", tpot),
        **_stats("itl", itl),
        "itl_max_s": float(itl.max()) if itl.size else math.nan,
        **_stats("e2e", e2e),
        **_stats("queue_wait", queue, which=("median", "p90")),
    }


def accounting(trace_rows_chunked, trace_rows_fused) -> list[dict]:
    """The writeup's arithmetic on two step traces (rows or DataFrames of step_trace):
    fusion refunds only the steps that ran two forwards, so
      saved = (median mixed step, chunked - fused) x number of mixed steps,
    and its share of the chunked run's step time predicts the closed-loop gain.
    Rows: one per (engine, kind) with count and median/total time, then one 'fusion' row."""
    steps = {}
    for engine, rows in (("chunked", trace_rows_chunked), ("fused", trace_rows_fused)):
        df = pd.DataFrame(rows)
        steps[engine] = df[df["record"] == "step"] if "record" in df else df
    out = []
    for engine, df in steps.items():
        for kind, g in df.groupby("kind"):
            out.append({"record": "kind", "engine": engine, "kind": kind, "n_steps": len(g),
                        "median_s": float(g["duration_s"].median()), "total_s": float(g["duration_s"].sum())})
    mixed_c, mixed_f = (steps[e].loc[steps[e]["kind"] == "mixed", "duration_s"] for e in ("chunked", "fused"))
    saved_per = float(mixed_c.median() - mixed_f.median())
    run_time = float(steps["chunked"]["duration_s"].sum())
    out.append({"record": "fusion", "loaded_steps": len(mixed_c), "loaded_steps_fused": len(mixed_f),
                "median_loaded_chunked_s": float(mixed_c.median()),
                "median_loaded_fused_s": float(mixed_f.median()),
                "saved_per_loaded_step_s": saved_per, "saved_total_s": saved_per * len(mixed_c),
                "run_time_chunked_s": run_time, "share_of_run": saved_per * len(mixed_c) / run_time,
                "loaded_share_of_steps": len(mixed_c) / len(steps["chunked"])})
    return out
