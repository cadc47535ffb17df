"""The writeup's experiments on our engines, one function each: closed, arrivals, step
trace, step profile, sensitivity (the transformers peer is in peer.py, the gates in
gates.py, the kernel bench in kernels.py). `run(specs, out)` runs any of them.

Every function takes a `RunSpec` (spec.py) and returns tidy rows. A row carries
`spec.row_fields()` (the schema version, the experiment, every option, resolved) and
`telemetry.provenance()`. With `out=<path stem>` each finished run is appended there at
once (`rows.append_rows`), and a run whose options are all already there is skipped, so a
killed campaign resumes where it stopped.

Timing: the clock is `time.perf_counter`, read after `torch.cuda.synchronize()` on CUDA.
Engines compile and warm up at construction (`Engine(warmup=True)`), and closed runs add
discarded warm-up repeats on top, so no measured run includes a compile.
"""
from __future__ import annotations

import gc
import statistics
import time
from collections import deque
from functools import lru_cache

import numpy as np
import torch

from . import metrics, rows, telemetry, workloads
from .spec import RunSpec, SpecError, check_model_path, stored_options
from .telemetry import HostMeter, sync
from ..engine import Engine
from ..weights import load_model


# ---------------------------------------------------------------------------- plumbing
def check_here(spec: RunSpec) -> RunSpec:
    """The spec resolved, and runnable on this machine (SpecError if not)."""
    spec = spec.resolved()
    if spec.profile_spec.device == "cuda" and not torch.cuda.is_available():
        raise SpecError("profile", f"{spec.profile} needs a CUDA GPU; use smoke on a CPU")
    if spec.model is not None:
        check_model_path(spec.model)
    if spec.cuda_graphs and not torch.cuda.is_available():
        raise SpecError("cuda_graphs", "needs a CUDA GPU")
    if spec.profile_spec.device == "cpu":
        # The tiny model's ops are too small to split across threads, and on a shared CPU
        # OpenMP threads spin-waiting for a descheduled peer made steps 100x slower.
        torch.set_num_threads(1)
    return spec


@lru_cache(maxsize=1)  # one model alive at a time: a 1.5B model is 3 GiB of GPU memory
def _model(name: str, device: str, dtype: str):
    return load_model(name, device=device, dtype=getattr(torch, dtype), seed=0)


def model_for(spec: RunSpec):
    p = spec.profile_spec
    return _model(spec.model, p.device, p.dtype)


def make_engine(spec: RunSpec, **engine_kw) -> Engine:
    # A previous engine's KV pool sits in the CUDA caching allocator after it is dropped;
    # give it back first, or the new default pool (a fraction of *free* memory) shrinks.
    model = model_for(spec)  # first: loading leaves its own scratch in the allocator
    # The cached model is shared: every engine sets its ops.
    model.fused_ops, model.gate_up_silu = spec.fused_ops, spec.gate_up_silu
    gc.collect()
    if spec.profile_spec.device == "cuda":
        torch.cuda.empty_cache()
    return Engine(model, kind=spec.engine, max_batch=spec.max_batch, chunk_tokens=spec.chunk_tokens,
                  attention=spec.attention, cuda_graphs=spec.cuda_graphs, graph_chunks=spec.graph_chunks,
                  whole_graphs=spec.whole_graphs, overlap=spec.overlap, **engine_kw)


def spec_workload(spec: RunSpec, name: str, n: int, seed: int, vocab_size: int) -> workloads.Workload:
    """A workload at the profile's lengths and budgets."""
    p = spec.profile_spec
    if name == "mixed":
        return workloads.mixed(n, seed=seed, lengths=p.lengths, budget=p.budget, vocab_size=vocab_size)
    if name == "p256":
        return workloads.p256(n, seed=seed, budget=p.p256_budget, length=p.p256_length, vocab_size=vocab_size)
    if name == "mixed_fixed":
        return workloads.mixed(n, seed=seed, lengths=p.lengths, budget=(p.p256_budget, p.p256_budget),
                               vocab_size=vocab_size)
    raise ValueError(f"unknown workload {name!r}; choose mixed, p256 or mixed_fixed")


def already_done(out, spec: RunSpec) -> bool:
    """Whether `out` holds a row of exactly this run: every option equal (rows from before
    an option existed count as run with its default)."""
    if out is None:
        return False
    wanted = spec.options()
    return any(stored_options(r) == wanted for r in rows.read_rows(out))


