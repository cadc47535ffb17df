"""The GEMM-chain probe (fusedlib.bench.chain) on the Triton interpreter: every arm computes
the same chain as PyTorch, bit for bit the same as each other; the persistent arms run with
one program (the interpreter runs programs one after another, so a second would wait at the
first barrier for ever)."""
import dataclasses

import pytest
import torch

from fusedlib.bench.chain import Chain, ChainShape
from fusedlib.config import PRESETS


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-4), (torch.float16, 1e-2)])
def test_every_arm_computes_the_chain(dtype, tol):
    chain = Chain(PRESETS["tiny"], rows=5, layers=2, device="cpu", dtype=dtype,
                  shape=ChainShape(block_n=16, block_k=32, num_stages=2))
    reference = chain.reference()
    outputs = {}
    for arm in Chain.ARMS:
        chain.h.fill_(float("nan"))  # a run restores its input itself
        chain.run(arm, grid=1)
        outputs[arm] = chain.h.clone()
    assert (outputs["kernels"].float() - reference.float()).abs().max().item() < tol * reference.abs().max().item()
    assert all(torch.equal(outputs[arm], outputs["kernels"]) for arm in Chain.ARMS)


def test_a_chain_refuses_what_it_cannot_run():
    chain = Chain(PRESETS["tiny"], rows=2, layers=1, device="cpu", dtype=torch.float32)
    with pytest.raises(ValueError, match="unknown arm 'fused'"):
        chain.run("fused", grid=1)
    narrow = dataclasses.replace(PRESETS["tiny"], num_heads=1, num_kv_heads=1)  # q/k/v 48 columns
    with pytest.raises(ValueError, match="reads q/k/v's first 64 columns"):
        Chain(narrow, rows=2, layers=1, device="cpu", dtype=torch.float32)
