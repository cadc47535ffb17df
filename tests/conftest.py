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
                                       "longest run first (see pytest_collection_modifyitems)")


def pytest_collection_modifyitems(config, items):
    """Longest first. `make test` runs two xdist workers with --dist loadfile: each test file
    runs on one worker (its fixtures built once there), the files handed out as workers free
    up, and within a worker the longest tests run first. The sort is stable: unmarked tests
    keep their order."""
    def seconds(item):
        mark = item.get_closest_marker("slow")
        return mark.args[0] if mark else 0

    items.sort(key=seconds, reverse=True)
