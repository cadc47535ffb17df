"""The paired method: how two configurations are compared, and when a difference counts.

Runs of one configuration on one machine drift (a host that slows down for minutes moves
every run in that window), so A and B are never measured in separate blocks. They alternate
in ABBA order: A B B A A B B A ..., so a slow trend hits both sides equally, and pair i is
(the i-th A, the i-th B). The first run of each side on a fresh process is a warm-up: it
runs, its row is written with `warmup=True`, and it is left out of every comparison.

A comparison is the median over pairs of the per-pair ratio A/B, with a percentile
bootstrap interval over pairs (resampling whole pairs keeps the pairing). A difference is
*resolved* only when that interval excludes 1. With n pairs the interval can be no
narrower than the spread of the pair ratios allows, so few pairs give honest, wide
intervals rather than a confident wrong answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

BOOTSTRAP_SAMPLES = 10_000
LEVEL = 0.95


def abba_order(n_pairs: int) -> list[int]:
    """Which side runs at each position: 0 for A, 1 for B, n_pairs of each, ABBA-interleaved."""
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be >= 1, got {n_pairs}")
    block = [0, 1, 1, 0]
    return [block[i % 4] for i in range(2 * n_pairs)]


@dataclass(frozen=True)
class Comparison:
    """A/B as a ratio: `ratio` is the median over pairs of a_i / b_i; [lo, hi] its bootstrap
    interval at `level`; `n` the pairs it rests on."""
    ratio: float
    lo: float
    hi: float
    n: int
    level: float = LEVEL

    @property
    def resolved(self) -> bool:
        # One pair has no spread, so its "interval" is a point and resolves nothing.
        return self.n > 1 and (self.lo > 1.0 or self.hi < 1.0)

    @property
    def change(self) -> float:
        """A relative to B, as a signed fraction (+0.25 = A is 25% larger)."""
        return self.ratio - 1.0

    def describe(self, unit: str = "x") -> str:
        """e.g. '1.25x [1.18, 1.31], n=6, resolved'."""
        verdict = "resolved" if self.resolved else "not resolved"
        return f"{self.ratio:.3g}{unit} [{self.lo:.3g}, {self.hi:.3g}], n={self.n}, {verdict}"


def compare_pairs(a: Sequence[float], b: Sequence[float], seed: int = 0,
                  samples: int = BOOTSTRAP_SAMPLES, level: float = LEVEL) -> Comparison:
    """A/B from paired measurements: a[i] and b[i] ran next to each other."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError(f"need two equal-length, non-empty sequences of pairs, got {a.shape} and {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and np.all(b > 0)):
        raise ValueError("pair values must be finite and B must be > 0")
    ratios = a / b
    return _bootstrap_median(ratios, seed, samples, level)


def compare_groups(a: Sequence[float], b: Sequence[float], seed: int = 0,
                   samples: int = BOOTSTRAP_SAMPLES, level: float = LEVEL) -> Comparison:
    """A/B as a ratio of medians when the runs were not paired (each side resampled on its
    own); `n` is the smaller side. Weaker than `compare_pairs`: use it only for rows that were
    not measured in ABBA order, and say so where it is reported."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) == 0 or len(b) == 0:
        raise ValueError("both sides need at least one run")
    rng = np.random.default_rng(seed)
    ra = np.median(rng.choice(a, size=(samples, len(a))), axis=1)
    rb = np.median(rng.choice(b, size=(samples, len(b))), axis=1)
    lo, hi = np.quantile(ra / rb, [(1 - level) / 2, (1 + level) / 2])
    return Comparison(float(np.median(a) / np.median(b)), float(lo), float(hi), min(len(a), len(b)), level)


def _bootstrap_median(ratios: np.ndarray, seed: int, samples: int, level: float) -> Comparison:
    rng = np.random.default_rng(seed)
    boot = np.median(rng.choice(ratios, size=(samples, len(ratios))), axis=1)
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return Comparison(float(np.median(ratios)), float(lo), float(hi), len(ratios), level)


def pair_runs(rows: Sequence[dict], side_key: str, a: str, b: str, value: str) -> tuple[list[float], list[float]]:
    """Split measured (non-warm-up) rows of an ABBA sequence into pairs: the i-th `a` run with
    the i-th `b` run, in the order they ran (`pair` field when present, else `repeat`).
    Rows flagged `warmup` are skipped; an unmatched trailing run is dropped."""
    def order(r):
        return r.get("pair", r.get("repeat", 0)) or 0
    measured = [r for r in rows if not r.get("warmup", False)]
    side_a = sorted((r for r in measured if r[side_key] == a), key=order)
    side_b = sorted((r for r in measured if r[side_key] == b), key=order)
    n = min(len(side_a), len(side_b))
    return [float(r[value]) for r in side_a[:n]], [float(r[value]) for r in side_b[:n]]
