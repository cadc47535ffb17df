from dataclasses import replace

import pytest
import torch

from fusedlib.config import PRESETS
from fusedlib.engine import Engine
from fusedlib.bench.hf import to_transformers
from fusedlib.ops.gemm import GATE_UP_BLOCK
from fusedlib.weights import random_model
from tests.helpers import tiny_model


def three_block_model():
    """The tiny model with an MLP of three gate_up layout blocks: the tiny one's single block reads
    the same interleaved or stacked, so a layout read wrongly would not show there."""
    return random_model(replace(PRESETS["tiny"], intermediate_size=3 * GATE_UP_BLOCK), init_std=0.2)


@pytest.mark.slow(3)
@pytest.mark.parametrize("fused_ops,attention", [(False, "torch"), (True, "torch"),
                                                  (True, "triton-parallel")])
def test_logits_match_transformers_fp32(fused_ops, attention):
    """Our packed forward over several prompts vs transformers on each prompt alone, with
    the PyTorch reference ops and with the fused Triton ops (on the interpreter here)."""
    model = three_block_model()
    hf = to_transformers(model)
    engine = Engine(model, kind="fused", chunk_tokens=1024, warmup=False, attention=attention, fused_ops=fused_ops)
    g = torch.Generator().manual_seed(0)
    # 69 positions: one, ragged, one whole 16-row tile and three tiles; past SMALL_M_MAX, so the
    # fused path's projections are cuBLAS's (the generation test below runs the Triton GEMMs).
    prompts = [torch.randint(0, model.config.vocab_size, (n,), generator=g).tolist() for n in (1, 7, 16, 45)]
    for p in prompts:
        engine.add_request(p, 1)
    plan = engine.scheduler.plan(0.0)
    assert plan.kind == "chunk" and len(plan.chunks) == len(prompts)
    batch = engine._pack(plan.chunks, [])
    # logits at every packed position, not only the sampled ones
    every = torch.arange(len(batch.input_ids))
    ours = model(batch.input_ids, batch.positions, batch.meta, engine.pool.kv, engine.backend, every, fused_ops)
    start = 0
    worst = 0.0
    for p in prompts:
        with torch.inference_mode():
            ref = hf(torch.tensor([p])).logits[0].float()
        worst = max(worst, (ours[start : start + len(p)] - ref).abs().max().item())
        start += len(p)
    assert worst <= 1e-4, worst


def test_qkv_and_gate_up_round_trip_through_hf_names():
    from fusedlib.bench.hf import to_hf_state_dict
    from fusedlib.weights import from_hf_state_dict

    model = three_block_model()
    back = from_hf_state_dict(to_hf_state_dict(model), model.config)
    for name, tensor in model.state_dict().items():
        assert torch.equal(back[name], tensor), name


@pytest.mark.slow(6)
def test_fused_ops_and_reference_generate_the_same_tokens():
    """A whole generation (prompt chunks, mixed and decode steps, both engines' step kinds)
    with the fused ops (the Triton GEMMs too: every step here has at most 64 rows) and balanced
    decode attention, against the reference path. No warm-up: on the interpreter it would double
    the Triton forwards, and the generation alone has every step kind."""
    g = torch.Generator().manual_seed(1)
    # A chunk-only step, a mixed one (the 20-token prompt's second chunk beside decode rows), then
    # decode steps; every forward's rows cost seconds on the interpreter.
    prompts = [torch.randint(0, 512, (n,), generator=g).tolist() for n in (1, 5, 20, 3)]
    budgets = [3, 2, 4, 3]
    for kind in ("fused", "chunked"):
        settings = dict(kind=kind, chunk_tokens=16, max_batch=4, warmup=False)
        ref = Engine(tiny_model(), **settings).generate(prompts, budgets)
        fused = Engine(tiny_model(), **settings, attention="triton-parallel", fused_ops=True).generate(prompts, budgets)
        assert fused == ref, kind


