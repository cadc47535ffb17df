import pytest
import torch

from fusedlib.engine import Engine
from tests.helpers import tiny_model


def _prompts(n, seed=0, lengths=(1, 5, 17, 40, 90)):
    g = torch.Generator().manual_seed(seed)
    vocab = tiny_model().config.vocab_size
    return [torch.randint(0, vocab, (lengths[i % len(lengths)],), generator=g).tolist() for i in range(n)]


def test_both_engines_generate_the_same_tokens_and_budgets():
    prompts = _prompts(9)
    budgets = [3, 1, 8, 5, 2, 7, 4, 6, 9]
    outs = {kind: Engine(tiny_model(), kind=kind, chunk_tokens=32, max_batch=4).generate(prompts, budgets)
            for kind in ("fused", "chunked")}
    assert outs["fused"] == outs["chunked"]
    assert [len(o) for o in outs["fused"]] == budgets


def test_fused_runs_one_forward_per_step_and_chunked_two_on_mixed_steps():
    for kind, mixed_forwards in (("fused", 1), ("chunked", 2)):
        engine = Engine(tiny_model(), kind=kind, chunk_tokens=16, max_batch=4)
        engine.generate(_prompts(6), 6)
        kinds = {r.kind for r in engine.step_log}
        assert "mixed" in kinds
        assert all(r.n_forwards == (mixed_forwards if r.kind == "mixed" else 1) for r in engine.step_log)


def test_step_interface_stamps_every_token_and_frees_the_pool():
    t = [0.0]

    def clock():
        t[0] += 1.0
        return t[0]

    engine = Engine(tiny_model(), kind="fused", chunk_tokens=16, max_batch=2, clock=clock)
    reqs = [engine.add_request(p, 3) for p in _prompts(4)]
    while engine.has_work():
        engine.step()
    for r in reqs:
        assert r.arrival <= r.admitted <= r.token_times[0] <= r.finished
        assert len(r.token_times) == len(r.output) == 3
        assert r.token_times == sorted(r.token_times)
    assert engine.pool.num_free_blocks == engine.pool.num_blocks
    assert engine.step() is None  # idle


@pytest.mark.parametrize("prompt,budget,message", [
    ([], 4, "empty prompt"),
    ([1, 2, 512], 4, "outside the vocabulary"),
    ([1, -1], 4, "outside the vocabulary"),
    ([1, 2], 0, ">= 1"),
    ([1, 2], 8191, "maximum length"),
    (["a"], 4, "integers"),
])
def test_bad_requests_are_refused_by_name_and_others_keep_running(prompt, budget, message):
    engine = Engine(tiny_model(), kind="fused", chunk_tokens=16)
    good = engine.add_request([1, 2, 3], 4)
    engine.step()
    with pytest.raises(ValueError, match=message):
        engine.add_request(prompt, budget)
    engine.run_until_done()
    assert len(good.output) == 4 and engine.pool.num_free_blocks == engine.pool.num_blocks


def test_request_bigger_than_the_whole_pool_is_refused():
    engine = Engine(tiny_model(), kind="fused", num_blocks=4, chunk_tokens=16)
    with pytest.raises(ValueError, match="whole pool has 4"):
        engine.add_request(list(range(100)), 4)


def test_unknown_engine_and_backend_names():
    with pytest.raises(ValueError, match="unknown engine kind"):
        Engine(tiny_model(), kind="speculative")
    with pytest.raises(ValueError, match="unknown attention backend"):
        Engine(tiny_model(), attention="flash")


def test_generate_names_the_bad_prompt_and_queues_nothing():
    engine = Engine(tiny_model(), kind="chunked")
    with pytest.raises(ValueError, match="prompt 1: empty prompt"):
        engine.generate([[1, 2], []], 3)
    assert not engine.has_work()


def test_step_records_count_the_kv_positions_attention_reads():
    engine = Engine(tiny_model(), kind="fused", chunk_tokens=6, max_batch=4)
    engine.add_request([1, 2, 3], 3)
    engine.add_request([4, 5, 6, 7, 8], 3)
    first = engine.step()  # chunks: [0,3) of the first, [0,3) of the second
    assert (first.kind, first.chunk_kv_tokens, first.decode_kv_tokens) == ("chunk", 3 + 3, 0)
    second = engine.step()  # first decodes at context 4; second's last chunk ends at 5
    assert (second.kind, second.chunk_kv_tokens, second.decode_kv_tokens) == ("mixed", 5, 4)


def test_step_records_time_each_forward():
    for kind, forwards in (("fused", 1), ("chunked", 2)):
        engine = Engine(tiny_model(), kind=kind, chunk_tokens=6, max_batch=4)
        engine.add_request([1, 2, 3], 3)
        engine.add_request([4, 5, 6, 7, 8], 3)
        engine.step()
        mixed = engine.step()
        assert mixed.kind == "mixed" and len(mixed.forward_durations) == forwards
        assert abs(sum(mixed.forward_durations) - mixed.duration) < 1e-9
