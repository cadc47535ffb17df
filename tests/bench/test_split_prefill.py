"""The split-span prefill probe (fusedlib.bench.split_prefill) on the Triton interpreter: one
request's chunk after cached keys gives the torch reference's attention for any split count,
including splits past the shortest tiles' spans (which store partials that weigh nothing),
merged by row or by tile."""
import pytest
import torch

from fusedlib.attention.torch_backend import TorchAttention
from fusedlib.bench.kernels import prefill_case
from fusedlib.bench.split_prefill import split_prefill


@pytest.mark.parametrize("cached, rows", [(0, 20), (37, 16), (50, 9)])
@pytest.mark.parametrize("splits", [1, 3])
@pytest.mark.parametrize("merge", ["rows", "tiles", "adaptive"])
def test_split_prefill_matches_the_torch_reference(cached, rows, splits, merge):
    gen = torch.Generator().manual_seed(cached + rows)
    q, k, v, meta = prefill_case([(cached, rows)], 4, 2, 16, torch.float32, "cpu", gen)
    want = TorchAttention().prefill(q, k, v, meta, 0.25)
    # min_tiles 2: the adaptive merge takes one run on the shortest tiles and several on the longest
    got = split_prefill(q, k, v, meta.block_tables[0], cached, 0.25, splits, block_m=16, block_n=16, merge=merge,
                        min_tiles=2)
    assert (got - want).abs().max().item() < 1e-5


def test_an_unknown_merge_is_refused_by_name():
    with pytest.raises(ValueError, match="merge must be rows, tiles, adaptive or none, got 'sum'"):
        split_prefill(torch.zeros(2, 4, 16), torch.zeros(1, 16, 2, 16), torch.zeros(1, 16, 2, 16),
                      torch.zeros(1, dtype=torch.int32), 0, 0.25, 1, merge="sum")
