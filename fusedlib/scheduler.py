"""Requests, strict FCFS admission and the StepPlan.

Per step the scheduler (1) admits from the head of the queue while a batch row is free and
the head's blocks fit (the head blocks everyone behind it: strict FCFS), (2) gives one
decode token to every running request that has finished its prompt, and (3) fills a
budget of `chunk_tokens` prompt positions FCFS across requests still prefilling. The
engine turns the plan into one forward (fused) or two (chunked) and hands the sampled
tokens back to `commit`, which stamps times and frees finished requests' blocks at the end
of the step.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .pool import KVPool


@dataclass
class Request:
    rid: int
    prompt: list[int]
    max_new_tokens: int
    arrival: float
    admitted: float | None = None
    finished: float | None = None
    output: list[int] = field(default_factory=list)
    token_times: list[float] = field(default_factory=list)
    blocks: list[int] = field(default_factory=list)
    num_cached: int = 0  # prompt positions whose K/V are in the cache
    error: str | None = None  # set when a step it was in failed; `output` is then partial

    @property
    def prompt_len(self) -> int:
        return len(self.prompt)

    @property
    def prefilling(self) -> bool:
        return self.num_cached < len(self.prompt)

    @property
    def done(self) -> bool:
        return len(self.output) >= self.max_new_tokens

    @property
    def kv_tokens_needed(self) -> int:
        # The last generated token is never fed back, so its K/V is never stored.
        return len(self.prompt) + self.max_new_tokens - 1


@dataclass
class Chunk:
    request: Request
    start: int  # first prompt position of the chunk
    length: int

    @property
    def finishes_prompt(self) -> bool:
        return self.start + self.length == self.request.prompt_len


@dataclass
class StepPlan:
    chunks: list[Chunk]
    decodes: list[Request]

    @property
    def kind(self) -> str:
        if self.chunks and self.decodes:
            return "mixed"
        return "chunk" if self.chunks else "decode"

    @property
    def empty(self) -> bool:
        return not self.chunks and not self.decodes

    @property
    def num_chunk_tokens(self) -> int:
        return sum(c.length for c in self.chunks)


class Scheduler:
    def __init__(self, pool: KVPool, max_batch: int, chunk_tokens: int):
        self.pool = pool
        self.max_batch = max_batch
        self.chunk_tokens = chunk_tokens
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []  # in admission order

    def add(self, request: Request) -> None:
        self.waiting.append(request)

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def plan(self, now: float) -> StepPlan:
        while self.waiting and len(self.running) < self.max_batch:
            head = self.waiting[0]
            blocks = self.pool.reserve(head.kv_tokens_needed)
            if blocks is None:
                break  # strict FCFS: nobody overtakes the head of the queue
            self.waiting.popleft()
            head.blocks, head.admitted = blocks, now
            self.running.append(head)

        decodes = [r for r in self.running if not r.prefilling]
        chunks, budget = [], self.chunk_tokens
        for r in self.running:
            if budget == 0:
                break
            if r.prefilling:
                n = min(r.prompt_len - r.num_cached, budget)
                chunks.append(Chunk(r, r.num_cached, n))
                budget -= n
        return StepPlan(chunks, decodes)

    def record(self, request: Request, token: int, now: float) -> None:
        """One sampled token for `request`, stamped with the time the host had it."""
        request.output.append(token)
        request.token_times.append(now)

    def commit(self, plan: StepPlan, now: float) -> list[Request]:
        """End of step: advance prefill progress, retire finished requests, free their blocks."""
        for c in plan.chunks:
            c.request.num_cached += c.length
        finished = [r for r in self.running if r.done]
        for r in finished:
            r.finished = now
            self.pool.free(r.blocks)
            r.blocks = []
        self.running = [r for r in self.running if not r.done]
        return finished

    def fail(self, plan: StepPlan, error: str, now: float) -> list[Request]:
        """A step raised: retire every request in its plan with `error`, free their blocks.
        Requests outside the plan (waiting, or prefilling past the chunk budget) go on."""
        failed = list({id(r): r for r in [c.request for c in plan.chunks] + plan.decodes}.values())
        for r in failed:
            r.error, r.finished = error, now
            self.pool.free(r.blocks)
            r.blocks = []
        self.running = [r for r in self.running if r.error is None]
        return failed
