"""The serving loop, and the one thing the two engines disagree on.

`Engine.step()` asks the scheduler for a StepPlan, turns it into forwards, samples greedily
and commits. The *chunked* engine (the baseline) runs the plan as up to two forwards:
prompt chunks, then decode tokens, each with its own sampling call and host readback. The
*fused* engine packs both into one sequence and runs the model once: one forward, one
sampling call, one readback. Everything else is shared, so a comparison measures exactly
that change.
"""
from __future__ import annotations

import operator
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from .attention import BACKENDS, make_backend
from .batch import Batch, pack
from .graphs import DecodeGraphs, PackedGraphs
from .model import Qwen2Model
from .pool import KVPool
from .scheduler import Request, Scheduler

ENGINE_KINDS = ("fused", "chunked")


@dataclass
class StepRecord:
    kind: str  # 'decode' | 'mixed' | 'chunk'
    n_chunk_tokens: int
    n_decode: int
    n_forwards: int
    start: float
    duration: float
    decode_kv_tokens: int  # KV positions the decode rows read (their context lengths)
    chunk_kv_tokens: int  # KV positions the chunks attend over (start + length each)
    forward_durations: tuple[float, ...]  # each forward, to its readback (chunks first)


@dataclass
class TokenGap:
    """With `record_gaps`, the top-1 minus top-2 logit at every sampled token: the gates
    use it to tell an exact tie flipped by matmul shape from a real disagreement."""
    rid: int
    index: int
    gap: float


