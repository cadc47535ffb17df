"""The peer experiment: the closed workload (`engines.closed_draw`, all requests submitted at
once) on our engines and on transformers' own continuous batching (the manager behind
`generate_batch`), on our weights copied into a Qwen2ForCausalLM (hf.py), measured alike:
one discarded warm-up pass (transformers' first ran 2.4x slower than its next on the H200),
then one timed pass.
"""
from __future__ import annotations

import time

from . import workloads
from .engines import closed_draw, closed_fields, forget_engines, make_engine, model_for, settings_fields
from .hf import to_transformers, transformers_classes
from .spec import RunSpec
from .telemetry import machine, sync


def run(spec: RunSpec) -> list[dict]:
    return transformers_closed(spec) if spec.engine == "transformers" else closed(spec)


def _timed(device: str, one_pass):
    """(wall seconds, result) of `one_pass()`, the device's queued work finished before and after."""
    sync(device)
    t0 = time.perf_counter()
    result = one_pass()
    sync(device)
    return time.perf_counter() - t0, result


def closed(spec: RunSpec) -> list[dict]:
    """The closed workload on our engine."""
    engine = make_engine(spec)
    draw = closed_draw(spec)
    prompts, budgets = [r.prompt for r in draw], [r.max_new_tokens for r in draw]
    walls = [_timed(spec.profile_spec.device, lambda: engine.generate(prompts, budgets))[0] for _ in range(2)]
    return [{**machine(), **settings_fields(spec), **closed_fields(walls[-1], sum(budgets), spec),
             "warmup_wall_s": walls[0]}]


def transformers_closed(spec: RunSpec) -> list[dict]:
    """transformers' own continuous batching on the closed workload (`_transformers_batching`),
    driven directly because `generate_batch` takes one max_new_tokens for all requests."""
    draw = closed_draw(spec)
    n_out, device, walls = sum(r.max_new_tokens for r in draw), spec.profile_spec.device, []
    forget_engines()  # at 256 rows our two kept engines' pools leave transformers too little
    with _transformers_batching(spec, draw) as manager:
        for _ in range(2):
            wall, outputs = _timed(device, lambda: _collect(manager, [
                manager.add_request(r.prompt, max_new_tokens=r.max_new_tokens, eos_token_id=-1) for r in draw]))
            walls.append(wall)
            if sum(len(o.generated_tokens) for o in outputs.values()) != n_out:
                raise RuntimeError("transformers generated a different number of tokens than requested")
    return [{**machine(), "attention": "transformers", "max_batch": spec.max_batch,
             "chunk_tokens": spec.chunk_tokens, **closed_fields(walls[-1], n_out, spec), "warmup_wall_s": walls[0]}]


def _transformers_batching(spec: RunSpec, specs: workloads.Workload):
    """transformers' continuous-batching manager over our weights (copied into a
    Qwen2ForCausalLM), set up as our engine where it has the setting: at most `max_batch`
    requests and `chunk_tokens + max_batch` tokens per forward, greedy, EOS disabled, and a
    cache sized to hold every request in `specs` at once. A context manager."""
    GenerationConfig, ContinuousBatchingConfig = transformers_classes("GenerationConfig", "ContinuousBatchingConfig")
    hf = to_transformers(model_for(spec))
    cb = ContinuousBatchingConfig(max_requests_per_batch=spec.max_batch,
                                  max_batch_tokens=spec.chunk_tokens + spec.max_batch)
    # Left unsized, the cache takes 90% of free device memory, or of host RAM on CPU.
    # The cache's tokens per block: `page_size` in recent transformers, `block_size` before it (5.17,
    # the H200 machine's: the peer's closed b64 run there failed on `page_size`).
    per_block = getattr(cb, "page_size", None) or cb.block_size
    cb.num_blocks = sum(-(-(len(r.prompt) + r.max_new_tokens) // per_block) for r in specs)
    gen = GenerationConfig(do_sample=False, eos_token_id=-1, max_new_tokens=max(r.max_new_tokens for r in specs))
    return hf.continuous_batching_context_manager(generation_config=gen, continuous_batching_config=cb,
                                                  block=True, timeout=30)


def _collect(manager, ids: list[str]) -> dict:
    done, timeout_s = {}, 600
    while len(done) < len(ids):
        result = manager.get_result(timeout=timeout_s)
        if result is None:
            raise RuntimeError(f"transformers' batching manager stopped with {len(ids) - len(done)} requests left")
        if result.is_finished():
            done[result.request_id] = result
    return done
