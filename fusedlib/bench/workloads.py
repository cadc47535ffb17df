"""Request workloads: the mixed draw and Poisson arrival traces.

Every workload is a pure function of its arguments and a seed: its own
`numpy.random.default_rng(seed)` draws prompt lengths, then budgets, then each prompt's token
ids, so a call gives the same requests on a laptop, in CI and on the GPU box. Arrival traces
use their own generator, so the same requests can be replayed at several rates.

Defaults are the writeup's full-size workload (Qwen2.5's vocabulary, prompts of 16..4096
tokens, budgets of 64..256). The tiny model's smoke profile passes smaller `lengths`,
`budget` and `vocab_size`; nothing here knows about profiles.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

MIXED_LENGTHS = (16, 64, 256, 1024, 4096)
MIXED_BUDGET = (64, 256)  # inclusive range of max_new_tokens
QWEN_VOCAB = 151936


@dataclass(frozen=True)
class RequestSpec:
    prompt: list[int]
    max_new_tokens: int
    arrival: float = 0.0  # seconds after the trace starts; 0 for closed runs


Workload = list[RequestSpec]


def _probabilities(lengths: tuple[int, ...], weights) -> np.ndarray:
    w = np.ones(len(lengths)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(lengths),) or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"weights {weights!r} do not fit lengths {lengths!r}")
    return w / w.sum()


def mixed(
    n: int,
    seed: int = 0,
    lengths: tuple[int, ...] = MIXED_LENGTHS,
    weights=None,
    budget: tuple[int, int] = MIXED_BUDGET,
    vocab_size: int = QWEN_VOCAB,
) -> Workload:
    """n requests, prompt lengths drawn from `lengths` (equal weights unless given),
    budgets uniform integers in [budget[0], budget[1]], token ids uniform in [0, vocab)."""
    rng = np.random.default_rng(seed)
    drawn = rng.choice(np.asarray(lengths), size=n, p=_probabilities(lengths, weights))
    budgets = rng.integers(budget[0], budget[1] + 1, size=n)
    return [RequestSpec(prompt=rng.integers(0, vocab_size, size=int(n)).tolist(), max_new_tokens=int(b))
            for n, b in zip(drawn, budgets)]


def poisson_arrivals(specs: Workload, rate: float, seed: int = 0) -> Workload:
    """The same requests with Poisson arrival times at `rate` requests/s: the first arrives
    at 0, each next one an exponential gap of mean 1/rate later."""
    return [replace(s, arrival=float(t)) for s, t in zip(specs, arrival_times(len(specs), rate, seed))]


def arrival_times(n: int, rate: float, seed: int = 0) -> np.ndarray:
    """The n arrival times of `poisson_arrivals`. A finite draw arrives at its own rate,
    (n - 1) / last time, which can sit well off `rate` (seed 0, 400 requests: 11% under)."""
    if rate <= 0:
        raise ValueError(f"rate must be positive, got {rate}")
    gaps = np.random.default_rng(seed).exponential(1.0 / rate, size=max(n - 1, 0))
    return np.concatenate([[0.0], np.cumsum(gaps)])


def in_flight_contexts(rows: int, seed: int = 0, lengths=MIXED_LENGTHS, budget=MIXED_BUDGET) -> list[int]:
    """Contexts of `rows` decode rows of an engine saturated by `mixed`: a prompt of `lengths` each, in the
    draw's equal shares exactly (a request decodes for its budget whatever its prompt; 256 rows drawn at random
    average 890-1,490 tokens over 100 seeds), shuffled, plus its tokens so far: 1..its budget (from `budget`)."""
    rng = np.random.default_rng(seed)
    prompts = rng.permutation(np.resize(np.asarray(lengths), rows))
    return (prompts + rng.integers(1, rng.integers(budget[0], budget[1] + 1, size=rows) + 1)).tolist()
