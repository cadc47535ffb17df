import pytest
import torch

from fusedlib.engine import Engine
from fusedlib.bench.peer import to_transformers
from tests.helpers import tiny_model


@pytest.mark.parametrize("fused_ops,attention", [(False, "torch"), (True, "torch"),
                                                  (True, "triton-balanced")])
def test_logits_match_transformers_fp32(fused_ops, attention):
    """Our packed forward over several prompts vs transformers on each prompt alone, with
    the PyTorch reference ops and with the fused Triton ops (on the interpreter here)."""
    model = tiny_model(fused_ops=fused_ops)
    hf = to_transformers(model)
    engine = Engine(model, kind="fused", chunk_tokens=1024, warmup=False, attention=attention)
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(0, model.config.vocab_size, (n,), generator=g).tolist() for n in (1, 7, 16, 33, 100)]
    for p in prompts:
        engine.add_request(p, 1)
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


def test_qkv_and_gate_up_round_trip_through_hf_names():
    from fusedlib.bench.peer import to_hf_state_dict
    from fusedlib.weights import from_hf_state_dict

    model = tiny_model()
    back = from_hf_state_dict(to_hf_state_dict(model), model.config)
    for name, tensor in model.state_dict().items():
        assert torch.equal(back[name], tensor), name


@pytest.mark.slow(10)
def test_fused_ops_and_reference_generate_the_same_tokens():
    """A whole generation (prompt chunks, mixed and decode steps, both engines' step kinds)
    with the fused ops and balanced decode attention, with and without the gate_up GEMM's
    activation epilogue (every step here has at most 64 rows), against the reference path."""
    g = torch.Generator().manual_seed(1)
    prompts = [torch.randint(0, 512, (n,), generator=g).tolist() for n in (1, 5, 17, 40, 3)]
    budgets = [6, 3, 9, 4, 7]
    for kind in ("fused", "chunked"):
        ref = Engine(tiny_model(), kind=kind, chunk_tokens=24, max_batch=4).generate(prompts, budgets)
        for gate_up_silu in (False, True):
            fused = Engine(tiny_model(fused_ops=True, gate_up_silu=gate_up_silu), kind=kind, chunk_tokens=24,
                           max_batch=4, attention="triton-balanced").generate(prompts, budgets)
            assert fused == ref, (kind, gate_up_silu)


def test_fused_ops_switch_reaches_every_layer(monkeypatch):
    """The model passes its switch to every layer part: with it on, each layer's two norms
    run as the fused add + norm op; with it off, none does."""
    from fusedlib import ops

    calls, real = [], ops.add_rms_norm
    monkeypatch.setattr(ops, "add_rms_norm", lambda *args: calls.append(1) or real(*args))
    for fused in (True, False):
        calls.clear()
        model = tiny_model(fused_ops=fused)
        Engine(model, warmup=False).generate([[1, 2, 3]], 1)
        assert model.fused_ops == fused and len(calls) == (2 * model.config.num_layers if fused else 0)


def test_gate_up_silu_switch_reaches_every_layer(monkeypatch):
    """With the switch on, every layer of a decode-sized forward asks for the one-kernel
    gate_up + activation and for its three other projections split over K (one launch
    each); off, or past SMALL_M_MAX rows, every layer takes cuBLAS and the activation kernel."""
    from fusedlib import ops
    from fusedlib.ops import gemm

    asked, asked_split, launched, split_launches = [], [], [], []
    real, real_linear, real_kernel = ops.gate_up_silu, ops.linear, gemm.split_k_kernel
    monkeypatch.setattr(ops, "gate_up_silu", lambda x, w, one: asked.append(one) or real(x, w, one))
    monkeypatch.setattr(ops, "linear", lambda x, w, one, cfg: asked_split.append(one) or real_linear(x, w, one, cfg))
    monkeypatch.setattr(gemm.activation, "silu_mul", lambda t, real=gemm.activation.silu_mul: launched.append(1) or real(t))
    monkeypatch.setattr(gemm, "split_k_kernel", type("Spy", (), {
        "__getitem__": lambda self, grid: split_launches.append(grid) or real_kernel[grid]})())
    for prompt_len, switch in ((3, True), (gemm.SMALL_M_MAX + 1, True), (3, False)):
        asked.clear(), asked_split.clear(), launched.clear(), split_launches.clear()
        model = tiny_model(fused_ops=True, gate_up_silu=switch)
        Engine(model, warmup=False, chunk_tokens=128).generate([list(range(1, prompt_len + 1))], 1)
        layers = model.config.num_layers
        assert asked == [switch] * layers and asked_split == [switch] * 3 * layers, (prompt_len, switch)
        one_kernel = switch and prompt_len <= gemm.SMALL_M_MAX
        assert len(launched) == (0 if one_kernel else layers), (prompt_len, switch)
        assert len(split_launches) == (3 * layers if one_kernel else 0), (prompt_len, switch)


def test_splitkv_decode_attention_generates_the_reference_tokens():
    """The engine with split-KV decode attention (Triton, on the interpreter here) against
    torch attention: prompt chunks, mixed and decode steps, token for token."""
    g = torch.Generator().manual_seed(2)
    prompts = [torch.randint(0, 512, (n,), generator=g).tolist() for n in (3, 20, 45)]
    budgets = [5, 3, 6]
    ref = Engine(tiny_model(), kind="fused", chunk_tokens=24, max_batch=4).generate(prompts, budgets)
    got = Engine(tiny_model(), kind="fused", chunk_tokens=24, max_batch=4,
                 attention="triton-splitkv").generate(prompts, budgets)
    assert got == ref
