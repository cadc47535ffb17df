"""Requests, strict FCFS admission and the StepPlan."""
# Per step the scheduler (1) admits from the head of the queue while a batch row is free and the
# head's blocks fit (strict FCFS: the head blocks everyone behind it), (2) gives one decode
# token to every running request past its prompt, and (3) fills a budget of `chunk_tokens`
# prompt positions FCFS across requests still prefilling.
#
# Once a step is launched, `advance` moves every request on by counts alone; `record` writes
# the token values when the host has them, which with overlap is during the next step.
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
    # Tokens sampled on the device, read back or not: planning needs only counts, so a step
    # can be planned while the previous one's tokens are in transit.
    num_generated: int = 0
    token_row: int = 0  # where its newest sampled token is in its step's tokens

    prefilling = property(lambda self: self.num_cached < len(self.prompt))
    pending = property(lambda self: self.num_generated - len(self.output))  # sampled, not read yet (0 or 1)
    # The last generated token is never fed back, so its K/V is never stored.
    kv_tokens_needed = property(lambda self: len(self.prompt) + self.max_new_tokens - 1)


@dataclass
class Chunk:
    request: Request
    start: int  # first prompt position of the chunk
    length: int


@dataclass
class StepPlan:
    chunks: list[Chunk]
    decodes: list[Request]

    kind = property(lambda self: ("mixed" if self.decodes else "chunk") if self.chunks else "decode")
    empty = property(lambda self: not self.chunks and not self.decodes)
    num_chunk_tokens = property(lambda self: sum(c.length for c in self.chunks))


class Scheduler:
    def __init__(self, pool: KVPool, max_batch: int, chunk_tokens: int):
        self.pool, self.max_batch, self.chunk_tokens = pool, max_batch, chunk_tokens
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []  # in admission order
        # The decoding requests, in the order their rows run. One that finishes takes the last
        # one into its place, so from step to step the rows keep their requests (and a graph its
        # block table rows), as vLLM's persistent batch does.
        self.decoding: list[Request] = []

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
        chunks, budget = [], self.chunk_tokens
        for r in self.running:
            if budget <= 0:
                break
            if r.num_cached < len(r.prompt):
                n = min(len(r.prompt) - r.num_cached, budget)
                chunks.append(Chunk(r, r.num_cached, n))
                budget -= n
        return StepPlan(chunks, list(self.decoding))

    def sampled(self, requests: list[Request], first_row: int = 0) -> None:
        """One token each was sampled on the device for `requests`, at the step's rows from `first_row`."""
        for i, r in enumerate(requests, first_row):
            r.num_generated += 1
            r.token_row = i

    def record(self, requests: list[Request], tokens: list[int], now: float) -> int:
        """The host has the tokens: each joins its request's output at `now`. Returns how many finished."""
        finished = 0
        for r, t in zip(requests, tokens):
            r.output.append(t)
            r.token_times.append(now)
            if len(r.output) == r.max_new_tokens:
                r.finished = now
                finished += 1
        return finished

    def advance(self, plan: StepPlan) -> None:
        """After the plan's launch: prefill progress, new decode rows, requests with their whole budget sampled retired."""
        # `record` stamps `finished` when the last token arrives.
        # Blocks go back now: the device runs in launch order, so a later step that reuses them
        # writes them after this step's reads.
        for c in plan.chunks:
            r = c.request
            r.num_cached += c.length
            if r.num_cached == len(r.prompt) and r.num_generated < r.max_new_tokens:
                self.decoding.append(r)
        done = [i for i, r in enumerate(self.decoding) if r.num_generated >= r.max_new_tokens]
        retired = [self.decoding[i] for i in done] + [c.request for c in plan.chunks
                                                      if c.request.num_generated >= c.request.max_new_tokens]
        for i in reversed(done):
            last = self.decoding.pop()
            if i < len(self.decoding):
                self.decoding[i] = last
        if retired:
            self._release(retired)
            self.running = [r for r in self.running if r.num_generated < r.max_new_tokens]

    def fail(self, plans: list[StepPlan], error: str, now: float) -> list[Request]:
        """Steps raised: retire and return every unfinished request in their plans; the others go on."""
        seen = {id(r): r for p in plans for r in [c.request for c in p.chunks] + p.decodes}.values()
        failed = [r for r in seen if r.finished is None]
        self._release(seen)
        for r in failed:
            r.error, r.finished, r.num_generated = error, now, len(r.output)
        self.running = [r for r in self.running if r.finished is None]
        self.decoding = [r for r in self.decoding if r.finished is None]
        return failed

    def _release(self, requests) -> None:
        """Their blocks back to the pool."""
        for r in requests:
            self.pool.free(r.blocks)
            r.blocks = []
