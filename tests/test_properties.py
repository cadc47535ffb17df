"""The engine cannot be made to lose a request: random workloads, settings and interleavings
of add_request/step (hypothesis), with the scheduler's invariants checked after every step
and every request's tokens checked against the same request run alone."""
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusedlib.engine import Engine
from tests.helpers import tiny_model

VOCAB = 512  # the tiny preset's


@st.composite
def workloads(draw):
    """Settings down to one row, one chunk token and a pool of one request's worth, in KV blocks
    of 4, 16 or 128 tokens; prompts from one token to past two chunks; and how many steps run
    before each request arrives."""
    chunk_tokens = draw(st.integers(1, 20))
    kv_block_size = draw(st.sampled_from([4, 16, 128]))
    n = draw(st.integers(1, 6))
    lengths = draw(st.lists(st.integers(1, 2 * chunk_tokens + 3), min_size=n, max_size=n))
    seed = draw(st.integers(0, 2**16))
    g = torch.Generator().manual_seed(seed)
    requests = [(torch.randint(0, VOCAB, (length,), generator=g).tolist(), draw(st.integers(1, 5)))
                for length in lengths]
    one_request = max(-(-(len(p) + b - 1) // kv_block_size) for p, b in requests)
    return {
        "kind": draw(st.sampled_from(["fused", "chunked"])),
        "overlap": draw(st.booleans()),
        "max_batch": draw(st.integers(1, 4)),
        "chunk_tokens": chunk_tokens,
        "kv_block_size": kv_block_size,
        "num_blocks": one_request + draw(st.integers(0, 2 * one_request)),
        "requests": requests,
        "steps_before": draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
    }


_solo: list[Engine] = []


def _alone(prompt: list[int], budget: int) -> list[int]:
    """The request on its own: one row, a chunk budget that takes the prompt whole."""
    if not _solo:
        _solo.append(Engine(tiny_model(), kind="fused", max_batch=1, chunk_tokens=64, num_blocks=8, warmup=False))
    return _solo[0].generate([prompt], budget)[0]


def _check_step(engine, plan, added, max_batch, chunk_tokens):
    pool, running = engine.pool, engine.scheduler.running
    # FCFS: the admitted requests are exactly the first ones to arrive, admitted in order.
    admitted = [r for r in added if r.admitted is not None]
    assert admitted == added[:len(admitted)]
    assert [r.admitted for r in admitted] == sorted(r.admitted for r in admitted)
    # The step's plan: within the chunk budget and the batch's rows; every decoding request decodes.
    in_plan = {id(c.request) for c in plan.chunks} | {id(r) for r in plan.decodes}
    assert plan.num_chunk_tokens <= chunk_tokens and len(in_plan) <= max_batch
    assert all(c.length >= 1 for c in plan.chunks)
    # Blocks: each running request owns what it can ever need; owned + free = the pool, no overlap.
    owned = [b for r in running for b in r.blocks]
    assert all(len(r.blocks) == -(-r.kv_tokens_needed // pool.block_size) for r in running)
    assert len(set(owned)) == len(owned)
    free = list(pool._free)
    assert len(set(free)) == len(free) and not set(free) & set(owned)
    assert len(owned) + len(free) == pool.num_blocks
    assert all(not r.blocks for r in added if r.finished is not None)
    assert len(running) <= max_batch


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(workloads())
def test_no_request_is_lost(w):
    engine = Engine(tiny_model(), kind=w["kind"], max_batch=w["max_batch"], chunk_tokens=w["chunk_tokens"],
                    num_blocks=w["num_blocks"], kv_block_size=w["kv_block_size"], overlap=w["overlap"], warmup=False)
    plans = []
    plan = engine.scheduler.plan
    engine.scheduler.plan = lambda now: plans.append(plan(now)) or plans[-1]
    added = []

    def step():
        before = len(plans)
        engine.step()
        if len(plans) > before and not plans[-1].empty:
            _check_step(engine, plans[-1], added, w["max_batch"], w["chunk_tokens"])

    for (prompt, budget), steps in zip(w["requests"], w["steps_before"]):
        for _ in range(steps):
            step()
        added.append(engine.add_request(prompt, budget))
    for _ in range(10_000):  # far more steps than any drawn workload needs
        if not engine.has_work():
            break
        step()
    assert not engine.has_work()
    for r, (prompt, budget) in zip(added, w["requests"]):
        assert r.error is None and r.finished is not None
        assert r.output == _alone(prompt, budget)
        assert len(r.token_times) == budget
    assert engine.pool.num_free_blocks == engine.pool.num_blocks


def test_the_invariant_checks_catch_a_lost_block():
    """The checks above can fail: a scheduler that forgets to free a finished request's
    blocks is caught at the next step."""
    engine = Engine(tiny_model(), kind="fused", max_batch=2, chunk_tokens=8, num_blocks=4, warmup=False)
    engine.pool.free = lambda blocks: None  # leak
    added = [engine.add_request([1, 2, 3], 1), engine.add_request([4, 5], 2)]
    engine.step()
    plan = engine.scheduler.plan(0.0)
    with pytest.raises(AssertionError):
        _check_step(engine, plan, added, 2, 8)
