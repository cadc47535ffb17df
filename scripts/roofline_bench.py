"""Part 10's GPU measurements in one command: `python scripts/roofline_bench.py OUT_DIR`.

Writes OUT_DIR/roofline/<section>.jsonl (+ .csv), every row with provenance, and prints a
summary table last. Sections, each in its own try/except (a failure becomes an error row
and the other sections still run):

  ops_check      each fused op against the PyTorch reference in the model dtype on ragged
                 token counts; balanced and split-KV decode against the torch reference
  step_check     one mixed step's logits (512 chunk tokens + 31 decode rows) with the fused
                 ops on and off on the same Batch (and the piecewise- and whole-graphed runs
                 against eager): max |diff| and argmax agreement outside ties
  census         a 32-row decode step (context ~1.1k) and the mixed step, per configuration
                 (fused ops off/on, attention split-KV/balanced/parallel, the mixed step
                 piecewise or one graph; `--configs`): GPU time per step (CUDA events,
                 median) and wall per step, timed before any profiler runs in the process;
                 then torch.profiler over graph replays: kernels per step and per layer,
                 kernel time, and the timing again after it; census_kernels has the names
  attention      decode attention at 32 rows x {1k, 2k, 4k} context, L2 flushed: split-KV as
                 the graphs launch it (split length from the pool's longest context) and as
                 the layout bench does (from the step's), and a sweep of balanced launch
                 shapes; GB/s and the fraction of a copy bandwidth measured in the same run,
                 timed as launched and as a CUDA graph replay (how the engine runs it)
  attention_layout  balanced decode over a slot-major (the engine's) and a head-major cache
                 view, beside a copy of the same bytes: what limits decode attention at 1k
  attention_flush  the same-size copy and a finer sweep of balanced launch shapes (splits
                 per SM from 1 to 8) under both L2 flushes (`kernels.L2_FLUSHES`: zeroing
                 leaves L2 dirty, reading leaves it clean), graph replays
  attention_engine  the same at the engine's own launch shape only (rows; not in the defaults)
  flush_probe    a few eager decode-attention calls after each flush, for `ncu` to count the
                 DRAM bytes each kernel reads and writes (no rows; run under ncu)
  prefill        the packed (prefill) kernel on a step's prompt chunks over a sweep of
                 launch shapes (BLOCK_M, BLOCK_N, warps, stages), L2 flushed; TFLOP/s of the
                 causal work, beside torch's SDPA on the first chunk
  kernel_probe   what bounds part 10's two attention kernels: decode at each attention
                 context and the prefill kernel on two chunks, beside each of torch's SDPA
                 backends on a dense copy of the same K/V; compiled registers and shared
                 memory; one eager call of each for `ncu` (rows; not in the default sections)
  prefill_long   the prefill sweep on one chunk after each of 0 to 3,584 cached keys
  prefill_rates  a prompt chunk after 0 to 3,584 cached keys: the packed kernel beside SDPA's
                 flash and cuDNN backends on a dense copy, TFLOP/s (rows; not in the defaults)
  split_prefill  the same with each query tile's keys split over 1 to 8 programs and merged
                 (fusedlib.bench.split_prefill)
  split_prefill_parts  the split probe at 1 and 4 runs with its row merge, without it, and
                 merged a query tile per program
  split_prefill_merge  the same without the row merge's runs
  split_prefill_adaptive  the split probe choosing each tile's runs on the device and merging
                 in its last run
  gemm           fp16 GEMM rate at the step's shapes and one large one; the per-kernel
                 launch cost inside a CUDA graph (graphs of 100 and 1,100 tiny kernels)
  gate_up        the decode step's gate_up projection and activation at `rows` rows: cuBLAS
                 and the SiLU*up kernel against fusedlib.ops.gemm's one kernel over a sweep
                 of launch shapes; graph replays, each layer's weight its own copy so L2
                 holds none of them (as in a step); GB/s of the weight, the copy fraction
  tma_gate_up    the mixed step's gate_up and activation at chunk + rows rows: cuBLAS and the
                 activation kernel against one TMA-fed Triton kernel with the activation in
                 its epilogue (fusedlib.bench.tma), over a sweep of tiles, persistent or not
  tma_gate_up_more  the same over deeper pipelines around the first sweep's best
  split_k        the same for qkv, o_proj and down: cuBLAS against fusedlib.ops.gemm's
                 split-K kernel (partials, compared as their sum) over a sweep per projection
  pair_timeline  the whole-graphed mixed step's attention pair per layer from the profiler:
                 each attention kernel's start and end after the fork, and the join
  chain          the decode step's GEMMs alone (fusedlib.bench.chain): separate kernels, one
                 persistent kernel with grid barriers, and with the next weight block loaded
                 before each barrier; graph replays in rotating order, per launch shape
  read_sizes     each decode-step weight-streaming kernel (q/k/v, output, gate_up, down, lm_head)
                 beside reads of its weight's bytes alone (fusedlib.bench.stream, a sweep of
                 grids, and torch's amax): what a kernel of that size could reach alone
  read_kv        reads of the bytes one layer's decode attention reads in the census's decode
                 step (every row's cached keys and values), a sweep of grids
  anchors        the 32-row decode step beside what a reader would use instead: ours (census
                 configuration 6), plain PyTorch over a dense cache (fusedlib.bench.plain) as
                 one CUDA graph, eager and under torch.compile
  anchors_kernels  the same steps under torch.profiler: kernels and µs a step by name
  anchors_uniform  the compiled plain step with every row at the step's mean context
  anchors_transformers  transformers' generate at the same rows and context, with a static
                 cache and its automatic compile: the interval between decode steps
  wall_gap       the whole-graphed decode step's host time: the step and its graph's replay
                 alone, to their return and to completion, and an idle synchronize
  loop           the census's steps as the serving loop runs them (host one step ahead):
                 per census configuration (`--configs`) an engine serves `rows` requests
                 decoding at ~`context`, then `rows` - 1 of them beside a queue of new
                 `chunk`-token prompts of one token each, so every step is the decode or the
                 mixed step; per step kind the interval from one step's start to the next's
                 (the loop's wall per step), the step's GPU span (CUDA events) and the host's
                 time inside step(), medians over the steady steps

Random weights with the Qwen2.5-1.5B config. `--smoke` runs every section with the tiny
model on the CPU (Triton interpreter) so a unit test keeps the script working; its numbers
mean nothing.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

PROFILES = {
    # preset, dtype name, device, decode rows, decode context, chunk tokens, new prompt,
    # attention contexts, timing iterations, profiled replays, census configurations, token
    # counts of the small-op check, the loop section's steps per part and its configurations
    # (None: the census's)
    "full": dict(preset="qwen2.5-1.5b", dtype="float16", device="cuda", rows=32, context=1088,
                 chunk=512, new_prompt=1600, attn_contexts=(1024, 2048, 4096), iters=50,
                 replays=5, configs=(0, 1, 2, 3, 4, 5, 6), op_tokens=(1, 3, 17, 33, 100, 543),
                 loop_steps=60, loop_configs=None),
    # Every section's code at the least work that still takes each path: prompts of two chunks,
    # token counts under and over a 16-row and a 32-row tile (the interpreter runs a program
    # per row, so 543 tokens cost most of the check).
    "smoke": dict(preset="tiny", dtype="float32", device="cpu", rows=4, context=20, chunk=16,
                  new_prompt=20, attn_contexts=(32,), iters=1, replays=1, configs=(0, 3, 4, 5, 6),
                  op_tokens=(1, 3, 17, 33), loop_steps=8, loop_configs=(6,)),
}
TIE_GAP = 0.02  # the gates' logit tolerance: a top-2 gap below it is a tie
BALANCED_SWEEP = [(block_n, per_sm, warps, stages)
                  for block_n in (32, 64, 128) for per_sm in (2, 4, 8)
                  for warps, stages in ((4, 2), (4, 3), (8, 2), (2, 2))] + [
    # one program per (request, KV head) at 32 rows: no reduce kernel, if it is fast enough
    (block_n, 0.25, warps, stages) for block_n in (64, 128) for warps, stages in ((4, 3), (8, 3), (8, 4))]
SMOKE_SWEEP = [(16, 2, 4, 2), (32, 8, 4, 2), (16, 0.25, 4, 2)]
# attention_flush's shapes: (block_n, programs per SM, warps, stages), the engine's default
# first. (Its first run, at 918fb98, also swept programs reading two KV heads each: slower at
# every context, so that variant went.)
FLUSH_SWEEP = [(32, 6, 4, 2)] + [(block_n, per_sm, warps, stages) for block_n in (32, 64, 128)
                                 for per_sm in (1, 1.5, 2, 3, 4, 6, 8)
                                 for warps, stages in ((4, 2), (4, 3), (4, 4), (8, 3))]
SMOKE_FLUSH_SWEEP = [(16, 2, 4, 2), (16, 8, 4, 3)]
# The packed (prefill) kernel's launch shapes: (BLOCK_M, BLOCK_N, warps, stages).
PREFILL_SWEEP = [(block_m, block_n, warps, stages) for block_m in (16, 32, 64, 128)
                 for block_n in (32, 64, 128) for warps, stages in ((4, 2), (4, 3), (8, 2), (8, 3))]
SMOKE_PREFILL_SWEEP = [(16, 16, 4, 2), (32, 16, 4, 2)]
# prefill_rates: keys cached before a 512-token chunk, up to the last chunk of a 4,096-token prompt
PREFILL_RATE_CACHED = (0, 512, 1024, 2048, 3584)
# split_prefill's shapes: (splits, block_m, block_n, warps, stages), at the packed kernel's
# engine shape and at prefill_long's fastest after 3,584 keys
SPLIT_PREFILL = [(s, bm, 128, 4, st) for s in (1, 2, 3, 4, 6, 8) for bm, st in ((32, 2), (64, 3))]
SMOKE_SPLIT_PREFILL = [(1, 16, 16, 4, 2), (3, 16, 16, 4, 2)]
SPLIT_PREFILL_PARTS = [(s, bm, 128, 4, st) for s in (1, 4) for bm, st in ((32, 2), (64, 3))]
SPLIT_PREFILL_ADAPTIVE = [(s, bm, 128, 4, st) for s in (4, 8) for bm, st in ((32, 2), (64, 3))]
SPLIT_ALONE_AND_TILES = (("split kernel alone", "none", SPLIT_PREFILL_PARTS),
                         ("split, merged by tile", "tiles", SPLIT_PREFILL_PARTS))
# The gate_up + activation kernel's launch shapes: (block_n, block_k, warps, stages); the
# first is GateUpConfig's default.
GATE_UP_SWEEP = [(64, 64, 4, 5)] + [(block_n, block_k, warps, stages) for block_n in (16, 32, 64)
                                    for block_k in (64, 128) for warps, stages in ((4, 3), (4, 5), (8, 4))]
SMOKE_GATE_UP_SWEEP = [(64, 64, 4, 5), (16, 32, 4, 2)]
# fusedlib.bench.tma's launch shapes at a mixed step's rows: (block_m, block_n, block_k, warps,
# stages, persistent). 544 rows are 5 row tiles of 128 or 9 of 64; 8,960 columns 70 tiles of 128.
TMA_SWEEP = [(bm, bn, bk, w, st, False) for bm, bn, bk, w, st in
             [(128, 128, 64, 8, 3), (128, 128, 64, 8, 4), (128, 128, 128, 8, 2), (64, 128, 64, 4, 3),
              (64, 128, 64, 4, 4), (64, 128, 64, 4, 5), (128, 64, 64, 4, 4), (128, 64, 64, 8, 4),
              (64, 64, 64, 4, 4), (64, 256, 64, 8, 3), (192, 128, 64, 8, 3)]] + [
    (bm, bn, bk, w, st, True) for bm, bn, bk, w, st in
    [(128, 128, 64, 8, 3), (64, 128, 64, 4, 4), (128, 64, 64, 8, 4), (64, 64, 64, 4, 4)]]
SMOKE_TMA_SWEEP = [(16, 32, 32, 4, 2, False), (16, 32, 32, 4, 2, True)]
# tma_gate_up_more: deeper pipelines around the first sweep's best (64 x 128 x 64, 5 stages,
# which fills 200 KB of shared memory; 32-deep K tiles halve a stage) and persistent 128 x 128.
TMA_MORE_SWEEP = [(64, 128, 64, 4, 5, False)] + [
    (bm, bn, bk, w, st, p) for bm, bn, bk, w, st, p in
    [(64, 128, 32, 4, 6, False), (64, 128, 32, 4, 8, False), (64, 128, 32, 4, 10, False),
     (64, 64, 64, 4, 6, False), (64, 64, 64, 4, 8, False), (128, 128, 32, 8, 6, False),
     (128, 128, 64, 8, 4, True), (128, 128, 32, 8, 6, True), (128, 128, 32, 8, 8, True),
     (64, 128, 64, 4, 5, True), (64, 128, 32, 4, 8, True), (128, 64, 64, 4, 6, True)]]
# The split-K kernel's launch shapes: (block_n, block_k, splits, warps, stages), by projection,
# the first of each its SplitKConfig. qkv and o_proj (K 1536): 24-32 column tiles at 64
# columns, so 3-6 splits give about 1 to 1.5 programs per SM; down (K 8960) around set K's
# best shape of the ticket-reduce kernel (64 x 128, 5 splits).
SMALL_SPLIT_K = [(block_n, block_k, splits, 4, stages) for block_n, block_k, splits, stages in
                 [(64, 128, s, st) for s in (2, 3, 4, 6) for st in (3, 4)]
                 + [(64, 64, s, st) for s in (4, 6, 8, 12) for st in (3, 4)]
                 + [(64, 256, s, 3) for s in (2, 3)] + [(32, 128, s, 4) for s in (2, 3, 4)]
                 + [(32, 64, s, 4) for s in (4, 6)] + [(128, 128, s, 4) for s in (3, 4, 6)]
                 + [(128, 64, s, 4) for s in (6, 12)]]
SPLIT_K_SWEEP = {
    "qkv": [(64, 128, 4, 4, 4)] + SMALL_SPLIT_K,
    "o_proj": [(64, 128, 4, 4, 4)] + SMALL_SPLIT_K,
    "down": [(64, 128, 5, 4, 4)] + [(block_n, block_k, splits, 4, stages) for block_n, block_k, splits in
                                    [(64, 128, s) for s in (4, 6, 7)] + [(64, 256, s) for s in (3, 4, 5)]
                                    + [(128, 128, s) for s in (4, 6)] + [(32, 256, s) for s in (4, 6)]
                                    for stages in (3, 4)],
}
SPLIT_K_SWEEP = {proj: list(dict.fromkeys(shapes)) for proj, shapes in SPLIT_K_SWEEP.items()}
SMOKE_SPLIT_K_SWEEP = [(64, 64, 5, 4, 4), (16, 32, 3, 4, 2)]
# The GEMM chain's launch shapes (fusedlib.bench.chain.ChainShape): (block_n, block_k, warps,
# stages). 16 or 32 columns a tile give 48-128 tiles on the small GEMMs, about one per SM.
# The read probe's grids (fusedlib.bench.stream), in programs per SM.
READ_PER_SM = (1, 2, 4, 8)
CHAIN_SHAPES = [(16, 512, 4, 3), (16, 256, 4, 4), (32, 256, 4, 3), (32, 128, 4, 4)]
SMOKE_CHAIN_SHAPES = [(16, 32, 4, 2)]

# The census's configurations, by index (`--configs`): (label, fused ops, attention, mixed
# step as one graph, gate_up + activation in one kernel). The mixed step replays piecewise
# (attention eager between 29 pieces) or whole; decode steps are whole in all. The one kernel
# serves the decode step only (the mixed one has 543 rows). "triton-parallel" attends the mixed
# step's decode rows on a second stream beside its chunks (the decode step has no chunks: the
# same as balanced).
CENSUS_CONFIGS = [
    ("part9: reference ops, split-KV", False, "triton-splitkv", False, False),
    ("reference ops, balanced", False, "triton-balanced", False, False),
    ("fused ops, split-KV", True, "triton-splitkv", False, False),
    ("part10: fused ops, balanced", True, "triton-balanced", False, False),
    ("part10 whole: fused ops, balanced, whole graphs", True, "triton-balanced", True, False),
    ("part10 gate_up: whole graphs, gate_up+SiLU one kernel", True, "triton-balanced", True, True),
    ("part10 parallel: gate_up, decode attention beside the chunks'", True, "triton-parallel", True, True),
]


def _engine_prefill_shape() -> tuple[int, int, int, int]:
    """Part 10's packed-kernel launch shape (BLOCK_M, BLOCK_N, warps, stages), from the backend
    (fusedlib.bench.roofline writes it out for pages, and imports IPython, which a GPU image
    need not have)."""
    from fusedlib.attention.triton_backend import BLOCK_M, PackedConfig

    c = PackedConfig()
    return BLOCK_M, c.block_n, c.num_warps, c.num_stages


def _compiled(*kernels) -> dict[str, str]:
    """Each Triton kernel's compiled variants as "regs R, spills S, shared B, warps W" (joined
    by " / " when a kernel compiled more than once); nothing under the interpreter."""
    out = {}
    for kernel in kernels:
        variants = []
        for entry in getattr(kernel, "device_caches", {}).values():
            for compiled in next((c for c in entry if isinstance(c, dict)), {}).values():
                if hasattr(compiled, "_init_handles"):
                    compiled._init_handles()
                variants.append(f"regs {getattr(compiled, 'n_regs', '?')}, spills {getattr(compiled, 'n_spills', '?')}, "
                                f"shared {compiled.metadata.shared}, warps {compiled.metadata.num_warps}")
        if variants:
            out[kernel.__name__] = " / ".join(variants)
    return out


def _causal_flop(chunks, cfg) -> int:
    """FLOP of causal attention over prompt chunks ((tokens cached before, chunk length) each):
    query i of a chunk after `cached` keys sees cached + i + 1 keys, 4 FLOP a key and dim."""
    return 4 * sum(n * cached + n * (n + 1) // 2 for cached, n in chunks) * cfg.num_heads * cfg.head_dim


def _sync(device) -> None:
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize()


class Bench:
    def __init__(self, out: Path, profile: str):
        if profile == "smoke":
            os.environ.setdefault("TRITON_INTERPRET", "1")
        import torch

        from fusedlib.bench import rows, telemetry

        self.torch, self.rows, self.telemetry = torch, rows, telemetry
        self.p = PROFILES[profile]
        self.profile = profile
        self.device = self.p["device"]
        self.dtype = getattr(torch, self.p["dtype"])
        self.out = out / "roofline"
        self.summary: list[tuple[str, str]] = []
        self.on_gpu = self.device == "cuda"
        self.splitkv = None  # the census's split-KV launch shape, when not the default (`--splitkv`)
        self.configs = self.p["configs"]

    # ---- rows -----------------------------------------------------------------------
    def write(self, section: str, rows: list[dict]) -> None:
        info = self.telemetry.provenance()
        self.rows.append_rows(self.out / section,
                              [{"section": section, "profile": self.profile, **r, **info} for r in rows])

    def run_section(self, name: str, fn) -> None:
        t0 = time.perf_counter()
        try:
            fn()
            self.summary.append((name, f"ok in {time.perf_counter() - t0:.1f} s"))
        except Exception as exc:  # one section's failure must not lose the others
            tb = traceback.format_exc()
            print(tb, file=sys.stderr)
            self.write(name, [{"error": repr(exc)[:500], "traceback": tb[-3000:]}])
            self.summary.append((name, f"ERROR {exc!r}"[:200]))

    # ---- shared state ----------------------------------------------------------------
    def setup(self) -> None:
        """A model, an engine whose pool holds `rows` requests decoding at ~`context`, and
        two batches built from it without committing: the mixed step (one new request's
        first chunk + rows - 1 decodes) and the decode-only step (all rows)."""
        torch = self.torch
        from fusedlib.engine import Engine
        from fusedlib.weights import load_model

        p = self.p
        # The one-kernel gate_up + activation off unless a section turns it on.
        self.model = load_model(p["preset"], device=self.device, dtype=self.dtype, fused_ops=True,
                                gate_up_silu=False)
        cfg = self.model.config
        engine = Engine(self.model, kind="fused", attention="triton-balanced", max_batch=p["rows"],
                        chunk_tokens=p["chunk"], pool_gib=6 if self.on_gpu else 0.05, warmup=False,
                        cuda_graphs=False, overlap=False)
        g = torch.Generator().manual_seed(0)
        prompt = lambda n: torch.randint(0, cfg.vocab_size, (n,), generator=g).tolist()  # noqa: E731
        for _ in range(p["rows"] - 1):
            engine.add_request(prompt(p["context"]), 1000)  # none finishes during the run
        while any(r.prefilling for r in engine.scheduler.running) or engine.scheduler.waiting:
            engine.step()
        engine.add_request(prompt(p["new_prompt"]), 1000)
        plan = engine.scheduler.plan(0.0)
        assert plan.kind == "mixed", plan.kind
        self.mixed_batch = engine._pack(plan.chunks, plan.decodes)
        while any(r.prefilling for r in engine.scheduler.running):
            engine.step()
        plan = engine.scheduler.plan(0.0)
        assert plan.kind == "decode" and len(plan.decodes) == p["rows"], plan.kind
        self.decode_batch = engine._pack([], plan.decodes)
        self.engine = engine

    # ---- (a) correctness ---------------------------------------------------------------
    def ops_check(self) -> None:
        torch = self.torch
        import torch.nn.functional as F

        from fusedlib import ops
        from fusedlib.attention.torch_backend import TorchAttention
        from fusedlib.attention.triton_backend import TritonAttention
        from fusedlib.bench.kernels import decode_case
        from fusedlib.model import _rotate_half
        from fusedlib.ops.gemm import SMALL_M_MAX

        cfg, dev, dt = self.model.config, self.device, self.dtype
        layer = self.model.layers[0]
        gen = torch.Generator(device=dev).manual_seed(1)
        rand = lambda *s: torch.randn(*s, generator=gen, device=dev).to(dt)  # noqa: E731
        out = []

        def compare(op, tokens, actual, expected):
            diff = (actual.float() - expected.float()).abs()
            rel = diff / expected.float().abs().clamp_min(1e-3)
            out.append({"op": op, "tokens": tokens, "dtype": str(dt), "max_abs_err": diff.max().item(),
                        "max_rel_err": rel.max().item(), "ref_max_abs": expected.float().abs().max().item()})

        q_size, kv_size = cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim
        for tokens in self.p["op_tokens"]:
            x, res = rand(tokens, cfg.hidden_size), rand(tokens, cfg.hidden_size)
            w = layer.input_layernorm.weight
            normed, _ = ops.add_rms_norm(x, res, w, cfg.rms_norm_eps)
            compare("add_rms_norm", tokens, normed, layer.input_layernorm(x + res))
            rows = torch.arange(tokens - 1, -1, -2, device=dev)
            compare("rms_norm_rows", tokens, ops.rms_norm_rows(x, res, w, cfg.rms_norm_eps, rows),
                    layer.input_layernorm((x + res)[rows]))
            gate_up = rand(tokens, 2 * cfg.intermediate_size)
            gate, up = gate_up.split(cfg.intermediate_size, -1)
            compare("silu_mul", tokens, ops.silu_mul(gate_up), F.silu(gate) * up)
            if tokens <= SMALL_M_MAX:  # the decode-sized batches the split-K kernel serves
                for proj, w_proj, split_k in (("qkv", layer.self_attn.qkv_proj.weight, ops.QKV_SPLIT_K),
                                              ("o_proj", layer.self_attn.o_proj.weight, ops.O_PROJ_SPLIT_K),
                                              ("down", layer.mlp.down_proj.weight, ops.DOWN_SPLIT_K)):
                    act = rand(tokens, w_proj.shape[1])
                    compare(f"split_k.{proj}", tokens, ops.linear(act, w_proj, True, split_k).sum(0).to(dt),
                            F.linear(act, w_proj))
            qkv, bias = rand(tokens, q_size + 2 * kv_size), layer.self_attn.qkv_proj.bias
            positions = torch.randint(0, 4096, (tokens,), generator=gen, device=dev)
            cos, sin = self.model.rotary(positions, dt)
            nblocks = tokens // 16 + 4
            slots = torch.randperm(nblocks * 16, generator=gen, device=dev)[:tokens]
            cache = torch.zeros(2, nblocks, 16, cfg.num_kv_heads, cfg.head_dim, dtype=dt, device=dev)
            ref_cache = cache.clone()
            q_ref, k_ref, v_ref = (qkv + bias).split([q_size, kv_size, kv_size], -1)
            q_ref = q_ref.view(tokens, -1, cfg.head_dim)
            k_ref = k_ref.view(tokens, -1, cfg.head_dim)
            q_ref = q_ref * cos + _rotate_half(q_ref) * sin
            k_ref = k_ref * cos + _rotate_half(k_ref) * sin
            ref_cache[0].view(-1, cfg.num_kv_heads, cfg.head_dim).index_copy_(0, slots, k_ref)
            ref_cache[1].view(-1, cfg.num_kv_heads, cfg.head_dim).index_copy_(0, slots, v_ref.reshape(tokens, -1, cfg.head_dim))
            q = ops.rotary_to_cache(qkv, bias, cos, sin, cache[0], cache[1], slots, cfg.num_heads,
                                    cfg.num_kv_heads)
            compare("rotary_to_cache.q", tokens, q, q_ref)
            compare("rotary_to_cache.cache", tokens, cache, ref_cache)

        contexts = [1, 15, 17, 100, 513, 1100, 2049, 4100][: 8 if self.on_gpu else 4]
        q, k, v, meta = decode_case(contexts, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, dt, dev, gen)
        scale = cfg.head_dim ** -0.5
        expected = TorchAttention().decode(q, k, v, meta, scale)
        for name in ("splitkv", "balanced"):
            compare(f"decode_attention.{name}", len(contexts),
                    TritonAttention(decode_kernel=name).decode(q, k, v, meta, scale), expected)
        self.write("ops_check", out)
        worst = max(r["max_rel_err"] for r in out if r["ref_max_abs"] > 0)
        self.summary.append(("ops_check worst rel err", f"{worst:.2e}"))

    def step_check(self) -> None:
        torch = self.torch
        from fusedlib.attention import make_backend
        from fusedlib.graphs import PackedGraphs, WholeGraphs

        model, batch, kv = self.model, self.mixed_batch, self.engine.pool.kv
        backend = make_backend("triton-balanced")
        logits = {}
        for fused in (False, True):
            model.fused_ops = fused
            logits[fused] = model(batch.input_ids, batch.positions, batch.meta, kv, backend,
                                  batch.logit_indices)
        graphed = PackedGraphs(model, self.engine.pool, backend, self.p["rows"], self.p["chunk"],
                               capture=self.on_gpu, buckets=(self.p["chunk"] + self.p["rows"],))
        logits["graphed"] = graphed.run(batch)  # fused ops on, as the loop left them
        del graphed
        whole = WholeGraphs(model, self.engine.pool, backend, self.p["rows"], self.p["chunk"], capture=self.on_gpu,
                            decode_buckets=(self.p["rows"],), chunk_buckets=(self.p["chunk"],))
        logits["whole"] = whole.run(batch)
        del whole
        # The same whole graph with the decode rows' attention on a second stream.
        whole = WholeGraphs(model, self.engine.pool, make_backend("triton-parallel"), self.p["rows"], self.p["chunk"],
                            capture=self.on_gpu, decode_buckets=(self.p["rows"],), chunk_buckets=(self.p["chunk"],))
        logits["whole_parallel"] = whole.run(batch)
        del whole
        # The decode step (32 rows) with gate_up + activation in one kernel against cuBLAS, eager.
        decode = self.decode_batch
        for one_kernel in (False, True):
            model.gate_up_silu = one_kernel
            logits["decode", one_kernel] = model(decode.input_ids, decode.positions, decode.meta, kv, backend,
                                                 decode.logit_indices)
        model.gate_up_silu = False
        out = []
        for name, ref, other in (("fused_ops_on_vs_off", logits[False], logits[True]),
                                 ("graphed_vs_eager_fused", logits[True], logits["graphed"]),
                                 ("whole_graphed_vs_eager_fused", logits[True], logits["whole"]),
                                 ("whole_parallel_vs_whole", logits["whole"], logits["whole_parallel"]),
                                 ("decode_gate_up_silu_vs_cublas", logits["decode", False],
                                  logits["decode", True])):
            top2 = ref.topk(2, dim=-1).values
            clear = (top2[:, 0] - top2[:, 1]) > TIE_GAP
            agree = other.argmax(-1) == ref.argmax(-1)
            out.append({"comparison": name, "logit_rows": ref.shape[0],
                        "max_abs_diff": (other - ref).abs().max().item(),
                        "rows_outside_ties": int(clear.sum()),
                        "argmax_agree_outside_ties": int((agree & clear).sum()),
                        "argmax_agree_all": int(agree.sum())})
        self.write("step_check", out)
        for r in out:
            self.summary.append((f"step_check {r['comparison']}",
                                 f"max|d| {r['max_abs_diff']:.3g}, argmax {r['argmax_agree_outside_ties']}"
                                 f"/{r['rows_outside_ties']} outside ties"))

    # ---- (b) census ------------------------------------------------------------------
    def census(self) -> None:
        """Per configuration, the decode and the mixed step: GPU time (CUDA events) and wall
        per step, timed in a first pass before any profiler has run in the process (the
        profiler's callbacks stay on every launch once it has run: data/roofline/wall_gap),
        then torch.profiler over `replays` replays of each (kernels, copies, kernel time),
        and the same timing again after it, as the rows' `*_profiled` columns."""
        torch = self.torch
        from fusedlib.attention import make_backend
        from fusedlib.graphs import WholeGraphs, PackedGraphs

        model, pool, p = self.model, self.engine.pool, self.p
        layers = model.config.num_layers
        chosen = [CENSUS_CONFIGS[i] for i in self.configs]
        steps = {}  # (label, step) -> the run, kept for the second pass
        rows, names = [], []
        for label, fused, attention, whole, one_kernel in chosen:
            model.fused_ops, model.gate_up_silu = fused, one_kernel
            backend = make_backend(attention)
            if self.splitkv is not None:  # a launch shape under test in place of the default
                backend.splitkv = self.splitkv
            decode = WholeGraphs(model, pool, backend, p["rows"], capture=self.on_gpu, decode_buckets=(p["rows"],))
            mixed = (WholeGraphs(model, pool, backend, p["rows"], p["chunk"], capture=self.on_gpu,
                                 decode_buckets=(p["rows"],), chunk_buckets=(p["chunk"],)) if whole else
                     PackedGraphs(model, pool, backend, p["rows"], p["chunk"], capture=self.on_gpu,
                                  buckets=(p["chunk"] + p["rows"],)))
            for step, graphs, batch in (("decode", decode, self.decode_batch), ("mixed", mixed, self.mixed_batch)):
                run = functools.partial(graphs.run, batch)
                for _ in range(3 if self.on_gpu else 1):
                    run()
                _sync(self.device)
                gpu_ms, wall_ms = self._time_step(run)
                steps[label, step] = run
                rows.append({"config": label, "step": step, "fused_ops": fused, "attention": attention,
                             "whole_graphs": whole, "gate_up_silu": one_kernel,
                             "splitkv": ",".join(str(x) for x in dataclasses.astuple(backend.splitkv))
                             if hasattr(backend, "splitkv") else None,
                             "packed": ",".join(str(x) for x in dataclasses.astuple(backend.packed))
                             if hasattr(backend, "packed") else None,
                             "tokens": batch.num_tokens, "gpu_ms_median": gpu_ms, "wall_ms_median": wall_ms,
                             "timed": "before the profiler", "replays": p["replays"], "iters": p["iters"]})
        for row, (label, fused, _, _, one_kernel) in zip(rows, (c for c in chosen for _ in range(2))):
            model.fused_ops, model.gate_up_silu = fused, one_kernel
            run = steps[label, row["step"]]
            events = self._profiled(run)
            copies = [e for e in events if e.name.startswith(("Memcpy", "Memset"))]
            kernels = [e for e in events if not e.name.startswith(("Memcpy", "Memset"))]
            names += [{"config": label, "step": row["step"], **k} for k in self._per_step(kernels)]
            gpu_profiled, wall_profiled = self._time_step(run)
            kernels_per_step = len(kernels) / p["replays"]
            row.update(kernels_per_step=kernels_per_step, kernels_per_layer=kernels_per_step / layers,
                       copies_per_step=len(copies) / p["replays"],
                       kernel_us_per_step=sum(e.time_range.elapsed_us() for e in kernels) / p["replays"],
                       gpu_ms_profiled=gpu_profiled, wall_ms_profiled=wall_profiled)
            self.summary.append((f"census {label} {row['step']}",
                                 f"{kernels_per_step:.0f} kernels ({kernels_per_step / layers:.1f}/layer), "
                                 f"GPU {row['gpu_ms_median']:.3f} ms, wall {row['wall_ms_median']:.3f} ms "
                                 f"(after the profiler {wall_profiled:.3f})"))
        steps.clear()
        if self.on_gpu:
            torch.cuda.empty_cache()
        model.fused_ops, model.gate_up_silu = True, False
        self.write("census", rows)
        self.write("census_kernels", names)

    def pair_timeline(self) -> None:
        """Where the whole-graphed mixed step's attention pair spends its time (census
        configuration 6's path): torch.profiler over `replays` graph replays, and per layer the
        start and end of the prefill kernel, split-KV decode and its reduce, and the start of the
        output projection that waits for them, in µs after the rotary kernel (the fork) ends;
        and (pair_copies) each copy or memset in the replays with the kernels either side."""
        from fusedlib.attention import make_backend
        from fusedlib.graphs import WholeGraphs

        model, p = self.model, self.p
        model.fused_ops, model.gate_up_silu = True, True
        mixed = WholeGraphs(model, self.engine.pool, make_backend("triton-parallel"), p["rows"], p["chunk"],
                            capture=self.on_gpu, decode_buckets=(p["rows"],), chunk_buckets=(p["chunk"],))
        run = functools.partial(mixed.run, self.mixed_batch)
        for _ in range(3 if self.on_gpu else 1):
            run()
        _sync(self.device)
        every = self._profiled(run)
        model.gate_up_silu = False
        copies = [{"copy": e.name[:80], "us": e.time_range.elapsed_us(), "after": every[i - 1].name[:80] if i else None,
                   "before": every[i + 1].name[:80] if i + 1 < len(every) else None}
                  for i, e in enumerate(every) if e.name.startswith(("Memcpy", "Memset"))]
        self.write("pair_copies", copies)  # the step's copies and memsets, and the kernels either side
        events = [e for e in every if not e.name.startswith(("Memcpy", "Memset"))]
        rows, layer = [], None
        short = {"packed_attention_kernel": "prefill", "splitkv_decode_kernel": "decode",
                 "splitkv_reduce_kernel": "reduce"}
        for e in events:
            name = e.name.split("(")[0].replace("void ", "")
            if name == "rotary_to_cache_kernel":
                layer = {"fork": e.time_range.end}
            elif layer is not None and name in short:
                layer |= {f"{short[name]}_start_us": e.time_range.start - layer["fork"],
                          f"{short[name]}_end_us": e.time_range.end - layer["fork"]}
            elif layer is not None and "prefill_start_us" in layer:  # the first kernel after the pair
                rows.append({k: v for k, v in layer.items() if k != "fork"}
                            | {"join_us": e.time_range.start - layer["fork"], "next_kernel": name[:80], "index": len(rows)})
                layer = None
        layers = model.config.num_layers
        for r in rows:
            r |= {"layer": r["index"] % layers, "replay": r["index"] // layers}
        if rows:
            join = statistics.median(r["join_us"] for r in rows)
            self.summary.append(("pair_timeline", f"{len(rows)} layers; fork to join {join:.1f} us (median)"))
        self.write("pair_timeline", rows)

    def wall_gap(self) -> None:
        """Where the whole-graphed decode step's wall time goes beyond its GPU time: host time
        from the call to its return and to completion, for the step as the census runs it
        (staging, then the graph) and for the graph's replay alone, and a synchronize on an
        idle GPU. Medians over `iters`, the engine's configuration."""
        torch = self.torch
        from fusedlib.attention import make_backend
        from fusedlib.graphs import WholeGraphs

        model, p = self.model, self.p
        model.fused_ops, model.gate_up_silu = True, True
        decode = WholeGraphs(model, self.engine.pool, make_backend("triton-balanced"), p["rows"],
                             capture=self.on_gpu, decode_buckets=(p["rows"],))
        step = lambda: decode.run(self.decode_batch)  # noqa: E731
        replay = decode.graphs[(0, p["rows"])][0].replay if self.on_gpu else step
        for _ in range(3 if self.on_gpu else 1):
            step()
        _sync(self.device)

        def host_ms(call, sync_inside: bool) -> float:
            times = []
            for _ in range(p["iters"]):
                t0 = time.perf_counter()
                call()
                if sync_inside:
                    _sync(self.device)
                times.append((time.perf_counter() - t0) * 1e3)
                _sync(self.device)
            return statistics.median(times)

        gpu_ms, _ = self._time_step(step)
        rows = [{"measure": "step_gpu", "ms": gpu_ms},
                {"measure": "step_to_completion", "ms": host_ms(step, True)},
                {"measure": "step_call_returns", "ms": host_ms(step, False)},
                {"measure": "replay_to_completion", "ms": host_ms(replay, True)},
                {"measure": "replay_call_returns", "ms": host_ms(replay, False)},
                {"measure": "sync_idle", "ms": host_ms(lambda: None, True)}]
        model.gate_up_silu = False
        del decode
        self.write("wall_gap", [{**r, "rows": p["rows"], "iters": p["iters"]} for r in rows])
        self.summary.append(("wall_gap", ", ".join(f"{r['measure']} {r['ms']:.3f} ms" for r in rows)))

    def loop(self) -> None:
        """The census's two steps as the serving loop runs them, host one step ahead
        (`overlap`): per chosen configuration one engine, every forward graphed as the census
        graphs it, serves first `rows` requests of a `context`-token prompt, each with a budget
        that outlasts all of their prefills by `loop_steps` tokens (the decode step, all rows),
        then `rows` - 1 of them beside a queue of `loop_steps` new `chunk`-token prompts of one
        token each, so every step of the second part carries one whole fresh prompt and
        `rows` - 1 decode rows (the mixed step). Per step kind, over the steps of exactly that
        shape after the first three: the median interval from one step's start to the next's
        (the wall a step costs the loop), the step's GPU span between its CUDA events, the
        host's time inside `step()`, and the decode rows' mean context."""
        torch = self.torch
        from fusedlib.engine import Engine

        model, p = self.model, self.p
        rows, chunk, n = p["rows"], p["chunk"], p["loop_steps"]
        g = torch.Generator().manual_seed(2)
        prompt = lambda length: torch.randint(0, model.config.vocab_size, (length,), generator=g).tolist()  # noqa: E731
        # Every request is still decoding when the last one's prompt is in: its budget covers
        # the steps all the prompts take to prefill (at most one chunk step each, plus one per
        # request for a chunk cut short at a prompt's end).
        budget = n + -(-rows * p["context"] // chunk) + rows
        out = []
        configs = p["loop_configs"] or self.configs  # the smoke profile's interpreter: one is enough
        for label, fused, attention, whole, one_kernel in (CENSUS_CONFIGS[i] for i in configs):
            model.fused_ops, model.gate_up_silu = fused, one_kernel
            engine = Engine(model, kind="fused", attention=attention, max_batch=rows, chunk_tokens=chunk,
                            pool_gib=6 if self.on_gpu else 0.05, cuda_graphs=self.on_gpu,
                            whole_graphs=self.on_gpu and whole, graph_chunks=self.on_gpu and not whole, overlap=True)
            with engine.record_steps() as decode_part:
                for _ in range(rows):
                    engine.add_request(prompt(p["context"]), budget)
                engine.run_until_done()
            with engine.record_steps() as mixed_part:
                for _ in range(rows - 1):  # decoding through every mixed step and a few after
                    engine.add_request(prompt(p["context"]), budget)
                while any(r.prefilling for r in engine.scheduler.running) or engine.scheduler.waiting:
                    engine.step()
                for _ in range(n):
                    engine.add_request(prompt(chunk), 1)  # its chunk step samples its one token
                engine.run_until_done()
            assert engine.pool.num_free_blocks == engine.pool.num_blocks
            for kind, records, shape in (("decode", decode_part, (0, rows)), ("mixed", mixed_part, (chunk, rows - 1))):
                steady = [(a, b) for a, b in zip(records, records[1:])
                          if (a.n_chunk_tokens, a.n_decode) == shape][3:]
                if not steady:
                    raise RuntimeError(f"{label}: no steady {kind} steps of shape {shape}")
                intervals = sorted((b.start - a.start) * 1e3 for a, b in steady)
                row = {"config": label, "step": kind, "fused_ops": fused, "attention": attention,
                       "whole_graphs": whole, "gate_up_silu": one_kernel, "chunk_tokens": shape[0],
                       "decode_rows": shape[1], "steps": len(steady),
                       "interval_ms_median": statistics.median(intervals),
                       "interval_ms_p10": intervals[len(intervals) // 10],
                       "interval_ms_p90": intervals[(9 * len(intervals)) // 10],
                       "host_ms_median": statistics.median(a.duration * 1e3 for a, _ in steady),
                       "decode_context_mean": statistics.fmean(a.decode_kv_tokens / a.n_decode for a, _ in steady),
                       "gpu_ms_median": statistics.median(a.gpu_s() * 1e3 for a, _ in steady) if self.on_gpu
                       else None}
                out.append(row)
                gpu = f", GPU {row['gpu_ms_median']:.3f} ms" if self.on_gpu else ""
                self.summary.append((f"loop {label} {kind}",
                                     f"{len(steady)} steps: interval {row['interval_ms_median']:.3f} ms "
                                     f"(p10 {row['interval_ms_p10']:.3f}, p90 {row['interval_ms_p90']:.3f}){gpu}, "
                                     f"host in step() {row['host_ms_median']:.3f} ms"))
            del engine
            if self.on_gpu:
                torch.cuda.empty_cache()
        model.fused_ops, model.gate_up_silu = True, False
        self.write("loop", out)

    def _profiled(self, run) -> list:
        """The CUDA events (kernels, copies, memsets) of `replays` calls of `run` under
        torch.profiler, in order of their start. Once the profiler has run, its callbacks stay
        on every launch of the process (data/roofline/wall_gap): time before profiling."""
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.on_gpu else [])
        with profile(activities=activities) as prof:
            for _ in range(self.p["replays"]):
                run()
            _sync(self.device)
        return sorted((e for e in prof.events() if e.device_type == DeviceType.CUDA), key=lambda e: e.time_range.start)

    def _per_step(self, events) -> list[dict]:
        """`_profiled` events by name: launches and µs a step (over `replays`)."""
        per_name: dict[str, list[float]] = {}
        for e in events:
            per_name.setdefault(e.name, []).append(e.time_range.elapsed_us())
        replays = self.p["replays"]
        return [{"kernel": name[:200], "per_step": len(us) / replays, "us_per_step": sum(us) / replays}
                for name, us in per_name.items()]

    def _rotations(self, plans: list):
        """(round, plan) over `plans` in rotating order, 3 rounds on a GPU (1 on the CPU): each
        plan comes first in one round, so a drift over the run falls on every plan alike."""
        for r in range(3 if self.on_gpu else 1):
            for i in range(len(plans)):
                yield r, plans[(i + r) % len(plans)]

    def _read_calls(self, sms: int) -> list:
        """(programs, call(tensor)) of the read probe (fusedlib.bench.stream) at READ_PER_SM
        programs per SM of `sms`, each with its own output."""
        from fusedlib.bench.stream import read

        calls = []
        for per_sm in READ_PER_SM:
            out = self.torch.empty(per_sm * sms, dtype=self.torch.float32, device=self.device)
            calls.append((per_sm * sms, lambda t, out=out: read(t.view(-1), out)))
        return calls

    def _time_step(self, run) -> tuple[float, float]:
        """(GPU ms: CUDA events around each step, median; wall ms: host time of the step
        through its completion, median)."""
        torch = self.torch
        iters = self.p["iters"]
        walls = []
        for _ in range(iters):
            t0 = time.perf_counter()
            run()
            _sync(self.device)
            walls.append((time.perf_counter() - t0) * 1e3)
        if not self.on_gpu:
            return float("nan"), statistics.median(walls)
        start = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        end = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        for i in range(iters):
            start[i].record()
            run()
            end[i].record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in zip(start, end)), statistics.median(walls)

    # ---- (c) decode attention bandwidth ------------------------------------------------
    def attention(self) -> None:
        torch = self.torch
        from fusedlib.attention.base import DecodeMeta
        from fusedlib.attention.torch_backend import TorchAttention
        from fusedlib.attention.triton_backend import PART9_SPLITKV, SplitKVConfig, TritonAttention
        from fusedlib.bench.kernels import _median_ms, copy_bandwidth

        cfg, dev, p = self.model.config, self.device, self.p
        scale = cfg.head_dim ** -0.5
        bandwidth = copy_bandwidth(dev, 2**30 if self.on_gpu else 2**22)
        scratch = torch.empty(2**30, dtype=torch.uint8, device=dev) if self.on_gpu else None
        pool_max = cfg.max_position_embeddings  # what WholeGraphs passes as max_context_len
        sweep = BALANCED_SWEEP if self.on_gpu else SMOKE_SWEEP
        out = []
        for context, q, k, v, meta, kv_bytes in self._decode_cases():
            expected = TorchAttention().decode(q, k, v, meta, scale)
            graph_meta = DecodeMeta(meta.num_tokens, meta.context_lens, meta.block_tables, pool_max)
            cases = [("splitkv", "graph cap", PART9_SPLITKV, graph_meta),
                     ("splitkv", "step max", PART9_SPLITKV, meta)]
            cases += [("balanced", "graph cap", SplitKVConfig(*shape), graph_meta) for shape in sweep]
            for kernel, cap, config, m in cases:
                row = {"kernel": kernel, "split_cap": cap, "rows": p["rows"], "context": context,
                       "block_n": config.block_n, "programs_per_sm": config.programs_per_sm,
                       "num_warps": config.num_warps, "num_stages": config.num_stages,
                       "kv_bytes": kv_bytes, "copy_bandwidth_gbs": bandwidth / 1e9}
                try:
                    backend = TritonAttention(decode_kernel=kernel, splitkv=config)
                    call = lambda: backend.decode(q, k, v, m, scale)  # noqa: E731
                    row["max_abs_err"] = (call().float() - expected.float()).abs().max().item()
                    ms = _median_ms(call, dev, p["iters"] * 2, scratch)
                    row.update(median_ms=ms, gbs=kv_bytes / ms / 1e6,
                               fraction_of_copy=kv_bytes / (ms / 1e3) / bandwidth)
                    if self.on_gpu:  # as the engine runs it: inside a CUDA graph, no host launch
                        graph_ms = _median_ms(self._graphed(call), dev, p["iters"] * 2, scratch)
                        row.update(graph_median_ms=graph_ms,
                                   graph_fraction_of_copy=kv_bytes / (graph_ms / 1e3) / bandwidth)
                except Exception as exc:  # a launch shape the compiler rejects is a result
                    row["error"] = repr(exc)[:300]
                out.append(row)
        self.write("attention", out)
        for context in p["attn_contexts"]:
            mine = [r for r in out if r["context"] == context and "median_ms" in r]
            old = next((r for r in mine if r["kernel"] == "splitkv" and r["split_cap"] == "graph cap"), None)
            best = max((r for r in mine if r["kernel"] == "balanced"), key=lambda r: r["gbs"], default=None)
            if old and best:
                self.summary.append((f"attention {p['rows']}x{context}",
                                     f"split-KV(graph) {old['fraction_of_copy']:.0%}, best balanced "
                                     f"{best['fraction_of_copy']:.0%} (block_n {best['block_n']}, "
                                     f"{best['programs_per_sm']}/SM, {best['num_warps']}w{best['num_stages']}s)"))

    def _decode_cases(self):
        """(context, q, k_cache, v_cache, meta, KV bytes read) of a decode step at `rows`
        requests of each attention context, random K/V in shuffled blocks."""
        torch = self.torch
        from fusedlib.bench.kernels import decode_case

        cfg, p = self.model.config, self.p
        for context in p["attn_contexts"]:
            gen = torch.Generator(device=self.device).manual_seed(context)
            contexts = [context] * p["rows"]
            q, k, v, meta = decode_case(contexts, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim,
                                        self.dtype, self.device, gen)
            yield context, q, k, v, meta, sum(contexts) * cfg.num_kv_heads * cfg.head_dim * 2 * k.element_size()

    def attention_layout(self) -> None:
        """Why decode attention stays far from the copy rate at 1k: the same kernel over the
        same keys, (a) with the cache as the engine lays it out (slot-major: a slot's KV heads
        side by side, so one head's 256-byte rows sit 512 bytes apart) and (b) head-major
        (each head's keys of a block contiguous, a strided view of the same shape), beside
        (c) a plain copy moving the same number of bytes. Graph replays, L2 flushed."""
        torch = self.torch
        from fusedlib.attention.triton_backend import SplitKVConfig, TritonAttention
        from fusedlib.bench.kernels import _median_ms

        cfg, dev, p = self.model.config, self.device, self.p
        scale = cfg.head_dim ** -0.5
        scratch = torch.empty(2**30, dtype=torch.uint8, device=dev) if self.on_gpu else None
        timed = (lambda call: _median_ms(self._graphed(call), dev, p["iters"] * 2, scratch)) if self.on_gpu \
            else (lambda call: _median_ms(call, dev, p["iters"], None))
        shapes = [(32, 4, 4, 3), (64, 4, 4, 2), (64, 4, 2, 2), (128, 2, 4, 2)] if self.on_gpu else [(16, 2, 4, 2)]
        out = []
        for context, q, k, v, meta, kv_bytes in self._decode_cases():
            src = torch.empty(kv_bytes // 2, dtype=torch.uint8, device=dev)
            dst = torch.empty_like(src)
            copy_ms = timed(lambda: dst.copy_(src))
            out.append({"context": context, "rows": p["rows"], "what": "copy, same bytes moved",
                        "kv_bytes": kv_bytes, "median_ms": copy_ms, "gbs": kv_bytes / copy_ms / 1e6})
            head_major = [t.permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3) for t in (k, v)]
            for layout, (kc, vc) in (("slot-major", (k, v)), ("head-major", head_major)):
                for shape in shapes:
                    backend = TritonAttention(decode_kernel="balanced", splitkv=SplitKVConfig(*shape))
                    ms = timed(lambda: backend.decode(q, kc, vc, meta, scale))
                    out.append({"context": context, "rows": p["rows"], "what": f"balanced, {layout}",
                                "block_n": shape[0], "programs_per_sm": shape[1], "num_warps": shape[2],
                                "num_stages": shape[3], "kv_bytes": kv_bytes, "median_ms": ms,
                                "gbs": kv_bytes / ms / 1e6, "vs_same_size_copy": copy_ms / ms})
        self.write("attention_layout", out)
        for context in p["attn_contexts"]:
            mine = [r for r in out if r["context"] == context]
            copy = next(r for r in mine if r["what"].startswith("copy"))
            best = {lay: min((r for r in mine if r["what"] == f"balanced, {lay}"), key=lambda r: r["median_ms"])
                    for lay in ("slot-major", "head-major")}
            self.summary.append((f"attention layout {p['rows']}x{context}",
                                 f"copy {copy['median_ms'] * 1e3:.1f} us; slot-major {best['slot-major']['median_ms'] * 1e3:.1f}"
                                 f", head-major {best['head-major']['median_ms'] * 1e3:.1f} us"))

    def attention_flush(self) -> None:
        """The same-size copy and balanced decode (the engine's launch with the pool's longest
        context as the split cap) over FLUSH_SWEEP, each timed as a graph replay after each
        L2 flush: what zeroing the flush buffer charges a call that reads tens of MB."""
        self._flush_timed("attention_flush", FLUSH_SWEEP if self.on_gpu else SMOKE_FLUSH_SWEEP)

    def attention_engine(self) -> None:
        """attention_flush at the engine's own split-KV launch shape only (`SplitKVConfig()`):
        decode attention as the engine runs it beside a copy of the same bytes, for the scorecard."""
        from fusedlib.attention.triton_backend import SplitKVConfig

        c = SplitKVConfig()
        self._flush_timed("attention_engine", [(c.block_n, c.programs_per_sm, c.num_warps, c.num_stages)])

    def _flush_timed(self, section: str, sweep: list[tuple]) -> None:
        """The same-size copy and balanced decode at each launch shape of `sweep`, graph replays
        after each L2 flush, rows in `section`; a summary line per context and flush."""
        torch = self.torch
        from fusedlib.attention.base import DecodeMeta
        from fusedlib.attention.triton_backend import SplitKVConfig, TritonAttention
        from fusedlib.bench.kernels import L2_FLUSHES, _median_ms, copy_bandwidth

        cfg, dev, p = self.model.config, self.device, self.p
        scale = cfg.head_dim ** -0.5
        bandwidth = copy_bandwidth(dev, 2**30 if self.on_gpu else 2**22)
        scratch = torch.empty(2**30, dtype=torch.uint8, device=dev) if self.on_gpu else None
        graphed = self._graphed if self.on_gpu else (lambda call: call)
        out = []
        for context, q, k, v, meta, kv_bytes in self._decode_cases():
            graph_meta = DecodeMeta(meta.num_tokens, meta.context_lens, meta.block_tables,
                                    cfg.max_position_embeddings)
            src = torch.empty(kv_bytes // 2, dtype=torch.uint8, device=dev)
            dst = torch.empty_like(src)
            calls = [("copy", None, lambda: dst.copy_(src))]
            for shape in sweep:
                backend = TritonAttention(decode_kernel="balanced", splitkv=SplitKVConfig(*shape))
                calls.append(("balanced", shape, lambda b=backend: b.decode(q, k, v, graph_meta, scale)))
            for what, shape, call in calls:
                row = {"context": context, "rows": p["rows"], "what": what, "kv_bytes": kv_bytes,
                       "copy_bandwidth_gbs": bandwidth / 1e9}
                if shape is not None:
                    row.update(zip(("block_n", "programs_per_sm", "num_warps", "num_stages"), shape))
                try:
                    replay = graphed(call)
                    for flush in L2_FLUSHES:
                        ms = _median_ms(replay, dev, p["iters"] * 2, scratch, flush)
                        out.append({**row, "l2_flush": flush, "median_ms": ms,
                                    "fraction_of_copy": kv_bytes / (ms / 1e3) / bandwidth})
                except Exception as exc:  # a launch shape the compiler rejects is a result
                    out.append({**row, "error": repr(exc)[:300]})
        self.write(section, out)
        for context in p["attn_contexts"]:
            for flush in L2_FLUSHES:
                mine = [r for r in out if r["context"] == context and r.get("l2_flush") == flush]
                copy = next(r for r in mine if r["what"] == "copy")
                best = min((r for r in mine if r["what"] == "balanced"), key=lambda r: r["median_ms"])
                self.summary.append((f"attention {p['rows']}x{context}, L2 flush {flush}",
                                     f"copy {copy['median_ms'] * 1e3:.1f} us; best balanced "
                                     f"{best['median_ms'] * 1e3:.1f} us = {best['fraction_of_copy']:.0%} of copy "
                                     f"({best['block_n']}, {best['programs_per_sm']}/SM, "
                                     f"{best['num_warps']}w{best['num_stages']}s)"))

    def flush_probe(self) -> None:
        """Three eager calls of balanced decode at the first attention context after each L2
        flush, for ncu to count each kernel's DRAM bytes (see scripts/device_attention.sh)."""
        from fusedlib.attention.base import DecodeMeta
        from fusedlib.attention.triton_backend import TritonAttention
        from fusedlib.bench.kernels import L2_FLUSHES, _hold

        torch, cfg = self.torch, self.model.config
        scratch = torch.empty(2**30, dtype=torch.uint8, device=self.device) if self.on_gpu else None
        context, q, k, v, meta, _ = next(self._decode_cases())
        meta = DecodeMeta(meta.num_tokens, meta.context_lens, meta.block_tables, cfg.max_position_embeddings)
        backend = TritonAttention(decode_kernel="balanced")
        backend.decode(q, k, v, meta, cfg.head_dim ** -0.5)  # compile outside the probed calls
        if self.on_gpu:  # ncu --nvtx --nvtx-include "flush_probe/" profiles this range only
            torch.cuda.nvtx.range_push("flush_probe")
        for flush in L2_FLUSHES:
            for _ in range(3):
                if self.on_gpu:
                    _hold(scratch, flush)
                backend.decode(q, k, v, meta, cfg.head_dim ** -0.5)
        _sync(self.device)
        if self.on_gpu:
            torch.cuda.nvtx.range_pop()
        self.summary.append(("flush probe", f"{context} context, 3 calls after each of {L2_FLUSHES}"))

    def _graphed(self, call):
        """`call` captured once in a CUDA graph (after two warm calls on a side stream);
        returns the graph's replay."""
        torch = self.torch
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            call()
            call()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            call()
        torch.cuda.synchronize()
        return graph.replay

    # ---- (c') prefill attention ----------------------------------------------------------
    def prefill(self) -> None:
        """The packed kernel on a step's prompt chunk, over a sweep of launch shapes, L2
        flushed: a 512-token first chunk, a 512-token chunk after 1,024 cached tokens, and
        the setup's mixed step's own chunks. FLOP counted causally (each query against the
        keys it sees); torch's SDPA (flash) on the first chunk, dense, as an anchor."""
        meta = self.mixed_batch.meta.prefill
        from fusedlib.attention.base import chunk_spans

        chunk = self.p["chunk"]
        self._prefill_sweep("prefill", {"first chunk": [(0, chunk)], "chunk after 2 chunks": [(2 * chunk, chunk)],
                                        "setup mixed step": [(int(meta.positions[s]), e - s) for s, e in chunk_spans(meta)]})

    def prefill_long(self) -> None:
        """The same sweep on one `chunk`-token chunk after each of PREFILL_RATE_CACHED keys."""
        self._prefill_sweep("prefill_long", {f"after {c}": [(c, self.p["chunk"])] for c in
                                             (PREFILL_RATE_CACHED if self.on_gpu else (0, self.p["chunk"]))})

    def _prefill_sweep(self, section: str, cases: dict) -> None:
        torch = self.torch
        from fusedlib.attention.torch_backend import TorchAttention
        from fusedlib.attention.triton_backend import LOG2E, _dot_precision
        from fusedlib.attention.triton_kernels import packed_attention_kernel
        from fusedlib.bench.kernels import _median_ms, prefill_case
        engine_shape = _engine_prefill_shape()

        cfg, dev, p = self.model.config, self.device, self.p
        scale = cfg.head_dim ** -0.5
        scratch = torch.empty(2**30, dtype=torch.uint8, device=dev) if self.on_gpu else None
        sweep = PREFILL_SWEEP if self.on_gpu else SMOKE_PREFILL_SWEEP
        gen = torch.Generator(device=dev).manual_seed(2)
        out = []
        for case, chunks in cases.items():
            q, k, v, m = prefill_case(chunks, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim,
                                      self.dtype, dev, gen)
            flop = _causal_flop(chunks, cfg)
            expected = TorchAttention().prefill(q, k, v, m, scale)
            for block_m, block_n, warps, stages in sweep:
                row = {"case": case, "tokens": q.shape[0], "flop": flop, "block_m": block_m,
                       "block_n": block_n, "num_warps": warps, "num_stages": stages}
                starts = torch.arange(0, q.shape[0], block_m, dtype=torch.int32)
                tiles = torch.stack([starts, torch.clamp(starts + block_m, max=q.shape[0])], 1).to(dev)
                o = torch.empty_like(q)

                def call():
                    packed_attention_kernel[(tiles.shape[0], cfg.num_heads)](
                        q, k, v, o, tiles, m.token_seq, m.positions, m.block_tables, m.block_tables,
                        scale * LOG2E, q.stride(0), q.stride(1), o.stride(0), o.stride(1),
                        k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1), v.stride(2),
                        m.block_tables.stride(0), GROUP=cfg.num_heads // cfg.num_kv_heads,
                        HEAD_DIM=cfg.head_dim, BLOCK_M=block_m, BLOCK_N=block_n,
                        KV_BLOCK_SIZE=k.shape[1], DECODE_ROWS=False,
                        DOT_PRECISION=_dot_precision(q.dtype), num_warps=warps, num_stages=stages)
                try:
                    call()
                    row["max_abs_err"] = (o.float() - expected.float()).abs().max().item()
                    ms = _median_ms(call, dev, p["iters"], scratch)
                    row.update(median_ms=ms, tflops=flop / ms / 1e9)
                except Exception as exc:  # a launch shape the compiler rejects is a result
                    row["error"] = repr(exc)[:300]
                out.append(row)
            if case == "first chunk" and self.on_gpu:
                n = q.shape[0]
                dense = [torch.randn(1, h, n, cfg.head_dim, generator=gen, device=dev).to(self.dtype)
                         for h in (cfg.num_heads, cfg.num_kv_heads, cfg.num_kv_heads)]
                sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(  # noqa: E731
                    *dense, is_causal=True, enable_gqa=True)
                ms = _median_ms(sdpa, dev, p["iters"], scratch)
                out.append({"case": case, "tokens": n, "flop": flop, "kernel": "torch sdpa (dense, causal)",
                            "median_ms": ms, "tflops": flop / ms / 1e9})
        self.write(section, out)
        for case in cases:
            mine = [r for r in out if r["case"] == case and "median_ms" in r and "kernel" not in r]
            today = next((r for r in mine if (r["block_m"], r["block_n"], r["num_warps"], r["num_stages"])
                          == engine_shape), None)
            best = min(mine, key=lambda r: r["median_ms"], default=None)
            if today and best:
                self.summary.append((f"{section} {case}",
                                     f"today {today['median_ms'] * 1e3:.1f} us ({today['tflops']:.0f} TFLOP/s), best "
                                     f"{best['median_ms'] * 1e3:.1f} us (M{best['block_m']} N{best['block_n']} "
                                     f"{best['num_warps']}w{best['num_stages']}s)"))

    # ---- (c'') what bounds the attention kernels -----------------------------------------
    def kernel_probe(self) -> None:
        """Part 10's two attention kernels beside each of torch's SDPA backends on the same
        problems: decode at `rows` x each attention context and the prefill kernel on a fresh
        chunk and on one after two chunks. SDPA reads a dense copy of the same K/V (gathered
        through the block table, causal from the bottom right), so each row's max |diff|
        against ours shows the problem is the same. Graph replays after a reading L2 flush;
        our rows carry each Triton kernel's registers, spills and shared memory as compiled.
        Then one eager call of each, in `probe_order`, inside the NVTX range "kernel_probe"
        with a spin kernel before each call: `ncu --nvtx --nvtx-include kernel_probe/` profiles
        those calls only, and the spins mark where each call's kernels begin."""
        torch = self.torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from fusedlib.attention import triton_kernels
        from fusedlib.attention.base import DecodeMeta
        from fusedlib.attention.triton_backend import TritonAttention
        from fusedlib.bench.kernels import _median_ms, copy_bandwidth

        cfg, dev, p = self.model.config, self.device, self.p
        scale = cfg.head_dim ** -0.5
        bandwidth = copy_bandwidth(dev, 2**30 if self.on_gpu else 2**22)
        scratch = torch.empty(2**30, dtype=torch.uint8, device=dev) if self.on_gpu else None
        timed = (lambda call: _median_ms(self._graphed(call), dev, p["iters"] * 2, scratch, "read")) \
            if self.on_gpu else (lambda call: _median_ms(call, dev, p["iters"], None))
        backends = ([("sdpa flash", SDPBackend.FLASH_ATTENTION), ("sdpa cudnn", SDPBackend.CUDNN_ATTENTION),
                     ("sdpa efficient", SDPBackend.EFFICIENT_ATTENTION)] if self.on_gpu
                    else [("sdpa math", SDPBackend.MATH)])
        ours = TritonAttention(decode_kernel="balanced")  # part 10's backend, as the engine builds it

        def dense(cache, tables, length):  # [requests, kv heads, length, head_dim] through the table
            blocks = cache[tables.long()]  # [requests, blocks, block_size, kv heads, head_dim]
            return blocks.flatten(1, 2)[:, :length].transpose(1, 2).contiguous()

        cases = []  # (case, kind, context, tokens, KV bytes or FLOP, our call, the SDPA call)
        for context, q, k, v, meta, kv_bytes in self._decode_cases():
            graph_meta = DecodeMeta(meta.num_tokens, meta.context_lens, meta.block_tables, cfg.max_position_embeddings)
            qd, kd, vd = q.unsqueeze(2), dense(k, meta.block_tables, context), dense(v, meta.block_tables, context)
            sdpa = lambda qd=qd, kd=kd, vd=vd: torch.nn.functional.scaled_dot_product_attention(  # noqa: E731
                qd, kd, vd, scale=scale, enable_gqa=True).squeeze(2)
            cases.append((f"decode {context}", "decode", context, q.shape[0], kv_bytes,
                          lambda q=q, k=k, v=v, m=graph_meta: ours.decode(q, k, v, m, scale), sdpa))
        gen = torch.Generator(device=dev).manual_seed(2)
        for case, cached in (("first chunk", 0), ("chunk after 2 chunks", 2 * p["chunk"])):
            cases.append((case, "prefill", cached + p["chunk"], p["chunk"], *self._prefill_calls(ours, cached, gen)[:3]))

        out, probe = [], []
        for case, kind, context, tokens, work, our_call, sdpa in cases:
            expected = our_call().float()
            calls = [("ours", contextlib.nullcontext, our_call)]
            calls += [(label, lambda b=b: sdpa_kernel([b]), sdpa) for label, b in backends]
            for label, context_manager, call in calls:
                row = {"case": case, "kind": kind, "context": context, "tokens": tokens, "kernel": label,
                       "copy_bandwidth_gbs": bandwidth / 1e9, ("kv_bytes" if kind == "decode" else "flop"): work}
                try:
                    with context_manager():
                        row["max_abs_err"] = (call().float() - expected).abs().max().item()
                        ms = timed(call)
                    row["median_ms"] = ms
                    if kind == "decode":
                        row["fraction_of_copy"] = work / (ms / 1e3) / bandwidth
                    else:
                        row["tflops"] = work / ms / 1e9
                    row["probe_order"] = len(probe)
                    probe.append((context_manager, call))
                except Exception as exc:  # a backend that refuses the problem is a result
                    row["error"] = repr(exc)[:300]
                out.append(row)
        compiled = _compiled(triton_kernels.packed_attention_kernel, triton_kernels.splitkv_decode_kernel,
                             triton_kernels.splitkv_reduce_kernel)
        for row in out:
            if row["kernel"] == "ours":
                names = ("packed_attention_kernel",) if row["kind"] == "prefill" else \
                    ("splitkv_decode_kernel", "splitkv_reduce_kernel")
                if any(name in compiled for name in names):
                    row["compiled"] = "; ".join(compiled.get(name, "none") for name in names)
        self.write("kernel_probe", out)
        if self.on_gpu:
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_push("kernel_probe")
            for context_manager, call in probe:
                torch.cuda._sleep(1000)  # the marker: a spin kernel before each call's kernels
                with context_manager():
                    call()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
        for case, *_ in cases:
            mine = {r["kernel"]: r for r in out if r["case"] == case and "median_ms" in r}
            peers = ", ".join(f"{k.removeprefix('sdpa ')} {r['median_ms'] * 1e3:.1f}" for k, r in mine.items() if k != "ours")
            self.summary.append((f"kernel_probe {case}",
                                 f"ours {mine['ours']['median_ms'] * 1e3:.1f} us; sdpa {peers or 'none ran'} us"
                                 if "ours" in mine else "ERROR ours did not run"))

    def _prefill_calls(self, ours, cached: int, gen) -> tuple:
        """One `chunk`-token prompt chunk after `cached` keys: its causal FLOP, our packed
        kernel's call and SDPA's on a dense copy of the same K/V (causal from the bottom right),
        and the case's (q, k_cache, v_cache, PrefillMeta)."""
        torch, cfg, n = self.torch, self.model.config, self.p["chunk"]
        from torch.nn.attention.bias import causal_lower_right

        from fusedlib.bench.kernels import prefill_case

        scale = cfg.head_dim ** -0.5
        q, k, v, m = prefill_case([(cached, n)], cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, self.dtype,
                                  self.device, gen)

        def dense(cache):  # [1, kv heads, keys, head_dim] through the block table
            return cache[m.block_tables.long()].flatten(1, 2)[:, :cached + n].transpose(1, 2).contiguous()

        qd, kd, vd, mask = q.transpose(0, 1).unsqueeze(0), dense(k), dense(v), causal_lower_right(n, cached + n)
        sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(  # noqa: E731
            qd, kd, vd, attn_mask=mask, scale=scale, enable_gqa=True)[0].transpose(0, 1)
        return _causal_flop([(cached, n)], cfg), lambda: ours.prefill(q, k, v, m, scale), sdpa, (q, k, v, m)

    def prefill_rates(self) -> None:
        """A `chunk`-token prompt chunk after each of PREFILL_RATE_CACHED keys: our packed kernel
        and SDPA's flash and cuDNN backends, graph replays after a reading L2 flush, TFLOP/s of
        the causal work and each backend's max |diff| from ours (the attention rates a serving
        pass's prompts see, chunk by chunk)."""
        self._prefill_rates("prefill_rates")

    def split_prefill(self) -> None:
        """prefill_rates with fusedlib.bench.split_prefill beside them: each query tile's keys cut
        into 1 to 8 runs, merged by the split-KV reduce, at SPLIT_PREFILL's shapes."""
        self._prefill_rates("split_prefill", (("split", "rows", SPLIT_PREFILL),))

    def split_prefill_parts(self) -> None:
        """split_prefill's probe at SPLIT_PREFILL_PARTS's shapes, with the reduce, without it (the
        split kernel alone, its partials unmerged) and merged a query tile per program: what
        the merge costs."""
        self._prefill_rates("split_prefill_parts", (("split", "rows", SPLIT_PREFILL_PARTS),) + SPLIT_ALONE_AND_TILES)

    def split_prefill_merge(self) -> None:
        """split_prefill_parts's shapes without the row merge's runs: the split kernel alone and
        merged a query tile per program, beside ours and SDPA."""
        self._prefill_rates("split_prefill_merge", SPLIT_ALONE_AND_TILES)

    def split_prefill_adaptive(self) -> None:
        """The split probe with each tile choosing its runs on the device and its last run merging
        them (no second launch), at SPLIT_PREFILL_ADAPTIVE's shapes, beside ours and SDPA."""
        self._prefill_rates("split_prefill_adaptive", (("split, adaptive", "adaptive", SPLIT_PREFILL_ADAPTIVE),))

    def _prefill_rates(self, section: str, probes: tuple = ()) -> None:
        """prefill_rates' rows, then each (label, merge, shapes) of `probes`: the split probe at
        each shape with that merge (fusedlib.bench.split_prefill; on the CPU, SMOKE_SPLIT_PREFILL)."""
        torch = self.torch
        from fusedlib.bench.split_prefill import split_prefill
        from torch.nn.attention import SDPBackend, sdpa_kernel

        from fusedlib.attention.triton_backend import TritonAttention
        from fusedlib.bench.kernels import _median_ms

        dev, p = self.device, self.p
        scale = self.model.config.head_dim ** -0.5
        scratch = torch.empty(2**30, dtype=torch.uint8, device=dev) if self.on_gpu else None
        timed = (lambda call: _median_ms(self._graphed(call), dev, p["iters"] * 2, scratch, "read")) \
            if self.on_gpu else (lambda call: _median_ms(call, dev, p["iters"], None))
        backends = ([("sdpa flash", SDPBackend.FLASH_ATTENTION), ("sdpa cudnn", SDPBackend.CUDNN_ATTENTION)]
                    if self.on_gpu else [("sdpa math", SDPBackend.MATH)])
        ours, gen, out = TritonAttention(decode_kernel="balanced"), torch.Generator(device=dev).manual_seed(4), []
        for cached in (PREFILL_RATE_CACHED if self.on_gpu else (0, p["chunk"])):
            flop, our_call, sdpa, case = self._prefill_calls(ours, cached, gen)
            expected = our_call().float()
            calls = [("ours", None, contextlib.nullcontext, our_call)] + [
                (label, None, lambda b=b: sdpa_kernel([b]), sdpa) for label, b in backends]
            calls += [(label, (shape, merge), contextlib.nullcontext, lambda shape=shape, merge=merge: split_prefill(
                case[0], case[1], case[2], case[3].block_tables[0], cached, scale, *shape, merge=merge))
                for label, merge, shapes in probes for shape in (shapes if self.on_gpu else SMOKE_SPLIT_PREFILL)]
            for label, probe, manager, call in calls:
                row = {"cached": cached, "tokens": p["chunk"], "kernel": label, "flop": flop}
                if probe is not None:
                    row.update(zip(("splits", "block_m", "block_n", "num_warps", "num_stages"), probe[0]))
                try:
                    with manager():
                        if probe is None or probe[1] != "none":  # unmerged, the output is partials
                            row["max_abs_err"] = (call().float() - expected).abs().max().item()
                        row["median_ms"] = timed(call)
                    row["tflops"] = flop / row["median_ms"] / 1e9
                except Exception as exc:  # a backend that refuses the problem is a result
                    row["error"] = repr(exc)[:300]
                out.append(row)
            self.summary.append((f"{section} after {cached}", ", ".join(
                f"{r['kernel']}{r.get('splits', '')} {r['tflops']:.0f}" for r in out
                if r["cached"] == cached and "tflops" in r) + " TFLOP/s"))
        self.write(section, out)

    # ---- (d) GEMM rate and launch cost --------------------------------------------------
    def gemm(self) -> None:
        torch = self.torch
        from fusedlib.bench.kernels import _median_ms

        cfg, dev, dt = self.model.config, self.device, self.dtype
        q_size, kv_size = cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim
        shapes = {"qkv": (cfg.hidden_size, q_size + 2 * kv_size), "o_proj": (q_size, cfg.hidden_size),
                  "gate_up": (cfg.hidden_size, 2 * cfg.intermediate_size),
                  "down": (cfg.intermediate_size, cfg.hidden_size),
                  "lm_head": (cfg.hidden_size, cfg.vocab_size)}
        big = 8192 if self.on_gpu else 64
        scratch = torch.empty(2**30, dtype=torch.uint8, device=dev) if self.on_gpu else None
        out = []
        tokens_list = (self.p["rows"], self.p["chunk"] + self.p["rows"] - 1)
        cases = [(name, m, k, n) for m in tokens_list for name, (k, n) in shapes.items()]
        cases.append(("square", big, big, big))
        for name, m, k, n in cases:
            a = torch.randn(m, k, device=dev).to(dt)
            w = torch.randn(n, k, device=dev).to(dt)
            for flushed in (True, False):
                ms = _median_ms(lambda: torch.nn.functional.linear(a, w), dev, self.p["iters"],
                                scratch if flushed else None)
                out.append({"gemm": name, "m": m, "k": k, "n": n, "l2_flushed": flushed,
                            "median_ms": ms, "tflops": 2 * m * k * n / ms / 1e9,
                            "weight_gbs": n * k * a.element_size() / ms / 1e6})
        # Launch cost inside a graph: the difference between graphs of 100 and 1,100 tiny kernels.
        if self.on_gpu:
            x = torch.zeros(1, device=dev)
            per = {}
            for count in (100, 1100):
                graph = torch.cuda.CUDAGraph()
                stream = torch.cuda.Stream()
                with torch.cuda.stream(stream):
                    x.add_(1)
                torch.cuda.synchronize()
                with torch.cuda.graph(graph):
                    for _ in range(count):
                        x.add_(1)
                per[count] = _median_ms(graph.replay, dev, self.p["iters"], None)
            launch_us = (per[1100] - per[100]) / 1000 * 1e3
            out.append({"gemm": "graph_launch_cost", "median_ms_100": per[100], "median_ms_1100": per[1100],
                        "us_per_kernel_in_graph": launch_us})
            self.summary.append(("launch cost in a graph", f"{launch_us:.2f} us per kernel"))
        self.write("gemm", out)
        sq = next(r for r in out if r["gemm"] == "square" and not r["l2_flushed"])
        self.summary.append(("fp16 GEMM 8192^3", f"{sq['tflops']:.0f} TFLOP/s"))

    def gate_up(self) -> None:
        import torch.nn.functional as F

        from fusedlib import ops
        from fusedlib.ops.gemm import GateUpConfig

        x = self._rows(self.model.config.hidden_size, seed=3)
        variants = [("cublas + silu_mul kernel", None, lambda w: ops.silu_mul(F.linear(x, w)))]
        variants += [("one kernel", GateUpConfig(*shape), lambda w, c=GateUpConfig(*shape): ops.gate_up_silu(x, w, True, c))
                     for shape in (GATE_UP_SWEEP if self.on_gpu else SMOKE_GATE_UP_SWEEP)]
        self.write("gate_up", self._weight_sweep("gate_up", self.model.layers[0].mlp.gate_up_proj.weight, x, variants))

    def tma_gate_up(self) -> None:
        """The mixed step's gate_up and activation at `chunk` + `rows` rows: cuBLAS and the
        activation kernel (the engine's path there) against fusedlib.bench.tma's one TMA
        kernel over TMA_SWEEP, as `gate_up` times its kernels."""
        self._tma_sweep("tma_gate_up", TMA_SWEEP)

    def tma_gate_up_more(self) -> None:
        """The same over TMA_MORE_SWEEP."""
        self._tma_sweep("tma_gate_up_more", TMA_MORE_SWEEP)

    def _tma_sweep(self, section: str, sweep: list) -> None:
        import torch.nn.functional as F

        from fusedlib import ops
        from fusedlib.bench.tma import TmaTiles, gate_up_silu_tma

        gen = self.torch.Generator(device=self.device).manual_seed(11)
        x = self.torch.randn(self.p["chunk"] + self.p["rows"], self.model.config.hidden_size, generator=gen,
                             device=self.device).to(self.dtype)
        variants = [("cublas + silu_mul kernel", None, lambda w: ops.silu_mul(F.linear(x, w)))]
        variants += [("tma" + (" persistent" if shape[-1] else ""), TmaTiles(*shape),
                      lambda w, c=TmaTiles(*shape): gate_up_silu_tma(x, w, c))
                     for shape in (sweep if self.on_gpu else SMOKE_TMA_SWEEP)]
        rows = self._weight_sweep("gate_up", self.model.layers[0].mlp.gate_up_proj.weight, x, variants)
        flop = 2 * x.shape[0] * x.shape[1] * self.model.layers[0].mlp.gate_up_proj.weight.shape[0]
        for row in rows:
            if "us_per_call" in row:
                row["tflops"] = flop / row["us_per_call"] / 1e6
        self.write(section, rows)

    def split_k(self) -> None:
        """The split-K kernel against cuBLAS on each projection it serves, one section."""
        import torch.nn.functional as F

        from fusedlib import ops
        from fusedlib.ops.gemm import SplitKConfig

        layer = self.model.layers[0]
        for seed, (proj, weight) in enumerate((("qkv", layer.self_attn.qkv_proj.weight),
                                               ("o_proj", layer.self_attn.o_proj.weight),
                                               ("down", layer.mlp.down_proj.weight)), start=5):
            x = self._rows(weight.shape[1], seed=seed)
            variants = [("cublas", None, lambda w, x=x: F.linear(x, w))]
            variants += [("split-K partials", SplitKConfig(*shape),
                          lambda w, x=x, c=SplitKConfig(*shape): ops.linear(x, w, True, c))
                         for shape in (SPLIT_K_SWEEP[proj] if self.on_gpu else SMOKE_SPLIT_K_SWEEP)]
            self.write("split_k", self._weight_sweep(proj, weight, x, variants))  # each as it ends

    def chain(self) -> None:
        """The decode step's GEMM chain (fusedlib.bench.chain) as separate kernels and as one
        persistent kernel with grid barriers, with and without weight blocks asked for
        before each barrier: rounds of graph replays in rotating order, per launch shape."""
        torch = self.torch
        from fusedlib.bench.chain import Chain, ChainShape
        from fusedlib.bench.kernels import _median_ms, copy_bandwidth

        dev, cfg = self.device, self.model.config
        chain = Chain(cfg, self.p["rows"], cfg.num_layers, dev, self.dtype, seed=11)
        bandwidth = copy_bandwidth(dev, 2**30 if self.on_gpu else 2**22)
        floor_ms = chain.weight_bytes / bandwidth * 1e3
        sms = torch.cuda.get_device_properties(dev).multi_processor_count if self.on_gpu else 1
        reference = chain.reference().float()
        plans, out = [], []
        for shape in (CHAIN_SHAPES if self.on_gpu else SMOKE_CHAIN_SHAPES):
            chain.shape = ChainShape(*shape)
            chain.run("kernels", 1)
            expected = chain.h.clone()
            base = {"block_n": shape[0], "block_k": shape[1], "num_warps": shape[2], "num_stages": shape[3],
                    "rows": chain.rows, "layers": chain.layers, "weight_bytes": chain.weight_bytes,
                    "copy_bandwidth_gbs": bandwidth / 1e9, "floor_ms": floor_ms,
                    "max_abs_err_vs_torch": (expected.float() - reference).abs().max().item()}
            grids = [("kernels", 0)]
            if self.on_gpu:  # the barrier needs every program resident: at most what the GPU holds
                compiled = chain.run("persistent", sms)
                regs, shared = compiled.n_regs, compiled.metadata.shared
                held = min(65536 // max(1, regs * 32 * shape[2]), 233472 // max(1, shared), 32)
                base |= {"persistent_regs": regs, "persistent_shared": shared, "programs_per_sm": held}
                grids += [(arm, n * sms) for arm in ("persistent", "prefetch") for n in (1, 2) if n <= held]
            else:
                grids += [("persistent", 1), ("prefetch", 1)]
            for arm, grid in grids:
                chain.run(arm, grid)
                row = {**base, "arm": arm, "grid": grid, "equal_to_kernels": bool(torch.equal(chain.h, expected))}
                run = functools.partial(chain.run, arm, grid)
                plans.append((row, self._graphed(run) if self.on_gpu else run))
        # The frame every arm's graph also holds: the input restored and the counter zeroed.
        frame = lambda: (chain.h.copy_(chain.h0), chain.counter.zero_())  # noqa: E731
        frame_ms = _median_ms(self._graphed(frame) if self.on_gpu else frame, dev, self.p["iters"], None)
        for r, (row, replay) in self._rotations(plans):
            out.append({**row, "round": r, "frame_ms": frame_ms, "ms": _median_ms(replay, dev, self.p["iters"], None)})
        self.write("chain", out)
        by = {}
        for row in out:
            by.setdefault((row["block_n"], row["block_k"], row["num_stages"], row["arm"], row["grid"]), []).append(row["ms"])
        best = {arm: min((statistics.median(v), k) for k, v in by.items() if k[3] == arm) for arm in Chain.ARMS}
        self.summary.append(("chain", ", ".join(f"{arm} {ms:.3f} ms ({k[0]}x{k[1]} s{k[2]} g{k[4]})"
                                                for arm, (ms, k) in best.items()) + f"; floor {floor_ms:.3f} ms"))

    def read_sizes(self) -> None:
        """Each of the decode step's weight-streaming kernels as the engine launches it at
        `rows` rows, beside reads of the same weight's bytes and nothing else
        (fusedlib.bench.stream over a sweep of grids; torch's amax): graph replays over one
        copy of the weight per layer, every plan in rotating order over rounds."""
        torch = self.torch
        import torch.nn.functional as F

        from fusedlib import ops
        from fusedlib.bench.kernels import _median_ms, copy_bandwidth

        dev, model = self.device, self.model
        layer = model.layers[0]
        head = model.embed_tokens.weight if model.lm_head is None else model.lm_head.weight
        lm_head = ((lambda x, w: torch.mm(x, w.t(), out_dtype=torch.float32)) if self.on_gpu
                   else (lambda x, w: F.linear(x, w).float()))  # as Qwen2Model.head
        kernels = {"qkv": (layer.self_attn.qkv_proj.weight, lambda x, w: ops.linear(x, w, True, ops.QKV_SPLIT_K)),
                   "o_proj": (layer.self_attn.o_proj.weight, lambda x, w: ops.linear(x, w, True, ops.O_PROJ_SPLIT_K)),
                   "gate_up": (layer.mlp.gate_up_proj.weight, lambda x, w: ops.gate_up_silu(x, w, True)),
                   "down": (layer.mlp.down_proj.weight, lambda x, w: ops.linear(x, w, True, ops.DOWN_SPLIT_K)),
                   "lm_head": (head, lm_head)}
        bandwidth = copy_bandwidth(dev, 2**30 if self.on_gpu else 2**22)
        sms = torch.cuda.get_device_properties(dev).multi_processor_count if self.on_gpu else 2
        layers = model.config.num_layers if self.on_gpu else 2
        plans = []
        for name, (weight, engine) in kernels.items():
            copies = [weight.clone() for _ in range(layers)]
            x = self._rows(weight.shape[1], seed=21)
            nbytes = weight.numel() * weight.element_size()
            base = {"weight": name, "n": weight.shape[0], "k": weight.shape[1], "bytes": nbytes, "copies": layers,
                    "copy_bandwidth_gbs": bandwidth / 1e9}
            calls = [("engine", 0, lambda w, x=x, f=engine: f(x, w)), ("amax", 0, lambda w: w.amax())]
            calls += [("read", programs, call) for programs, call in self._read_calls(sms)]
            for arm, programs, call in calls:
                every = lambda call=call, copies=copies: [call(w) for w in copies]  # noqa: E731
                # `every` rides along: it holds the copies, inputs and outputs the graph reads
                plans.append(({**base, "arm": arm, "programs": programs},
                              self._graphed(every) if self.on_gpu else every, every))
        out = []
        for r, (row, replay, _) in self._rotations(plans):
            us = _median_ms(replay, dev, self.p["iters"], None) / row["copies"] * 1e3
            out.append({**row, "round": r, "us_per_call": us, "gbs": row["bytes"] / us / 1e3,
                        "fraction_of_copy": row["bytes"] / (us / 1e6) / bandwidth})
        self.write("read_sizes", out)
        med = {}
        for row in out:
            med.setdefault((row["weight"], row["arm"], row["programs"]), []).append(row["us_per_call"])
        for name in kernels:
            engine = statistics.median(med[(name, "engine", 0)])
            best = min(statistics.median(v) for (w, arm, _), v in med.items() if w == name and arm == "read")
            self.summary.append((f"read_sizes {name}", f"engine {engine:.1f} us, fastest read {best:.1f} us "
                                                       f"({best / engine:.0%} of the engine's)"))

    def _anchor_steps(self):
        """The decode step three ways for `anchors` and `anchors_kernels`: ours (census
        configuration 6, one CUDA graph) and the same step in plain PyTorch over a dense cache
        (fusedlib.bench.plain) as one CUDA graph, eager and under torch.compile (Inductor's
        default mode; on a GPU only). Returns ([(name, run, first call's s)], each plain
        step's logits against ours by name, the step's fields, and what the graphs read)."""
        torch = self.torch
        from fusedlib.attention import make_backend
        from fusedlib.bench.plain import PlainDecode
        from fusedlib.graphs import WholeGraphs

        model, p, batch = self.model, self.p, self.decode_batch
        model.fused_ops, model.gate_up_silu = True, True
        label, *_ = CENSUS_CONFIGS[6]
        ours = WholeGraphs(model, self.engine.pool, make_backend("triton-parallel"), p["rows"], capture=self.on_gpu,
                           decode_buckets=(p["rows"],))
        run_ours = functools.partial(ours.run, batch)
        reference = run_ours().float()
        positions = batch.positions
        cache_len = -(-(int(positions.max()) + 1) // 64) * 64
        plain = PlainDecode(model, p["rows"], cache_len)
        plain.fill(self.engine.pool.kv, [r.blocks for r in batch.host.decode_requests], positions.tolist())
        tokens = batch.input_ids
        variants = [(f"ours: {label}", run_ours, 0.0)]
        modes = [("plain PyTorch, one CUDA graph", None)]
        if self.on_gpu:
            modes.append(("plain PyTorch, torch.compile, one CUDA graph", "default"))
        checks = {}
        for name, mode in modes:
            t0 = time.perf_counter()
            fn = plain.step if mode is None else torch.compile(plain.step, mode=mode, fullgraph=True, dynamic=False)
            call = functools.partial(fn, tokens, positions)
            call()
            _sync(self.device)
            compile_s = time.perf_counter() - t0
            run = self._graphed(call) if self.on_gpu else call
            logits = call().float()
            top2 = reference.topk(2, dim=-1).values
            clear = (top2[:, 0] - top2[:, 1]) > TIE_GAP
            checks[name] = {"max_abs_diff_vs_ours": (logits - reference).abs().max().item(),
                            "rows_outside_ties": int(clear.sum()),
                            "argmax_agree_outside_ties": int(((logits.argmax(-1) == reference.argmax(-1)) & clear).sum())}
            variants.append((name, run, compile_s))
        fields = {"rows": p["rows"], "context_mean": float(positions.float().mean()) + 1,
                  "context_max": int(positions.max()) + 1, "plain_cache_len": cache_len}
        return variants, checks, fields, (ours, plain)

    def read_kv(self) -> None:
        """What decode attention could reach alone: reads (fusedlib.bench.stream, a sweep of
        grids) of as many bytes as one layer's decode attention reads for the census's decode
        step (every row's cached positions, keys and values), over one buffer per layer;
        graph replays, every grid in rotating order over rounds."""
        torch = self.torch
        from fusedlib.bench.kernels import _median_ms

        cfg, dev, batch = self.model.config, self.device, self.decode_batch
        positions = int((batch.positions + 1).sum())
        per_position = 2 * cfg.num_kv_heads * cfg.head_dim  # elements: a key and a value
        layers = cfg.num_layers if self.on_gpu else 2
        gen = torch.Generator(device=dev).manual_seed(9)
        buffers = [torch.randn(positions * per_position, generator=gen, device=dev).to(self.dtype) for _ in range(layers)]
        sms = torch.cuda.get_device_properties(dev).multi_processor_count if self.on_gpu else 2
        plans = []
        for programs, call in self._read_calls(sms):
            every = lambda call=call: [call(b) for b in buffers]  # noqa: E731
            plans.append((programs, self._graphed(every) if self.on_gpu else every, every))
        rows = []
        for r, (programs, replay, _) in self._rotations(plans):
            us = _median_ms(replay, dev, self.p["iters"], None) / layers * 1e3
            rows.append({"positions": positions, "bytes": buffers[0].numel() * buffers[0].element_size(),
                         "layers": layers, "programs": programs, "round": r, "us_per_layer": us})
        self.write("read_kv", rows)
        best = min(statistics.median(r["us_per_layer"] for r in rows if r["programs"] == g) for g, *_ in plans)
        self.summary.append(("read_kv", f"{rows[0]['bytes'] / 1e6:.1f} MB a layer, fastest read {best:.1f} us"))

    def anchors(self) -> None:
        """The 32-row decode step beside what a reader would use instead, in one process
        (`_anchor_steps`), each timed over rounds in rotating order, the plain steps' logits
        against ours. transformers' own step is `anchors_transformers`."""
        variants, checks, fields, held = self._anchor_steps()
        out = []
        for r, (name, run, compile_s) in self._rotations(variants):
            gpu_ms, wall_ms = self._time_step(run)
            out.append({**fields, "anchor": name, "round": r, "gpu_ms": gpu_ms, "wall_ms": wall_ms,
                        "first_call_s": compile_s, **checks.get(name, {})})
        self.write("anchors", out)
        for name, *_ in variants:
            gpu = statistics.median(r["gpu_ms"] for r in out if r["anchor"] == name)
            self.summary.append((f"anchors {name}", f"GPU {gpu:.3f} ms" + (
                f", max|d| vs ours {checks[name]['max_abs_diff_vs_ours']:.3g}" if name in checks else "")))
        del variants, held
        if self.on_gpu:
            self.torch.cuda.empty_cache()

    def anchors_kernels(self) -> None:
        """Where each of `anchors`' decode steps spends its GPU time: torch.profiler over
        `replays` replays of each, per kernel name its launches and µs a step. Run in its own
        process after `anchors` (the profiler stays on every launch once it has run)."""
        variants, _, fields, held = self._anchor_steps()
        out = []
        for name, run, _ in variants:
            for _ in range(3):
                run()
            out += [{**fields, "anchor": name, **k} for k in self._per_step(self._profiled(run))]
            kernels = sum(r["per_step"] for r in out if r["anchor"] == name)
            self.summary.append((f"anchors_kernels {name}", f"{kernels:.0f} kernels and copies a step"))
        self.write("anchors_kernels", out)
        del variants, held
        if self.on_gpu:
            self.torch.cuda.empty_cache()

    def anchors_uniform(self) -> None:
        """The plain step of `anchors` under torch.compile as one CUDA graph, with every row at
        the census step's mean context (its dense cache as long as that, the bytes ours reads)
        instead of the step's own rows: the plain step without the longest row setting every
        row's length. Random cache contents; GPU time only, over as many rounds."""
        torch, p, batch = self.torch, self.p, self.decode_batch
        from fusedlib.bench.plain import PlainDecode

        mean = int(batch.positions.float().mean().round())
        plain = PlainDecode(self.model, p["rows"], -(-(mean + 1) // 64) * 64)
        gen = torch.Generator(device=self.device).manual_seed(7)
        for cache in plain.k + plain.v:
            cache.copy_(torch.randn(cache.shape, generator=gen, device=self.device).to(cache.dtype))
        positions = torch.full_like(batch.positions, mean)
        fn = torch.compile(plain.step, fullgraph=True, dynamic=False) if self.on_gpu else plain.step
        call = functools.partial(fn, batch.input_ids, positions)
        t0 = time.perf_counter()
        call()
        _sync(self.device)
        first_s = time.perf_counter() - t0
        run = self._graphed(call) if self.on_gpu else call
        out = []
        for r in range(3 if self.on_gpu else 1):
            gpu_ms, wall_ms = self._time_step(run)
            out.append({"anchor": "plain PyTorch, torch.compile, one CUDA graph, every row at the mean context",
                        "round": r, "rows": p["rows"], "context": mean + 1, "plain_cache_len": plain.k[0].shape[2],
                        "gpu_ms": gpu_ms, "wall_ms": wall_ms, "first_call_s": first_s})
        self.write("anchors_uniform", out)
        self.summary.append(("anchors_uniform", f"GPU {statistics.median(r['gpu_ms'] for r in out):.3f} ms "
                                                f"at {mean + 1} positions a row"))

    def anchors_transformers(self) -> None:
        """transformers' decode steps at `rows` rows, beside `anchors`: generate with a static
        cache (compiled automatically on a GPU) on random prompts of `context` tokens, `steps`
        new tokens each; a first generate compiles, the second is timed by a logits processor
        that records a CUDA event and the host's clock at every token."""
        torch, p = self.torch, self.p
        from fusedlib.bench.peer import _transformers, to_transformers

        (LogitsProcessor,) = _transformers("LogitsProcessor")
        hf = to_transformers(self.model)
        steps = 64 if self.on_gpu else 12
        stamps = []

        class Stamp(LogitsProcessor):
            def __call__(self, input_ids, scores):  # once per generated token
                event = None
                if scores.is_cuda:
                    event = torch.cuda.Event(enable_timing=True)
                    event.record()
                stamps.append((time.perf_counter(), event))
                return scores

        gen = torch.Generator(device=self.device).manual_seed(5)
        prompts = torch.randint(0, self.model.config.vocab_size, (p["rows"], p["context"]), generator=gen,
                                device=self.device)
        kw = dict(max_new_tokens=steps, min_new_tokens=steps, do_sample=False, cache_implementation="static",
                  logits_processor=[Stamp()], attention_mask=torch.ones_like(prompts))
        t0 = time.perf_counter()
        hf.generate(prompts, **kw)
        _sync(self.device)
        first_s = time.perf_counter() - t0
        stamps.clear()
        t0 = time.perf_counter()
        hf.generate(prompts, **kw)
        _sync(self.device)
        timed_s = time.perf_counter() - t0
        steady = stamps[8:]  # past the prefill and the first decode steps
        gpu = [a[1].elapsed_time(b[1]) for a, b in zip(steady, steady[1:])] if self.on_gpu else [float("nan")]
        host = [(b[0] - a[0]) * 1e3 for a, b in zip(steady, steady[1:])]
        row = {"anchor": "transformers: generate, static cache, automatic compile", "round": 0, "rows": p["rows"],
               "context_mean": float(p["context"]), "steps": len(host), "gpu_ms": statistics.median(gpu),
               "wall_ms": statistics.median(host), "first_call_s": first_s, "timed_generate_s": timed_s}
        self.write("anchors_transformers", [row])
        self.summary.append(("anchors transformers", f"{row['gpu_ms']:.3f} ms a step (events), "
                                                     f"host {row['wall_ms']:.3f} ms; first generate {first_s:.0f} s"))

    def _rows(self, width: int, seed: int):
        """A decode step's `rows` activations of `width`, in the model dtype."""
        torch, dev = self.torch, self.device
        gen = torch.Generator(device=dev).manual_seed(seed)
        return torch.randn(self.p["rows"], width, generator=gen, device=dev).to(self.dtype)

    def _weight_sweep(self, section: str, weight, x, variants) -> list[dict]:
        """Each (kernel, launch config or None, call(weight)) of `variants`, the first cuBLAS, as
        graph replays over one copy of `weight` per layer, rotated through so that every call
        reads its weight from HBM (as in a step): µs per call, GB/s of the weight, the copy
        fraction, and the largest difference from cuBLAS's output, checked twice before the
        replays and once after them (a kernel keeping state between launches must leave it
        as it found it)."""
        from fusedlib.bench.kernels import _median_ms, copy_bandwidth

        dev, (n, k) = self.device, weight.shape
        bandwidth = copy_bandwidth(dev, 2**30 if self.on_gpu else 2**22)
        copies = [weight.clone() for _ in range(self.model.config.num_layers if self.on_gpu else 2)]
        # A split-K kernel's output is its partials: compared as their sum.
        value = lambda call: (lambda t: t.sum(0) if t.dim() == 3 else t)(call(weight).float())  # noqa: E731
        reference = value(variants[0][2])
        out = []
        for kernel, config, one in variants:
            row = {"gemm": section, "m": x.shape[0], "n": n, "k": k, "kernel": kernel, "layers": len(copies),
                   "weight_bytes": n * k * weight.element_size(), "copy_bandwidth_gbs": bandwidth / 1e9}
            if config is not None:
                row.update(dataclasses.asdict(config))
            err = lambda: (value(one) - reference).abs().max().item()  # noqa: E731
            try:
                row["max_abs_err_vs_cublas"] = max(err(), err())
                every_layer = lambda: [one(w) for w in copies]  # noqa: E731
                ms = _median_ms(self._graphed(every_layer) if self.on_gpu else every_layer, dev,
                                self.p["iters"], None) / len(copies)
                row.update(max_abs_err_after_replays=err(), us_per_call=ms * 1e3, gbs=row["weight_bytes"] / ms / 1e6,
                           fraction_of_copy=row["weight_bytes"] / (ms / 1e3) / bandwidth)
            except Exception as exc:  # a launch shape the compiler rejects is a result
                row["error"] = repr(exc)[:300]
            out.append(row)
        timed = [r for r in out if "us_per_call" in r]
        best = min(timed[1:], key=lambda r: r["us_per_call"])
        shape = (f"M{best['block_m']} " if "block_m" in best else "") + f"N{best['block_n']} K{best['block_k']}" \
            + (f" S{best['splits']}" if "splits" in best else "") + (" persistent" if best.get("persistent") else "")
        self.summary.append((f"{section} {x.shape[0]} rows",
                             f"{variants[0][0]} {timed[0]['us_per_call']:.1f} us ({timed[0]['fraction_of_copy']:.0%}), "
                             f"{variants[1][0]} default {out[1].get('us_per_call', float('nan')):.1f} us, best "
                             f"{best['us_per_call']:.1f} us ({best['fraction_of_copy']:.0%}; {shape} "
                             f"{best['num_warps']}w{best['num_stages']}s)"))
        return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="folder for the rows (e.g. $OUT)")
    parser.add_argument("--smoke", action="store_true", help="tiny model on the CPU interpreter")
    parser.add_argument("--sections", default="ops_check,step_check,census,attention,prefill,gemm,gate_up,split_k,wall_gap,loop")
    parser.add_argument("--configs", help="census configurations by index, e.g. 3,4 (default: the profile's)")
    parser.add_argument("--splitkv", help="the census's split-KV launch shape in place of the default: "
                        "BLOCK_N,PROGRAMS_PER_SM,WARPS,STAGES")
    args = parser.parse_args(argv)
    bench = Bench(args.out, "smoke" if args.smoke else "full")
    if args.splitkv:
        from fusedlib.attention.triton_backend import SplitKVConfig

        block_n, per_sm, *ints = args.splitkv.split(",")
        bench.splitkv = SplitKVConfig(int(block_n), float(per_sm), *(int(x) for x in ints))
    if args.configs:
        bench.configs = tuple(int(i) for i in args.configs.split(","))
    t0 = time.perf_counter()
    bench.run_section("setup", bench.setup)
    if not hasattr(bench, "engine"):
        print("setup failed; nothing else can run", file=sys.stderr)
        return 1
    for name in args.sections.split(","):
        bench.run_section(name, getattr(bench, name))
    width = max(len(k) for k, _ in bench.summary)
    print(f"\n{'':-<{width}}  roofline bench ({bench.profile}), {time.perf_counter() - t0:.0f} s")
    for key, value in bench.summary:
        print(f"{key:<{width}}  {value}")
    return 1 if any(v.startswith("ERROR") for _, v in bench.summary) else 0


if __name__ == "__main__":
    sys.exit(main())
