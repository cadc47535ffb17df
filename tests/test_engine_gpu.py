"""Engine checks that only mean something on a GPU (FUSEDLIB_GPU_TESTS=1 on the H200);
skipped, and not counted, elsewhere."""
import pytest
import torch

from fusedlib.engine import Engine
from fusedlib.bench.workloads import mixed

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("attention", ["triton", "triton-splitkv"])
def test_no_kernel_compiles_after_construction(attention):
    from fusedlib.weights import load_model

    model = load_model("qwen2.5-1.5b", device="cuda", dtype=torch.float16)
    engine = Engine(model, kind="fused", attention=attention)
    specs = mixed(24, seed=7, budget=(8, 24))  # new lengths, chunk mixes and batch sizes
    engine.generate([s.prompt for s in specs], [s.max_new_tokens for s in specs])
    assert engine.kernels_compiled_since_construction() == 0