def store(out, new_rows: list[dict]) -> list[dict]:
    if out is not None:
        rows.append_rows(out, new_rows)
    return new_rows


def synced_clock(device: str):
    """perf_counter read after a device sync: installed as an engine's clock, every stamp it
    takes (step start, forward ends, token times) says when the GPU was done."""
    def clock() -> float:
        sync(device)
        return time.perf_counter()
    return clock


def _step_counts(engine: Engine, records: list) -> dict:
    """Steps by kind with their median and total time (wall, and on CUDA the forwards' GPU
    time from the engine's events). Every step ends in a host readback, which waits for the
    GPU, so a step's duration is device-accurate without extra syncs."""
    out = {"n_steps": len(records), "n_forwards": sum(r.n_forwards for r in records),
           "kernels_compiled_after_construction": engine.kernels_compiled_since_construction()}
    for kind in ("decode", "mixed", "chunk"):
        durations = [r.duration for r in records if r.kind == kind]
        out[f"n_{kind}_steps"] = len(durations)
        out[f"median_{kind}_step_s"] = statistics.median(durations) if durations else None
        out[f"total_{kind}_step_s"] = sum(durations)
        gpu = [r.gpu_s() for r in records if r.kind == kind]
        out[f"median_{kind}_step_gpu_s"] = statistics.median(gpu) if gpu and gpu[0] is not None else None
    return out


def serve_open_loop(engine: Engine, specs: workloads.Workload) -> list:
    """Replay an arrival trace against the engine's clock: before each step, admit every
    request whose arrival time has passed (stamped with its trace arrival, not the moment
    the loop noticed it); when idle, sleep until the next arrival. Returns the Requests."""
    pending, served = deque(specs), []
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


def _open_run(engine: Engine, specs: workloads.Workload) -> dict:
    with HostMeter() as host, engine.record_steps() as steps:
        served = serve_open_loop(engine, specs)
    return {**metrics.summarize(served), **_step_counts(engine, steps),
            "pool_blocks": engine.pool.num_blocks, "pool_gib_actual": engine.pool.gib, **host.fields}


# ---------------------------------------------------------------------------- closed
def closed(spec: RunSpec, out=None) -> list[dict]:
    """The whole batch submitted at time zero, wall time to its last token, `warmups` then
    `repeats` passes on one engine. One row per pass (stat='warmup', recorded and left out of
    the median, or stat='run'; `pass` numbers them from 0, warm-ups first) and one median row
    (stat='median') of the measured passes; all rows of a run are stored together, so a killed
    run leaves none of them half-written."""
    spec = check_here(spec)
    if already_done(out, spec):
        return []
    key = spec.row_fields()
    engine = make_engine(spec)
    specs = spec_workload(spec, spec.workload, spec.batch_size, spec.seed, engine.model.config.vocab_size)
    prompts, budgets = [r.prompt for r in specs], [r.max_new_tokens for r in specs]
    n_out = sum(budgets)
    device = spec.profile_spec.device
    passes = []
    for i in range(spec.warmups + spec.repeats):
        sync(device)
        with HostMeter() as host, engine.record_steps() as steps:
            t0 = time.perf_counter()
            engine.generate(prompts, budgets)
            sync(device)
            wall = time.perf_counter() - t0
        passes.append({**key, "stat": "warmup" if i < spec.warmups else "run", "pass": i, "wall_s": wall,
                       "n_output_tokens": n_out, "output_throughput": n_out / wall,
                       "request_throughput": spec.batch_size / wall, **_step_counts(engine, steps), **host.fields})
    measured = passes[spec.warmups:]
    wall = statistics.median(r["wall_s"] for r in measured)
    last = {k: v for k, v in measured[-1].items() if not k.startswith("host_")}  # per-pass readings only
    passes.append({**last, "stat": "median", "pass": None, "wall_s": wall,
                   "output_throughput": n_out / wall, "request_throughput": spec.batch_size / wall})
    prov = telemetry.provenance()
    return store(out, [{**r, **prov} for r in passes])


