"""Contract-shaped rows (schema 7, /work/plan/CONTRACT.md's row schema) with made-up but
plausible H200 numbers, for the analysis and plotting tests and for rendering the book before
real rows exist: `python -m tests.bench.synthetic_rows FOLDER` writes one
`<experiment>.jsonl` per experiment there.

Every number here is invented. The shapes (which fields, which keys pair with which, rounds
and seeds) follow the contract, so a function that reads these rows reads the real ones.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

EXPERIMENTS = ("gates", "census", "attention", "capacity", "peer", "scale", "kernels", "soak")
PARTS = ("part7", "part8", "part9", "part10")
WEIGHT_BYTES = 3.087e9
LAYERS = 28
KV_BYTES_PER_TOKEN = 28672  # 28 layers x (K + V) x 2 KV heads x 128 dims x 2 bytes

# Per part: decode step (wall, GPU) ms, mixed step GPU ms (fused, chunked), kernels per
# layer, capacity (fused, chunked) req/s. Invented, in the ballpark of the series' story.
STEPS = {
    "part7": dict(decode=(16.0, 6.2), mixed=(9.5, 14.5), kpl=38.0, cap=(30.0, 22.0)),
    "part8": dict(decode=(15.4, 4.4), mixed=(8.9, 13.6), kpl=39.0, cap=(31.0, 23.0)),
    "part9": dict(decode=(5.3, 5.0), mixed=(7.6, 9.8), kpl=39.0, cap=(42.0, 34.0)),
    "part10": dict(decode=(2.0, 1.9), mixed=(4.4, 5.6), kpl=14.0, cap=(49.7, 41.0)),
}


def _base(experiment: str, i: int, **fields) -> dict:
    row = {
        "schema_version": 7, "experiment": experiment, "profile": "full",
        "code_version": "0123456789ab", "commit": None, "device_name": "NVIDIA H200",
        "time_utc": f"2026-12-06T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}+00:00",
        "config": None, "engine": None, "round": None,
    }
    row.update(fields)
    return row


def gates_rows() -> list[dict]:
    rows, i = [], 0
    for config in (*PARTS, "part11", "part12"):
        for gate in ("flip_tolerance", "mixed_step", "tiny_pool", "poisoning"):
            i += 1
            size = {"part11": dict(max_batch=256, chunk_tokens=8192), "part12": dict(max_batch=256, chunk_tokens=2048)}
            rows.append(_base("gates", i, config=config, gate=gate, passed=True, **size.get(config, {}),
                              detail="ok", max_logit_gap=0.0, tolerance=0.02, n_tokens=4096))
    return rows


def census_rows(rng: np.random.Generator) -> list[dict]:
    rows, i = [], 0
    copy_bw, gemm = 4.27e12, 620.0
    for config, s in STEPS.items():
        for engine in ("fused", "chunked"):
            for step in ("decode", "mixed"):
                i += 1
                if step == "decode":
                    wall, gpu = s["decode"]
                    chunk, kv, flops = 0, 32 * 1100 * KV_BYTES_PER_TOKEN, 32 * 2.62e9
                else:
                    gpu = s["mixed"][0 if engine == "fused" else 1]
                    wall = gpu * (1.6 if config in ("part7", "part8") else 1.08)
                    chunk, kv, flops = 512, 31 * 1100 * KV_BYTES_PER_TOKEN, 543 * 2.62e9 + 0.05e12
                jitter = float(rng.normal(1.0, 0.01))
                rows.append(_base(
                    "census", i, record="step", config=config, engine=engine, step=step,
                    decode_rows=32 if step == "decode" else 31, chunk_tokens=chunk, context=1100,
                    n=50, gpu_ms=gpu * jitter, gpu_ms_min=gpu * 0.97, gpu_ms_max=gpu * 1.05,
                    wall_ms=wall * jitter, wall_ms_min=wall * 0.97, wall_ms_max=wall * 1.05, host_ms=0.98 * wall if config in ("part7", "part8") else 0.3,
                    n_kernels=int(s["kpl"] * LAYERS + 6) * (2 if engine == "chunked" and step == "mixed" else 1),
                    num_layers=LAYERS, weight_bytes=WEIGHT_BYTES, kv_bytes=kv, flops=flops,
                    copy_bw_Bps=copy_bw * float(rng.normal(1, 0.005)),
                    gemm_tflops=gemm * float(rng.normal(1, 0.005))))
        for engine, step in (("fused", "decode"), ("fused", "mixed"), ("chunked", "decode"), ("chunked", "mixed")):
            total = s["decode"][1] if step == "decode" else s["mixed"][0 if engine == "fused" else 1]
            tokens = 32 if step == "decode" else 543
            shares = {"gemm": 0.55, "attention": 0.2, "norm_rotary_act": 0.15, "lm_head": 0.07, "other": 0.03}
            for cls, share in shares.items():
                i += 1
                if cls == "gemm":
                    b, f = 2.62e9, tokens * 2.62e9
                elif cls == "attention":
                    b, f = 32 * 1100 * KV_BYTES_PER_TOKEN, 32 * 1100 * 172032.0 + (0.05e12 if step == "mixed" else 0)
                elif cls == "lm_head":
                    b, f = 0.467e9, 32 * 0.467e9
                elif cls == "norm_rotary_act":
                    b, f = tokens * 28 * 1536 * 2 * 12, tokens * 28 * 1536 * 20.0
                else:
                    b, f = None, None
                rows.append(_base("census", i, record="kernel_class", config=config, engine=engine, step=step,
                                  kernel_class=cls, n_kernels=int(s["kpl"] * LAYERS * share) + 1,
                                  gpu_ms=total * share, bytes=b, flops=f))
    return rows


def attention_rows() -> list[dict]:
    rows, i = [], 0
    for backend, frac in (("triton", 0.3), ("triton-splitkv", 0.55), ("triton-parallel", 0.7)):
        for context in (1024, 2048, 4096):
            i += 1
            kv = 32 * context * 1024  # one layer: 2 KV heads x 128 x 2 bytes x (K + V)
            copy_us = kv / 3.0e12 * 1e6 + 4.0
            f = frac * (1 + 0.1 * np.log2(context / 1024))
            rows.append(_base("attention", i, backend=backend, context=context, rows=32,
                              gpu_us=copy_us / f, n=100, kv_bytes=kv, copy_us=copy_us,
                              fraction_of_copy=f))
    return rows


def _capacity_row(experiment, i, rng, config, engine, cap, rate, rnd, seed, batch, budget, n_requests=400):
    served = min(rate, cap) * float(rng.normal(1.0, 0.01))
    load = min(rate / cap, 1.5)
    ttft50 = 0.05 + 0.4 * load ** 4
    row = _base(experiment, i, config=config, engine=engine, max_batch=batch, chunk_tokens=budget,
                rate=float(rate), n_requests=n_requests, seed=seed, round=rnd, served_rate=served,
                steady_rate=served, steady_fraction=0.83, saturated=rate > cap,
                ttft_p50_s=ttft50, ttft_p99_s=ttft50 * 3, itl_p50_s=0.004 + 0.004 * load,
                itl_p99_s=0.02 + 0.03 * load, e2e_p50_s=ttft50 + 1.0,
                goodput_rate=served * max(0.0, 1.2 - load), n_steps=5000,
                decode_step_s_p50=0.002, decode_step_gpu_s_p50=0.0019,
                mixed_step_s_p50=0.0045, mixed_step_gpu_s_p50=0.0044, host_share=0.05,
                largest_batch_decode_rows=batch)
    return row


def _serving(s: dict, i: int) -> dict:
    """A run's decode steps: the census's wall time, spread ±2% from run to run (no draw from the rng,
    so every other figure stays as it was)."""
    return dict(decode_step_s_p50=s["decode"][0] / 1e3 * (1 + 0.01 * (i % 5 - 2)), n_decode_steps=1200)


def capacity_rows(rng: np.random.Generator, rounds: int = 5) -> list[dict]:
    rows, i = [], 0
    for config, s in STEPS.items():
        cap_f, cap_c = s["cap"]
        for rate in (10, 20, 30, 40, 60, 80):
            for engine, cap in (("fused", cap_f), ("chunked", cap_c)):
                i += 1
                rows.append(_capacity_row("capacity", i, rng, config, engine, cap, rate, 0, 0, 32, 512) | _serving(s, i))
        for rnd in range(1, rounds):  # the paired comparison at 80/s: rounds 0..R-1, ABBA
            order = ("fused", "chunked") if rnd % 2 == 0 else ("chunked", "fused")
            draw = float(rng.normal(1.0, 0.03))  # a new workload draw moves both engines
            for engine in order:
                i += 1
                cap = (cap_f if engine == "fused" else cap_c) * draw
                rows.append(_capacity_row("capacity", i, rng, config, engine, cap, 80, rnd, rnd, 32, 512) | _serving(s, i))
    return rows


def scale_rows(rng: np.random.Generator, rounds: int = 5) -> list[dict]:
    rows, i = [], 0
    best = (256, 2048)
    for batch in (32, 64, 128, 256):
        for budget in (512, 2048, 8192):
            cap_f = 50.0 * (batch / 32) ** 0.35 * (1.1 if budget == 2048 else 1.0)
            cap_c = cap_f / (1.12 if budget == 512 else 1.05)
            for rate in (40, 80, 120, 160):
                for engine, cap in (("fused", cap_f), ("chunked", cap_c)):
                    i += 1
                    row = _capacity_row("scale", i, rng, "part11", engine, cap, rate, 0, 0, batch, budget)
                    row.update(host_ms_per_step_p50=0.25 * batch / 32 ** 0.5 / 8,
                               step_gpu_ms_p50=1.9 + 0.01 * batch,
                               host_share=0.02 + 0.0002 * batch)
                    rows.append(row)
            if (batch, budget) == best:
                for rnd in range(1, rounds):
                    draw = float(rng.normal(1.0, 0.03))
                    for engine, cap in (("fused", cap_f * draw), ("chunked", cap_c * draw)):
                        i += 1
                        row = _capacity_row("scale", i, rng, "part11", engine, cap, 160, rnd, rnd, batch, budget)
                        row.update(host_ms_per_step_p50=0.3, step_gpu_ms_p50=4.4, host_share=0.07)
                        rows.append(row)
    return rows


def peer_rows(rng: np.random.Generator, rounds: int = 3) -> list[dict]:
    rows, i = [], 0
    for rnd in range(rounds):
        for engine, config, tok_s in (("transformers", None, 3000.0), ("fused", "part10", 16000.0),
                                      ("chunked", "part10", 14000.0), ("fused", "part11", 30000.0)):
            i += 1
            tok = tok_s * float(rng.normal(1, 0.02))
            rows.append(_base("peer", i, engine=engine, config=config, workload="closed_mixed",
                              batch=32 if config != "part11" else 128, wall_s=128 * 128 / tok,
                              output_tok_s=tok, round=rnd, transformers_version="5.17.0"))
    return rows


def part12_capacity_rows(rng: np.random.Generator, rounds: int = 5) -> list[dict]:
    """Part 12: part 11's best setting with the new kernels, its sweep then pairs at 190/s."""
    rows, i = [], 1000
    for rnd, rate in [(0, r) for r in (76.0, 95.0, 119.0, 142.0, 190.0)] + [(r, 190.0) for r in range(1, rounds)]:
        draw = float(rng.normal(1.0, 0.03)) if rnd else 1.0
        for engine, cap in (("fused", 84.0 * draw), ("chunked", 77.0 * draw)):
            i += 1
            rows.append(_capacity_row("capacity", i, rng, "part12", engine, cap, rate, rnd, rnd, 256, 2048, 1500))
    return rows


