"""The plain-PyTorch decode step (fusedlib.bench.plain), the anchor part 10 sets ours beside:
with the requests' cached keys and values copied out of the paged pool, its logits are our
model's for the same decode step (fp32 on the CPU), and bad fills are refused by name."""
import pytest
import torch

from fusedlib.attention import make_backend
from fusedlib.bench.plain import PlainDecode
from fusedlib.engine import Engine
from tests.helpers import tiny_model


def _decode_step(prompt_lengths):
    """An engine with one request per prompt length, every one decoding: (engine, batch)."""
    model = tiny_model()
    engine = Engine(model, kind="fused", max_batch=len(prompt_lengths), chunk_tokens=16, warmup=False)
    g = torch.Generator().manual_seed(1)
    for n in prompt_lengths:
        engine.add_request(torch.randint(0, model.config.vocab_size, (n,), generator=g).tolist(), 50)
    while any(r.prefilling for r in engine.scheduler.running) or engine.scheduler.waiting:
        engine.step()
    engine.step()  # one decode step more: every row past its prompt
    plan = engine.scheduler.plan(0.0)
    assert plan.kind == "decode" and len(plan.decodes) == len(prompt_lengths)
    return engine, engine._pack([], plan.decodes)


def test_the_plain_step_computes_our_decode_step():
    engine, batch = _decode_step([5, 23, 17])
    model, kv = engine.model, engine.pool.kv
    ours = model(batch.input_ids, batch.positions, batch.meta, kv, make_backend("torch"), batch.logit_indices)
    plain = PlainDecode(model, rows=3, cache_len=40)
    positions = batch.positions
    plain.fill(kv, [r.blocks for r in batch.host.decode_requests], positions.tolist())
    logits = plain.step(batch.input_ids, positions)
    assert logits.dtype == torch.float32 and logits.shape == ours.shape
    torch.testing.assert_close(logits, ours.float(), rtol=1e-4, atol=1e-4)
    # its own cache now holds this step's keys, where ours wrote them
    assert all(k[:, :, positions.max() + 1:].abs().max() == 0 for k in plain.k)


def test_fill_refuses_rows_it_cannot_hold():
    engine, batch = _decode_step([5, 9])
    blocks = [r.blocks for r in batch.host.decode_requests]
    plain = PlainDecode(engine.model, rows=2, cache_len=10)
    with pytest.raises(ValueError, match="one block list and one length per row"):
        plain.fill(engine.pool.kv, blocks[:1], [5])
    with pytest.raises(ValueError, match="no room for its new one"):
        plain.fill(engine.pool.kv, blocks, [5, 10])
