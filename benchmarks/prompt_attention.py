"""Prompt attention on one GPU: the prompt kernel at the device's default launch shape and others,
beside torch SDPA's backends, on Qwen2.5-1.5B's attention (12 query heads, 2 KV heads, head_dim 128,
fp16); then split-KV decode beside a copy of its bytes.

    PYTHONPATH=. python benchmarks/prompt_attention.py          # on a CUDA GPU
    PYTHONPATH=. python benchmarks/prompt_attention.py --smoke  # tiny shapes, CPU interpreter

Cases: fresh causal prompts of 2,048, 4,096 and 8,192 tokens; a 2,048-token chunk after a
2,048-token cached prefix; four requests' 512-token chunks packed into one call, each after its
own prefix. Our kernel reads K/V from a paged cache whose blocks are shuffled (non-contiguous);
SDPA gets them dense, expanded to one K/V head per query head. Every output is checked against an fp32
SDPA (math backend) before it is timed; timings are `triton.testing.do_bench` medians.
TFLOP/s count causal FLOPs: 4 * heads * head_dim * (query, key) pairs, a fresh n-token prompt
having n(n+1)/2 pairs and a c-token chunk after p cached tokens c*p + c(c+1)/2.
Rows go to $OUT/prompt_attention.json (else ./prompt_attention.json); the table prints last.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

import torch

SMOKE = "--smoke" in sys.argv
if SMOKE or not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before fusedlib defines its kernels

import triton  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
from torch.nn.attention.bias import causal_lower_right  # noqa: E402
from torch.nn.functional import scaled_dot_product_attention as sdpa  # noqa: E402

from fusedlib.attention.base import DecodeMeta, PrefillMeta  # noqa: E402
from fusedlib.attention.triton_backend import (EARLIER_PROMPT_TILES, PromptTiles, TritonAttention,  # noqa: E402
                                              _prompt_tiles)
from fusedlib.bench.census import copy_bandwidth, decode_case, median_ms, _flush_buffer  # noqa: E402
from fusedlib.config import BLOCK_SIZE, PRESETS  # noqa: E402

TOLERANCE = 1e-2  # max abs error against the fp32 reference, fp16 outputs
SDPA_BACKENDS = {"sdpa-flash": SDPBackend.FLASH_ATTENTION, "sdpa-cudnn": SDPBackend.CUDNN_ATTENTION,
                 "sdpa-efficient": SDPBackend.EFFICIENT_ATTENTION}
# Each case: (cached prefix, chunk) per request, packed in this order. The last, an engine step's
# worth of chunks of four requests at different depths, has no SDPA anchor (one call per request).
CASES = [[(0, 2048)], [(0, 4096)], [(0, 8192)], [(2048, 2048)],
         [(0, 512), (1024, 512), (2048, 512), (3072, 512)]]
SMOKE_CASES = [[(0, 48)], [(0, 96)], [(48, 48)], [(0, 16), (20, 16), (40, 16)]]
# Prompt-kernel launch shapes beside the device's default: positions x keys per step, warps, stages.
VARIANTS = [EARLIER_PROMPT_TILES, PromptTiles(64, 64, 4, 3)]
DECODE = [(256, 1024), (256, 4096), (32, 1024)]  # rows, context
SMOKE_DECODE = [(4, 64)]


def variant_name(t: PromptTiles) -> str:
    return f"prompt-{t.block_m}x{t.block_n}-w{t.num_warps}s{t.num_stages}"


def causal_pairs(prefix: int, chunk: int) -> int:
    return chunk * prefix + chunk * (chunk + 1) // 2


def paged_case(requests, cfg, device: str, gen: torch.Generator):
    """Per request dense (q, k, v) of its whole context, and the packed chunks' paged view:
    (dense, q_chunks, k_cache, v_cache, meta). Position i of request r has its K/V in block
    table[r, i // 16], slot i % 16; the pool's blocks are shuffled across requests."""
    contexts = [p + c for p, c in requests]
    need = [math.ceil(n / BLOCK_SIZE) for n in contexts]
    num_blocks = sum(need) + 3
    owner = torch.randperm(num_blocks, generator=gen, device=device).to(torch.int32)
    k_cache, v_cache = (torch.zeros(num_blocks, BLOCK_SIZE, cfg.num_kv_heads, cfg.head_dim, device=device,
                                    dtype=torch.float16) for _ in range(2))
    tables = torch.zeros(len(requests), max(need), dtype=torch.int32, device=device)
    dense, used = [], 0
    for r, (ctx, n) in enumerate(zip(contexts, need)):
        q, k, v = (torch.randn(ctx, heads, cfg.head_dim, generator=gen, device=device).half()
                   for heads in (cfg.num_heads, cfg.num_kv_heads, cfg.num_kv_heads))
        tables[r, :n] = owner[used:used + n]
        used += n
        pos = torch.arange(ctx, device=device)
        k_cache[tables[r, pos // BLOCK_SIZE].long(), pos % BLOCK_SIZE] = k
        v_cache[tables[r, pos // BLOCK_SIZE].long(), pos % BLOCK_SIZE] = v
        dense.append((q, k, v))
    token_seq = torch.cat([torch.full((c,), r, dtype=torch.int32) for r, (_, c) in enumerate(requests)])
    positions = torch.cat([torch.arange(p, p + c, dtype=torch.int32) for p, c in requests])
    meta = PrefillMeta(len(token_seq), tables, token_seq.to(device), positions.to(device))
    q_chunks = torch.cat([q[p:] for (q, _, _), (p, _) in zip(dense, requests)])
    return dense, q_chunks, k_cache, v_cache, meta


def sdpa_inputs(q, k, v, prefix: int, group: int):
    """[1, heads, len, d] query (the chunk's rows) and K/V expanded to every query head."""
    to_heads = lambda x: x.transpose(0, 1)[None]  # noqa: E731
    return (to_heads(q[prefix:]), to_heads(k.repeat_interleave(group, dim=1)),
            to_heads(v.repeat_interleave(group, dim=1)))


def sdpa_call(qh, kh, vh, prefix: int, chunk: int):
    """Causal attention of the chunk's queries; after a prefix the mask is aligned bottom-right."""
    if prefix == 0:
        return lambda: sdpa(qh, kh, vh, is_causal=True)
    mask = causal_lower_right(chunk, prefix + chunk)
    return lambda: sdpa(qh, kh, vh, attn_mask=mask)


def bench_ms(fn, device: str) -> float:
    if device != "cuda":
        return median_ms(fn, device, 1)[0]
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def case_name(requests) -> str:
    if len(requests) > 1:
        return f"packed{len(requests)}x{requests[0][1]}"
    prefix, chunk = requests[0]
    return f"{chunk}@{prefix}" if prefix else f"fresh{chunk}"


def prompt_rows(device: str, cases, variants) -> list[dict]:
    cfg = PRESETS["qwen2.5-1.5b"]
    group, scale = cfg.num_heads // cfg.num_kv_heads, cfg.head_dim ** -0.5
    gen = torch.Generator(device=device).manual_seed(0)
    rows = []
    for requests in cases:
        dense, q_chunks, k_cache, v_cache, meta = paged_case(requests, cfg, device, gen)
        sdpa_args = [sdpa_inputs(q, k, v, p, group) for (q, k, v), (p, _) in zip(dense, requests)]
        with sdpa_kernel(SDPBackend.MATH):
            reference = torch.cat([sdpa_call(qh.float(), kh.float(), vh.float(), p, c)()[0].transpose(0, 1)
                                   for (qh, kh, vh), (p, c) in zip(sdpa_args, requests)])
        flops = 4 * cfg.num_heads * cfg.head_dim * sum(causal_pairs(p, c) for p, c in requests)
        case = dict(case=case_name(requests), requests=requests, context=max(p + c for p, c in requests),
                    tokens=meta.num_tokens)
        contenders = {}
        if len(requests) == 1:
            (qh, kh, vh), ((prefix, chunk),) = sdpa_args[0], requests
            for name, backend in SDPA_BACKENDS.items():
                call = sdpa_call(qh, kh, vh, prefix, chunk)
                contenders[name] = (lambda call=call, backend=backend: _in_backend(call, backend),
                                    lambda out: out[0].transpose(0, 1))
        for tiles in variants:
            new = TritonAttention("balanced", prompt_tiles=tiles)
            contenders[variant_name(tiles)] = (
                lambda new=new: new.prefill(q_chunks, k_cache, v_cache, meta, scale), lambda out: out)
        case_rows = []
        for name, (fn, heads_last) in contenders.items():
            row = dict(case, kernel=name)
            try:
                err = (heads_last(fn()).float() - reference).abs().max().item()
                row["max_abs_err"] = err
                if not err <= TOLERANCE:
                    raise ValueError(f"max abs error {err:.3g} above {TOLERANCE}")
                ms = bench_ms(fn, device)
                row.update(ms=ms, tflops=flops / (ms / 1e3) / 1e12)
            except Exception as exc:  # a backend this card or shape lacks; a shape that does not launch
                row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
            print(json.dumps(row), flush=True)
            case_rows.append(row)
        timed_sdpa = [r for r in case_rows if r["kernel"].startswith("sdpa") and "tflops" in r]
        best = max(timed_sdpa, key=lambda r: r["tflops"], default=None)
        for r in case_rows:
            r.update(sdpa_backend=best and best["kernel"], sdpa_tflops=best and best["tflops"])
        rows += case_rows
        del dense, q_chunks, k_cache, v_cache, sdpa_args, reference
    return rows


def _in_backend(call, backend):
    with sdpa_kernel(backend):
        return call()


def decode_rows(device: str, cases) -> list[dict]:
    """Balanced split-KV decode (the engine's default), launched as its graphs launch it (split by
    the model's longest context), after an L2 flush, beside a copy of the same bytes."""
    cfg = PRESETS["qwen2.5-1.5b"]
    backend, flush, scale = TritonAttention("balanced"), _flush_buffer(device), cfg.head_dim ** -0.5
    iters = 100 if device == "cuda" else 1
    out = [dict(kernel="copy", copy_GBps=copy_bandwidth(device) / 1e9)]
    for n_rows, context in cases:
        q, k, v, meta = decode_case([context] * n_rows, cfg, torch.float16, device, seed=context)
        meta = DecodeMeta(meta.num_tokens, meta.context_lens, meta.block_tables, cfg.max_position_embeddings)
        kv_bytes = n_rows * context * cfg.num_kv_heads * cfg.head_dim * 2 * k.element_size()
        src = torch.empty(kv_bytes // 2, dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        copy_ms = median_ms(lambda: dst.copy_(src), device, iters, flush)[0]
        ms = median_ms(lambda: backend.decode(q, k, v, meta, scale), device, iters, flush)[0]
        row = dict(kernel="decode-balanced", rows=n_rows, context=context, us=ms * 1e3, copy_us=copy_ms * 1e3,
                   fraction_of_copy=copy_ms / ms)
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def table(rows: list[dict]) -> str:
    names = list(dict.fromkeys(r["case"] for r in rows if "case" in r))
    kernels = list(dict.fromkeys(r["kernel"] for r in rows if "case" in r))
    lines = ["TFLOP/s (causal FLOPs)".ljust(30) + "".join(n.rjust(12) for n in names)]
    for kernel in kernels:
        cells = []
        for name in names:
            r = next((r for r in rows if r.get("kernel") == kernel and r.get("case") == name), {})
            cells.append(f"{r['tflops']:.0f}" if "tflops" in r else "err" if "error" in r else "-")
        lines.append(kernel.ljust(30) + "".join(cell.rjust(12) for cell in cells))
    for r in rows:
        if r["kernel"] == "copy":
            lines.append(f"copy rate {r['copy_GBps']:.0f} GB/s (read + written)")
        elif r["kernel"].startswith("decode"):
            lines.append(f"{r['kernel']} rows {r['rows']} context {r['context']}: {r['us']:.1f} us, "
                         f"{r['fraction_of_copy']:.0%} of copy")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU interpreter (checks the script)")
    parser.parse_args()
    device = "cuda" if torch.cuda.is_available() and not SMOKE else "cpu"
    machine = dict(device_name=torch.cuda.get_device_name() if device == "cuda" else "cpu",
                   torch=torch.__version__, triton=triton.__version__)
    print(json.dumps(machine), flush=True)
    default = _prompt_tiles(torch.device(device))
    variants = [default] + ([] if device == "cpu" else [v for v in VARIANTS if v != default])
    rows = prompt_rows(device, SMOKE_CASES if device == "cpu" else CASES, variants)
    rows += decode_rows(device, SMOKE_DECODE if device == "cpu" else DECODE)
    rows = [dict(machine, **r) for r in rows]
    path = os.path.join(os.environ.get("OUT", "."), "prompt_attention.json")
    with open(path, "w") as f:
        json.dump(rows, f, indent=1)
    print(machine["device_name"], "torch", machine["torch"], "triton", machine["triton"])
    print(table(rows))


if __name__ == "__main__":
    main()