def part12_census_rows() -> list[dict]:
    """A saturated census of part 12: 40 steps, GPU time by class (CUDA events' window 0.7 s)."""
    share = {"gemm": 0.46, "lm_head": 0.013, "prompt_attention": 0.19, "decode_attention": 0.30,
             "norm_rotary_act": 0.10, "other": 0.002, "idle": 0.02}
    rate = {"gemm": (650.0, None), "lm_head": (520.0, None), "prompt_attention": (160.0, None),
            "decode_attention": (None, 1.6)}
    return [_base("census", 2000 + j, config="part12", engine="fused", record="steady_class", kernel_class=name,
                  rate=190.0, max_batch=256, chunk_tokens=2048, window_s=1.5, window_gpu_s=0.7, window_steps=40,
                  completed_before_window=500, gpu_s=0.7 * f, share=f, tflops=rate.get(name, (None,))[0],
                  tb_s=rate.get(name, (None, None))[1], copy_bw_Bps=4.27e12, gemm_tflops=620.0)
            for j, (name, f) in enumerate(share.items())]


def kernels_rows() -> list[dict]:
    rows, i = [], 3000
    for tiles, default, scale in (("128x128-w8s2", True, 1.0), ("32x64-w4s2", False, 0.55)):
        for pieces, tf, sdpa, backend in ((((0, 2048),), 220.0, 270.0, "cudnn"), (((0, 4096),), 305.0, 400.0, "cudnn"),
                                          (((0, 8192),), 375.0, 530.0, "cudnn"), (((2048, 2048),), 277.0, 194.0, "flash"),
                                          (((2048, 1024), (0, 512), (640, 384), (0, 128)), 200.0, None, None)):
            i += 1
            one = pieces[0] if len(pieces) == 1 else (None, None)
            rows.append(_base("kernels", i, kernel="prompt", tiles=tiles, default_tiles=default,
                              pieces=[list(x) for x in pieces], context=None if one[0] is None else sum(one),
                              prefix=one[0], chunk=sum(c for _, c in pieces), tflops=tf * scale, sdpa_tflops=sdpa,
                              sdpa_backend=backend, max_abs_err=1e-3))
    for n_rows, context, frac in ((32, 1024, 0.53), (256, 1024, 0.66), (256, 4096, 0.75), (256, None, 0.62)):
        i += 1  # context None: 256 rows at the mixed workload's contexts in flight, 1,172 tokens on average
        mean = context or 1172.4
        kv = n_rows * mean * KV_BYTES_PER_TOKEN / LAYERS
        rows.append(_base("kernels", i, kernel="decode", rows=n_rows, context=context, context_mean=mean, kv_bytes=kv,
                          contexts="fixed" if context else "mixed", copy_us=kv / 3.0e12 * 1e6,
                          gpu_us=kv / 3.0e12 * 1e6 / frac, fraction_of_copy=frac))
    for layer, n, k, frac in (("qkv", 2048, 1536, 1.0), ("gate_up", 17920, 1536, 0.81), ("down", 1536, 8960, 1.0)):
        i += 1
        rows.append(_base("kernels", i, kernel="gemm", layer=layer, m=2303, n=n, k=k, calls_cublas=True,
                          tflops=600.0 * frac, matmul_tflops=600.0, fraction_of_matmul=frac))
    return rows


def soak_rows() -> list[dict]:
    return [_base("soak", 4000, config="part12", engine="fused", max_batch=256, chunk_tokens=2048, rate=190.0,
                  n_requests=10000, steady_rate=90.0, n_lost=0, pool_free_after=True, mem_checkpoint_completions=1000,
                  peak_mem_1k_bytes=4.0e10,
                  peak_mem_end_bytes=4.0e10, kernels_compiled_after_construction=0)]


def generate(seed: int = 0, rounds: int = 5) -> dict[str, list[dict]]:
    rng = np.random.default_rng(seed)
    return {"gates": gates_rows(), "census": census_rows(rng) + part12_census_rows(), "attention": attention_rows(),
            "capacity": capacity_rows(rng, rounds) + part12_capacity_rows(rng, rounds), "peer": peer_rows(rng),
            "scale": scale_rows(rng, rounds), "kernels": kernels_rows(), "soak": soak_rows()}


def write(folder: Path, seed: int = 0, rounds: int = 5, experiments=EXPERIMENTS) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in generate(seed, rounds).items():
        if name in experiments:
            with open(folder / f"{name}.jsonl", "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows)
    return folder


if __name__ == "__main__":
    print(write(Path(sys.argv[1])))
