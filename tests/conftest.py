"""Run Triton kernels on the CPU interpreter unless GPU tests are asked for.

The interpreter must be chosen before any module defining @triton.jit functions is
imported, which is why this sits in the root conftest.
"""
import os

import torch

from fusedlib.bench import use_interpreter_without_gpu

use_interpreter_without_gpu(always=os.environ.get("FUSEDLIB_GPU_TESTS") != "1")

# The tiny model's ops are too small to split across threads; on a busy 2-core machine
# intra-op threads made it ~30x slower.
torch.set_num_threads(1)