# ---------------------------------------------------------------------------- open loop
def arrivals(spec: RunSpec, out=None) -> list[dict]:
    """Open loop: `n_requests` mixed requests arriving as a Poisson process at `rate`/s.
    The same seed gives the same requests at every rate, and the arrival times of one rate
    are a rescaling of another's (numpy draws exponential(1/rate) as a scaled standard
    exponential). One row: metrics.summarize fields, step counts, the pool. `repeat` numbers
    runs of the same configuration (the same requests again), so a campaign can take the
    median of several."""
    spec = check_here(spec)
    if already_done(out, spec):
        return []
    engine = make_engine(spec, pool_gib=spec.pool_gib)
    specs = workloads.poisson_arrivals(spec_workload(spec, "mixed", spec.n_requests, spec.seed,
                                                     engine.model.config.vocab_size), spec.rate, seed=spec.seed)
    return store(out, [{**spec.row_fields(), **_open_run(engine, specs), **telemetry.provenance()}])


def sensitivity(specs: list[RunSpec], out=None) -> list[dict]:
    """Capacity across draws: for each spec (a seed and a share of longest-length prompts,
    None = the plain mixed draw), the served rate at a rate above capacity (the profile's
    `capacity_rate` unless given). One engine serves every draw of one configuration; one
    row per draw."""
    engines, new_rows = {}, []
    for spec in map(check_here, specs):
        if already_done(out, spec):
            continue
        config = spec.but(seed=0, long_share=None)  # what the engine depends on
        if config not in engines:
            engines.clear()  # one engine alive at a time
            engines[config] = make_engine(spec)
        engine = engines[config]
        p, vocab = spec.profile_spec, engine.model.config.vocab_size
        draw = (spec_workload(spec, "mixed", spec.n_requests, spec.seed, vocab) if spec.long_share is None else
                workloads.with_long_share(spec.n_requests, spec.long_share, seed=spec.seed, lengths=p.lengths,
                                          budget=p.budget, vocab_size=vocab))
        row = {**spec.row_fields(), "n_long_prompts": sum(len(r.prompt) == max(p.lengths) for r in draw),
               **_open_run(engine, workloads.poisson_arrivals(draw, spec.rate, seed=spec.seed)),
               **telemetry.provenance()}
        new_rows += store(out, [row])
    return new_rows


# ---------------------------------------------------------------------------- step trace
def _warm_on_disturbance(spec: RunSpec, **engine_kw):
    """An engine with the disturbance workload's requests run through it `warmups` times:
    (engine, prompts, budgets), ready for the measured pass."""
    engine = make_engine(spec, **engine_kw)
    p = spec.profile_spec
    specs = workloads.disturbance(spec.seed, lengths=p.lengths, budget=p.budget, vocab_size=engine.model.config.vocab_size)
    prompts, budgets = [r.prompt for r in specs], [r.max_new_tokens for r in specs]
    for _ in range(spec.warmups):
        engine.generate(prompts, budgets)
    return engine, prompts, budgets


def _q(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) if len(values) else None


def _copy_bandwidth(device: str) -> float | None:
    if device != "cuda":
        return None  # a CPU memcpy says nothing about the GPU floor
    from .kernels import copy_bandwidth

    return copy_bandwidth(device, 2**30)


