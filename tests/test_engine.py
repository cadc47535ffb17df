import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dataclasses import replace
import torch

from fusedlib.config import PARTS, PRESETS, EngineConfig
from fusedlib.engine import Engine, RequestsFailed, StepRecord
from fusedlib.weights import random_model
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


@pytest.mark.slow(1)
def test_both_engines_agree_at_the_largest_batch_and_budget():
    """max_batch 256 and chunk_tokens 8192: a mixed step carries thousands of prompt positions
    beside hundreds of decode rows, and the two engines still generate the same tokens."""
    prompts = _prompts(270, seed=3, lengths=(1, 5, 17, 40, 90))
    budgets = [2 + (7 * i) % 5 for i in range(270)]
    outs = {}
    for kind in ("fused", "chunked"):
        engine = Engine(tiny_model(), kind=kind, max_batch=256, chunk_tokens=8192, warmup=False)
        with engine.record_steps() as steps:
            outs[kind] = engine.generate(prompts, budgets)
        assert engine.pool.num_free_blocks == engine.pool.num_blocks and engine.num_finished == 270
        assert max(r.n_decode for r in steps) == 256 and max(r.n_chunk_tokens for r in steps) > 4096
    assert outs["fused"] == outs["chunked"] and [len(o) for o in outs["fused"]] == budgets


@pytest.mark.parametrize("kind", ["fused", "chunked"])
def test_128_token_kv_blocks_give_the_tokens_of_16_token_ones(kind):
    """Part 12's KV blocks: prompts past one and two 128-token blocks, chunked across them, in a
    pool of four such blocks (so requests wait for blocks; freed ones are NaN-filled and handed
    out again) give the tokens of 16-token blocks, and every block is free after."""
    prompts, budgets = _prompts(8, seed=5, lengths=(1, 130, 17, 250)), [3, 1, 8, 5, 2, 7, 4, 6]
    settings = dict(kind=kind, chunk_tokens=48, max_batch=4, overlap=True)
    at16 = Engine(tiny_model(), **settings).generate(prompts, budgets)
    engine = Engine(tiny_model(), **settings, kv_block_size=128, num_blocks=4)
    engine.pool.poison_freed = True
    held = []  # steps after which a request waited with a batch row free: for blocks
    engine.observers.append(lambda r: held.append(len(engine.scheduler.running) < 4 and bool(engine.scheduler.waiting)))
    assert engine.generate(prompts, budgets) == at16
    assert engine.pool.kv.shape[3] == 128 and engine.pool.num_free_blocks == engine.pool.num_blocks == 4
    assert any(held)


def test_fused_runs_one_forward_per_step_and_chunked_two_on_mixed_steps():
    for kind, mixed_forwards in (("fused", 1), ("chunked", 2)):
        engine = Engine(tiny_model(), kind=kind, chunk_tokens=16, max_batch=4)
        with engine.record_steps() as steps:
            engine.generate(_prompts(6), 6)
        assert "mixed" in {r.kind for r in steps}
        assert all(r.n_forwards == (mixed_forwards if r.kind == "mixed" else 1) for r in steps)


def test_overlap_generates_the_same_tokens_for_both_engines():
    prompts = _prompts(9)
    budgets = [3, 1, 8, 5, 2, 7, 4, 6, 9]
    for kind in ("fused", "chunked"):
        waits = Engine(tiny_model(), kind=kind, chunk_tokens=32, max_batch=4).generate(prompts, budgets)
        engine = Engine(tiny_model(), kind=kind, chunk_tokens=32, max_batch=4, overlap=True)
        assert engine.generate(prompts, budgets) == waits
        assert engine.pool.num_free_blocks == engine.pool.num_blocks and engine.num_finished == len(prompts)


def test_overlap_launches_the_next_forward_before_reading_tokens_back():
    """Per step: launch, then commit the previous step's tokens; without overlap each
    forward's tokens are committed before anything else runs."""
    for overlap, expected in ((False, ["forward", "record"] * 3),
                              (True, ["forward", "forward", "record", "forward", "record", "record"])):
        model = _fresh_tiny()
        engine = Engine(model, kind="fused", chunk_tokens=16, max_batch=2, overlap=overlap, warmup=False)
        order, forward, record = [], model.forward, engine.scheduler.record
        model.forward = lambda *a: order.append("forward") or forward(*a)
        engine.scheduler.record = lambda *a: order.append("record") or record(*a)
        r = engine.add_request([1, 2, 3], 3)
        engine.step()
        assert len(r.output) == (0 if overlap else 1)  # with overlap the token is still in transit
        assert r.num_generated == 1
        engine.run_until_done()
        assert order == expected and len(r.output) == 3 and r.finished is not None


