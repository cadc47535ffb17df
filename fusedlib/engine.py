"""The serving loop, and the one thing the two engines disagree on."""
# `Engine.step()` asks the scheduler for a StepPlan, turns it into forwards, samples greedily
# and commits. The *chunked* engine (the baseline) runs the plan as up to two forwards: prompt
# chunks, then decode tokens, each with its own sampling and readback. The *fused* engine packs
# both into one sequence: one forward, one sampling call, one readback. Everything else is
# shared, so a comparison measures exactly that change.
#
# With `overlap` the host does not wait for a step's tokens before starting the next (vLLM V1's
# async scheduling, SGLang's overlap scheduler). Requests finish by budget only, so which
# requests decode, which chunks run and which blocks are reserved depend on token counts, never
# values: step n + 1 is planned, packed and launched right after step n, its decode rows take
# step n's tokens on the device (`InTransit`), and the host reads step n's tokens (copied into
# pinned memory behind an event) after launching step n + 1. Values reach the Request objects
# one step late; the output is the same.
from __future__ import annotations

import operator
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from typing import Callable, Iterator, Sequence

import torch
import triton

from . import ops
from .attention import make_backend, triton_kernels
from .batch import Batch, InTransit, pack
from .config import EngineConfig, check_count
from .graphs import WholeGraphs
from .model import Qwen2Model
from .pool import KVPool
from .scheduler import Request, Scheduler, StepPlan


@dataclass
class StepRecord:
    kind: str  # 'decode' | 'mixed' | 'chunk'
    n_chunk_tokens: int
    n_decode: int
    n_forwards: int
    start: float
    duration: float  # with overlap: includes the wait for the previous step's tokens
    decode_kv_tokens: int  # KV positions the decode rows read (their context lengths)
    chunk_kv_tokens: int  # KV positions the chunks attend over (start + length each)
    # The host's own time in the step (planning, packing, launching, committing tokens), by
    # time.perf_counter: the step's span less its waits for the GPU's tokens (on CPU, where the
    # forward runs on the host, the whole step).
    host_s: float
    # CUDA timing events around the step's forwards (None on CPU). They live only as long as
    # the record does, so an engine keeps nothing per step.
    events: tuple = field(repr=False)

    def gpu_s(self) -> float | None:
        """The step's forwards on the GPU's clock (None on CPU); waits for them: read it after the run."""
        if self.events[0] is None:
            return None
        self.events[1].synchronize()
        return self.events[0].elapsed_time(self.events[1]) / 1e3


def gpu_kernels() -> list[triton.runtime.JITFunction]:
    """The engine's Triton kernels built for a GPU: none if TRITON_INTERPRET=1 when they were imported."""
    return [k for module in (triton_kernels, ops.gemm, ops.norm, ops.rotary)
            for k in vars(module).values() if isinstance(k, triton.runtime.JITFunction)]


def num_compiled() -> int:
    """Compiled variants of the engine's Triton kernels so far (0 on the interpreter)."""
    # device_caches: device -> a tuple whose first item is the {key: kernel} cache.
    return sum(len(caches[0]) for k in gpu_kernels() for caches in k.device_caches.values())


class RequestsFailed(RuntimeError):
    """A step raised: `requests` finished with `error` set, blocks freed; the engine serves on."""

    def __init__(self, message: str, requests: list[Request]):
        super().__init__(message)
        self.requests = requests


