"""GPU-side checks of the Triton attention kernels: a correctness gate and the layout bench.

`kernel_gate` compares every Triton path (packed prefill, decode as rows, decode packed,
split-KV decode) with the PyTorch reference at the real model's attention shape (12 query
heads over 2 KV heads, head_dim 128) on caches with random contents and shuffled block
tables, and checks that new step shapes compile nothing new.

`decode_layout_bench` reproduces the reference's layout measurement: one cache state of 32
requests with mixed context lengths, one attention call over their 32 decode tokens, as
one-row tiles ("rows"), as one packed 32-wide tile ("packed"), and as split-KV. Times are
medians of CUDA-event-timed calls, each after an L2 flush long enough for the host to
enqueue the call before the GPU reaches it (so the time is the GPU's), set against the time
the KV bytes take at a device-to-device copy bandwidth measured in the same call. The
back-to-back median (no flush, calls queued one after another) and the host time to
enqueue one call show where the host, not the GPU, sets the pace.

`splitkv_sweep` times split-KV launch shapes on the same cache state, each checked against
the torch reference.

The "smoke" profile runs the same code at the tiny model's shape and small contexts, so
it finishes on the CPU interpreter in seconds; its numbers mean nothing.

    python -m fusedlib.bench kernel-gate | layout-bench | splitkv-sweep [--profile smoke]
"""
from __future__ import annotations

import math
import random
import statistics
import time

import torch

from .telemetry import provenance
from .workloads import MIXED_LENGTHS
from ..attention.base import DecodeMeta, PrefillMeta
from ..attention.torch_backend import TorchAttention
from ..config import BLOCK_SIZE, PRESETS

REL_ERR_LIMIT = 1e-2
# Decode contexts: the mixed workload's prompt lengths plus a generated part.
MAX_GENERATED = 128
PROFILES = {
    # (model preset, prompt lengths, decode tokens per call, most tokens generated so far)
    "full": ("qwen2.5-1.5b", MIXED_LENGTHS, 32, MAX_GENERATED),
    # Contexts still span several blocks and cross block edges; the interpreter's time grows
    # with them.
    "smoke": ("tiny", (4, 16, 40), 8, 24),
}


def _backends():
    # Imported here so TRITON_INTERPRET (set by callers on CPU) is read at first use.
    from ..attention.triton_backend import TritonAttention

    return tuple(TritonAttention(decode_kernel=name)
                 for name in ("rows", "packed", "splitkv", "balanced"))


# ------------------------------------------------------------------------ cache states
def build_cache(context_lens, num_kv_heads, head_dim, dtype, device, gen):
    """Random K/V caches holding `context_lens` tokens in shuffled, non-contiguous blocks.

    Returns (k_cache, v_cache, block_tables int32 [n, max_blocks]); table entries past a
    request's last block point at other requests' blocks, as stale entries would.
    """
    blocks_needed = [math.ceil(n / BLOCK_SIZE) for n in context_lens]
    max_blocks = max(blocks_needed) + 1
    num_blocks = sum(blocks_needed) + 1
    shape = (num_blocks, BLOCK_SIZE, num_kv_heads, head_dim)
    k_cache = torch.randn(shape, generator=gen, device=device).to(dtype)
    v_cache = torch.randn(shape, generator=gen, device=device).to(dtype)
    owner = torch.randperm(num_blocks, generator=gen, device=device)
    filler = torch.randint(0, num_blocks, (len(context_lens), max_blocks), generator=gen,
                           device=device)
    tables, used = [], 0
    for row, need in enumerate(blocks_needed):
        tables.append(torch.cat([owner[used:used + need], filler[row, need:]]))
        used += need
    return k_cache, v_cache, torch.stack(tables).to(torch.int32)


def prefill_case(chunks, num_heads, num_kv_heads, head_dim, dtype, device, gen):
    """chunks: (tokens cached before, chunk length) per request, packed back to back."""
    context_lens = [cached + length for cached, length in chunks]
    k_cache, v_cache, tables = build_cache(context_lens, num_kv_heads, head_dim, dtype,
                                           device, gen)
    lengths = [length for _, length in chunks]
    i32 = dict(dtype=torch.int32, device=device)
    meta = PrefillMeta(
        num_tokens=sum(lengths), block_tables=tables,
        token_seq=torch.cat([torch.full((n,), i, **i32) for i, n in enumerate(lengths)]),
        positions=torch.cat([torch.arange(c, c + n, **i32) for c, n in chunks]))
    q = torch.randn(sum(lengths), num_heads, head_dim, generator=gen, device=device).to(dtype)
    return q, k_cache, v_cache, meta


