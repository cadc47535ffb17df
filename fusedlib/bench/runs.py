"""The writeup's experiments, one function each; every function returns tidy rows.

Callers (the CLI, the notebooks, the Modal app) only choose parameters and store rows. A
row carries the experiment, the engine, every parameter (resolved: no None standing for
"the profile's default") and `results.provenance()`. With `out=<path stem>` each finished
run is appended there at once (`results.append_rows`), and a run whose parameters are
already there is skipped, so a killed campaign resumes where it stopped.

Profiles fix what "the model" and "the workload" mean:
  full   Qwen2.5-1.5B architecture, fp16 on CUDA, Triton attention, the writeup's lengths
  smoke  the tiny preset, fp32 on CPU, torch attention, lengths and budgets scaled down so
         every experiment finishes in seconds; smoke numbers check plumbing, not speed.

Timing: the clock is `time.perf_counter`, read after `torch.cuda.synchronize()` on CUDA.
Engines compile and warm up at construction (`Engine(warmup=True)`), and closed runs add
discarded warm-up repeats on top, so no measured run includes a compile.
"""
from __future__ import annotations

import gc
import os
import statistics
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from . import metrics, workloads
from . import rows as results
from ..engine import Engine
from ..weights import load_model, to_transformers


@dataclass(frozen=True)
class Profile:
    model: str
    device: str
    dtype: torch.dtype
    attention: str
    chunk_tokens: int
    lengths: tuple[int, ...]  # mixed prompt lengths
    budget: tuple[int, int]  # mixed max_new_tokens range, inclusive
    p256_length: int  # the uniform control's prompt length
    p256_budget: int
    rates: tuple[float, ...]  # the arrival sweep, requests/s
    capacity_rate: float  # above both engines' capacity: where sensitivity measures it


PROFILES = {
    "full": Profile(model="qwen2.5-1.5b", device="cuda", dtype=torch.float16, attention="triton",
                    chunk_tokens=512, lengths=workloads.MIXED_LENGTHS, budget=workloads.MIXED_BUDGET,
                    p256_length=256, p256_budget=workloads.P256_BUDGET,
                    # the 400-request grid of the H200 campaigns: from under both engines' eager
                    # capacity to well past it (the arrivals page shows where each saturates)
                    rates=(4, 5, 6, 7, 8, 10, 20, 40), capacity_rate=40),
    # Lengths 4..64 against a 32-token chunk keep the full profile's shape (long prompts
    # take several chunks, short ones share one); the tiny model serves a few hundred
    # requests/s on one CPU thread, hence the rates.
    "smoke": Profile(model="tiny", device="cpu", dtype=torch.float32, attention="torch",
                     chunk_tokens=32, lengths=(4, 8, 16, 32, 64), budget=(4, 16),
                     p256_length=16, p256_budget=8,
                     rates=(50, 100, 200, 400), capacity_rate=400),
}


# ---------------------------------------------------------------------------- plumbing
@dataclass(frozen=True)
class Setup:
    """Everything that decides which model and which requests a run sees."""
    profile: str
    model: str
    attention: str
    chunk_tokens: int
    max_batch: int
    cuda_graphs: bool = False  # decode-only forwards replayed from CUDA graphs (fusedlib.graphs)
    graph_chunks: bool = False  # forwards with prompt chunks replayed piecewise (fusedlib.graphs)

    @property
    def spec(self) -> Profile:
        return PROFILES[self.profile]

    def fields(self) -> dict:
        return {"profile": self.profile, "model": self.model, "device": self.spec.device,
                "dtype": str(self.spec.dtype).removeprefix("torch."), "attention": self.attention,
                "max_batch": self.max_batch, "chunk_tokens": self.chunk_tokens, "cuda_graphs": self.cuda_graphs,
                # only when on, so rows from before the option existed keep their keys
                **({"graph_chunks": True} if self.graph_chunks else {})}

    def workload(self, name: str, n: int, seed: int, vocab_size: int) -> workloads.Workload:
        if name == "mixed":
            return workloads.mixed(n, seed=seed, lengths=self.spec.lengths, budget=self.spec.budget,
                                   vocab_size=vocab_size)
        if name == "p256":
            return workloads.p256(n, seed=seed, budget=self.spec.p256_budget, length=self.spec.p256_length,
                                  vocab_size=vocab_size)
        raise ValueError(f"unknown workload {name!r}; choose mixed or p256")


