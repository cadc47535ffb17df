import random

from fusedlib.batch import span_slots
from fusedlib.scheduler import Request


def test_span_slots_follow_the_block_table_across_block_boundaries():
    blocks = random.Random(0).sample(range(100), 6)  # shuffled, non-contiguous
    req = Request(0, list(range(90)), 5, arrival=0.0, blocks=blocks)
    for start, end in [(0, 90), (15, 17), (16, 32), (31, 33), (40, 41), (5, 5)]:
        expected = [blocks[p // 16] * 16 + p % 16 for p in range(start, end)]
        assert span_slots(req, start, end, 16) == expected
