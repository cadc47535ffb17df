import random

import numpy as np
import pytest

from fusedlib.batch import pack
from fusedlib.scheduler import Chunk, Request


@pytest.mark.parametrize("block_size", [16, 128])
def test_slots_follow_the_block_table_across_block_boundaries(block_size):
    """Chunks crossing blocks (shuffled, non-contiguous) and decode rows at block edges: each
    position's slot is its block's id * block_size + its offset."""
    rng = random.Random(0)
    b = block_size
    reqs = [Request(i, list(range(3 * b)), 50, arrival=0.0, blocks=rng.sample(range(100), 5)) for i in range(4)]
    for r, generated in zip(reqs[2:], (b, b + 1)):  # decoding at positions 4b - 1 and 4b: a block's edge
        r.num_cached, r.num_generated, r.output = 3 * b, generated, list(range(generated))
    chunks = [Chunk(reqs[0], b - 1, b + 2), Chunk(reqs[1], 2 * b - 1, 2)]
    h = pack(chunks, reqs[2:], b, "cpu").host
    owners = [reqs[0]] * (b + 2) + [reqs[1]] * 2 + reqs[2:]
    assert h.positions.tolist() == [*range(b - 1, 2 * b + 1), 2 * b - 1, 2 * b, 4 * b - 1, 4 * b]
    assert h.slots.tolist() == [r.blocks[p // b] * b + p % b for r, p in zip(owners, h.positions.tolist())]
    assert h.input_ids.tolist() == [*range(b - 1, 2 * b + 1), 2 * b - 1, 2 * b, b - 1, b]
    assert h.token_seq.tolist() == [0] * (b + 2) + [1] * 2 and h.logit_indices.tolist() == [b + 4, b + 5]
    assert h.fed_rows.dtype == np.int64 and len(h.fed_rows) == 0
