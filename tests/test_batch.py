import random

import numpy as np

from fusedlib.batch import pack
from fusedlib.scheduler import Chunk, Request


def test_slots_follow_the_block_table_across_block_boundaries():
    """Chunks crossing blocks (shuffled, non-contiguous) and decode rows at block edges: each
    position's slot is its block's id * 16 + its offset."""
    rng = random.Random(0)
    reqs = [Request(i, list(range(90)), 50, arrival=0.0, blocks=rng.sample(range(100), 9)) for i in range(4)]
    for r, generated in zip(reqs[2:], (17, 26)):  # decoding at positions 106 and 115
        r.num_cached, r.num_generated, r.output = 90, generated, list(range(generated))
    chunks = [Chunk(reqs[0], 15, 18), Chunk(reqs[1], 31, 2)]
    h = pack(chunks, reqs[2:], 16, "cpu").host
    owners = [reqs[0]] * 18 + [reqs[1]] * 2 + reqs[2:]
    assert h.positions.tolist() == [*range(15, 33), 31, 32, 106, 115]
    assert h.slots.tolist() == [r.blocks[p // 16] * 16 + p % 16 for r, p in zip(owners, h.positions.tolist())]
    assert h.input_ids.tolist() == [*range(15, 33), 31, 32, 16, 25]
    assert h.token_seq.tolist() == [0] * 18 + [1] * 2 and h.logit_indices.tolist() == [20, 21]
    assert h.fed_rows.dtype == np.int64 and len(h.fed_rows) == 0
