"""Run Triton kernels on the CPU interpreter unless GPU tests are asked for.

The interpreter must be chosen before any module defining @triton.jit functions is
imported, which is why this sits in the root conftest.
"""
import os

import torch

from fusedlib.bench import use_interpreter_without_gpu

use_interpreter_without_gpu(always=os.environ.get("FUSEDLIB_GPU_TESTS") != "1")

from fusedlib import pool  # noqa: E402  (fusedlib after the interpreter is chosen)

# The tiny model's ops are too small to split across threads; on a busy 2-core machine
# intra-op threads made it ~30x slower.
torch.set_num_threads(1)

# A CPU engine's default KV pool (0.25 GiB) is zeroed when the engine is built and freed after:
# ~0.2 s an engine, some 15 s over the suite's engines. A tenth of that (3,276 blocks of the tiny
# model) holds the largest batches here (256 requests of at most 7 blocks); tests about pool
# sizes pass num_blocks or pool_gib. Subprocesses (notebooks, the census) keep the default.
pool.CPU_DEFAULT_GIB /= 10


def pytest_configure(config):
    config.addinivalue_line("markers", "slow(seconds): a long test and its rough CPU seconds here; the "
                                       "longest files run first (see pytest_collection_modifyitems)")
    # xdist's --dist loadfile hands out files by how many tests each has (most first) unless
    # told to keep the collection's order: ours, longest files first.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    """Longest files first, and in each file its longest tests first. `make test` runs two xdist
    workers with --dist loadfile: each test file runs on one worker (its fixtures built once
    there), the files handed out in this order as workers free up, so the long ones start early
    and the short ones fill in at the end. A file's length is the sum of its tests' `slow`
    seconds (unmarked: 0; a fixture's cost marked on the test that builds it). The sort is
    stable: unmarked files and tests keep their order."""
    def seconds(item):
        mark = item.get_closest_marker("slow")
        return mark.args[0] if mark else 0

    by_file, first = {}, {}
    for i, item in enumerate(items):
        by_file[item.path] = by_file.get(item.path, 0) + seconds(item)
        first.setdefault(item.path, i)
    items.sort(key=lambda item: (-by_file[item.path], first[item.path], -seconds(item)))
