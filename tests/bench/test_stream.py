"""The read probe (fusedlib.bench.stream) on the Triton interpreter: every element is read
once, whatever the share per program, and bad arguments are refused by name."""
import pytest
import torch

from fusedlib.bench.stream import read


@pytest.mark.parametrize("numel, programs, block", [(1000, 3, 64), (4096, 4, 1024), (17, 5, 16)])
def test_the_programs_sum_every_element_once(numel, programs, block):
    x = torch.randn(numel, generator=torch.Generator().manual_seed(numel)).to(torch.float16)
    out = read(x, torch.full((programs,), float("nan")), block=block, num_warps=4)
    assert out.sum().item() == pytest.approx(x.float().sum().item(), abs=1e-2)
    assert not out.isnan().any()  # a program with no share stores 0


def test_read_refuses_what_it_cannot_stream():
    with pytest.raises(ValueError, match="contiguous input"):
        read(torch.zeros(4, 4).t(), torch.zeros(2))
    with pytest.raises(ValueError, match="1-d fp32 output"):
        read(torch.zeros(8), torch.zeros(2, dtype=torch.float16))
