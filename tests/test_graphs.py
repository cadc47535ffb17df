"""The CUDA graphs' static buffers and padding (decode-only forwards, or every forward), checked
on CPU with each graph replaced by an eager run over the same buffers (capture=False). Capture
itself needs a GPU: test_graphs_on_gpu runs there (FUSEDLIB_GPU_TESTS=1), skipped elsewhere."""
import os

import pytest
import torch

from fusedlib.engine import Engine
from fusedlib.graphs import WholeGraphs
from tests.helpers import tiny_model


def _prompts(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 512, (3 + 7 * i % 40,), generator=g).tolist() for i in range(n)]


@pytest.mark.parametrize("kind", ["fused", "chunked"])
def test_static_decode_path_gives_the_same_tokens(kind):
    # the first request outlives the others, so the last steps decode one row (bucket 1)
    prompts, budgets = _prompts(11), [16] + [2 + i % 7 for i in range(1, 11)]
    plain = Engine(tiny_model(), kind=kind, chunk_tokens=32, max_batch=8).generate(prompts, budgets)
    engine = Engine(tiny_model(), kind=kind, chunk_tokens=32, max_batch=8)
    engine.pool.poison_freed = True
    engine.graphs = WholeGraphs(engine.model, engine.pool, engine.backend, 8, capture=False,
                                decode_buckets=(1, 2, 4))
    used = []
    real_run = engine.graphs.run
    engine.graphs.run = lambda batch: used.append(engine.graphs._bucket(batch)) or real_run(batch)
    assert engine.generate(prompts, budgets) == plain
    assert engine.graphs.buckets == [(0, 1), (0, 2), (0, 4), (0, 8)]  # decode only: no chunk budget
    assert set(used) == set(engine.graphs.buckets)  # every bucket replayed
    assert engine.pool.num_free_blocks == engine.pool.num_blocks


def test_padding_rows_write_only_the_scratch_block():
    engine = Engine(tiny_model(), kind="fused", chunk_tokens=64, max_batch=8)
    graphs = WholeGraphs(engine.model, engine.pool, engine.backend, 8, capture=False)
    reqs = [engine.add_request(p, 5) for p in _prompts(3)]
    engine.step()  # prefill all three
    before = engine.pool.kv.clone()
    plan = engine.scheduler.plan(0.0)
    batch = engine._pack([], plan.decodes)
    graphs.run(batch)  # 3 live rows in bucket 4: one padding row
    changed = (engine.pool.kv != before).flatten(3).any(-1)  # [layer, k/v, block]
    owned = {b for r in reqs for b in r.blocks} | {engine.pool.scratch_block}
    assert set(changed.any(0).any(0).nonzero().flatten().tolist()) <= owned
    assert changed[:, :, engine.pool.scratch_block].all()


# The tiny model lives on the CPU: its Triton kernels run only on the interpreter (the GPU run of
# the test files, FUSEDLIB_GPU_TESTS=1, turns it off; test_engine_gpu covers the graphs there).
CPU_TRITON = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                reason="Triton kernels on a CPU model need the interpreter")


@pytest.mark.parametrize("kind,fused_ops,attention", [("fused", False, "torch"), ("chunked", False, "torch"),
                                                      pytest.param("fused", True, "triton-parallel",
                                                                   marks=[CPU_TRITON, pytest.mark.slow(7)])])
