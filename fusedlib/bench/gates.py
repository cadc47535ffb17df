"""Correctness gates: importable checks that return reports (tests assert them; the gates
notebook records them as rows).

1. `gate_fused_vs_chunked`  both engines token for token on a mixed workload; a flip is
   tolerated only where the top-2 logit gap is under `tie_tolerance`.
2. `gate_mixed_step`        the logits of one fused mixed step equal those of its chunk
   part and decode part run as separate forwards, on the same cache state.
3. `gate_tiny_pool`         a pool that holds a few requests at a time completes every
   request, admits in FCFS order, and ends fully free.
4. `gate_poisoning`         freed blocks filled with NaN change no output.
5. `gate_transformers`      both engines equal transformers' greedy generation.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .engines import SWITCHES, forget_engines, model_for, switch_fields
from .spec import RunSpec
from .telemetry import machine
from .workloads import RequestSpec, mixed
from ..config import CPU_DEFAULTS, EngineConfig
from ..engine import Engine
from ..model import Qwen2Model

TIE_TOLERANCE = 0.02  # logit units; the reference's threshold for an exact-tie flip
# A gate's engine is eager, on the reference ops, unless the caller names graphs, fused ops or
# overlap, on any device: a gated configuration is the one its row records (an Engine left to
# its defaults would take part 10's path on a GPU).
EAGER = {name: value for name, value in CPU_DEFAULTS.items() if name != "attention"}


@dataclass
class GateReport:
    gate: str
    passed: bool
    detail: dict = field(default_factory=dict)

    def row(self) -> dict:
        """The gate's fields, and `detail`: its findings (all but the setup) as one line."""
        setup = (*SWITCHES, "kind", "kv_block_size")
        text = "; ".join(f"{k.replace('_', ' ')} {v}" for k, v in self.detail.items() if k not in setup)
        return {"gate": self.gate, "passed": self.passed, "detail": text,
                **{k: v for k, v in self.detail.items() if not isinstance(v, (list, dict))}}


def gate_workload(model: Qwen2Model, n: int = 12, seed: int = 0) -> list[RequestSpec]:
    """A mixed draw scaled to the model: full-size lengths for a real model, small ones for
    the tiny preset (whose whole point is to run on CPU in seconds)."""
    cfg = model.config
    if cfg.hidden_size >= 1024:
        return mixed(n, seed=seed, budget=(16, 48), vocab_size=cfg.vocab_size)
    return mixed(n, seed=seed, lengths=(1, 5, 17, 40, 90), budget=(3, 12), vocab_size=cfg.vocab_size)


def _run(model, specs, poison_freed: bool = False, record_gaps: bool = False,
         **engine_kw) -> tuple[Engine, list[list[int]], dict]:
    """(engine, outputs, gaps): with `record_gaps`, gaps[(rid, token index)] is the top-1 minus
    top-2 logit of that sampled token (a LogitGapRecorder installed as the sampler)."""
    engine = Engine(model, **engine_kw)
    engine.pool.poison_freed = poison_freed
    gaps = LogitGapRecorder(engine).gaps if record_gaps else {}
    outs = engine.generate([s.prompt for s in specs], [s.max_new_tokens for s in specs])
    return engine, outs, gaps


class LogitGapRecorder:
    """Replaces an engine's sampler: samples greedily as the engine does (one readback) and
    keeps the top-1 minus top-2 logit of every sampled token, so a gate can tell an exact
    tie flipped by matmul shape from a real disagreement."""

    def __init__(self, engine: Engine):
        self.gaps: dict[tuple[int, int], float] = {}
        engine.sample = self.sample

    def sample(self, logits: torch.Tensor, requests) -> torch.Tensor:
        top2 = logits.topk(2, dim=-1)
        gaps = (top2.values[:, 0] - top2.values[:, 1]).tolist()
        for r, gap in zip(requests, gaps):
            self.gaps[(r.rid, r.num_generated)] = gap
        return top2.indices[:, 0]


