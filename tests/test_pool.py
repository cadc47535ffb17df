import math

import pytest
import torch

from fusedlib.config import PRESETS
from fusedlib.pool import KVPool

CFG = PRESETS["tiny"]


def test_reserve_is_all_or_nothing_and_free_returns_blocks():
    pool = KVPool(CFG, torch.float32, "cpu", block_size=16, num_blocks=5)
    a = pool.reserve(33)  # 3 blocks of 16
    assert len(a) == 3 and pool.num_free_blocks == 2
    assert pool.reserve(40) is None and pool.num_free_blocks == 2  # nothing taken on failure
    pool.free(a)
    assert pool.num_free_blocks == 5


def test_poisoning_fills_freed_blocks_with_nan_in_every_layer():
    pool = KVPool(CFG, torch.float32, "cpu", block_size=16, num_blocks=4, poison_freed=True)
    blocks = pool.reserve(20)
    pool.free(blocks)
    assert torch.isnan(pool.kv[:, :, blocks]).all()
    untouched = [b for b in range(4) if b not in blocks]
    assert not torch.isnan(pool.kv[:, :, untouched]).any()


@pytest.mark.parametrize("block_size", [16, 128])
def test_size_from_gib_cap(block_size):
    pool = KVPool(CFG, torch.float16, "cpu", block_size=block_size, pool_gib=0.001)
    per_block = CFG.num_layers * 2 * block_size * CFG.num_kv_heads * CFG.head_dim * 2
    assert pool.num_blocks == math.floor(0.001 * 2**30 / per_block)
    assert pool.kv.shape[3] == block_size and pool.blocks_for(block_size + 1) == 2


def test_size_arguments_are_exclusive_and_positive():
    from fusedlib.config import EngineConfig

    with pytest.raises(ValueError, match="not both"):  # checked once, where an engine's settings come in
        EngineConfig(num_blocks=4, pool_gib=1.0)
    with pytest.raises(ValueError):
        KVPool(CFG, torch.float32, "cpu", block_size=16, pool_gib=1e-9)