def test_static_whole_path_gives_the_same_tokens(kind, fused_ops, attention):
    """Every forward through WholeGraphs' two padded parts, attention included (chunk
    positions padded to a chunk bucket beside all 4 decode rows for the fused engine, none for
    the chunked one, or decode rows alone): token for token what the plain engine generates.
    Four requests are enough for both chunk buckets, padded decode rows beside chunks and
    decode-only forwards; each forward's rows cost seconds on the interpreter."""
    prompts, budgets = _prompts(4, seed=1), [2, 3, 4, 5]
    settings = dict(kind=kind, chunk_tokens=16, max_batch=4, warmup=False)
    plain = Engine(tiny_model(), **settings).generate(prompts, budgets)
    engine = Engine(tiny_model(), **settings, attention=attention, fused_ops=fused_ops)
    engine.pool.poison_freed = True
    engine.graphs = WholeGraphs(engine.model, engine.pool, engine.backend, 4, 16, capture=False,
                                mixed=kind == "fused", chunk_buckets=(12,), fused_ops=fused_ops)
    used = []
    real_run = engine.graphs.run
    engine.graphs.run = lambda batch: used.append(engine.graphs._bucket(batch)) or real_run(batch)
    with engine.record_steps() as steps:
        assert engine.generate(prompts, budgets) == plain
    assert len(used) == sum(r.n_forwards for r in steps)  # every forward went through a graph
    beside = 4 if kind == "fused" else 0
    assert [b for b in engine.graphs.buckets if b[0]] == [(12, beside), (16, beside)]
    assert {(12, beside), (16, beside)} <= set(used) and any(b[0] == 0 for b in used)
    assert engine.pool.num_free_blocks == engine.pool.num_blocks


@pytest.mark.parametrize("attention", ["torch", pytest.param("triton-hopper", marks=[CPU_TRITON, pytest.mark.slow(4)])])
def test_static_whole_path_over_128_token_blocks(attention):
    """Part 12's KV blocks through WholeGraphs' buffers, under the torch reference and part 12's
    attention kernels: a prompt past one 128-token block, chunked across it, then decode rows
    beside padding rows (on the scratch block's first slot), gives the plain engine's tokens at
    16-token blocks. (The fused ops' rotary kernel writing 128-token blocks is tests/ops'; through
    a whole engine here it would cost seconds a step on the interpreter.)"""
    g = torch.Generator().manual_seed(7)
    prompts, budgets = [torch.randint(0, 512, (n,), generator=g).tolist() for n in (135, 4)], [3, 4]
    settings = dict(kind="fused", chunk_tokens=64, max_batch=2, warmup=False)
    plain = Engine(tiny_model(), **settings).generate(prompts, budgets)
    engine = Engine(tiny_model(), **settings, attention=attention, kv_block_size=128, num_blocks=6)
    engine.pool.poison_freed = True
    engine.graphs = WholeGraphs(engine.model, engine.pool, engine.backend, 2, 64, capture=False, chunk_buckets=(32,))
    assert (engine.graphs.pad_slot, engine.graphs.max_context_len) == (6 * 128, 6 * 128)  # scratch block 6
    used = []
    real_run = engine.graphs.run
    engine.graphs.run = lambda batch: used.append(engine.graphs._bucket(batch)) or real_run(batch)
    with engine.record_steps() as steps:
        assert engine.generate(prompts, budgets) == plain
    assert len(used) == sum(r.n_forwards for r in steps) and {(64, 2), (32, 2), (0, 1)} <= set(used)
    assert engine.pool.num_free_blocks == engine.pool.num_blocks


@pytest.mark.slow(1)
@pytest.mark.parametrize("kind", ["fused", "chunked"])
def test_static_path_at_the_largest_sizes(kind):
    """256 rows and an 8192-token budget: every forward through the graphs' buffers (decode
    buckets up to 256 rows, chunk buckets up to 8192 positions) serves the plain engine's
    tokens, rows joining and leaving the decode batch in every step."""
    g = torch.Generator().manual_seed(4)
    lengths = [1 + (37 * i) % 90 for i in range(300)]
    prompts = [torch.randint(0, 512, (n,), generator=g).tolist() for n in lengths]
    budgets = [1 + (13 * i) % 9 for i in range(300)]
    settings = dict(kind=kind, max_batch=256, chunk_tokens=8192, warmup=False)
    plain = Engine(tiny_model(), **settings).generate(prompts, budgets)
    engine = Engine(tiny_model(), **settings)
    engine.graphs = WholeGraphs(engine.model, engine.pool, engine.backend, 256, 8192, capture=False,
                                mixed=kind == "fused")
    used = []
    real_run = engine.graphs.run
    engine.graphs.run = lambda batch: used.append(engine.graphs._bucket(batch)) or real_run(batch)
    with engine.record_steps() as steps:
        assert engine.generate(prompts, budgets) == plain
    assert len(used) == sum(r.n_forwards for r in steps)
    assert max(d for c, d in used if not c) > 128 and max(c for c, _ in used) == 8192
    assert engine.pool.num_free_blocks == engine.pool.num_blocks


