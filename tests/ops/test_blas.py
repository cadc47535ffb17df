"""fusedlib.ops.blas: the rule that keeps an algorithm (everywhere), and on the GPU
(FUSEDLIB_GPU_TESTS=1) every algorithm cuBLASLt lists for a mixed step's shapes against
F.linear, eagerly and replayed from a CUDA graph."""
import pytest
import torch
import torch.nn.functional as F

from fusedlib.ops import blas

ON_GPU = torch.cuda.is_available()
gpu_only = pytest.mark.skipif(not ON_GPU, reason="cuBLASLt needs a CUDA GPU")


@pytest.mark.parametrize("timings,kept", [
    ({"default": 10.0, 0: 9.0, 1: 9.5}, 0),  # 10% faster: kept
    ({"default": 10.0, 0: 9.9, 1: 10.5}, None),  # 1% faster: within MIN_GAIN, cuBLAS's own stays
    ({"default": 10.0, 0: 12.0}, None),
    ({"default": 10.0}, None),  # the heuristic listed nothing
    ({"default": 10.0, 0: 9.0, 3: 8.0}, 3),
])
def test_pick_keeps_the_fastest_only_past_min_gain(timings, kept):
    assert blas.pick(timings) == kept


def test_cpu_tensors_take_f_linear():
    x, w = torch.randn(100, 16), torch.randn(24, 16)
    assert torch.equal(blas.linear(x, w), F.linear(x, w))


def shapes():
    """(rows, in, out) of a mixed step's four projections, Qwen2.5-1.5B."""
    return [(544, 1536, 2048), (544, 1536, 1536), (544, 1536, 17920), (544, 8960, 1536)]


@gpu_only
@pytest.mark.parametrize("m,k,n", shapes(), ids=["qkv", "o_proj", "gate_up", "down"])
def test_every_listed_algorithm_matches_f_linear(m, k, n):
    g = torch.Generator(device="cuda").manual_seed(n)
    x = torch.randn(m, k, device="cuda", generator=g).half()
    w = (torch.randn(n, k, device="cuda", generator=g) / k ** 0.5).half()
    lib = blas.lt()
    plan = lib.plan(x, w)
    assert plan.candidates, "the heuristic listed no algorithm"
    expected = F.linear(x.float(), w.float())
    for i, (h, described) in enumerate(plan.candidates):
        err = (lib.matmul(plan, h.algo, x, w).float() - expected).abs().max().item()
        assert err < 2e-2, f"algorithm {i} {described}: max |err| {err}"


@gpu_only
def test_a_graph_replays_the_chosen_algorithm_and_new_shapes_keep_f_linear():
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(544, 1536, device="cuda", generator=g).half()
    w = (torch.randn(2048, 1536, device="cuda", generator=g) / 40).half()
    eager = blas.linear(x, w)  # plans and chooses
    assert blas.lt().plans[blas._key(x, w)].timings_us is not None
    unseen = torch.randn(333, 1536, device="cuda", generator=g).half()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        blas.linear(x, w)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = blas.linear(x, w)
        new = blas.linear(unseen, w)
    x.copy_(torch.randn(544, 1536, device="cuda", generator=g).half())
    graph.replay()
    torch.cuda.synchronize()
    reference = F.linear(x.float(), w.float())
    assert (out.float() - reference).abs().max().item() < 2e-2  # the replay read the new x
    assert (eager.float() - reference).abs().max().item() > 0.1
    assert blas._key(unseen, w) not in blas.lt().plans  # met first during capture: F.linear
    assert torch.equal(new, F.linear(unseen, w))
