"""The TMA gate_up probe (fusedlib.bench.tma) on the Triton interpreter: SiLU(gate) * up of
the projection, rounded where the engine's activation kernel rounds, on ragged row counts
(partial last row tiles, more tiles than persistent programs), and tiles that do not divide
the weight refused by name."""
import pytest
import torch
import torch.nn.functional as F

from fusedlib import ops
from fusedlib.bench.tma import TmaTiles, gate_up_silu_tma


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.float16, 2e-3)])
@pytest.mark.parametrize("rows", [1, 17, 40])
@pytest.mark.parametrize("persistent", [False, True])
def test_tma_gate_up_matches_cublas_and_the_activation_kernel(dtype, tol, rows, persistent):
    gen = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, 64, generator=gen).to(dtype)
    w = (torch.randn(2 * 96, 64, generator=gen) * 0.2).to(dtype)
    want = ops.silu_mul(F.linear(x.float(), w.float()).to(dtype))
    got = gate_up_silu_tma(x, w, TmaTiles(16, 32, 32, 4, 2, persistent))
    assert got.shape == (rows, 96) and got.dtype == dtype
    assert (got.float() - want.float()).abs().max().item() < tol


def test_tiles_that_do_not_divide_the_weight_are_refused():
    with pytest.raises(ValueError, match="do not divide intermediate 48"):
        gate_up_silu_tma(torch.zeros(4, 64), torch.zeros(96, 64), TmaTiles(16, 32, 32))