def step_trace(spec: RunSpec, out=None) -> list[dict]:
    """The disturbance workload (64 mixed requests through `max_batch` rows, all queued at
    time zero) with sync-accurate step timing (with overlap: host-clock steps, whose duration
    is the time from one step's start to the next's, beside their GPU time). Rows, told apart
    by `record`:
      step     one per step: kind, chunk tokens, decode rows, forwards, start, duration
      request  one per request: its consecutive token gaps (every request is an incumbent
               once it decodes; its gaps are what other requests' admission costs it)
      summary  one: step counts and median duration by kind, pooled token-gap stats
    """
    spec = check_here(spec)
    if already_done(out, spec):
        return []
    key = spec.row_fields()
    engine, prompts, budgets = _warm_on_disturbance(spec)
    if not spec.overlap:
        # A synced clock would wait for the GPU at every stamp: with overlap that puts the host
        # back on the critical path the run measures, so there steps are stamped on the host's
        # clock and the GPU's share comes from the engine's events.
        engine.clock = synced_clock(spec.profile_spec.device)
    with HostMeter() as host, engine.record_steps() as steps:
        t0 = engine.clock()
        reqs = [engine.add_request(p, b, arrival=t0) for p, b in zip(prompts, budgets)]
        engine.run_until_done()
        sync(spec.profile_spec.device)
        wall = engine.clock() - t0
    new_rows = [{**key, "record": "step", "step": i, "kind": r.kind, "n_chunk_tokens": r.n_chunk_tokens,
                 "n_decode": r.n_decode, "n_forwards": r.n_forwards, "start_s": r.start - t0,
                 "duration_s": r.duration, "decode_kv_tokens": r.decode_kv_tokens,
                 "chunk_kv_tokens": r.chunk_kv_tokens,
                 # the first forward also carries the step's planning and packing
                 "forward_durations_s": list(r.forward_durations),
                 # on CUDA: the forwards on the GPU's clock (duration - gpu = the host's share)
                 "gpu_s": r.gpu_s(), "forward_gpu_s": r.forward_gpu_s()} for i, r in enumerate(steps)]
    for r in reqs:
        gaps = np.diff(r.token_times)
        new_rows.append({**key, "record": "request", "rid": r.rid, "prompt_len": r.prompt_len,
                         "n_output_tokens": len(r.output), "admitted_s": r.admitted - t0,
                         "ttft_s": r.token_times[0] - r.arrival, "gap_median_s": _q(gaps, 50),
                         "gap_max_s": float(gaps.max()) if gaps.size else None,
                         "token_gaps_s": gaps.tolist()})
    gaps = metrics.token_gaps(reqs)
    new_rows.append({
        **key, "record": "summary", "wall_s": wall, "step_time_s": sum(r.duration for r in steps), **host.fields,
        # the decode step's bytes floor: weights + KV read, at a bandwidth measured here
        "weight_bytes": sum(p.numel() * p.element_size() for p in engine.model.parameters()),
        "kv_bytes_per_token": engine.pool.bytes_per_block // engine.pool.block_size,
        "copy_bandwidth_Bps": _copy_bandwidth(spec.profile_spec.device),
        **_step_counts(engine, steps), "gap_median_s": _q(gaps, 50), "gap_p90_s": _q(gaps, 90),
        "gap_p99_s": _q(gaps, 99), "gap_max_s": float(gaps.max())})
    prov = telemetry.provenance()
    return store(out, [{**r, **prov} for r in new_rows])


# ---------------------------------------------------------------------------- step profile
STEP_MARK = "fusedlib_step_"


