"""The KV pool: fixed-size blocks in one preallocated tensor for all layers,
[num_layers, 2 (K, V), num_blocks + 1, block_size, num_kv_heads, head_dim]."""
# A request reserves every block it can ever need when admitted (reserve-on-admit), so a
# running request never waits for memory; its blocks return at the end of the step it finishes
# in. With `poison_freed` (a debug setting) returned blocks are filled with NaN: a later read of
# freed memory turns an output into NaN instead of silently reading stale keys. The extra block,
# `scratch_block`, belongs to no request: CUDA graphs' padding rows write their keys there.
from __future__ import annotations

from collections import deque

import torch

from .config import ModelConfig

CPU_DEFAULT_GIB = 0.25  # on CPU the default is a small fixed pool, never "all of host memory"
GPU_FREE_FRACTION = 0.5  # of free GPU memory after the model is loaded; leaves room for peers


class KVPool:
    def __init__(self, cfg: ModelConfig, dtype: torch.dtype, device: torch.device | str, block_size: int,
                 num_blocks: int | None = None, pool_gib: float | None = None, poison_freed: bool = False):
        device = torch.device(device)
        self.block_size = block_size
        self.bytes_per_block = (cfg.num_layers * 2 * block_size * cfg.num_kv_heads * cfg.head_dim
                                * torch.empty((), dtype=dtype).element_size())
        if num_blocks is None:
            if pool_gib is not None:
                budget = pool_gib * 2**30
            elif device.type == "cuda":
                budget = torch.cuda.mem_get_info(device)[0] * GPU_FREE_FRACTION  # of the free bytes
            else:
                budget = CPU_DEFAULT_GIB * 2**30
            num_blocks = int(budget // self.bytes_per_block)
        if num_blocks < 1:
            raise ValueError(f"KV pool of {num_blocks} blocks: size it with at least one block")
        self.num_blocks = num_blocks
        self.poison_freed = poison_freed
        self.kv = torch.zeros(cfg.num_layers, 2, num_blocks + 1, block_size, cfg.num_kv_heads,
                              cfg.head_dim, dtype=dtype, device=device)
        self.scratch_block = num_blocks
        self._free: deque[int] = deque(range(num_blocks))

    @property
    def num_free_blocks(self) -> int:
        return len(self._free)

    def blocks_for(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    def reserve(self, num_tokens: int) -> list[int] | None:
        """All blocks for `num_tokens` positions, or None (and nothing taken) if they don't fit."""
        n = self.blocks_for(num_tokens)
        if n > len(self._free):
            return None
        return [self._free.popleft() for _ in range(n)]

    def free(self, blocks: list[int]) -> None:
        if self.poison_freed and blocks:
            self.kv[:, :, torch.tensor(blocks, device=self.kv.device)] = float("nan")
        self._free.extend(blocks)
