import torch

from fusedlib.config import PRESETS
from fusedlib.pool import KVPool
from fusedlib.scheduler import Request, Scheduler


def _sched(num_blocks=64, max_batch=4, chunk_tokens=10):
    return Scheduler(KVPool(PRESETS["tiny"], torch.float32, "cpu", num_blocks=num_blocks), max_batch, chunk_tokens)


def _req(rid, n, budget=4):
    return Request(rid, list(range(n)), budget, arrival=0.0)


def test_chunk_budget_is_shared_fcfs_across_prefilling_requests():
    s = _sched(chunk_tokens=10)
    for rid, n in enumerate((6, 7, 3)):
        s.add(_req(rid, n))
    plan = s.plan(0.0)
    assert [(c.request.rid, c.start, c.length) for c in plan.chunks] == [(0, 0, 6), (1, 0, 4)]
    assert plan.kind == "chunk"
    s.commit(plan, 0.0)
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


def test_finished_requests_free_blocks_at_commit_and_decodes_follow_prefill():
    s = _sched()
    r = _req(0, 3, budget=2)
    s.add(r)
    plan = s.plan(0.0)
    s.record(r, 7, 0.5)  # first token from the chunk that finished the prompt
    s.commit(plan, 0.5)
    plan = s.plan(1.0)
    assert plan.kind == "decode" and plan.decodes == [r]
    free_before = s.pool.num_free_blocks
    s.record(r, 8, 1.5)
    s.commit(plan, 1.5)
    assert r.finished == 1.5 and r.output == [7, 8] and r.token_times == [0.5, 1.5]
    assert s.pool.num_free_blocks == free_before + 1 and not s.has_work()
