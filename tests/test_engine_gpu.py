"""Engine checks that only mean something on a GPU (FUSEDLIB_GPU_TESTS=1 on the H200);
skipped, and not counted, elsewhere."""
import pytest
import torch

from fusedlib.engine import Engine
from fusedlib.bench.workloads import mixed

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("attention", ["triton", "triton-splitkv", "triton-balanced"])
def test_no_kernel_compiles_after_construction(attention):
    from fusedlib.weights import load_model

    model = load_model("qwen2.5-1.5b", device="cuda", dtype=torch.float16)
    engine = Engine(model, kind="fused", attention=attention)
    specs = mixed(24, seed=7, budget=(8, 24))  # new lengths, chunk mixes and batch sizes
    engine.generate([s.prompt for s in specs], [s.max_new_tokens for s in specs])
    assert engine.kernels_compiled_since_construction() == 0


@pytest.mark.parametrize("kind,graphs", [("fused", False), ("chunked", False), ("fused", True)])
def test_every_step_carries_its_forwards_gpu_time(kind, graphs):
    """CUDA events around each forward give every step a GPU time no longer than its wall
    time (the rest is the host's), read after the run."""
    from fusedlib.config import PRESETS
    from fusedlib.weights import random_model

    model = random_model(PRESETS["tiny"], device="cuda", dtype=torch.float16, init_std=0.2)
    engine = Engine(model, kind=kind, attention="triton", chunk_tokens=32, max_batch=8,
                    cuda_graphs=graphs, graph_chunks=graphs)
    specs = mixed(16, seed=3, lengths=(1, 5, 17, 40, 90), budget=(3, 12), vocab_size=model.config.vocab_size)
    with engine.record_steps() as steps:
        engine.generate([s.prompt for s in specs], [s.max_new_tokens for s in specs])
    assert "decode" in {r.kind for r in steps}
    for r in steps:
        spans = r.forward_gpu_s()
        assert len(spans) == r.n_forwards and all(s > 0 for s in spans)
        # Each forward's events sit inside its wall-clock span (up to the event's own latency).
        assert all(g <= w + 50e-6 for g, w in zip(spans, r.forward_durations))
        assert r.gpu_s() == pytest.approx(sum(spans))