class Engine:
    def __init__(self, model: Qwen2Model, kind: str = "fused", max_batch: int = 32,
                 chunk_tokens: int = 512, pool_gib: float | None = None,
                 num_blocks: int | None = None, attention: str = "torch",
                 poison_freed: bool = False, trace: bool = False,
                 clock: Callable[[], float] = time.perf_counter, warmup: bool = True,
                 record_gaps: bool = False, cuda_graphs: bool = False, graph_chunks: bool = False):
        if kind not in ENGINE_KINDS:
            raise ValueError(f"unknown engine kind {kind!r}; choose one of {ENGINE_KINDS}")
        if attention not in BACKENDS:
            raise ValueError(f"unknown attention backend {attention!r}; choose one of {BACKENDS}")
        if cuda_graphs and (model.device.type != "cuda" or attention == "torch"):
            raise ValueError("cuda_graphs needs a CUDA model and a Triton attention backend "
                             "(the torch reference reads lengths back to the host mid-forward)")
        if graph_chunks and not cuda_graphs:
            raise ValueError("graph_chunks (piecewise graphs for forwards with prompt chunks) needs cuda_graphs")
        if max_batch < 1 or chunk_tokens < 1:
            raise ValueError(f"max_batch ({max_batch}) and chunk_tokens ({chunk_tokens}) must be >= 1")
        self.model, self.kind = model, kind
        self.cfg = model.config
        self.max_batch, self.chunk_tokens = max_batch, chunk_tokens
        self.attention = attention
        self.backend = make_backend(attention)
        self.pool = KVPool(self.cfg, model.dtype, model.device, num_blocks=num_blocks,
                           pool_gib=pool_gib, poison_freed=poison_freed)
        self.scheduler = Scheduler(self.pool, max_batch, chunk_tokens)
        self.trace, self.clock, self.record_gaps = trace, clock, record_gaps
        self.step_log: list[StepRecord] = []
        self.logit_gaps: list[TokenGap] = []
        self.num_finished = 0  # requests completed since construction (a count: no request is kept)
        self._next_rid = 0
        self._cuda = model.device.type == "cuda"
        self.graphs: DecodeGraphs | None = None
        self.chunk_graphs: PackedGraphs | None = None
        if warmup:
            self._warmup()
        if cuda_graphs:
            self.graphs = DecodeGraphs(model, self.pool, self.backend, max_batch)
        if graph_chunks:
            self.chunk_graphs = PackedGraphs(model, self.pool, self.backend, max_batch, chunk_tokens)
        self._compiled_at_construction = self._num_compiled()

    # ---- submission -------------------------------------------------------------------
    def validate(self, prompt: Sequence[int], max_new_tokens: int) -> list[int]:
        """The prompt as a list of ints, or ValueError naming what is wrong; nothing is queued."""
        try:
            prompt = [operator.index(t) for t in prompt]
        except TypeError:
            raise ValueError("prompt token ids must be integers") from None
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
        if len(prompt) == 0:
            raise ValueError("empty prompt: a request needs at least one prompt token")
        bad = [t for t in prompt if not 0 <= t < self.cfg.vocab_size]
        if bad:
            raise ValueError(f"token id {bad[0]!r} is outside the vocabulary [0, {self.cfg.vocab_size})")
        total = len(prompt) + max_new_tokens
        if total > self.cfg.max_position_embeddings:
            raise ValueError(f"prompt ({len(prompt)}) + max_new_tokens ({max_new_tokens}) = {total} "
                             f"exceeds the model's maximum length {self.cfg.max_position_embeddings}")
        need = self.pool.blocks_for(len(prompt) + max_new_tokens - 1)
        if need > self.pool.num_blocks:
            raise ValueError(f"request needs {need} KV blocks but the whole pool has "
                             f"{self.pool.num_blocks}: it could never be admitted")
        return prompt

    def add_request(self, prompt: Sequence[int], max_new_tokens: int,
                    arrival: float | None = None) -> Request:
        prompt = self.validate(prompt, max_new_tokens)
        req = Request(self._next_rid, prompt, max_new_tokens,
                      arrival=self.clock() if arrival is None else arrival)
        self._next_rid += 1
        self.scheduler.add(req)
        return req

    def has_work(self) -> bool:
        return self.scheduler.has_work()

    # ---- the loop ---------------------------------------------------------------------
    def step(self) -> StepRecord | None:
        if self.trace:
            self._sync()
        start = self.clock()
        plan = self.scheduler.plan(start)
        if plan.empty:
            return None
        decode_kv = sum(r.prompt_len + len(r.output) for r in plan.decodes)
        chunk_kv = sum(c.start + c.length for c in plan.chunks)
        if self.kind == "fused":
            batches = [self._pack(plan.chunks, plan.decodes)]
        else:
            batches = [self._pack(c, d) for c, d in ((plan.chunks, []), ([], plan.decodes)) if c or d]
        marks = [start]
        for batch in batches:
            self._run(batch)
            marks.append(self.clock())
        end = marks[-1]
        self.num_finished += len(self.scheduler.commit(plan, end))
        record = StepRecord(plan.kind, plan.num_chunk_tokens, len(plan.decodes), len(batches),
                            start, end - start, decode_kv, chunk_kv,
                            tuple(b - a for a, b in zip(marks, marks[1:])))
        self.step_log.append(record)
        return record

    def run_until_done(self) -> None:
        while self.has_work():
            self.step()

    def generate(self, prompts: list[list[int]], max_new_tokens: int | list[int]) -> list[list[int]]:
        """Greedy generation of exactly `max_new_tokens` per prompt (EOS is not special)."""
        budgets = [max_new_tokens] * len(prompts) if isinstance(max_new_tokens, int) else list(max_new_tokens)
        if len(budgets) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(budgets)} max_new_tokens")
        for i, (p, b) in enumerate(zip(prompts, budgets)):
            try:
                self.validate(p, b)
            except ValueError as e:
                raise ValueError(f"prompt {i}: {e}") from None
        reqs = [self.add_request(p, b) for p, b in zip(prompts, budgets)]
        while not all(r.finished is not None for r in reqs):
            self.step()
        return [r.output for r in reqs]

    # ---- internals --------------------------------------------------------------------
    def _pack(self, chunks, decodes) -> Batch:
        return pack(chunks, decodes, self.pool.block_size, self.model.device)

    def _run(self, batch: Batch) -> None:
        """One forward, one sampling call, one host readback; tokens stamped on arrival."""
        if self.graphs is not None and self.graphs.handles(batch):
            logits = self.graphs.run(batch)
        elif self.chunk_graphs is not None and self.chunk_graphs.handles(batch):
            logits = self.chunk_graphs.run(batch)
        else:
            logits = self.model(batch.input_ids, batch.positions, batch.meta, self.pool.kv,
                                self.backend, batch.logit_indices)
        if self.record_gaps:
            top2 = logits.topk(2, dim=-1)
            packed = torch.cat([top2.indices[:, :1].float(), top2.values[:, :1] - top2.values[:, 1:]], 1)
            rows = packed.tolist()
            tokens = [int(t) for t, _ in rows]
            for r, (_, gap) in zip(batch.samplers, rows):
                self.logit_gaps.append(TokenGap(r.rid, len(r.output), gap))
        else:
            tokens = logits.argmax(dim=-1).tolist()
        now = self.clock()
        for r, t in zip(batch.samplers, tokens):
            self.scheduler.record(r, t, now)

    def _num_compiled(self) -> int:
        count = getattr(self.backend, "num_compiled", None)
        return count() if count is not None else 0

    def kernels_compiled_since_construction(self) -> int:
        """Triton kernel variants compiled after the warm-up: 0 means no measured step paid
        for a compile (always 0 on the interpreter and with the torch backend)."""
        return self._num_compiled() - self._compiled_at_construction

    def _sync(self) -> None:
        if self._cuda:
            torch.cuda.synchronize(self.model.device)

    def _warmup(self) -> None:
        """Run real forwards through every step shape the engine can reach (chunk-only with a
        continuing chunk, mixed, decode-only), so kernels compile here and not in a measured
        step. The warm-up's requests, steps and blocks are then forgotten."""
        vocab = self.cfg.vocab_size
        # Longer than one chunk, so a chunk continues an earlier one; small enough to fit alone
        # in the pool (the tiny-pool gate builds pools of a few dozen blocks).
        n = min(self.chunk_tokens + 3, self.pool.num_blocks * self.pool.block_size - 2,
                self.cfg.max_position_embeddings - 3)
        long_prompt = [i % vocab for i in range(max(n, 1))]
        self.add_request(long_prompt, 3)
        self.add_request([1, 2, 3], 3)
        self.step()  # chunk-only: a full budget, the long prompt's first chunk
        self.add_request([4, 5], 2)
        self.run_until_done()
        assert self.pool.num_free_blocks == self.pool.num_blocks
        self.step_log.clear()
        self.logit_gaps.clear()
        self.num_finished = 0
        self._next_rid = 0
        self._sync()