def decode_case(context_lens, num_heads, num_kv_heads, head_dim, dtype, device, gen):
    k_cache, v_cache, tables = build_cache(context_lens, num_kv_heads, head_dim, dtype,
                                           device, gen)
    meta = DecodeMeta(num_tokens=len(context_lens),
                      context_lens=torch.tensor(context_lens, dtype=torch.int32, device=device),
                      block_tables=tables, max_context_len=max(context_lens))
    q = torch.randn(len(context_lens), num_heads, head_dim, generator=gen, device=device)
    return q.to(dtype), k_cache, v_cache, meta


def mixed_decode_contexts(num_requests: int, seed: int, prompt_lengths=MIXED_LENGTHS,
                          max_generated: int = MAX_GENERATED) -> list[int]:
    """Seeded decode contexts: a prompt length from the mix plus 1..max_generated tokens
    generated so far (the token being decoded included)."""
    rng = random.Random(seed)
    return [rng.choice(prompt_lengths) + rng.randint(1, max_generated)
            for _ in range(num_requests)]


def _default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


# ------------------------------------------------------------------------------- gate
def _compare(case: str, kernel: str, actual: torch.Tensor, expected: torch.Tensor) -> dict:
    diff = actual.float() - expected.float()
    rel = (diff.norm() / expected.float().norm()).item()
    has_nan = bool(torch.isnan(actual).any())
    return {"case": case, "kernel": kernel, "dtype": str(actual.dtype).removeprefix("torch."),
            "max_abs_err": diff.abs().max().item(), "rel_err": rel, "has_nan": has_nan,
            "passed": (not has_nan) and rel < REL_ERR_LIMIT}


