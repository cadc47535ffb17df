import torch

from fusedlib.config import PRESETS
from fusedlib.pool import KVPool
from fusedlib.scheduler import Request, Scheduler


def _sched(num_blocks=64, max_batch=4, chunk_tokens=10):
    pool = KVPool(PRESETS["tiny"], torch.float32, "cpu", block_size=16, num_blocks=num_blocks)
    return Scheduler(pool, max_batch, chunk_tokens)


def _req(rid, n, budget=4):
    return Request(rid, list(range(n)), budget, arrival=0.0)


def test_chunk_budget_is_shared_fcfs_across_prefilling_requests():
    s = _sched(chunk_tokens=10)
    for rid, n in enumerate((6, 7, 3)):
        s.add(_req(rid, n))
    plan = s.plan(0.0)
    assert [(c.request.rid, c.start, c.length) for c in plan.chunks] == [(0, 0, 6), (1, 0, 4)]
    assert plan.kind == "chunk"
    s.advance(plan)
    plan = s.plan(1.0)
    assert [(c.request.rid, c.start, c.length) for c in plan.chunks] == [(1, 4, 3), (2, 0, 3)]


def test_head_of_queue_blocks_those_behind_it():
    s = _sched(num_blocks=4, max_batch=8)
    s.add(_req(0, 40))  # 3 blocks
    s.add(_req(1, 30))  # 3 blocks: does not fit while 0 runs
    s.add(_req(2, 2))  # 1 block: would fit, but strict FCFS keeps it behind 1
    s.plan(0.0)
    assert [r.rid for r in s.running] == [0]
    assert [r.rid for r in s.waiting] == [1, 2]


def test_max_batch_caps_running_rows():
    s = _sched(max_batch=2)
    for rid in range(5):
        s.add(_req(rid, 3))
    s.plan(0.0)
    assert len(s.running) == 2 and len(s.waiting) == 3


def test_finished_requests_free_blocks_at_advance_and_decodes_follow_prefill():
    s = _sched()
    r = _req(0, 3, budget=2)
    s.add(r)
    plan = s.plan(0.0)
    s.sampled([r])  # first token from the chunk that finished the prompt
    assert s.record([r], [7], 0.5) == 0
    s.advance(plan)
    plan = s.plan(1.0)
    assert plan.kind == "decode" and plan.decodes == [r]
    free_before = s.pool.num_free_blocks
    s.sampled([r])
    assert s.record([r], [8], 1.5) == 1
    s.advance(plan)
    assert r.finished == 1.5 and r.output == [7, 8] and r.token_times == [0.5, 1.5]
    assert s.pool.num_free_blocks == free_before + 1 and not s.has_work()


def test_planning_needs_token_counts_not_values():
    """Overlap: a step is advanced and the next one planned while the tokens are still on
    the device; a request whose budget is sampled retires (blocks freed) at once, and is
    finished only when its last token reaches the host."""
    s = _sched()
    a, b = _req(0, 3, budget=1), _req(1, 3, budget=3)
    s.add(a), s.add(b)
    plan = s.plan(0.0)
    s.sampled([a, b])
    s.advance(plan)  # no values yet
    assert a.pending == b.pending == 1 and a.output == b.output == []
    assert not a.blocks and a.finished is None and s.running == [b]
    nxt = s.plan(1.0)
    assert nxt.kind == "decode" and nxt.decodes == [b] and b.num_generated == 1
    assert s.record([a, b], [5, 6], 1.5) == 1  # the values arrive during the next step
    assert a.finished == 1.5 and a.output == [5] and b.output == [6] and b.pending == 0