def setup(profile: str = "full", model: str | None = None, attention: str | None = None,
          chunk_tokens: int | None = None, max_batch: int = 32, cuda_graphs: bool = False,
          graph_chunks: bool = False) -> Setup:
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}")
    p = PROFILES[profile]
    if p.device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"profile {profile!r} needs a CUDA GPU; use profile 'smoke' on CPU")
    if p.device == "cpu":
        # The tiny model's ops are too small to split across threads, and on a shared CPU
        # OpenMP threads spin-waiting for a descheduled peer made steps 100x slower.
        torch.set_num_threads(1)
    return Setup(profile, model or p.model, attention or p.attention, chunk_tokens or p.chunk_tokens,
                 max_batch, cuda_graphs, graph_chunks)


@lru_cache(maxsize=1)  # one model alive at a time: a 1.5B model is 3 GiB of GPU memory
def _model(name: str, device: str, dtype: torch.dtype):
    return load_model(name, device=device, dtype=dtype, seed=0)


def model_for(s: Setup):
    return _model(s.model, s.spec.device, s.spec.dtype)


def make_engine(s: Setup, kind: str, **engine_kw) -> Engine:
    # A previous engine's KV pool sits in the CUDA caching allocator after it is dropped;
    # give it back first, or the new default pool (a fraction of *free* memory) shrinks.
    model = model_for(s)  # first: loading leaves its own scratch in the allocator
    gc.collect()
    if s.spec.device == "cuda":
        torch.cuda.empty_cache()
    return Engine(model, kind=kind, max_batch=s.max_batch, chunk_tokens=s.chunk_tokens,
                  attention=s.attention, cuda_graphs=s.cuda_graphs, graph_chunks=s.graph_chunks, **engine_kw)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _synced_clock(device: str):
    """perf_counter read after a device sync: installed as an engine's clock, every stamp it
    takes (step start, forward ends, token times) says when the GPU was done."""
    def clock() -> float:
        _sync(device)
        return time.perf_counter()
    return clock


class HostMeter:
    """What the machine gave a run: the process's CPU seconds and the CPU seconds the
    hypervisor stole from the machine (Linux /proc/stat "steal", all CPUs; None where there
    is none), next to the run's wall time; and, where nvidia-smi answers, the GPU's SM clock,
    temperature and power sampled every GPU_SAMPLE_S seconds through the run. A step here is
    mostly host work, so a run whose steps ran slow while much was stolen was slowed by the
    machine, not by its workload; a low clock says the GPU ran slow. (CUDA's synchronize
    spins, so the process's CPU time is close to its wall time; an open-loop run idles
    between arrivals by design.) Before and after the run it also times the host's cost per
    kernel launch (`launch_probe_us`), outside the run's wall time."""

    GPU_SAMPLE_S = 2.0

    def __enter__(self):
        self._launch_before = launch_probe_us()
        self._samples, self._stop = [], threading.Event()
        self._sampler = threading.Thread(target=self._sample_gpu, daemon=True)
        self._sampler.start()
        self._wall, self._cpu, self._steal = time.perf_counter(), time.process_time(), _steal_s()
        return self

    def _sample_gpu(self):
        while True:
            sample = _gpu_sample()
            if sample is None:
                return
            self._samples.append(sample)
            if self._stop.wait(self.GPU_SAMPLE_S):
                return

    def __exit__(self, *exc):
        steal = _steal_s()
        self.fields = {"host_wall_s": time.perf_counter() - self._wall, "host_cpu_s": time.process_time() - self._cpu,
                       "host_steal_s": None if steal is None or self._steal is None else steal - self._steal}
        self._stop.set()
        self._sampler.join()
        clock, temp, power = (np.array(x, dtype=float) for x in zip(*self._samples)) if self._samples else ([],) * 3
        self.fields.update({
            "gpu_samples": len(self._samples),
            "gpu_sm_clock_mhz_median": float(np.median(clock)) if len(clock) else None,
            "gpu_sm_clock_mhz_min": float(clock.min()) if len(clock) else None,
            "gpu_temp_c_max": float(temp.max()) if len(temp) else None,
            "gpu_power_w_median": float(np.median(power)) if len(power) else None,
            "host_launch_us_before": self._launch_before, "host_launch_us_after": launch_probe_us()})
        return False