def test_whole_padding_writes_only_the_scratch_block():
    """Two prompts' chunks padded up to 64 positions beside 3 decode rows padded up to 8: the
    logits are the plain forward's and only owned blocks and the scratch block change."""
    engine = Engine(tiny_model(), kind="fused", chunk_tokens=64, max_batch=8)
    graphs = WholeGraphs(engine.model, engine.pool, engine.backend, 8, 64, capture=False)
    prompts = _prompts(5)
    reqs = [engine.add_request(p, 5) for p in prompts[:3]]
    engine.step()  # prefill three: they decode next
    reqs += [engine.add_request(p[:9], 5) for p in prompts[3:]]
    plan = engine.scheduler.plan(0.0)
    batch = engine._pack(plan.chunks, plan.decodes)
    assert len(plan.chunks) == 2 and len(plan.decodes) == 3 and graphs._bucket(batch) == (64, 8)
    before = engine.pool.kv.clone()
    logits = graphs.run(batch)
    want = engine.model(batch.input_ids, batch.positions, batch.meta, engine.pool.kv, engine.backend,
                        batch.logit_indices, engine.config.fused_ops)
    assert logits.shape == want.shape == (5, engine.model.config.vocab_size)
    assert torch.allclose(logits, want, atol=1e-5)
    changed = (engine.pool.kv != before).flatten(3).any(-1)
    owned = {b for r in reqs for b in r.blocks} | {engine.pool.scratch_block}
    assert set(changed.any(0).any(0).nonzero().flatten().tolist()) <= owned
    assert changed[:, :, engine.pool.scratch_block].all()


def test_staged_sections_are_aligned_apart_and_inside_the_image():
    """Each bucket's inputs, then a step's largest changes: every section starts 16-byte aligned
    (Triton specializes pointers on it), after the one before, and ends inside the image."""
    import numpy as np

    engine = Engine(tiny_model(), kind="fused", chunk_tokens=64, max_batch=8, warmup=False)
    graphs = WholeGraphs(engine.model, engine.pool, engine.backend, 8, 64, capture=False)
    image_bytes = graphs.image["int64"].numel() * 8
    for layout in graphs.layouts.values():
        changes = graphs._changes(layout.end, 8, len(graphs.table))
        spans = [(first * np.dtype(dtype).itemsize, end * np.dtype(dtype).itemsize)
                 for sections in (layout, changes) for dtype, first, end in sections.spans.values()]
        assert all(start % 16 == 0 for start, _ in spans)
        assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:]))
        assert spans[-1][1] <= image_bytes


def test_graphs_refused_without_cuda_or_with_torch_attention():
    with pytest.raises(ValueError, match="cuda_graphs"):
        Engine(tiny_model(), cuda_graphs=True)
    with pytest.raises(ValueError, match="whole_graphs"):
        Engine(tiny_model(), whole_graphs=True)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graph capture needs a GPU")
@pytest.mark.parametrize("fused_ops,attention", [(False, "triton"), (False, "triton-splitkv"),
                                                 (True, "triton-parallel")])
def test_graphs_on_gpu(fused_ops, attention):
    """Eager, decode-only forwards graphed, and every forward graphed serve the same tokens."""
    from fusedlib.config import PRESETS
    from fusedlib.weights import random_model

    model = random_model(PRESETS["tiny"], device="cuda", dtype=torch.float16, init_std=0.2)
    prompts, budgets = _prompts(20), [4 + i % 9 for i in range(20)]
    outs = []
    for graphs, whole in ((False, False), (True, False), (True, True)):
        engine = Engine(model, kind="fused", attention=attention, chunk_tokens=32, max_batch=8,
                        cuda_graphs=graphs, whole_graphs=whole, overlap=False, fused_ops=fused_ops)
        outs.append(engine.generate(prompts, budgets))
        assert engine.pool.num_free_blocks == engine.pool.num_blocks
    assert outs[1] == outs[0] and outs[2] == outs[0]