def test_fused_ops_switch_reaches_every_layer(monkeypatch):
    """The engine's switch reaches every layer: with it on, each layer's two norms run as the
    fused add + norm op; with it off, none does."""
    from fusedlib import ops

    calls, real = [], ops.add_rms_norm
    monkeypatch.setattr(ops, "add_rms_norm", lambda *args: calls.append(1) or real(*args))
    for fused in (True, False):
        calls.clear()
        model = tiny_model()
        Engine(model, warmup=False, fused_ops=fused).generate([[1, 2, 3]], 1)
        assert len(calls) == (2 * model.config.num_layers if fused else 0)


@pytest.mark.parametrize("attention,epilogue", [("triton-hopper", True), ("triton-parallel", False), ("torch", False)])
def test_only_part12s_backend_asks_for_the_epilogue(monkeypatch, attention, epilogue):
    """The engine's fused ops ask gate_up for its large-batch epilogue kernel under part 12's backend
    only (the rows then decide: tests/ops/test_gateup_epilogue.py); parts 7-11's keep their kernels."""
    from fusedlib import ops

    asked, real = [], ops.gate_up_silu
    monkeypatch.setattr(ops, "gate_up_silu", lambda x, w, epilogue: asked.append(epilogue) or real(x, w, epilogue))
    model = tiny_model()
    Engine(model, warmup=False, attention=attention, fused_ops=True).generate([[1, 2, 3]], 1)
    assert asked == [epilogue] * model.config.num_layers


@pytest.mark.slow(5)
def test_fused_ops_take_triton_gemms_for_small_batches_only(monkeypatch):
    """A forward of at most SMALL_M_MAX rows runs, in every layer, the one-kernel gate_up +
    activation and its three other projections split over K (one launch each); a larger one
    takes cuBLAS and the activation kernel."""
    from fusedlib.ops import gemm

    launched, split_launches, gate_up_launches = [], [], []
    real_split, real_gate_up = gemm.split_k_kernel, gemm.gate_up_silu_kernel
    monkeypatch.setattr(gemm, "silu_mul", lambda t, real=gemm.silu_mul: launched.append(1) or real(t))
    for name, real, calls in (("split_k_kernel", real_split, split_launches),
                              ("gate_up_silu_kernel", real_gate_up, gate_up_launches)):
        monkeypatch.setattr(gemm, name, type("Spy", (), {
            "__getitem__": lambda self, grid, real=real, calls=calls: calls.append(grid) or real[grid]})())
    model = tiny_model()
    layers = model.config.num_layers
    for prompt_len in (3, gemm.SMALL_M_MAX, gemm.SMALL_M_MAX + 1):
        launched.clear(), split_launches.clear(), gate_up_launches.clear()
        Engine(model, warmup=False, chunk_tokens=128, fused_ops=True).generate([list(range(1, prompt_len + 1))], 1)
        small = prompt_len <= gemm.SMALL_M_MAX
        assert len(launched) == (0 if small else layers), prompt_len
        assert (len(split_launches), len(gate_up_launches)) == ((3 * layers, layers) if small else (0, 0)), prompt_len


@pytest.mark.slow(4)
@pytest.mark.parametrize("attention", ["triton-splitkv", "triton-parallel"])
def test_splitkv_decode_attention_generates_the_reference_tokens(attention):
    """The engine with split-KV decode attention (Triton, on the interpreter here) against
    torch attention: prompt chunks, mixed and decode steps, token for token, with the longest
    context cut into several splits (so the reduce merges partials)."""
    g = torch.Generator().manual_seed(2)
    prompts = [torch.randint(0, 512, (n,), generator=g).tolist() for n in (3, 20, 140)]
    budgets = [5, 3, 6]
    settings = dict(kind="fused", chunk_tokens=48, max_batch=4, warmup=False)
    ref = Engine(tiny_model(), **settings).generate(prompts, budgets)
    engine = Engine(tiny_model(), **settings, attention=attention)
    pairs = len(prompts) * engine.model.config.num_kv_heads
    assert engine.backend.max_splits(max(map(len, prompts)) + 1, pairs, torch.device("cpu")) > 1
    assert engine.generate(prompts, budgets) == ref