class Engine:
    """`Engine(model, kind=..., ...)` or `Engine(model, config=EngineConfig(...))` (keywords win)."""
    # Instrumentation attaches from outside: replace `clock` or `sample`, append to `observers`
    # (or use `record_steps`), set `pool.poison_freed`.

    def __init__(self, model: Qwen2Model, config: EngineConfig | None = None, **settings):
        if not isinstance(model, Qwen2Model):
            raise TypeError(f"model must be a Qwen2Model (fusedlib.load_model), got {type(model).__name__}")
        if config is not None and not isinstance(config, EngineConfig):
            raise ValueError(f"config must be an EngineConfig, got {type(config).__name__}")
        names = tuple(f.name for f in fields(EngineConfig))
        unknown = sorted(set(settings) - set(names))
        if unknown:
            raise ValueError(f"unknown engine setting {unknown[0]!r}; settings are {names}")
        # Settings left None take the model's device's defaults (EngineConfig.for_device), so
        # `config` says what this engine runs.
        self.config = config = replace(config or EngineConfig(), **settings).for_device(model.device.type)
        if config.cuda_graphs and (model.device.type != "cuda" or config.attention == "torch"):
            raise ValueError("cuda_graphs needs a CUDA model and a Triton attention backend "
                             "(the torch reference reads lengths back to the host mid-forward)")
        if (config.attention != "torch" or config.fused_ops) and model.device.type != "cuda" and gpu_kernels():
            setting = f"attention={config.attention!r}" if config.attention != "torch" else "fused_ops=True"
            raise ValueError(f"{setting} on a {model.device.type} model needs Triton's interpreter: set "
                             "TRITON_INTERPRET=1 before importing fusedlib (or leave it unset: eager torch)")
        self.model = model
        self.backend = make_backend(config.attention)
        self.pool = KVPool(model.config, model.dtype, model.device, config.kv_block_size,
                           num_blocks=config.num_blocks, pool_gib=config.pool_gib)
        self.scheduler = Scheduler(self.pool, config.max_batch, config.chunk_tokens)
        self.clock: Callable[[], float] = time.perf_counter
        self.observers: list[Callable[[StepRecord], None]] = []  # each gets every StepRecord
        self.num_finished = 0  # requests completed since construction (a count: no request is kept)
        self._next_rid = 0
        self._in_flight: InTransit | None = None  # with overlap: the step whose tokens are in transit
        self.graphs = None  # the warm-up runs eagerly; the graphs come after it
        if config.warmup:
            self._warmup()
        if config.cuda_graphs:
            self.graphs = WholeGraphs(model, self.pool, self.backend, config.max_batch,
                                      config.chunk_tokens if config.whole_graphs else 0, mixed=config.kind == "fused",
                                      fused_ops=config.fused_ops)
        self._compiled_at_construction = num_compiled()

    # ---- submission -------------------------------------------------------------------
    def validate(self, prompt: Sequence[int], max_new_tokens: int) -> list[int]:
        """The prompt as a list of ints, or ValueError naming what is wrong; nothing is queued."""
        if isinstance(prompt, (str, bytes)) or not hasattr(prompt, "__iter__"):
            raise ValueError(f"prompt must be a sequence of token ids, got {type(prompt).__name__}")
        prompt = list(prompt)
        if any(isinstance(t, bool) for t in prompt):
            raise ValueError("prompt token ids must be integers, not booleans")
        try:
            prompt = [operator.index(t) for t in prompt]
        except TypeError:
            raise ValueError("prompt token ids must be integers") from None
        check_count("max_new_tokens", max_new_tokens)
        if len(prompt) == 0:
            raise ValueError("empty prompt: a request needs at least one prompt token")
        cfg = self.model.config
        bad = [t for t in prompt if not 0 <= t < cfg.vocab_size]
        if bad:
            raise ValueError(f"token id {bad[0]!r} is outside the vocabulary [0, {cfg.vocab_size})")
        total = len(prompt) + max_new_tokens
        if total > cfg.max_position_embeddings:
            raise ValueError(f"prompt ({len(prompt)}) + max_new_tokens ({max_new_tokens}) = {total} "
                             f"exceeds the model's maximum length {cfg.max_position_embeddings}")
        need = self.pool.blocks_for(total - 1)
        if need > self.pool.num_blocks:
            raise ValueError(f"request needs {need} KV blocks but the whole pool has "
                             f"{self.pool.num_blocks}: it could never be admitted")
        return prompt

    def add_request(self, prompt: Sequence[int], max_new_tokens: int, arrival: float | None = None) -> Request:
        req = Request(self._next_rid, self.validate(prompt, max_new_tokens), max_new_tokens,
                      arrival=self.clock() if arrival is None else arrival)
        self._next_rid += 1
        self.scheduler.add(req)
        return req

    def has_work(self) -> bool:
        return self.scheduler.has_work()

    # ---- the loop ---------------------------------------------------------------------
    def step(self) -> StepRecord | None:
        """One scheduling step (None: nothing to do). If it raises, its requests fail (RequestsFailed)."""
        start, host_start = self.clock(), time.perf_counter()
        plan = self.scheduler.plan(start)
        if plan.empty:
            return None
        chunk_kv = sum(c.start + c.length for c in plan.chunks)
        decode_kv = sum(len(r.prompt) + r.num_generated for r in plan.decodes)  # each row's position + 1
        # The fused engine's one forward; the chunked engine's chunks, then its decode rows.
        split = [(plan.chunks, []), ([], plan.decodes)] if self.config.kind == "chunked" else [(plan.chunks, plan.decodes)]
        forwards = [(chunks, decodes) for chunks, decodes in split if chunks or decodes]
        first = self._event()
        run = self._run_overlapped if self.config.overlap else self._run_in_order
        last, waited = run(plan, forwards)
        host_s, end = time.perf_counter() - host_start - waited, self.clock()
        record = StepRecord(plan.kind, plan.num_chunk_tokens, len(plan.decodes), len(forwards), start, end - start,
                            decode_kv, chunk_kv, host_s, (first, last))
        for observe in self.observers:
            observe(record)
        return record

    def _run_in_order(self, plan: StepPlan, forwards: list) -> tuple[torch.cuda.Event | None, float]:
        """Each forward's tokens committed before the next: (the step's closing event, seconds waited)."""
        waited, row = 0.0, 0
        try:
            for chunks, decodes in forwards:
                samplers, tokens = self._forward(self._pack(chunks, decodes), row)
                row += len(samplers)
                waited += self._receive(self._send_to_host(plan, samplers, tokens))
        except Exception as error:
            raise self._failure([plan], error) from error
        last = self._event()
        self.scheduler.advance(plan)
        return last, waited

    def _run_overlapped(self, plan: StepPlan, forwards: list) -> tuple[torch.cuda.Event | None, float]:
        """Launch this step, then commit the previous one's tokens (read by this one on the device); as `_run_in_order`."""
        requests, sampled = [], []
        try:
            for chunks, decodes in forwards:
                samplers, tokens = self._forward(self._pack(chunks, decodes), len(requests))
                requests += samplers
                sampled.append(tokens)
        except Exception as error:
            raise self._failure([plan], error) from error
        last = self._event()
        self.scheduler.advance(plan)
        tokens = sampled[0] if len(sampled) == 1 else torch.cat(sampled)
        previous, self._in_flight = self._in_flight, self._send_to_host(plan, requests, tokens)
        # Step n's tokens, while the GPU runs step n + 1 (which read them).
        waited = 0.0 if previous is None else self._commit(previous, [previous.plan, plan])
        if not self.scheduler.has_work():  # no step follows to overlap with: the tokens are due now
            current, self._in_flight = self._in_flight, None
            waited += self._commit(current, [plan])
        return last, waited

    def run_until_done(self) -> None:
        while self.has_work():
            self.step()

    @contextmanager
    def record_steps(self) -> Iterator[list[StepRecord]]:
        """`with engine.record_steps() as steps:` collects the block's StepRecords (the engine keeps none)."""
        steps: list[StepRecord] = []
        self.observers.append(steps.append)
        try:
            yield steps
        finally:
            self.observers.remove(steps.append)

    def generate(self, prompts: list[list[int]], max_new_tokens: int | list[int]) -> list[list[int]]:
        """Greedy generation of exactly `max_new_tokens` per prompt (EOS is not special). If a step
        fails, the other prompts are served to the end, then RequestsFailed names the failed ones."""
        budgets = [max_new_tokens] * len(prompts) if isinstance(max_new_tokens, int) else list(max_new_tokens)
        if len(budgets) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(budgets)} max_new_tokens")
        for i, (p, b) in enumerate(zip(prompts, budgets)):
            try:
                self.validate(p, b)
            except ValueError as e:
                raise ValueError(f"prompt {i}: {e}") from None
        reqs = [self.add_request(p, b) for p, b in zip(prompts, budgets)]
        cause = None
        while any(r.finished is None for r in reqs):
            try:
                self.step()
            except RequestsFailed as e:
                cause = cause or e  # a failed step finishes its requests: the loop still ends
        failed = [i for i, r in enumerate(reqs) if r.error is not None]
        if failed:
            raise RequestsFailed(f"prompts {failed} failed: {reqs[failed[0]].error}",
                                 [reqs[i] for i in failed]) from cause
        return [r.output for r in reqs]

    # ---- internals --------------------------------------------------------------------
    def _pack(self, chunks, decodes) -> Batch:
        return pack(chunks, decodes, self.pool.block_size, self.model.device, self._in_flight)

    def _forward(self, batch: Batch, first_row: int) -> tuple[list[Request], torch.Tensor]:
        """One forward and its sampling on the device, the step's tokens from `first_row`: (owners, tokens)."""
        if self.graphs is not None and self.graphs.handles(batch):
            logits = self.graphs.run(batch)
        else:
            logits = self.model(batch.input_ids, batch.positions, batch.meta, self.pool.kv,
                                self.backend, batch.logit_indices, self.config.fused_ops)
        tokens = self.sample(logits, batch.samplers)
        self.scheduler.sampled(batch.samplers, first_row)
        return batch.samplers, tokens

    def _event(self, timing: bool = True) -> torch.cuda.Event | None:
        """A CUDA event recorded on the current stream (no host wait); None on CPU."""
        if self.model.device.type != "cuda":
            return None
        return torch.cuda.current_stream().record_event(torch.cuda.Event(enable_timing=timing))

    def _send_to_host(self, plan: StepPlan, requests: list[Request], tokens: torch.Tensor) -> InTransit:
        # non_blocking into pinned memory: the copy queues behind the forward, the host goes on.
        return InTransit(plan, requests, tokens, tokens.to("cpu", non_blocking=True), self._event(timing=False))

    def _receive(self, launched: InTransit) -> float:
        """Wait for a launched step's tokens and commit them, stamped when the host has them; seconds waited."""
        waited = 0.0
        if launched.copied is not None:
            waiting = time.perf_counter()
            launched.copied.synchronize()
            waited = time.perf_counter() - waiting
        self.num_finished += self.scheduler.record(launched.requests, launched.host.tolist(), self.clock())
        return waited

    def _commit(self, launched: InTransit, plans: list[StepPlan]) -> float:
        """Receive a launched step's tokens (seconds waited); if that raises, the requests of `plans` fail."""
        try:
            return self._receive(launched)
        except Exception as error:
            raise self._failure(plans, error) from error

    def _failure(self, plans: list[StepPlan], error: Exception) -> RequestsFailed:
        """Fail every request of `plans`; tokens in flight from an earlier step are committed first."""
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is not None and not any(in_flight.plan is p for p in plans):
            try:
                self._receive(in_flight)
            except Exception:
                plans = [*plans, in_flight.plan]
        message = f"{type(error).__name__}: {error}"
        failed = self.scheduler.fail(plans, message, self.clock())
        self.num_finished += len(failed)
        return RequestsFailed(f"step failed; requests {[r.rid for r in failed]} finished with an error: "
                              f"{message}", failed)

    def sample(self, logits: torch.Tensor, requests: list[Request]) -> torch.Tensor:
        """Greedy: the sampled rows' tokens, in `requests` order, on the device (`engine.sample = f` overrides)."""
        return logits.argmax(dim=-1)

    def kernels_compiled_since_construction(self) -> int:
        """Triton kernel variants compiled (by any engine) since this one was built: 0 in a measured run."""
        return num_compiled() - self._compiled_at_construction

    def _warmup(self) -> None:
        """Real forwards through every step kind (chunk-only with a continuing chunk, mixed, decode-only), then forgotten."""
        # So kernels compile here and not in a measured step.
        # Longer than one chunk, so a chunk continues an earlier one; small enough to fit alone
        # in the pool (the tiny-pool gate builds pools of a few dozen blocks).
        n = min(self.config.chunk_tokens + 3, self.pool.num_blocks * self.pool.block_size - 2,
                self.model.config.max_position_embeddings - 3)
        self.add_request([i % self.model.config.vocab_size for i in range(max(n, 1))], 3)
        self.add_request([1, 2, 3], 3)
        self.step()  # chunk-only: a full budget, the long prompt's first chunk
        # Then decode steps of up to 64 rows, shrinking through each tile height of the Triton GEMMs.
        for i in range(min(self.config.max_batch, 64)):
            self.add_request([4, 5], 2 + i % 4)
        self.run_until_done()
        assert self.pool.num_free_blocks == self.pool.num_blocks
        self.num_finished = self._next_rid = 0
        if self.model.device.type == "cuda":
            torch.cuda.synchronize(self.model.device)
