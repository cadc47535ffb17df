import torch

from fusedlib.engine import Engine
from fusedlib.bench.peer import to_transformers
from tests.helpers import tiny_model


def test_logits_match_transformers_fp32():
    """Our packed forward over several prompts vs transformers on each prompt alone."""
    model = tiny_model()
    hf = to_transformers(model)
    engine = Engine(model, kind="fused", chunk_tokens=1024, warmup=False)
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(0, model.config.vocab_size, (n,), generator=g).tolist() for n in (1, 7, 16, 33, 100)]
    reqs = [engine.add_request(p, 1) for p in prompts]
    plan = engine.scheduler.plan(0.0)
    assert plan.kind == "chunk" and len(plan.chunks) == len(prompts)
    batch = engine._pack(plan.chunks, [])
    # logits at every packed position, not only the sampled ones
    every = torch.arange(batch.num_tokens)
    ours = model(batch.input_ids, batch.positions, batch.meta, engine.pool.kv, engine.backend, every)
    start = 0
    worst = 0.0
    for p in prompts:
        with torch.inference_mode():
            ref = hf(torch.tensor([p])).logits[0].float()
        worst = max(worst, (ours[start : start + len(p)] - ref).abs().max().item())
        start += len(p)
    assert worst <= 1e-4, worst
    assert len(reqs) == len(prompts)


def test_qkv_and_gate_up_round_trip_through_hf_names():
    from fusedlib.bench.peer import to_hf_state_dict
    from fusedlib.weights import from_hf_state_dict

    model = tiny_model()
    back = from_hf_state_dict(to_hf_state_dict(model), model.config)
    for name, tensor in model.state_dict().items():
        assert torch.equal(back[name], tensor), name