def gate_fused_vs_chunked(model: Qwen2Model, specs=None, attention: str = "torch",
                          chunk_tokens: int = 64, max_batch: int = 8,
                          tie_tolerance: float = TIE_TOLERANCE, **switches) -> GateReport:
    specs = specs if specs is not None else gate_workload(model)
    switches = {**EAGER, **switches}
    kw = dict(attention=attention, chunk_tokens=chunk_tokens, max_batch=max_batch, **switches)
    _, ref, gaps = _run(model, specs, kind="chunked", record_gaps=True, **kw)
    _, fused, _ = _run(model, specs, kind="fused", **kw)
    flips, bad, differ = set(), [], 0
    for rid, (s, a, b) in enumerate(zip(specs, ref, fused)):
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
        if at is None and len(a) == len(b) == s.max_new_tokens:
            continue
        differ += 1
        gap = gaps.get((rid, at), float("inf")) if at is not None else float("inf")
        if gap < tie_tolerance:
            flips.add((tuple(s.prompt), tuple(a[:at])))  # same history + flip = one location
        else:
            bad.append({"request": rid, "index": at, "gap": gap})
    return GateReport("fused_vs_chunked", not bad, {
        "attention": attention, **switches, "requests": len(specs), "requests_differing": differ,
        "flip_locations": len(flips), "untolerated": bad[:5]})


def gate_mixed_step(model: Qwen2Model, attention: str = "torch", fused_ops: bool = False,
                    atol: float | None = None, kv_block_size: int = EngineConfig.kv_block_size) -> GateReport:
    """Drive a fused engine to a step that carries chunks and decodes, then run that plan
    three ways on the same cache: packed, chunks alone, decodes alone."""
    cfg = model.config
    setup = {**EAGER, "fused_ops": fused_ops, "kv_block_size": kv_block_size}
    engine = Engine(model, kind="fused", attention=attention, chunk_tokens=32, max_batch=8, **setup)
    g = torch.Generator().manual_seed(1)
    for n in (5, 9, 3):
        engine.add_request(torch.randint(0, cfg.vocab_size, (n,), generator=g).tolist(), 4)
    engine.step()  # all three prefill in one chunk step; now they decode
    # 20 positions fit the 32-position budget, so the chunk finishes its prompt and samples.
    engine.add_request(torch.randint(0, cfg.vocab_size, (20,), generator=g).tolist(), 2)
    plan = engine.scheduler.plan(engine.clock())
    assert plan.kind == "mixed", plan.kind

    def logits(chunks, decodes):
        b = engine._pack(chunks, decodes)
        return model(b.input_ids, b.positions, b.meta, engine.pool.kv, engine.backend, b.logit_indices, fused_ops)

    fused = logits(plan.chunks, plan.decodes)
    parts = torch.cat([logits(plan.chunks, []), logits([], plan.decodes)])
    err = (fused - parts).abs().max().item()
    atol = atol if atol is not None else (1e-4 if model.dtype == torch.float32 else 5e-2)
    return GateReport("mixed_step", err <= atol and not torch.isnan(fused).any().item(), {
        "attention": attention, **setup, "chunk_tokens": plan.num_chunk_tokens,
        "decodes": len(plan.decodes), "max_abs_err": err, "atol": atol})