@pytest.mark.parametrize("overlap", [False, True])
def test_step_interface_stamps_every_token_and_frees_the_pool(overlap):
    t = [0.0]

    def clock():
        t[0] += 1.0
        return t[0]

    engine = Engine(tiny_model(), kind="fused", chunk_tokens=16, max_batch=2, overlap=overlap)
    engine.clock = clock
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
    (None, 4, "prompt must be a sequence of token ids, got NoneType"),
    (7, 4, "prompt must be a sequence of token ids, got int"),
    ("abc", 4, "prompt must be a sequence of token ids, got str"),
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


def test_generate_names_the_bad_prompt_and_queues_nothing():
    engine = Engine(tiny_model(), kind="chunked")
    with pytest.raises(ValueError, match="prompt 1: empty prompt"):
        engine.generate([[1, 2], []], 3)
    assert not engine.has_work()


@pytest.mark.parametrize("model", [None, "tiny"])
def test_a_model_argument_that_is_no_model_is_refused_by_name(model):
    with pytest.raises(TypeError, match=f"model must be a Qwen2Model .*, got {type(model).__name__}$"):
        Engine(model)


TRITON_ON_CPU = """
from fusedlib.engine import Engine
from fusedlib.weights import load_model
for settings in ({"attention": "triton"}, {"attention": "triton-splitkv"}, {"attention": "triton-parallel"},
                 {"attention": "triton-hopper"}, {"fused_ops": True}):
    try:
        Engine(load_model("tiny"), **settings)
    except ValueError as error:
        print(error)
"""