def launch_probe_us(n: int = 2000, repeats: int = 3) -> float:
    """The host's time per tiny kernel launch, in microseconds: n in-place adds to a
    one-element tensor, synchronized, median of `repeats` after one warm-up. The GPU work is
    nothing, so this times Python, PyTorch's dispatch and the launch: what each of an eager
    forward's many launches pays, and a candidate for what differed between machines that
    ran the same steps at different speeds. On a CPU it times dispatch and a one-element add."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.zeros(1, device=device)
    per_launch = []
    for _ in range(repeats + 1):
        _sync(device)
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1.0)
        _sync(device)
        per_launch.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(per_launch[1:])


def _gpu_sample() -> tuple[float, float, float] | None:
    """(SM clock MHz, temperature C, power W) of this process's first visible GPU from
    nvidia-smi; None where there is no nvidia-smi or it does not answer."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"
    try:
        out = subprocess.run(["nvidia-smi", "-i", visible, "--query-gpu=clocks.sm,temperature.gpu,power.draw",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=5)
        clock, temp, power = (float(x) for x in out.stdout.strip().splitlines()[0].split(","))
        return clock, temp, power
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return None


def _steal_s() -> float | None:
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()  # "cpu user nice system idle iowait irq softirq steal ..."
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


# Options a row records only when set (rows from before they existed keep their keys): a
# run without one must not match a row with it, so both sides compare them with these values.
_UNSET_OPTIONS = {"graph_chunks": False, "repeat": 0}


def _already_done(out, key: dict) -> bool:
    if out is None:
        return False
    key = {**_UNSET_OPTIONS, **key}
    return tuple(key.values()) in results.done_keys(out, list(key), absent=_UNSET_OPTIONS)


def _store(out, rows: list[dict]) -> list[dict]:
    if out is not None:
        results.append_rows(out, rows)
    return rows


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
    done_before = engine.num_finished
    # A terminal-only progress bar (disable=None): a rate-1 run of 400 requests is minutes.
    progress = tqdm(total=len(specs), desc="requests", unit="req", leave=False, disable=None)
    t0 = engine.clock()
    while pending or engine.has_work():
        now = engine.clock()
        while pending and t0 + pending[0].arrival <= now:
            s = pending.popleft()
            served.append(engine.add_request(s.prompt, s.max_new_tokens, arrival=t0 + s.arrival))
        if engine.has_work():
            engine.step()
            progress.update(engine.num_finished - done_before - progress.n)
        elif pending:
            time.sleep(max(0.0, t0 + pending[0].arrival - engine.clock()))
    progress.close()
    return served


# ---------------------------------------------------------------------------- gates
def gates(profile: str = "full", attentions=None, model: str | None = None, max_batch: int = 32,
          chunk_tokens: int | None = None, out=None) -> list[dict]:
    """Every correctness gate (fusedlib.gates) under each attention backend: by default the
    torch reference and the profile's own. One row per gate report."""
    from . import gates as checks

    s = setup(profile, model, None, chunk_tokens, max_batch)
    attentions = tuple(attentions or dict.fromkeys(["torch", s.attention]))
    reports = checks.run_all(model_for(s), attentions=attentions)
    which = {k: v for k, v in s.fields().items() if k in ("profile", "model", "device", "dtype")}
    prov = results.provenance()
    return _store(out, [{**row, **which, **prov} for row in checks.report_rows(reports)])


# ---------------------------------------------------------------------------- closed
def closed(engine_kind: str, workload: str = "mixed", batch_size: int = 32, seed: int = 0,
           max_batch: int = 32, chunk_tokens: int | None = None, warmups: int = 2, repeats: int = 5,
           profile: str = "full", attention: str | None = None, model: str | None = None,
           cuda_graphs: bool = False, graph_chunks: bool = False, out=None) -> list[dict]:
    """The whole batch submitted at time zero, wall time to its last token. One row per
    recorded repeat (stat='run') and one median row (stat='median'); all rows of a
    configuration are stored together, so a killed run leaves none of them half-written."""
    s = setup(profile, model, attention, chunk_tokens, max_batch, cuda_graphs, graph_chunks)
    key = {"experiment": "closed", "engine": engine_kind, **s.fields(), "workload": workload,
           "batch_size": batch_size, "seed": seed, "warmups": warmups, "repeats": repeats}
    if _already_done(out, key):
        return []
    engine = make_engine(s, engine_kind)
    specs = s.workload(workload, batch_size, seed, engine.model.config.vocab_size)
    prompts, budgets = [r.prompt for r in specs], [r.max_new_tokens for r in specs]
    n_out = sum(budgets)
    rows = []
    for i in range(warmups + repeats):
        _sync(s.spec.device)
        with HostMeter() as host, engine.record_steps() as steps:
            t0 = time.perf_counter()
            engine.generate(prompts, budgets)
            _sync(s.spec.device)
            wall = time.perf_counter() - t0
        if i >= warmups:
            rows.append({**key, "stat": "run", "repeat": i - warmups, "wall_s": wall,
                         "n_output_tokens": n_out, "output_throughput": n_out / wall,
                         "request_throughput": batch_size / wall,
                         **_step_counts(engine, steps), **host.fields})
    wall = statistics.median(r["wall_s"] for r in rows)
    last = {k: v for k, v in rows[-1].items() if not k.startswith("host_")}  # per-run readings only
    rows.append({**last, "stat": "median", "repeat": None, "wall_s": wall,
                 "output_throughput": n_out / wall, "request_throughput": batch_size / wall})
    prov = results.provenance()
    return _store(out, [{**r, **prov} for r in rows])


# ---------------------------------------------------------------------------- open loop
def _open_run(engine: Engine, specs: workloads.Workload) -> dict:
    with HostMeter() as host, engine.record_steps() as steps:
        served = serve_open_loop(engine, specs)
    return {**metrics.summarize(served), **_step_counts(engine, steps),
            "pool_blocks": engine.pool.num_blocks, "pool_gib_actual": engine.pool.gib, **host.fields}


def arrivals(engine_kind: str, rate: float, n_requests: int = 400, seed: int = 0,
             pool_gib: float | None = None, max_batch: int = 32, chunk_tokens: int | None = None,
             profile: str = "full", attention: str | None = None, model: str | None = None,
             cuda_graphs: bool = False, graph_chunks: bool = False, repeat: int = 0, out=None) -> list[dict]:
    """Open loop: `n_requests` mixed requests arriving as a Poisson process at `rate`/s.
    The same seed gives the same requests at every rate, and the arrival times of one rate
    are a rescaling of another's (numpy draws exponential(1/rate) as a scaled standard
    exponential). One row: metrics.summarize fields, step counts, the pool. `repeat` numbers
    runs of the same configuration (the same requests again), so a campaign can take the
    median of several; the key carries it only from the second run on, so a first run is
    the same row whether or not repeats were asked for."""
    s = setup(profile, model, attention, chunk_tokens, max_batch, cuda_graphs, graph_chunks)
    key = {"experiment": "arrivals", "engine": engine_kind, **s.fields(), "rate": rate,
           "n_requests": n_requests, "seed": seed, "pool_gib": pool_gib, **({"repeat": repeat} if repeat else {})}
    if _already_done(out, key):
        return []
    engine = make_engine(s, engine_kind, pool_gib=pool_gib)
    specs = workloads.poisson_arrivals(s.workload("mixed", n_requests, seed, engine.model.config.vocab_size),
                                       rate, seed=seed)
    return _store(out, [{**key, **_open_run(engine, specs), **results.provenance()}])


def sensitivity(engine_kind: str, seeds=(0, 1, 2), long_shares=(0.0, 0.2, 0.4),
                rate: float | None = None, n_requests: int = 400, max_batch: int = 32,
                chunk_tokens: int | None = None, profile: str = "full",
                attention: str | None = None, model: str | None = None, out=None) -> list[dict]:
    """Capacity across draws: for each seed and each share of longest-length prompts (None
    = the plain mixed draw), the served rate at a rate above capacity (the profile's
    `capacity_rate` unless given). One engine serves every draw; one row per draw."""
    s = setup(profile, model, attention, chunk_tokens, max_batch)
    rate = rate if rate is not None else s.spec.capacity_rate
    engine, rows = None, []
    for seed in seeds:
        for share in long_shares:
            key = {"experiment": "sensitivity", "engine": engine_kind, **s.fields(), "rate": rate,
                   "n_requests": n_requests, "seed": seed, "long_share": share}
            if _already_done(out, key):
                continue
            engine = engine or make_engine(s, engine_kind)
            vocab = engine.model.config.vocab_size
            specs = (s.workload("mixed", n_requests, seed, vocab) if share is None else
                     workloads.with_long_share(n_requests, share, seed=seed, lengths=s.spec.lengths,
                                               budget=s.spec.budget, vocab_size=vocab))
            long_len = max(s.spec.lengths)
            row = {**key, "n_long_prompts": sum(len(r.prompt) == long_len for r in specs),
                   **_open_run(engine, workloads.poisson_arrivals(specs, rate, seed=seed)),
                   **results.provenance()}
            rows += _store(out, [row])
    return rows


# ---------------------------------------------------------------------------- step trace
def _warm_on_disturbance(s: Setup, engine_kind: str, seed: int, warmups: int, **engine_kw):
    """An engine with the disturbance workload's requests run through it `warmups` times:
    (engine, prompts, budgets), ready for the measured pass."""
    engine = make_engine(s, engine_kind, **engine_kw)
    specs = workloads.disturbance(seed, lengths=s.spec.lengths, budget=s.spec.budget,
                                  vocab_size=engine.model.config.vocab_size)
    prompts, budgets = [r.prompt for r in specs], [r.max_new_tokens for r in specs]
    for _ in range(warmups):
        engine.generate(prompts, budgets)
    return engine, prompts, budgets


def step_trace(engine_kind: str, seed: int = 0, max_batch: int = 32, chunk_tokens: int | None = None,
               warmups: int = 1, profile: str = "full", attention: str | None = None,
               model: str | None = None, cuda_graphs: bool = False, graph_chunks: bool = False,
               out=None) -> list[dict]:
    """The disturbance workload (64 mixed requests through `max_batch` rows, all queued at
    time zero) with sync-accurate step timing. Rows, told apart by `record`:
      step     one per step: kind, chunk tokens, decode rows, forwards, start, duration
      request  one per request: its consecutive token gaps (every request is an incumbent
               once it decodes; its gaps are what other requests' admission costs it)
      summary  one: step counts and median duration by kind, pooled token-gap stats
    """
    s = setup(profile, model, attention, chunk_tokens, max_batch, cuda_graphs, graph_chunks)
    key = {"experiment": "step_trace", "engine": engine_kind, **s.fields(), "seed": seed,
           "warmups": warmups}
    if _already_done(out, key):
        return []
    engine, prompts, budgets = _warm_on_disturbance(s, engine_kind, seed, warmups)
    engine.clock = _synced_clock(s.spec.device)
    with HostMeter() as host, engine.record_steps() as steps:
        t0 = engine.clock()
        reqs = [engine.add_request(p, b, arrival=t0) for p, b in zip(prompts, budgets)]
        engine.run_until_done()
        _sync(s.spec.device)
        wall = engine.clock() - t0
    prov = results.provenance()
    rows = [{**key, "record": "step", "step": i, "kind": r.kind, "n_chunk_tokens": r.n_chunk_tokens,
             "n_decode": r.n_decode, "n_forwards": r.n_forwards, "start_s": r.start - t0,
             "duration_s": r.duration, "decode_kv_tokens": r.decode_kv_tokens,
             "chunk_kv_tokens": r.chunk_kv_tokens,
             # the first forward also carries the step's planning and packing
             "forward_durations_s": list(r.forward_durations),
             # on CUDA: the forwards on the GPU's clock (duration - gpu = the host's share)
             "gpu_s": r.gpu_s(), "forward_gpu_s": r.forward_gpu_s()} for i, r in enumerate(steps)]
    for r in reqs:
        gaps = np.diff(r.token_times)
        rows.append({**key, "record": "request", "rid": r.rid, "prompt_len": r.prompt_len,
                     "n_output_tokens": len(r.output), "admitted_s": r.admitted - t0,
                     "ttft_s": r.token_times[0] - r.arrival, "gap_median_s": _q(gaps, 50),
                     "gap_max_s": float(gaps.max()) if gaps.size else None, "token_gaps_s": gaps.tolist()})
    gaps = metrics.token_gaps(reqs)
    model = engine.model
    summary = {**key, "record": "summary", "wall_s": wall, "step_time_s": sum(r.duration for r in steps), **host.fields,
               # the decode step's bytes floor: weights + KV read, at a bandwidth measured here
               "weight_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
               "kv_bytes_per_token": engine.pool.bytes_per_block // engine.pool.block_size,
               "copy_bandwidth_Bps": _copy_bandwidth(s.spec.device),
               **_step_counts(engine, steps), "gap_median_s": _q(gaps, 50), "gap_p90_s": _q(gaps, 90),
               "gap_p99_s": _q(gaps, 99), "gap_max_s": float(gaps.max())}
    rows.append(summary)
    return _store(out, [{**r, **prov} for r in rows])


# ---------------------------------------------------------------------------- step profile
STEP_MARK = "fusedlib_step_"


def step_profile(engine_kind: str, seed: int = 0, max_batch: int = 32, chunk_tokens: int | None = None,
                 warmups: int = 1, profile: str = "full", attention: str | None = None,
                 model: str | None = None, cuda_graphs: bool = False, graph_chunks: bool = False,
                 profiled_steps: int = 120, top_ops: int = 12, out=None) -> list[dict]:
    """The step trace's workload once more under torch.profiler, to count what a step does:
    the kernels and copies it puts on the GPU and their summed device time, beside its wall
    time. The profiler's own cost lengthens every step, so these rows compare steps within
    one run and never feed the step-time tables. Only the first `profiled_steps` steps (the
    admission waves, where the mixed steps are) are profiled, since reading back a full
    model's events costs time per event; the rest of the run finishes unprofiled. Rows, told
    apart by `record`:
      step  one per step: kind, profiled wall time, kernels, copies, device time
      ops   per step kind and per quartile of that kind's steps by wall time (slowest and
            fastest): the CPU ops with the most self time per step, so a slow step's extra
            host work has a name
    """
    from bisect import bisect_right
    from collections import Counter

    from torch.profiler import ProfilerActivity, record_function
    from torch.profiler import profile as torch_profile

    s = setup(profile, model, attention, chunk_tokens, max_batch, cuda_graphs, graph_chunks)
    key = {"experiment": "step_profile", "engine": engine_kind, **s.fields(), "seed": seed, "warmups": warmups}
    if _already_done(out, key):
        return []
    engine, prompts, budgets = _warm_on_disturbance(s, engine_kind, seed, warmups)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if s.spec.device == "cuda" else [])
    with torch_profile(activities=activities) as prof, engine.record_steps() as steps:
        for p, b in zip(prompts, budgets):
            engine.add_request(p, b)
        i = 0
        while engine.has_work() and i < profiled_steps:
            with record_function(f"{STEP_MARK}{i}"):
                engine.step()
            i += 1
        _sync(s.spec.device)
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
    rows = [{**key, "record": "step", "step": i, "kind": r.kind, "n_chunk_tokens": r.n_chunk_tokens,
             "n_decode": r.n_decode, "n_forwards": r.n_forwards, "profiled_wall_s": wall.get(i),
             "n_kernels": kernels[i], "n_copies": copies[i], "device_s": device_us[i] / 1e6}
            for i, r in enumerate(steps)]
    for kind in sorted({r.kind for r in steps}):
        ids = sorted((i for i, r in enumerate(steps) if r.kind == kind and i in wall), key=wall.get)
        quarter = max(1, len(ids) // 4)
        for part, chosen in (("fastest quarter", ids[:quarter]), ("slowest quarter", ids[-quarter:])):
            total = sum((ops[i] for i in chosen), Counter())
            rows.append({**key, "record": "ops", "kind": kind, "part": part, "n_steps": len(chosen),
                         "wall_s_median": float(np.median([wall[i] for i in chosen])),
                         "top_ops": [{"op": name, "self_cpu_s_per_step": us / 1e6 / len(chosen)}
                                     for name, us in total.most_common(top_ops)]})
    prov = results.provenance()
    return _store(out, [{**r, **prov} for r in rows])


def _copy_bandwidth(device: str) -> float | None:
    if device != "cuda":
        return None  # a CPU memcpy says nothing about the GPU floor
    from .kernels import copy_bandwidth

    return copy_bandwidth(device, 2**30)


def _q(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) if len(values) else None


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


# ---------------------------------------------------------------------------- peer
def peer_transformers(batch_size: int = 32, workload: str = "mixed", seed: int = 0,
                      max_batch: int = 32, chunk_tokens: int | None = None, warmups: int = 1,
                      repeats: int = 3, profile: str = "full", model: str | None = None,
                      out=None) -> list[dict]:
    """transformers' own continuous batching (the manager behind `generate_batch`) on the
    closed run's requests, with our weights copied into a Qwen2ForCausalLM. The manager is
    driven directly because `generate_batch` takes one max_new_tokens for all requests.
    Settings mirror our engine where transformers has them: at most `max_batch` requests
    and `chunk_tokens + max_batch` tokens per forward, a cache that holds the whole batch
    (in transformers' default pages), EOS disabled, greedy. Rows are shaped like closed()'s,
    with engine='transformers'."""
    s = setup(profile, model, None, chunk_tokens, max_batch)
    key = {"experiment": "peer", "engine": "transformers", **s.fields(), "attention": "transformers",
           "workload": workload, "batch_size": batch_size, "seed": seed, "warmups": warmups,
           "repeats": repeats}
    if _already_done(out, key):
        return []
    specs = s.workload(workload, batch_size, seed, model_for(s).config.vocab_size)
    n_out = sum(r.max_new_tokens for r in specs)
    rows = []
    with _transformers_batching(s, specs) as manager:
        for i in range(warmups + repeats):
            _sync(s.spec.device)
            t0 = time.perf_counter()
            ids = [manager.add_request(r.prompt, max_new_tokens=r.max_new_tokens, eos_token_id=-1)
                   for r in specs]
            outputs = _collect(manager, ids)
            _sync(s.spec.device)
            wall = time.perf_counter() - t0
            if i >= warmups:
                got = sum(len(outputs[k].generated_tokens) for k in ids)
                rows.append({**key, "stat": "run", "repeat": i - warmups, "wall_s": wall,
                             "n_output_tokens": got, "output_throughput": got / wall,
                             "request_throughput": batch_size / wall})
    if any(r["n_output_tokens"] != n_out for r in rows):
        raise RuntimeError("transformers generated a different number of tokens than requested")
    wall = statistics.median(r["wall_s"] for r in rows)
    rows.append({**rows[-1], "stat": "median", "repeat": None, "wall_s": wall,
                 "output_throughput": n_out / wall, "request_throughput": batch_size / wall})
    prov = results.provenance()
    return _store(out, [{**r, **prov} for r in rows])


def peer_arrivals(rate: float, n_requests: int = 400, seed: int = 0, max_batch: int = 32,
                  chunk_tokens: int | None = None, warmups: int = 2, profile: str = "full",
                  model: str | None = None, out=None) -> list[dict]:
    """The open-loop run of `arrivals` served by transformers' continuous batching: the same
    requests at the same Poisson arrival times, each handed to the manager at its arrival
    (the manager batches in its own thread). Token and admission times are the manager's own
    (`record_timestamps`; admission = the end of its pending state), so the row has the
    same metrics.summarize fields as ours. Settings as in `peer_transformers`.
    Before the clock starts, the manager serves `warmups` closed batches of `max_batch`
    requests drawn with another seed: on the H200 its first batch ran 2.4x slower than the
    next ones (session 2's closed peer), a cost our engines pay at construction."""
    s = setup(profile, model, None, chunk_tokens, max_batch)
    key = {"experiment": "peer_arrivals", "engine": "transformers", **s.fields(), "attention": "transformers",
           "rate": rate, "n_requests": n_requests, "seed": seed, "warmups": warmups}
    if _already_done(out, key):
        return []
    vocab = model_for(s).config.vocab_size
    specs = workloads.poisson_arrivals(s.workload("mixed", n_requests, seed, vocab), rate, seed=seed)
    warm = s.workload("mixed", max_batch, seed + 1, vocab)
    arrival = {}
    with _transformers_batching(s, specs + warm) as manager:
        for _ in range(warmups):
            _collect(manager, [manager.add_request(r.prompt, max_new_tokens=r.max_new_tokens, eos_token_id=-1)
                               for r in warm])
        with HostMeter() as host:
            t0 = time.perf_counter()
            for r in specs:
                time.sleep(max(0.0, t0 + r.arrival - time.perf_counter()))
                rid = manager.add_request(r.prompt, max_new_tokens=r.max_new_tokens, eos_token_id=-1,
                                          record_timestamps=True)
                arrival[rid] = t0 + r.arrival
            outputs = _collect(manager, list(arrival))
    records = [{"arrival": arrival[rid], "admitted": o.lifespan[0], "token_times": o.timestamps,
                "prompt_len": len(o.prompt_ids)} for rid, o in outputs.items()]
    if sum(len(o.generated_tokens) for o in outputs.values()) != sum(r.max_new_tokens for r in specs):
        raise RuntimeError("transformers generated a different number of tokens than requested")
    return _store(out, [{**key, **metrics.summarize(records), **host.fields, **results.provenance()}])


def _transformers_batching(s: Setup, specs: workloads.Workload):
    """transformers' continuous-batching manager over our weights (copied into a
    Qwen2ForCausalLM), set up as our engine where it has the setting: at most `max_batch`
    requests and `chunk_tokens + max_batch` tokens per forward, greedy, EOS disabled, and a
    cache sized to hold every request in `specs` at once. A context manager."""
    from transformers import GenerationConfig
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    hf = to_transformers(model_for(s))
    cb = ContinuousBatchingConfig(max_requests_per_batch=s.max_batch, max_batch_tokens=s.chunk_tokens + s.max_batch)
    # Left unsized, the cache takes 90% of free device memory, or of host RAM on CPU.
    cb.num_blocks = sum(-(-(len(r.prompt) + r.max_new_tokens) // cb.page_size) for r in specs)
    gen = GenerationConfig(do_sample=False, eos_token_id=-1, max_new_tokens=max(r.max_new_tokens for r in specs))
    return hf.continuous_batching_context_manager(generation_config=gen, continuous_batching_config=cb,
                                                  block=True, timeout=30)


def _collect(manager, ids: list[str]) -> dict:
    done, timeout_s = {}, 600
    while len(done) < len(ids):
        result = manager.get_result(timeout=timeout_s)
        if result is None:
            raise RuntimeError(f"transformers' batching manager stopped with {len(ids) - len(done)} requests left")
        if result.is_finished():
            done[result.request_id] = result
    return done