def _gate_cases(prompt_lengths, decode_rows, max_generated=MAX_GENERATED):
    """(name, kind, spec) for prefill (chunks) and decode (context lengths) cases."""
    longest = max(prompt_lengths)
    chunk = min(512, longest)
    tail = min(96, longest // 2)
    rng = random.Random(1)
    # Full profile: 512 positions, like one chunk budget.
    mixed = [(0, 1), (0, 37), (longest - tail, tail), (1000 % longest, 115), (21, 11),
             (0, max(1, chunk - 260))]
    return [
        ("prefill_mixed_chunks", "prefill", mixed),
        ("prefill_one_full_chunk_at_0", "prefill", [(0, chunk)]),
        ("prefill_chunk_ending_at_max_context", "prefill", [(longest - chunk, chunk)]),
        ("prefill_single_token_prompts", "prefill", [(0, 1)] * 40),
        ("prefill_chunks_continuing_mid_block", "prefill",
         [(rng.randint(1, longest), rng.randint(1, 40)) for _ in range(12)]),
        ("decode_mixed_contexts", "decode", mixed_decode_contexts(decode_rows, 0, prompt_lengths, max_generated)),
        ("decode_edges", "decode",
         ([1, 2, 15, 16, 17, 31, 33, longest, longest + 1, longest + max_generated]
          * decode_rows)[:decode_rows]),
        ("decode_all_long", "decode", [longest + max_generated] * decode_rows),
        ("decode_one_request", "decode", [longest // 2 + 3]),
        ("decode_many_requests", "decode", mixed_decode_contexts(3 * decode_rows + 5, 1,
                                                                   prompt_lengths, max_generated)),
    ]


def kernel_gate(device: str | None = None, dtype: torch.dtype = torch.float16, seed: int = 0,
                profile: str = "full") -> list[dict]:
    """Every Triton path against the torch reference; one row per (case, kernel), then one
    row checking that the cases after the first of each kind compiled nothing new."""
    device = device or _default_device()
    preset, prompt_lengths, decode_rows, max_generated = PROFILES[profile]
    cfg = PRESETS[preset]
    shape = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim)
    scale = cfg.head_dim ** -0.5
    gen = torch.Generator(device=device).manual_seed(seed)
    reference = TorchAttention()
    rows_backend, packed_backend, splitkv_backend, balanced_backend = _backends()
    out, compiled_after_first = [], None
    seen_kinds = set()
    for name, kind, spec in _gate_cases(prompt_lengths, decode_rows, max_generated):
        if kind == "prefill":
            q, k, v, meta = prefill_case(spec, *shape, dtype, device, gen)
            expected = reference.prefill(q, k, v, meta, scale)
            results = {"prefill_packed": rows_backend.prefill(q, k, v, meta, scale)}
        else:
            q, k, v, meta = decode_case(spec, *shape, dtype, device, gen)
            expected = reference.decode(q, k, v, meta, scale)
            results = {"decode_rows": rows_backend.decode(q, k, v, meta, scale),
                       "decode_packed": packed_backend.decode(q, k, v, meta, scale),
                       "decode_splitkv": splitkv_backend.decode(q, k, v, meta, scale),
                       "decode_balanced": balanced_backend.decode(q, k, v, meta, scale)}
        for kernel, actual in results.items():
            out.append({**_compare(name, kernel, actual, expected),
                        "num_tokens": q.shape[0],
                        # a chunk's keys end at its last position
                        "max_context_len": int(meta.positions.max() + 1 if kind == "prefill" else meta.context_lens.max())})
        seen_kinds.add(kind)
        if compiled_after_first is None and seen_kinds == {"prefill", "decode"}:
            compiled_after_first = rows_backend.num_compiled()
    compiled_at_end = rows_backend.num_compiled()
    out.append({"case": "no_recompile_on_new_shapes", "kernel": "all",
                "dtype": str(dtype).removeprefix("torch."),
                "compiled_after_first_cases": compiled_after_first,
                "compiled_at_end": compiled_at_end,
                "passed": compiled_at_end == compiled_after_first})
    info = provenance()
    return [{**row, "profile": profile, **info} for row in out]


# ------------------------------------------------------------------------------ bench
# GPU cycles of the hold before a call timed without an L2 flush: ~0.3 ms at the H200's
# 1,980 MHz, longer than the host takes to enqueue any call timed here (under 0.1 ms).
HOLD_CYCLES = 600_000


# How `_hold` empties L2 before a timed call. "zero" writes the scratch buffer: L2 is then
# full of dirty lines, which the timed call's misses write back (on the H200 ncu counted 14 MB
# written during decode attention's 33.7 MB read: data/roofline/flush_probe_ncu.csv). "read"
# reads the buffer: L2 holds only clean lines (as in a decode step, where most of it is the
# last GEMMs' weights), and the call moves only its own bytes.
L2_FLUSHES = ("zero", "read")


def _hold(scratch: torch.Tensor | None, flush: str = "zero") -> None:
    """Keep the GPU busy before a timed call so the host has queued the call by the time its
    start event fires: an L2 flush (`flush`, see L2_FLUSHES) when `scratch` is given, else a
    spin that leaves L2 warm."""
    if scratch is None:
        torch.cuda._sleep(HOLD_CYCLES)
    elif flush == "zero":
        scratch.zero_()
    elif flush == "read":
        scratch.amax()
    else:
        raise ValueError(f"flush must be one of {L2_FLUSHES}, got {flush!r}")


def _median_ms(fn, device: str, iters: int, scratch: torch.Tensor | None, flush: str = "zero") -> float:
    """Median time of fn() in ms; on CUDA each call is timed by its own pair of events, after
    a hold outside the events (`_hold`: an L2 flush of kind `flush` when `scratch` is given,
    so the KV comes from DRAM). Without the hold a call shorter than its host enqueue time
    would be timed at the host's pace."""
    # warm-up: compile, autotune nothing, fill caches (none on the CPU: the interpreter
    # compiles nothing and its times mean nothing)
    for _ in range(max(3, iters // 10) if device.startswith("cuda") else 0):
        fn()
    times = []
    if device.startswith("cuda"):
        start = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        end = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        for i in range(iters):
            _hold(scratch, flush)
            start[i].record()
            fn()
            end[i].record()
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) for s, e in zip(start, end)]
    else:
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _host_ms(fn, iters: int) -> float:
    """Median host time to enqueue one call (no synchronisation inside the loop)."""
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return statistics.median(times)


def copy_bandwidth(device: str, nbytes: int) -> float:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read plus written."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    ms = _median_ms(lambda: dst.copy_(src), device, iters=20, scratch=None)
    return 2 * nbytes / (ms / 1e3)


def _bench_state(device: str | None, seed: int, iters: int, profile: str):
    """The layout bench's cache state: (device, iters, contexts, model cfg, q, k, v, meta,
    L2 flush buffer or None)."""
    device = device or _default_device()
    preset, prompt_lengths, num_requests, max_generated = PROFILES[profile]
    cfg = PRESETS[preset]
    on_gpu = device.startswith("cuda")
    iters = iters if on_gpu else 1  # on the CPU interpreter the times mean nothing: one call checks the plumbing
    contexts = mixed_decode_contexts(num_requests, seed, prompt_lengths, max_generated)
    gen = torch.Generator(device=device).manual_seed(seed)
    q, k, v, meta = decode_case(contexts, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim,
                                torch.float16, device, gen)
    # 1 GiB: many times the H200's 50 MB L2, and its ~0.3 ms zeroing outlasts the host
    # time to enqueue any of the calls timed here.
    scratch = torch.empty(2**30, dtype=torch.uint8, device=device) if on_gpu else None
    return device, iters, contexts, cfg, q, k, v, meta, scratch


def decode_layout_bench(device: str | None = None, seed: int = 0, iters: int = 200,
                        profile: str = "full", rounds: int = 5) -> list[dict]:
    """One attention call over the decode tokens of one mixed cache state, four ways, timed
    in `rounds` rounds of `iters` calls per kernel. The kernels alternate within a round and
    the order reverses from one round to the next (A B C D, D C B A, ...), so a drift of the
    machine lands on every kernel alike; each round gives one row per kernel, and a kernel's
    ratio to "rows" pairs the two by round (`steps.layout_table`)."""
    device, iters, contexts, cfg, q, k, v, meta, scratch = _bench_state(device, seed, iters,
                                                                        profile)
    on_gpu = scratch is not None
    rounds = rounds if on_gpu else 1
    num_requests = len(contexts)
    scale = cfg.head_dim ** -0.5
    rows_backend, packed_backend, splitkv_backend, balanced_backend = _backends()
    calls = {
        "rows": lambda: rows_backend.decode(q, k, v, meta, scale),
        "packed": lambda: packed_backend.decode(q, k, v, meta, scale),
        "splitkv": lambda: splitkv_backend.decode(q, k, v, meta, scale),
        "balanced": lambda: balanced_backend.decode(q, k, v, meta, scale),
    }
    bandwidth = copy_bandwidth(device, 2**30 if on_gpu else 2**24)
    kv_bytes = sum(contexts) * cfg.num_kv_heads * cfg.head_dim * 2 * k.element_size()
    floor_ms = kv_bytes / bandwidth * 1e3
    info = provenance()
    out = []
    for round_ in range(rounds):
        order = list(calls) if round_ % 2 == 0 else list(calls)[::-1]
        times = {name: _median_ms(calls[name], device, iters, scratch) for name in order}
        back_to_back = {name: _median_ms(calls[name], device, iters, None) for name in order}
        host = {name: _host_ms(calls[name], iters) for name in order}
        out += [{
            "kernel": name, "profile": profile, "seed": seed, "iters": iters, "round": round_,
            "rounds": rounds, "order": " ".join(order),
            "num_requests": num_requests, "context_sum": sum(contexts),
            "context_max": max(contexts), "contexts": " ".join(map(str, contexts)),
            "median_ms": times[name], "median_ms_back_to_back": back_to_back[name],
            "host_ms": host[name],
            "kv_bytes": kv_bytes, "copy_bandwidth_gbs": bandwidth / 1e9,
            "kv_bytes_floor_ms": floor_ms, "bandwidth_fraction": floor_ms / times[name],
            "ratio_vs_rows": times[name] / times["rows"],
            "ratio_packed_over_rows": times["packed"] / times["rows"],
            **info,
        } for name in calls]
    return out


SWEEP = [(block_n, per_sm, 4, 2) for block_n in (32, 64, 128) for per_sm in (2, 4, 8, 16)] + [
    (128, 4, 8, 2), (128, 8, 8, 2), (64, 8, 4, 3), (64, 8, 2, 2)]


def splitkv_sweep(device: str | None = None, seed: int = 0, iters: int = 100,
                  profile: str = "full") -> list[dict]:
    """Split-KV launch shapes (block_n, programs per SM, warps, stages) on the layout
    bench's cache state: L2-flushed median time and error against the torch reference."""
    from ..attention.triton_backend import SplitKVConfig, TritonAttention

    device, iters, contexts, cfg, q, k, v, meta, scratch = _bench_state(device, seed, iters,
                                                                        profile)
    scale = cfg.head_dim ** -0.5
    expected = TorchAttention().decode(q, k, v, meta, scale)
    info = provenance()
    out = []
    for block_n, per_sm, num_warps, num_stages in SWEEP:
        config = SplitKVConfig(block_n, per_sm, num_warps, num_stages)
        backend = TritonAttention(decode_kernel="splitkv", splitkv=config)
        row = {"kernel": "splitkv", "block_n": block_n, "programs_per_sm": per_sm,
               "num_warps": num_warps, "num_stages": num_stages}
        try:
            call = lambda: backend.decode(q, k, v, meta, scale)  # noqa: E731
            row.update(_compare("layout_state", "splitkv", call(), expected))
            row["num_splits"], row["split_len"] = backend.split_plan(
                meta.max_context_len, len(contexts) * cfg.num_kv_heads, q.device)
            row["median_ms"] = _median_ms(call, device, iters, scratch)
        except Exception as exc:  # a shape the compiler rejects is a result, not a crash
            row.update(passed=False, error=repr(exc)[:300])
        out.append({**row, "profile": profile, "seed": seed, **info})
    return out
