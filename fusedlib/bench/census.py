"""What one step costs, and what decode attention reaches beside a copy of its bytes.

`step_census(spec)`: one engine serves `rows` requests of a `context`-token prompt until all
decode, then 1. `warmups` + `n` steps of all rows decoding (shape (0, rows)); 2. one request
finishes and a queue of `chunk`-token prompts of one new token each follows, so every step is
one fresh prompt beside rows - 1 decode rows (shape (chunk, rows - 1)): `warmups` + `n` timed
steps, then `profiled` steps under torch.profiler; 3. one more request joins, and `profiled`
decode steps of all rows run under torch.profiler.
Per step kind over its timed steps (warm-ups discarded): the interval from the step's start to
the next one's (the loop's wall per step, its readback included), the GPU span of its forwards
(CUDA events, `StepRecord.gpu_s`) and the host's time inside it (`StepRecord.host_s`): median,
min and max. From the profiled steps: kernels per step and GPU time per kernel class
(`kernel_class`) beside the class's bytes and FLOPs (`step_model`). The profiler's callbacks
stay on every later launch, so each census runs in a process of its own
(`python -m fusedlib.bench.census SPEC_JSON OUT_JSON`).

`steady_census(spec)` (a census spec with an offered rate: part 11's): GPU time by kernel
class over a profiler window in the middle of a saturated open-loop run (its docstring).

`attention(spec)`: decode attention alone at `rows` rows of each context, one backend, each
call after an L2 flush (a 1 GiB read leaves L2 full of clean lines, as a step does), timed by
CUDA events beside a device copy of the same bytes. On the CPU (smoke) "kernels" are the aten
ops the tiny model calls (under no other aten op) and the numbers mean nothing.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace

import torch

from . import workloads
from .engines import cpu_threads, make_engine, mixed_draw, serve_open_loop, switch_fields
from .spec import RunSpec
from .telemetry import machine, sync
from .timing import copy_bandwidth, decode_rate, flush_buffer, gemm_tflops
from ..attention import TRITON, make_backend
from ..config import PARTS, PRESETS, EngineConfig

KERNEL_CLASSES = ("gemm", "attention", "norm_rotary_act", "lm_head", "other")
# The saturated census's classes: attention split, and the GPU idle between kernels. "other"
# is sampling, copies and sets (the saturated census keeps memory copies).
STEADY_CLASSES = ("gemm", "lm_head", "prompt_attention", "decode_attention", "norm_rotary_act", "other", "idle")
# Kernel names by class, matched in this order (lowercased substrings). GEMMs: cuBLAS
# (nvjet, xmma, cutlass, gemm), our Triton GEMMs; the `lm_head` class is the GEMM of the
# vocabulary, told apart by size (`_classify`). Elementwise and reduction kernels are the
# reference ops' norms, rotary, SiLU*up and residual adds; the fused ops name themselves.
_PATTERNS = [
    ("attention", ("attention", "attn", "splitkv", "flash", "fmha", "sdpa", "scaled_dot")),
    ("gemm", ("gemm", "nvjet", "xmma", "cutlass", "s16816", "splitkreduce", "split_k", "gate_up_silu", "aten::mm",
              "aten::addmm", "aten::bmm", "aten::linear")),
    ("norm_rotary_act", ("norm", "rms", "rotary", "rope", "silu", "elementwise", "reduce_kernel", "aten::mul",
                         "aten::add", "aten::rsqrt", "aten::mean", "aten::pow", "aten::neg", "aten::cat")),
]
# The saturated census: completions (a fraction of the arrivals) before its window; steps in it.
STEADY = {"full": dict(after=1 / 3, steps=40), "smoke": dict(after=1 / 4, steps=4)}
CENSUS = {  # rows, context, chunk, warm-up steps, timed steps, profiled steps
    "full": dict(rows=32, context=1024, chunk=512, warmups=3, n=30, profiled=5),
    "smoke": dict(rows=4, context=24, chunk=16, warmups=1, n=4, profiled=2),
}
PART = {c.attention: name for name, c in reversed(PARTS.items())}  # backend -> the first part that runs it
# The attention experiment: rows, contexts, timed calls per context.
ATTENTION = {"full": dict(rows=32, contexts=(1024, 2048, 4096), iters=100),
             "smoke": dict(rows=4, contexts=(32, 64), iters=1)}


# ------------------------------------------------------------------------------ attention
def attention(spec: RunSpec) -> list[dict]:
    """Part 10's backend (graphed in the engine) splits by the pool's longest context, as its
    graphs launch it; the others by the call's own (the rest: the module's docstring)."""
    p, sizes = spec.profile_spec, ATTENTION[spec.profile]
    cfg, device = PRESETS[p.model], p.device
    backend, flush = make_backend(spec.attention), flush_buffer(device)
    longest = cfg.max_position_embeddings if TRITON.get(spec.attention, ("",))[0] == "balanced" else None
    blocks = (PARTS.get(PART.get(spec.attention)) or EngineConfig()).kv_block_size  # its part's (torch: the default)
    return [{**machine(), "config": PART.get(spec.attention), "backend": spec.attention,
             **decode_rate(backend, [context] * sizes["rows"], cfg, device, sizes["iters"], flush, longest,
                           block_size=blocks)}
            for context in sizes["contexts"]]


# ------------------------------------------------------------------------------ census
def step_model(cfg, chunks: list[tuple[int, int]], decode_contexts: list[int], n_forwards: int,
               bytes_per_param: int = 2) -> dict:
    """The step's analytic bytes and FLOPs per kernel class and in all: `chunks` are (tokens
    cached before, chunk length), one logit row per chunk and per decode row, the weights read
    once per forward (the tied embedding once per forward, as lm_head), KV read once."""
    L, H, V, b = cfg.num_layers, cfg.hidden_size, cfg.vocab_size, bytes_per_param
    q, kv = cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim
    linears = [(H, q + 2 * kv), (q, H), (H, 2 * cfg.intermediate_size), (cfg.intermediate_size, H)]
    tokens = sum(n for _, n in chunks) + len(decode_contexts)
    logits = len(chunks) + len(decode_contexts)
    kv_token = 2 * kv * b * L  # K and V of one token, every layer
    keys = sum(c + n for c, n in chunks) + sum(decode_contexts)
    causal = sum(n * c + n * (n + 1) // 2 for c, n in chunks) + sum(decode_contexts)
    classes = {
        "gemm": (L * sum(k * n * b * n_forwards + tokens * (k + n) * b for k, n in linears),
                 2 * tokens * L * sum(k * n for k, n in linears)),
        "lm_head": (V * H * b * n_forwards + logits * (H + V) * b, 2 * logits * H * V),
        "attention": (keys * kv_token, 4 * causal * q * L),
        "norm_rotary_act": (None, None), "other": (None, None),
    }
    params = (L * sum(k * n for k, n in linears) + V * H) * b  # biases and norms: < 0.1%
    return {"classes": classes, "weight_bytes": params * n_forwards, "kv_bytes": keys * kv_token,
            "flops": sum(f for _, f in classes.values() if f is not None)}


def _classify(events: list[tuple[str, float]], n_lm_head: int,
              split_attention: bool = False) -> dict[str, tuple[int, float]]:
    """{class: (kernels, microseconds)} of (name, us) events; the `n_lm_head` longest GEMMs are
    the vocabulary GEMMs (lm_head reads 0.47 GB of weights, every other GEMM of a step less).
    With `split_attention`, attention is prompt attention (the prompt kernel, named so) or
    decode attention (every other attention kernel: split-KV and its reduction)."""
    named = []
    for name, us in events:
        low = name.lower()
        kind = next((c for c, pats in _PATTERNS if any(p in low for p in pats)), "other")
        if split_attention and kind == "attention":
            kind = "prompt_attention" if "prompt" in low else "decode_attention"
        named.append((kind, us))
    gemms = sorted((i for i, (c, _) in enumerate(named) if c == "gemm"), key=lambda i: -named[i][1])
    for i in gemms[:n_lm_head]:
        named[i] = ("lm_head", named[i][1])
    classes = STEADY_CLASSES[:-1] if split_attention else KERNEL_CLASSES
    return {c: (sum(1 for k, _ in named if k == c), sum(us for k, us in named if k == c)) for c in classes}


@contextlib.contextmanager
def kernel_trace(device: str, copies: bool = False):
    """`with kernel_trace(device) as spans:` fills `spans` at the block's end with (name, start
    us, us) of every kernel (CUDA; memory copies and sets too with `copies`) or leaf aten op
    (CPU) the block ran, the device synchronized before and after."""
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # Kineto's USDT notices
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    spans: list[tuple[str, float, float]] = []
    sync(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        yield spans
        sync(device)
    if device == "cuda":
        kept = [e for e in prof.events() if e.device_type == DeviceType.CUDA
                and (copies or not e.name.startswith(("Memcpy", "Memset")))]
    else:  # the ops the model calls
        kept = [e for e in prof.events()
                if e.name.startswith("aten::") and not (e.cpu_parent and e.cpu_parent.name.startswith("aten::"))]
    spans += [(e.name, e.time_range.start, e.time_range.elapsed_us()) for e in kept]


def _profiled(engine, steps: int, device: str) -> list[tuple[str, float]]:
    """(name, us) of every kernel (CUDA) or leaf aten op (CPU) of `steps` engine steps."""
    with kernel_trace(device) as spans:
        for _ in range(steps):
            engine.step()
    return [(name, us) for name, _, us in spans]


def busy_us(spans: list[tuple[str, float, float]]) -> float:
    """Microseconds in which at least one of the spans (name, start, us) runs."""
    total, end = 0.0, -math.inf
    for _, start, us in sorted(spans, key=lambda s: s[1]):
        total += max(0.0, start + us - max(start, end))
        end = max(end, start + us)
    return total


def _stats(values: list[float]) -> tuple[float | None, float | None, float | None]:
    values = [v for v in values if v is not None]
    return (statistics.median(values), min(values), max(values)) if values else (None, None, None)


def run(spec: RunSpec) -> list[dict]:
    """A census run (in a process of its own) or an attention run."""
    return _in_own_process(spec) if spec.experiment == "census" else attention(spec)


def _in_own_process(spec: RunSpec) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        done = subprocess.run([sys.executable, "-m", "fusedlib.bench.census", json.dumps(spec.as_dict()), out])
        if done.returncode != 0:
            raise RuntimeError(f"the census run {spec.key()} failed in its own process (exit status {done.returncode})")
        with open(out) as f:
            return json.load(f)


def step_census(spec: RunSpec) -> list[dict]:
    p, c = spec.profile_spec, CENSUS[spec.profile]
    rows, context, chunk, w, n, k = (c[x] for x in ("rows", "context", "chunk", "warmups", "n", "profiled"))
    s = replace(spec.settings(), max_batch=rows, chunk_tokens=chunk)
    engine = make_engine(spec, s, cached=False)
    cfg, vocab = engine.model.config, engine.model.config.vocab_size
    device = p.device
    g = torch.Generator().manual_seed(0)
    prompt = lambda m: torch.randint(0, vocab, (m,), generator=g).tolist()  # noqa: E731
    fill = -(-rows * context // chunk) + rows  # steps until every row decodes, at most
    budget = fill + 3 * (w + n + k) + 2 * rows + 16  # outlasts every window below
    short = engine.add_request(prompt(context), fill + w + n + 2)  # leaves after the decode window
    for _ in range(rows - 1):
        engine.add_request(prompt(context), budget)
    while engine.scheduler.waiting or any(r.prefilling for r in engine.scheduler.running):
        engine.step()

    def window(steps: int) -> list:
        with engine.record_steps() as recs:
            for _ in range(steps):
                engine.step()
        return recs

    timed = {"decode": (window(w + n + 1), (0, rows))}
    while short.finished is None:
        engine.step()
    for _ in range(w + n + 1 + w + k):
        engine.add_request(prompt(chunk), 1)  # its chunk step samples its one token
    timed["mixed"] = (window(w + n + 1), (chunk, rows - 1))
    window(w)
    profiled = {"mixed": _profiled(engine, k, device)}  # (no timing after the profiler)
    engine.add_request(prompt(context), budget)
    while engine.scheduler.waiting or any(r.prefilling for r in engine.scheduler.running) or \
            len(engine.scheduler.running) < rows:
        engine.step()
    window(w)
    profiled["decode"] = _profiled(engine, k, device)  # (the process ends with its requests unfinished)
    bw, tflops = copy_bandwidth(device), gemm_tflops(device)
    out = []
    for step, (recs, shape) in timed.items():
        pairs = [(a, b) for a, b in list(zip(recs, recs[1:]))[w:] if (a.n_chunk_tokens, a.n_decode) == shape]
        if not pairs:
            raise RuntimeError(f"no {step} step of shape {shape} in the window")
        forwards = pairs[0][0].n_forwards
        ctx = statistics.median(a.decode_kv_tokens / a.n_decode for a, _ in pairs)
        model = step_model(cfg, [(0, chunk)] if step == "mixed" else [], [round(ctx)] * shape[1], forwards,
                           engine.model.dtype.itemsize)
        classes = _classify(profiled[step], forwards * k)
        times = {"gpu": [None if a.gpu_s() is None else a.gpu_s() * 1e3 for a, _ in pairs],
                 "wall": [(b.start - a.start) * 1e3 for a, b in pairs], "host": [a.host_s * 1e3 for a, _ in pairs]}
        base = {**machine(), "step": step, "decode_rows": shape[1], "chunk_tokens": shape[0], "context": ctx}
        out.append({**base, "record": "step", "n": len(pairs), "n_forwards": forwards,
                    **{f"{t}_ms{s}": x for t, xs in times.items() for s, x in zip(("", "_min", "_max"), _stats(xs))},
                    "n_kernels": sum(x for x, _ in classes.values()) / k, "num_layers": cfg.num_layers,
                    "weight_bytes": model["weight_bytes"], "kv_bytes": model["kv_bytes"], "flops": model["flops"],
                    "copy_bw_Bps": bw, "gemm_tflops": tflops, **switch_fields(s)})
        for name, (count, us) in classes.items():
            nbytes, flops = model["classes"][name]
            out.append({**base, "record": "kernel_class", "kernel_class": name, "n_kernels": count / k,
                        "gpu_ms": us / k / 1e3, "bytes": nbytes, "flops": flops})
    return out


# ------------------------------------------------------------------------------ saturated census
def steady_census(spec: RunSpec) -> list[dict]:
    """A saturated run's GPU time by kernel class: once `STEADY[profile]["after"]` of its requests
    finished with a queue waiting, `steps` steps run under torch.profiler. A row per class: GPU
    seconds, share of the steps' time (streams overlap: shares need not sum to 1), FLOPs and bytes
    (`step_model`) and their rates; "idle": gaps between kernels inside the steps' GPU time."""
    # The steps' time is their CUDA-event GPU time (`window_gpu_s`; CPU: wall), not the window's
    # wall time (`window_s`): the profiler's callbacks slow the host, so under it the GPU waits
    # between steps, which the unprofiled run does not.
    p, c = spec.profile_spec, STEADY[spec.profile]
    engine = make_engine(spec, cached=False)
    cfg, device = engine.model.config, p.device
    after = max(1, int(c["after"] * spec.n_requests))
    window = dict(stack=contextlib.ExitStack(), steps=[], spans=None, wall=None, t0=None, n_records=0)
    seen: dict[int, int] = {}  # request -> prompt positions cached, as of the last step
    trace = workloads.poisson_arrivals(mixed_draw(spec, spec.n_requests, spec.seed), spec.rate, seed=spec.seed)
    with engine.record_steps() as records:
        def on_step():
            running = {r.rid: r.num_cached for r in engine.scheduler.running}
            chunks = [(seen.get(rid, 0), n - seen.get(rid, 0)) for rid, n in running.items() if n > seen.get(rid, 0)]
            seen.clear()
            seen.update(running)
            new, window["n_records"] = len(records) > window["n_records"], len(records)
            if window["spans"] is not None and window["wall"] is None:
                window["steps"] += [(records[-1], chunks)] if new else []
                if len(window["steps"]) == c["steps"]:
                    window["stack"].close()
                    window["wall"] = time.perf_counter() - window["t0"]
            elif window["spans"] is None and engine.num_finished >= after and engine.scheduler.waiting:
                window["spans"] = window["stack"].enter_context(kernel_trace(device, copies=True))
                window["t0"] = time.perf_counter()  # after the trace's opening sync
        served = serve_open_loop(engine, trace, on_step=on_step)
    if window["wall"] is None:
        raise RuntimeError(f"the run never held a queue for {c['steps']} steps after {after} completions: "
                           "offer a higher rate or more requests")
    totals = {k: [0.0, 0.0] for k in ("gemm", "lm_head", "prompt_attention", "decode_attention")}
    steps = [rec for rec, _ in window["steps"]]
    for rec, chunks in window["steps"]:
        decodes = [rec.decode_kv_tokens / rec.n_decode] * rec.n_decode if rec.n_decode else []
        whole, prompt, decode = (step_model(cfg, ch, dc, rec.n_forwards, engine.model.dtype.itemsize)["classes"]
                                 for ch, dc in ((chunks, decodes), (chunks, []), ([], decodes)))
        for name, (nbytes, flops) in (("gemm", whole["gemm"]), ("lm_head", whole["lm_head"]),
                                      ("prompt_attention", prompt["attention"]),
                                      ("decode_attention", decode["attention"])):
            totals[name][0] += nbytes
            totals[name][1] += flops
    spans, wall_us = window["spans"], window["wall"] * 1e6
    gpu = [rec.gpu_s() for rec in steps]
    gpu_us = sum(gpu) * 1e6 if None not in gpu else None
    step_us = gpu_us or wall_us
    classes = _classify([(name, us) for name, _, us in spans], sum(r.n_forwards for r in steps), split_attention=True)
    classes["idle"] = (0, max(0.0, step_us - busy_us(spans)))
    bw, tflops = copy_bandwidth(device), gemm_tflops(device)
    base = {**machine(), **switch_fields(engine.config), "max_batch": engine.config.max_batch,
            "chunk_tokens": engine.config.chunk_tokens, "record": "steady_class", "window_s": wall_us / 1e6,
            "window_gpu_s": None if gpu_us is None else gpu_us / 1e6,
            "window_steps": len(steps), "completed_before_window": after, "n_served": len(served),
            "copy_bw_Bps": bw, "gemm_tflops": tflops}
    out = []
    for name in STEADY_CLASSES:
        count, us = classes[name]
        nbytes, flops = totals.get(name, (None, None))
        gpu_s = us / 1e6
        out.append({**base, "kernel_class": name, "n_kernels": count, "gpu_s": gpu_s, "share": us / step_us,
                    "bytes": nbytes, "flops": flops,
                    "tflops": flops / gpu_s / 1e12 if flops and gpu_s else None,
                    "tb_s": nbytes / gpu_s / 1e12 if nbytes and gpu_s else None})
    return out


if __name__ == "__main__":  # TRITON_INTERPRET, where the parent set it, comes with the environment
    spec = RunSpec.from_dict(json.loads(sys.argv[1]))
    cpu_threads(spec)
    with open(sys.argv[2], "w") as f:
        json.dump(steady_census(spec) if spec.rate else step_census(spec), f)