def _small_pool(model: Qwen2Model, seed: int, held: int, kv_block_size: int, switches: dict):
    """A pool gate's 10 requests, its engines' switches, and pool blocks for `held` of the largest at once."""
    specs = gate_workload(model, n=10, seed=seed)
    longest = max(len(s.prompt) + s.max_new_tokens for s in specs)
    return specs, {**EAGER, "kv_block_size": kv_block_size, **switches}, held * -(-longest // kv_block_size)


def gate_tiny_pool(model: Qwen2Model, attention: str = "torch", kind: str = "fused", chunk_tokens: int = 32,
                   max_batch: int = 8, kv_block_size: int = EngineConfig.kv_block_size, **switches) -> GateReport:
    # room for about two of the largest requests at once
    specs, switches, blocks = _small_pool(model, seed=3, held=2, kv_block_size=kv_block_size, switches=switches)
    kw = dict(kind=kind, attention=attention, chunk_tokens=chunk_tokens, max_batch=max_batch, **switches)
    engine = Engine(model, num_blocks=blocks, **kw)
    reqs = [engine.add_request(s.prompt, s.max_new_tokens) for s in specs]
    steps = 0
    while engine.has_work() and steps <= 100_000:
        engine.step()
        steps += 1
    admitted_order = sorted(reqs, key=lambda r: (r.admitted, r.rid))
    fcfs = [r.rid for r in admitted_order] == sorted(r.rid for r in reqs)
    complete = all(r.finished is not None and len(r.output) == r.max_new_tokens for r in reqs)
    free = engine.pool.num_free_blocks == engine.pool.num_blocks
    _, big, _ = _run(model, specs, **kw)
    same = [r.output for r in reqs] == big
    return GateReport("tiny_pool", fcfs and complete and free and same, {
        "attention": attention, **switches, "kind": kind, "pool_blocks": blocks,
        "requests": len(specs), "steps": steps, "fcfs": fcfs, "complete": complete, "pool_free": free,
        "same_tokens_as_large_pool": same})


def gate_poisoning(model: Qwen2Model, attention: str = "torch", kind: str = "fused", chunk_tokens: int = 32,
                   max_batch: int = 8, kv_block_size: int = EngineConfig.kv_block_size, **switches) -> GateReport:
    # small, so freed (poisoned) blocks are handed out again
    specs, switches, blocks = _small_pool(model, seed=4, held=3, kv_block_size=kv_block_size, switches=switches)
    kw = dict(kind=kind, attention=attention, num_blocks=blocks, chunk_tokens=chunk_tokens, max_batch=max_batch,
              **switches)
    _, clean, _ = _run(model, specs, **kw)
    poisoned_engine, poisoned, _ = _run(model, specs, poison_freed=True, **kw)
    return GateReport("poisoning", clean == poisoned, {
        "attention": attention, **switches, "kind": kind, "pool_blocks": blocks, "requests": len(specs),
        "differing_requests": sum(a != b for a, b in zip(clean, poisoned)),
        "pool_free": poisoned_engine.pool.num_free_blocks == poisoned_engine.pool.num_blocks})


def gate_transformers(model: Qwen2Model, attention: str = "torch") -> GateReport:
    from .hf import to_transformers

    specs = gate_workload(model, n=6, seed=5)
    hf = to_transformers(model)
    expected = []
    with torch.inference_mode():
        for s in specs:
            ids = torch.tensor([s.prompt], device=model.device)
            out = hf.generate(ids, max_new_tokens=s.max_new_tokens, min_new_tokens=s.max_new_tokens,
                              do_sample=False, attention_mask=torch.ones_like(ids))
            expected.append(out[0, len(s.prompt):].tolist())
    results = {}
    for kind in ("fused", "chunked"):
        _, outs, _ = _run(model, specs, kind=kind, attention=attention, chunk_tokens=32, max_batch=4, **EAGER)
        results[kind] = sum(a == b for a, b in zip(outs, expected))
    return GateReport("transformers", all(v == len(specs) for v in results.values()), {
        "attention": attention, "requests": len(specs),
        **{f"{k}_identical": v for k, v in results.items()}})


def run_all(model: Qwen2Model, attention: str = "torch", max_batch: int | None = None,
            chunk_tokens: int | None = None, kv_block_size: int = EngineConfig.kv_block_size,
            **switches) -> list[GateReport]:
    """Gates 1-4, then gate 5 for an fp32 model only. `switches` (cuda_graphs, whole_graphs,
    fused_ops, overlap), `kv_block_size`, `max_batch` and `chunk_tokens` (where given) go to every engine built."""
    # Gate 5 needs fp32: in fp16 transformers and we round differently, and greedy tokens drift
    # apart without a bug. Every engine takes the switches, so a configuration is gated as
    # itself; the mixed-step gate calls the model directly, so of them only fused_ops applies.
    sizes = {k: v for k, v in (("max_batch", max_batch), ("chunk_tokens", chunk_tokens)) if v}
    sizes["kv_block_size"] = kv_block_size
    reports = [gate_fused_vs_chunked(model, attention=attention, **sizes, **switches),
               gate_mixed_step(model, attention=attention, fused_ops=switches.get("fused_ops", False),
                               kv_block_size=kv_block_size),
               gate_tiny_pool(model, attention=attention, **sizes, **switches),
               gate_poisoning(model, attention=attention, **sizes, **switches)]
    if model.dtype == torch.float32:
        reports.append(gate_transformers(model))
    return reports


def run(spec: RunSpec) -> list[dict]:
    """Every gate under the configuration's settings (at the spec's max_batch and chunk_tokens
    where given, else the gates' small ones); one row per gate."""
    forget_engines()
    reports = run_all(model_for(spec), max_batch=spec.max_batch, chunk_tokens=spec.chunk_tokens,
                      kv_block_size=spec.settings().kv_block_size, **switch_fields(spec.settings()))
    return [{**machine(), **r.row()} for r in reports]
