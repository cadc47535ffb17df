"""Request workloads: the mixed draw, the uniform p256 control, Poisson arrival traces.

Every workload is a pure function of its arguments and a seed: each call builds its own
`numpy.random.default_rng(seed)` and draws in a fixed order (prompt lengths, then budgets,
then each prompt's token ids in request order), so the same call gives the same requests
on a laptop, in CI and on the GPU box. Arrival traces use their own generator, so the
same requests can be replayed at several rates.

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
P256_BUDGET = 128  # the uniform control's fixed budget: the middle of the mixed range
DISTURBANCE_REQUESTS = 64  # served through max_batch=32, so admission keeps happening


@dataclass(frozen=True)
class RequestSpec:
    prompt: list[int]
    max_new_tokens: int
    arrival: float = 0.0  # seconds after the trace starts; 0 for closed runs


Workload = list[RequestSpec]


def _build(lengths: np.ndarray, budgets: np.ndarray, vocab_size: int, rng: np.random.Generator) -> Workload:
    return [
        RequestSpec(prompt=rng.integers(0, vocab_size, size=int(n)).tolist(), max_new_tokens=int(b))
        for n, b in zip(lengths, budgets)
    ]


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
    return _build(drawn, budgets, vocab_size, rng)


def with_long_share(
    n: int,
    share_long: float,
    seed: int = 0,
    lengths: tuple[int, ...] = MIXED_LENGTHS,
    weights=None,
    budget: tuple[int, int] = MIXED_BUDGET,
    vocab_size: int = QWEN_VOCAB,
) -> Workload:
    """The mixed draw with exactly round(share_long * n) prompts of the longest length
    (4096 at full size), at random positions; the rest are drawn from the other lengths
    with their relative weights. Fixing the count, not the probability, is what lets the
    sensitivity sweep separate "how many long prompts" from "which draw"."""
    if not 0.0 <= share_long <= 1.0:
        raise ValueError(f"share_long must be in [0, 1], got {share_long}")
    rng = np.random.default_rng(seed)
    longest = max(lengths)
    others = tuple(x for x in lengths if x != longest)
    p = _probabilities(lengths, weights)
    p_others = np.array([pi for x, pi in zip(lengths, p) if x != longest])
    n_long = round(share_long * n)
    rest = rng.choice(np.asarray(others), size=n - n_long, p=_probabilities(others, p_others))
    drawn = rng.permutation(np.concatenate([np.full(n_long, longest), rest]))
    budgets = rng.integers(budget[0], budget[1] + 1, size=n)
    return _build(drawn, budgets, vocab_size, rng)


def p256(n: int, seed: int = 0, budget: int = P256_BUDGET, length: int = 256, vocab_size: int = QWEN_VOCAB) -> Workload:
    """The uniform control: n prompts of `length` tokens (256 at full size), each with the
    same fixed budget, so a closed batch prefills in one burst and then only decodes."""
    rng = np.random.default_rng(seed)
    return _build(np.full(n, length), np.full(n, budget), vocab_size, rng)


def disturbance(seed: int = 0, **mixed_kwargs) -> Workload:
    """64 mixed requests; served through max_batch=32 they keep admission (prompt chunks)
    running while earlier requests decode: the step-trace workload."""
    return mixed(DISTURBANCE_REQUESTS, seed=seed, **mixed_kwargs)


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
