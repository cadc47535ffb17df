"""Shared test fixtures' building blocks: a tiny model whose random weights are large
enough (std 0.2) that greedy generation does not collapse into repeating its input, so a
wrong cache read or a mis-ordered token actually changes the output."""
from __future__ import annotations

import functools

from fusedlib.config import PRESETS
from fusedlib.weights import random_model


@functools.lru_cache(maxsize=None)
def tiny_model(seed: int = 0):
    """Cached per seed (a model holds no switch: the engine passes its settings to each forward)."""
    return random_model(PRESETS["tiny"], seed=seed, init_std=0.2)
