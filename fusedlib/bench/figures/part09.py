"""Part 9's page: part 9's steps and capacity (CUDA graphs for decode-only forwards)."""
from __future__ import annotations

from pathlib import Path

from . import chapter
from .data import collect


def figures(d: str | Path | None = None):
    return collect(steps=chapter.steps("part9", d=d), capacity=chapter.capacity("part9", d=d))
