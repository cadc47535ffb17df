"""Requests, strict FCFS admission and the StepPlan.

Per step the scheduler (1) admits from the head of the queue while a batch row is free and
the head's blocks fit (the head blocks everyone behind it: strict FCFS), (2) gives one
decode token to every running request that has finished its prompt, and (3) fills a
budget of `chunk_tokens` prompt positions FCFS across requests still prefilling. The
engine turns the plan into one forward (fused) or two (chunked). Once they are launched,
`advance` moves every request on by counts alone (prefill progress, one more sampled
token, retirement and the blocks back to the pool); `record` writes the token values when
the host has them, which with overlap is during the next step.
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
    # Tokens sampled on the device that the host has not read yet (0 or 1). Planning needs
    # only counts, so a step can be planned while the previous one's tokens are in transit.
    pending: int = 0

    @property
    def prompt_len(self) -> int:
        return len(self.prompt)

    @property
    def prefilling(self) -> bool:
        return self.num_cached < len(self.prompt)

    @property
    def num_generated(self) -> int:
        """Tokens sampled so far, whether or not the host has read them yet."""
        return len(self.output) + self.pending

    @property
    def done(self) -> bool:
        return self.num_generated >= self.max_new_tokens

    @property
    def kv_tokens_needed(self) -> int:
        # The last generated token is never fed back, so its K/V is never stored.
        return len(self.prompt) + self.max_new_tokens - 1


@dataclass
class Chunk:
    request: Request
    start: int  # first prompt position of the chunk
    length: int


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
            if r.prefilling and budget > 0:
                n = min(r.prompt_len - r.num_cached, budget)
                chunks.append(Chunk(r, r.num_cached, n))
                budget -= n
        return StepPlan(chunks, decodes)

    def sampled(self, requests: list[Request]) -> None:
        """One token each was sampled on the device for `requests` (values not read yet)."""
        for r in requests:
            r.pending += 1

    def record(self, requests: list[Request], tokens: list[int], now: float) -> int:
        """The host has the sampled tokens: each becomes its request's next output token,
        stamped `now`; a request with its whole budget is finished then. Returns how many
        finished."""
        finished = 0
        for r, t in zip(requests, tokens):
            r.output.append(t)
            r.token_times.append(now)
            r.pending -= 1
            if len(r.output) == r.max_new_tokens:
                r.finished = now
                finished += 1
        return finished

    def advance(self, plan: StepPlan) -> None:
        """After the plan's forwards are launched: advance prefill progress and retire the
        requests with their whole budget sampled, their blocks back to the pool. The device
        runs in launch order, so a later step that reuses the blocks writes them only after
        this step's reads. `record` stamps `finished` when the last token reaches the host."""
        for c in plan.chunks:
            c.request.num_cached += c.length
        self._release(r for r in self.running if r.done)
        self.running = [r for r in self.running if not r.done]

    def fail(self, plans: list[StepPlan], error: str, now: float) -> list[Request]:
        """Steps raised: retire every request in their plans with `error` and free their
        blocks; returns them. A request that already has all its tokens on the host is not
        failed. Requests outside the plans (waiting, or prefilling past the chunk budget) go on."""
        # Everyone in the plans, once each.
        seen = {id(r): r for p in plans for r in [c.request for c in p.chunks] + p.decodes}.values()
        failed = [r for r in seen if r.finished is None]
        self._release(seen)
        for r in failed:
            r.error, r.finished, r.pending = error, now, 0
        self.running = [r for r in self.running if r.finished is None]
        return failed

    def _release(self, requests) -> None:
        """Their blocks back to the pool."""
        for r in requests:
            self.pool.free(r.blocks)
            r.blocks = []