def step_profile(spec: RunSpec, out=None) -> list[dict]:
    """The step trace's workload once more under torch.profiler, to count what a step does:
    the kernels and copies it puts on the GPU and their summed device time, beside its wall
    time. The profiler's own cost lengthens every step, so these rows compare steps within
    one run and never feed the step-time tables. Only the first `profiled_steps` steps (the
    admission waves, where the mixed steps are) are profiled, since reading back a full
    model's events costs time per event; the rest of the run finishes unprofiled. Rows, told
    apart by `record`:
      step  one per step: kind, profiled wall time, kernels, copies, device time
      ops   per step kind and per quartile of that kind's steps by wall time (slowest and
            fastest): the CPU ops with the most self time per step (`top_ops` of them), so a
            slow step's extra host work has a name
    """
    import os
    from bisect import bisect_right
    from collections import Counter

    # Kineto (the profiler's backend) prints "USDT: ... profiler_start/stop" lines at its
    # USDT log level, 5, whatever else is asked; 6 keeps them out (read at first profiler use).
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")

    from torch.profiler import ProfilerActivity, record_function
    from torch.profiler import profile as torch_profile

    spec = check_here(spec)
    if already_done(out, spec):
        return []
    key = spec.row_fields()
    device = spec.profile_spec.device
    engine, prompts, budgets = _warm_on_disturbance(spec)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with torch_profile(activities=activities) as prof, engine.record_steps() as steps:
        for p, b in zip(prompts, budgets):
            engine.add_request(p, b)
        i = 0
        while engine.has_work() and i < spec.profiled_steps:
            with record_function(f"{STEP_MARK}{i}"):
                engine.step()
            i += 1
        sync(device)
    engine.run_until_done()  # every admitted request finishes; its pool blocks come back
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CPU]
    # (On a GPU the profiler repeats each mark as a device-side annotation on the GPU's own
    # clock; only the host-side one bounds the step's host events.)
    marks = sorted((e.time_range.start, e.time_range.end, int(e.name[len(STEP_MARK):]))
                   for e in events if e.name.startswith(STEP_MARK))
    starts = [m[0] for m in marks]
    kernels, copies, device_us = Counter(), Counter(), Counter()
    ops: dict[int, Counter] = {m[2]: Counter() for m in marks}
    for e in events:  # a device event reaches us through the CPU event that launched it
        j = bisect_right(starts, e.time_range.start) - 1
        if j < 0 or e.time_range.start > marks[j][1]:
            continue  # outside every step
        step = marks[j][2]
        # Each kernel hangs off exactly one CPU event (its launch's innermost op or, for a
        # Triton launch outside any op, the step's own mark), so none is counted twice.
        for k in e.kernels:
            (copies if k.name.startswith(("Memcpy", "Memset")) else kernels)[step] += 1
            device_us[step] += k.duration
        if not e.name.startswith(STEP_MARK):
            ops[step][e.name] += e.self_cpu_time_total
    wall = {m[2]: (m[1] - m[0]) / 1e6 for m in marks}
    new_rows = [{**key, "record": "step", "step": i, "kind": r.kind, "n_chunk_tokens": r.n_chunk_tokens,
                 "n_decode": r.n_decode, "n_forwards": r.n_forwards, "profiled_wall_s": wall.get(i),
                 "n_kernels": kernels[i], "n_copies": copies[i], "device_s": device_us[i] / 1e6}
                for i, r in enumerate(steps)]
    for kind in sorted({r.kind for r in steps}):
        ids = sorted((i for i, r in enumerate(steps) if r.kind == kind and i in wall), key=wall.get)
        quarter = max(1, len(ids) // 4)
        for part, chosen in (("fastest quarter", ids[:quarter]), ("slowest quarter", ids[-quarter:])):
            total = sum((ops[i] for i in chosen), Counter())
            new_rows.append({**key, "record": "ops", "kind": kind, "part": part, "n_steps": len(chosen),
                             "wall_s_median": float(np.median([wall[i] for i in chosen])),
                             "top_ops": [{"op": name, "self_cpu_s_per_step": us / 1e6 / len(chosen)}
                                         for name, us in total.most_common(spec.top_ops)]})
    prov = telemetry.provenance()
    return store(out, [{**r, **prov} for r in new_rows])


# ---------------------------------------------------------------------------- gates
def gates(spec: RunSpec, out=None) -> list[dict]:
    """Every correctness gate (gates.py) under each attention backend: the one asked for, or
    by default the torch reference and the profile's own. One row per gate report; gates
    always run (a gate is a check, not a measurement to resume)."""
    from . import gates as checks

    spec = check_here(spec)
    attentions = (spec.attention,) if spec.attention else tuple(dict.fromkeys(["torch", spec.profile_spec.attention]))
    model = model_for(spec)
    model.fused_ops, model.gate_up_silu = spec.fused_ops, spec.gate_up_silu
    reports = checks.run_all(model, attentions=attentions, cuda_graphs=spec.cuda_graphs,
                             graph_chunks=spec.graph_chunks, whole_graphs=spec.whole_graphs, overlap=spec.overlap)
    own = ("attention", "fused_ops", "gate_up_silu", "cuda_graphs", "graph_chunks", "whole_graphs", "overlap")
    which = {k: v for k, v in spec.row_fields().items() if k not in own}  # each report names its own
    prov = telemetry.provenance()
    return store(out, [{**which, **row, **prov} for row in checks.report_rows(reports)])


# ---------------------------------------------------------------------------- dispatch
def run(specs: RunSpec | list[RunSpec], out=None) -> list[dict]:
    """Run each spec in order with the experiment it names; returns the new rows (a run
    already in `out` is skipped and adds none). Consecutive sensitivity specs run together,
    so one engine serves every draw of a configuration."""
    from itertools import groupby

    from . import kernels, peer

    one = {"closed": closed, "arrivals": arrivals, "step_trace": step_trace, "step_profile": step_profile,
           "gates": gates, "peer": peer.closed, "peer_arrivals": peer.arrivals}
    bench = {"kernel_gate": kernels.kernel_gate, "layout_bench": kernels.decode_layout_bench,
             "splitkv_sweep": kernels.splitkv_sweep}
    new_rows = []
    for experiment, group in groupby([specs] if isinstance(specs, RunSpec) else specs, key=lambda s: s.experiment):
        if experiment == "sensitivity":
            new_rows += sensitivity(list(group), out)
            continue
        for spec in group:
            if experiment in bench:  # a bench of kernels, not a run to resume
                spec = check_here(spec)
                head = {"schema_version": spec.row_fields()["schema_version"], "experiment": experiment}
                new_rows += store(out, [{**head, **r} for r in bench[experiment](profile=spec.profile)])
            else:
                new_rows += one[experiment](spec, out)
    return new_rows
