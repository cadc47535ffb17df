"""How the kernel experiments time a call (CUDA-event medians, an L2 flush before each), the
device's copy and GEMM rates, and decode attention beside a copy of its bytes."""
from __future__ import annotations

import itertools
import math
import statistics
import time

import torch

from ..attention.base import DecodeMeta


def flush_buffer(device: str) -> torch.Tensor | None:
    # 1 GiB: many times an H200's 60 MB L2; reading it outlasts the host's enqueue of any call here
    return torch.empty(2**30, dtype=torch.uint8, device=device) if device == "cuda" else None


def median_ms(fn, device: str, iters: int, flush: torch.Tensor | None = None) -> tuple[float, float, float]:
    """(median, min, max) ms of `fn()`: on CUDA each call between its own pair of events, after a
    read of `flush` (L2 then holds only clean lines, none of `fn`'s) or a short spin (so the host
    has queued the call before its start event fires); on CPU by the host clock."""
    on_gpu = device == "cuda"
    for _ in range(3 if on_gpu else 1):
        fn()
    times = []
    if on_gpu:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
        for start, end in events:
            flush.amax() if flush is not None else torch.cuda._sleep(600_000)
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) for s, e in events]
    else:
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times), max(times)


def copy_bandwidth(device: str) -> float:
    """Device copy bandwidth in bytes/s, counting bytes read plus written."""
    n = 2**30 if device == "cuda" else 2**24
    src = torch.empty(n, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    return 2 * n / (median_ms(lambda: dst.copy_(src), device, 20)[0] / 1e3)


def gemm_tflops(device: str) -> float:
    """A large fp16 GEMM's rate (8192^3 on CUDA; fp32 256^3 on CPU), TFLOP/s."""
    n, dtype = (8192, torch.float16) if device == "cuda" else (256, torch.float32)
    a, b = (torch.randn(n, n, device=device).to(dtype) for _ in range(2))
    return 2 * n**3 / (median_ms(lambda: a @ b, device, 10)[0] / 1e3) / 1e12


def decode_case(contexts: list[int], cfg, dtype, device: str, block_size: int, seed: int = 0):
    """(q, k_cache, v_cache, meta) for one decode call over `contexts`: random K/V in shuffled,
    non-contiguous blocks of `block_size` tokens; table entries past a row's last block point at
    others' blocks."""
    gen = torch.Generator(device=device).manual_seed(seed)
    need = [math.ceil(n / block_size) for n in contexts]
    width, num_blocks = max(need) + 1, sum(need) + 1
    shape = (num_blocks, block_size, cfg.num_kv_heads, cfg.head_dim)
    k, v = (torch.randn(shape, generator=gen, device=device).to(dtype) for _ in range(2))
    owner = torch.randperm(num_blocks, generator=gen, device=device)
    filler = torch.randint(0, num_blocks, (len(contexts), width), generator=gen, device=device)
    start = [0, *itertools.accumulate(need)]  # row r owns owner[start[r]:start[r + 1]]
    tables = [torch.cat([owner[start[r]:start[r + 1]], filler[r, n:]]) for r, n in enumerate(need)]
    meta = DecodeMeta(len(contexts), torch.tensor(contexts, dtype=torch.int32, device=device),
                      torch.stack(tables).to(torch.int32), max(contexts))
    q = torch.randn(len(contexts), cfg.num_heads, cfg.head_dim, generator=gen, device=device).to(dtype)
    return q, k, v, meta


def decode_rate(backend, contexts: list[int], cfg, device: str, iters: int, flush,
                longest_context: int | None = None, *, block_size: int) -> dict:
    """Decode attention of `backend` at a row per context in `contexts` (fp16 K/V in shuffled blocks of
    `block_size` tokens), each call after `flush`, beside a device copy moving the same bytes (read + written =
    the KV bytes). `longest_context`: split as the engine's graphs launch it (by the model's longest context),
    else by the call's own."""
    q, k, v, meta = decode_case(contexts, cfg, torch.float16, device, block_size, seed=max(contexts))
    if longest_context is not None:
        meta = DecodeMeta(meta.num_tokens, meta.context_lens, meta.block_tables, longest_context)
    kv_bytes = sum(contexts) * cfg.num_kv_heads * cfg.head_dim * 2 * k.element_size()
    src = torch.empty(kv_bytes // 2, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    copy_ms = median_ms(lambda: dst.copy_(src), device, iters, flush)[0]
    ms, lo, hi = median_ms(lambda: backend.decode(q, k, v, meta, cfg.head_dim ** -0.5), device, iters, flush)
    return {"rows": len(contexts), "context": contexts[0] if len(set(contexts)) == 1 else None,
            "context_mean": sum(contexts) / len(contexts), "kv_block_size": block_size, "n": iters, "gpu_us": ms * 1e3,
            "gpu_us_min": lo * 1e3, "gpu_us_max": hi * 1e3, "kv_bytes": kv_bytes, "copy_us": copy_ms * 1e3,
            "fraction_of_copy": copy_ms / ms}