@pytest.mark.slow(2)
def test_triton_on_a_cpu_model_without_the_interpreter_is_refused_in_one_line():
    """The tests run Triton on its interpreter; a user who did not set TRITON_INTERPRET has
    kernels built for a GPU, and a CPU engine with Triton attention or fused ops is refused at
    construction, saying how, before any warm-up forward fails (a fresh process: Triton reads
    the variable when the kernels are imported)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "-c", TRITON_ON_CPU], env=env, cwd=Path(__file__).parents[1],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        f"{setting} on a cpu model needs Triton's interpreter: set TRITON_INTERPRET=1 before importing fusedlib "
        "(or leave it unset: eager torch)"
        for setting in ("attention='triton'", "attention='triton-splitkv'", "attention='triton-parallel'",
                        "attention='triton-hopper'", "fused_ops=True")]


def test_step_records_count_the_kv_positions_attention_reads():
    engine = Engine(tiny_model(), kind="fused", chunk_tokens=6, max_batch=4)
    engine.add_request([1, 2, 3], 3)
    engine.add_request([4, 5, 6, 7, 8], 3)
    first = engine.step()  # chunks: [0,3) of the first, [0,3) of the second
    assert (first.kind, first.chunk_kv_tokens, first.decode_kv_tokens) == ("chunk", 3 + 3, 0)
    second = engine.step()  # first decodes at context 4; second's last chunk ends at 5
    assert (second.kind, second.chunk_kv_tokens, second.decode_kv_tokens) == ("mixed", 5, 4)


@pytest.mark.parametrize("setting,value,message", [
    ("max_batch", 2.5, "max_batch must be an integer >= 1, got 2.5"),
    ("max_batch", 0, "max_batch must be an integer >= 1"),
    ("max_batch", True, "max_batch must be an integer"),
    ("chunk_tokens", "512", "chunk_tokens must be an integer >= 1, got '512'"),
    ("num_blocks", 0, "num_blocks must be an integer >= 1"),
    ("kv_block_size", 0, "kv_block_size must be an integer >= 1, got 0"),
    ("kv_block_size", 48, "kv_block_size must be a power of two, got 48"),
    ("kv_block_size", True, "kv_block_size must be an integer >= 1, got True"),
    ("kv_block_size", "16", "kv_block_size must be an integer >= 1, got '16'"),
    ("pool_gib", -1, "pool_gib must be a number > 0"),
    ("cuda_graphs", 1, "cuda_graphs must be True, False or None"),
    ("overlap", "yes", "overlap must be True, False or None"),
    ("whole_graphs", "on", "whole_graphs must be True, False or None"),
    ("fused_ops", 1, "fused_ops must be True, False or None"),
    ("warmup", None, "warmup must be True or False"),
    ("kind", "speculative", "unknown engine kind 'speculative'"),
    ("attention", "flash", "unknown attention backend 'flash'"),
    ("max_batchh", 8, "unknown engine setting 'max_batchh'"),
])
def test_bad_settings_are_refused_by_name(setting, value, message):
    with pytest.raises(ValueError, match=message):
        Engine(tiny_model(), **{setting: value})
    if setting != "max_batchh":  # the config refuses the same value on its own
        with pytest.raises(ValueError, match=message):
            EngineConfig(**{setting: value})


def test_config_and_keywords_build_the_same_engine():
    config = EngineConfig(kind="chunked", max_batch=3, chunk_tokens=16, num_blocks=40, warmup=False)
    by_config = Engine(tiny_model(), config=config)
    by_keywords = Engine(tiny_model(), kind="chunked", max_batch=3, chunk_tokens=16, num_blocks=40, warmup=False)
    overridden = Engine(tiny_model(), config=EngineConfig(kind="fused"), kind="chunked", max_batch=3,
                        chunk_tokens=16, num_blocks=40, warmup=False)
    assert by_config.config == by_keywords.config == overridden.config == config.for_device("cpu")
    assert by_config.pool.num_blocks == 40 and by_config.scheduler.max_batch == 3
    prompts = _prompts(5)
    assert by_config.generate(prompts, 4) == by_keywords.generate(prompts, 4)


def test_whole_graphs_need_decode_graphs():
    with pytest.raises(ValueError, match="whole_graphs=True needs CUDA graphs, off here \\(set False"):
        EngineConfig(whole_graphs=True, cuda_graphs=False)
    EngineConfig(whole_graphs=True)  # cuda_graphs unset: decided by the device
    # Resolved off, the error names the causes: the device, or the torch backend.
    with pytest.raises(ValueError, match="whole_graphs=True needs CUDA graphs, .* unset on a CPU or torch backend"):
        Engine(tiny_model(), whole_graphs=True)
    with pytest.raises(ValueError, match="whole_graphs=True needs CUDA graphs"):
        EngineConfig(whole_graphs=True, attention="torch").for_device("cuda")
    assert EngineConfig(whole_graphs=True).for_device("cuda").cuda_graphs


def test_unset_settings_take_the_devices_path():
    """Left unset, a GPU engine runs part 12's path (part 10's switches, part 12's kernels) in the
    default 16-token KV blocks (part 12 takes 128) and a CPU engine the eager torch reference;
    whatever is set explicitly is kept, and graphs stay off where they cannot run."""
    assert EngineConfig().for_device("cuda") == EngineConfig(
        attention="triton-hopper", cuda_graphs=True, whole_graphs=True, fused_ops=True, overlap=True) == \
        replace(PARTS["part12"], max_batch=32, chunk_tokens=512, kv_block_size=16)
    assert PARTS["part10"] == replace(PARTS["part12"], attention="triton-parallel", max_batch=32, chunk_tokens=512,
                                      kv_block_size=16)
    assert [p.kv_block_size for p in PARTS.values()] == [16] * 5 + [128]
    assert EngineConfig().for_device("cpu") == EngineConfig(
        attention="torch", cuda_graphs=False, whole_graphs=False, fused_ops=False, overlap=False)
    assert Engine(tiny_model(), warmup=False).config == EngineConfig(warmup=False).for_device("cpu")
    torch_on_gpu = EngineConfig(attention="torch").for_device("cuda")
    assert (torch_on_gpu.cuda_graphs, torch_on_gpu.whole_graphs, torch_on_gpu.overlap) == (False, False, True)
    part9 = EngineConfig(attention="triton-splitkv", whole_graphs=False, overlap=False).for_device("cuda")
    assert (part9.cuda_graphs, part9.whole_graphs, part9.overlap) == (True, False, False)
    eager = EngineConfig(attention="triton", cuda_graphs=False).for_device("cuda")
    assert (eager.cuda_graphs, eager.whole_graphs) == (False, False)
    resolved = EngineConfig().for_device("cuda")
    assert resolved.for_device("cpu") == resolved  # nothing left to resolve


@pytest.mark.parametrize("prompt", [[True, False], [1, True]])
def test_boolean_prompts_are_refused(prompt):
    engine = Engine(tiny_model(), warmup=False)
    with pytest.raises(ValueError, match="not booleans"):
        engine.add_request(prompt, 2)
    assert not engine.has_work()


def test_the_engine_keeps_no_step_history_unless_asked():
    engine = Engine(tiny_model(), kind="fused", chunk_tokens=16, max_batch=4)
    seen = []
    engine.observers.append(seen.append)
    with engine.record_steps() as steps:
        engine.generate(_prompts(3), 3)
    engine.generate(_prompts(3), 3)  # after the block: recorded by the observer only
    assert steps and len(seen) > len(steps) and seen[:len(steps)] == steps
    assert engine.observers == [seen.append]  # record_steps detached itself
    assert not any(isinstance(v, list) and v and isinstance(v[0], StepRecord) for v in vars(engine).values())


def test_the_sampler_can_be_replaced_from_outside():
    engine = Engine(tiny_model(), kind="chunked", chunk_tokens=16, max_batch=4)
    expected = engine.generate(_prompts(4), 5)
    calls = []
    greedy = engine.sample
    engine.sample = lambda logits, requests: calls.append([r.rid for r in requests]) or greedy(logits, requests)
    assert engine.generate(_prompts(4), 5) == expected
    assert sum(len(c) for c in calls) == 4 * 5  # every sampled token went through it


class _FakeEvent:
    def __init__(self, t):
        self.t, self.synced = t, False

    def synchronize(self):
        self.synced = True

    def elapsed_time(self, later):  # milliseconds, as CUDA events report
        return (later.t - self.t) * 1e3


def test_step_records_carry_an_event_around_each_forward():
    """On CPU there is no GPU time (None); with an event source (CUDA's, or a fake here) a
    step holds one event before its first forward and one after its last, read on demand."""
    for kind, forwards in (("fused", 1), ("chunked", 2)):
        engine = Engine(tiny_model(), kind=kind, chunk_tokens=6, max_batch=4)
        engine.add_request([1, 2, 3], 3)
        engine.add_request([4, 5, 6, 7, 8], 3)
        cpu = engine.step()
        assert cpu.gpu_s() is None
        ticks = iter(range(100))
        # Timing events only; the copy event (timing=False) stays as on CPU: none.
        engine._event = lambda timing=True: _FakeEvent(0.5 * next(ticks)) if timing else None
        mixed = engine.step()
        assert mixed.kind == "mixed" and mixed.n_forwards == forwards and len(mixed.events) == 2
        assert mixed.gpu_s() == 0.5
        assert mixed.events[-1].synced  # read after the last event completed


class _SlowCopy:
    """A device-to-host copy event whose wait takes `seconds` (what the host spends on a GPU's tokens)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def synchronize(self):
        time.sleep(self.seconds)


@pytest.mark.parametrize("kind,overlap", [("fused", False), ("chunked", False), ("fused", True)])
def test_host_time_excludes_the_wait_for_the_gpus_tokens(kind, overlap):
    engine = Engine(tiny_model(), kind=kind, chunk_tokens=6, max_batch=4, overlap=overlap)
    with engine.record_steps() as steps:
        engine.generate(_prompts(3), 3)
    assert all(0 < r.host_s <= r.duration for r in steps)  # on CPU: the whole step, less nothing
    engine._event = lambda timing=True: None if timing else _SlowCopy(0.02)
    with engine.record_steps() as steps:
        engine.generate(_prompts(3), 3)
    for r in steps:  # each forward's tokens waited for once (with overlap: the previous step's, or none)
        waits = r.n_forwards if not overlap else 0
        assert r.duration - r.host_s >= 0.02 * waits - 1e-4 and r.host_s > 0
    assert sum(r.duration - r.host_s for r in steps) >= 0.02 * (len(steps) - 1)


def _fresh_tiny():
    return random_model(PRESETS["tiny"], init_std=0.2)


@pytest.mark.parametrize("kind,overlap", [("fused", False), ("chunked", False), ("fused", True), ("chunked", True)])
def test_a_failing_step_fails_its_requests_and_the_engine_serves_the_rest(kind, overlap):
    model = _fresh_tiny()
    prompts = _prompts(4)
    alone = [Engine(model, kind=kind, chunk_tokens=16, max_batch=2).generate([p], 5)[0] for p in prompts]
    engine = Engine(model, kind=kind, chunk_tokens=16, max_batch=2, overlap=overlap)
    reqs = [engine.add_request(p, 5) for p in prompts]
    engine.step()
    real_forward = model.forward

    def kernel_error(*args, **kwargs):
        raise RuntimeError("injected kernel error")

    model.forward = kernel_error
    with pytest.raises(RequestsFailed, match="injected kernel error") as failure:
        engine.step()
    model.forward = real_forward
    failed = failure.value.requests
    assert failed and {r.rid for r in failed} <= {0, 1}  # only the running pair was in the step
    for r in failed:
        assert r.error == "RuntimeError: injected kernel error" and r.finished is not None and not r.blocks
        assert r.output == alone[r.rid][:1] and r.pending == 0  # the first step's token was committed
    assert engine.pool.num_free_blocks == engine.pool.num_blocks - sum(len(r.blocks) for r in reqs)
    engine.run_until_done()
    for r, expected in zip(reqs, alone):
        if r not in failed:
            assert r.error is None and r.output == expected
    assert engine.pool.num_free_blocks == engine.pool.num_blocks


@pytest.mark.parametrize("overlap", [False, True])
def test_generate_serves_every_other_prompt_then_names_the_failed_one(overlap):
    model = _fresh_tiny()
    poison = model.config.vocab_size - 1
    real_forward = model.forward

    def fails_on_poison(input_ids, *args):
        if (input_ids == poison).any():
            raise RuntimeError("device-side assert")
        return real_forward(input_ids, *args)

    model.forward = fails_on_poison
    engine = Engine(model, kind="fused", chunk_tokens=16, max_batch=1, warmup=False, overlap=overlap)
    good = _prompts(2)
    with pytest.raises(RequestsFailed, match=r"prompts \[1\] failed: RuntimeError: device-side assert") as failure:
        engine.generate([good[0], [3, poison, 4], good[1]], 4)
    assert [r.prompt for r in failure.value.requests] == [[3, poison, 4]]
    assert not engine.has_work() and engine.pool.num_free_blocks == engine.pool.num_blocks
    assert engine.generate(good, 4) == Engine(model, kind="fused", chunk_tokens=16, max_batch=1).generate(good, 4)


@pytest.mark.parametrize("overlap", [False, True])
def test_the_gates_gap_recorder_samples_greedily_and_keeps_each_tokens_gap(overlap):
    from fusedlib.bench.gates import LogitGapRecorder

    prompts = _prompts(4)
    expected = Engine(tiny_model(), kind="chunked", chunk_tokens=16, max_batch=4).generate(prompts, 3)
    engine = Engine(tiny_model(), kind="chunked", chunk_tokens=16, max_batch=4, overlap=overlap)
    recorder = LogitGapRecorder(engine)
    assert engine.generate(prompts, 3) == expected
    assert sorted(recorder.gaps) == [(rid, i) for rid in range(4) for i in range(3)]
    assert all(gap >= 0 for gap in recorder.gaps.values()) and max(recorder.gaps.values()) > 0


@pytest.mark.parametrize("kind", ["fused", "chunked"])
@pytest.mark.parametrize("whole", [False, True])
def test_overlap_feeds_the_graphs_static_buffers(kind, whole):
    """With overlap, decode rows' tokens arrive on the device: through the graphs' static
    buffers (eager here, capture=False) the tokens are still the plain engine's, with decode-only
    forwards graphed (part 9) or every forward (where the decode rows move after the padded chunks)."""
    from fusedlib.graphs import WholeGraphs

    prompts, budgets = _prompts(7, seed=2), [2 + i % 5 for i in range(7)]
    plain = Engine(tiny_model(), kind=kind, chunk_tokens=32, max_batch=4).generate(prompts, budgets)
    engine = Engine(tiny_model(), kind=kind, chunk_tokens=32, max_batch=4, overlap=True)
    engine.graphs = graphs = WholeGraphs(engine.model, engine.pool, engine.backend, 4, 32 if whole else 0,
                                         capture=False, chunk_buckets=(28,))
    used, run = [], graphs.run
    graphs.run = lambda batch: used.append((batch.num_decode > 0 and bool(batch.host.chunk_requests),
                                            len(batch.host.fed_rows) > 0)) or run(batch)
    assert engine.generate(prompts, budgets) == plain
    assert any(fed for _, fed in used)
    if whole and kind == "fused":  # mixed forwards with fed rows went through the whole graphs
        assert any(mixed and fed for mixed, fed in used)
    assert engine.pool.num_free_blocks == engine.pool.num_blocks
