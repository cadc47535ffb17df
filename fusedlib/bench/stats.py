"""The book's statistics, and only these (numpy only).

A paired ratio is the mean of the pairs' log ratios with a Student-t interval (n >= 2); a level
(a served rate, a latency) over repeated runs is a median with its order-statistic interval
(for 5 runs that is [min, max], 93.75%). Each estimate says its n and what varied between its
pairs: the run order only, or also the workload draw. An interval that spans zero reads "not
resolved". Every estimate is a `Value`: the number, its interval and n, and the text a page pastes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .text import finite, level as level_text, sig, times

NO_ROWS = "(no rows yet)"


@dataclass(frozen=True)
class Value:
    """One named figure: `value` in the unit its predictions use (None: no rows), `text` as a
    page pastes it, and for estimates their interval, n, level and what varied."""
    value: float | None
    text: str
    lo: float | None = None
    hi: float | None = None
    n: int | None = None
    level: float | None = None
    varied: str | None = None

    @property
    def resolved(self) -> bool:
        """The interval lies on one side of zero (meaningful for gains and differences)."""
        return self.lo is not None and self.hi is not None and (self.lo > 0 or self.hi < 0)


MISSING = Value(None, NO_ROWS)


def fixed(value: float | None, text: Callable[[float], str]) -> Value:
    """A computed figure without an interval, or MISSING where there is no finite number."""
    return Value(float(value), text(float(value))) if finite(value) else MISSING


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b, or None where either is missing (a CPU run has no GPU time, no bytes floor)."""
    return None if not finite(a) or not finite(b) or not b else a / b


def _t_cdf(x: float, df: int) -> float:
    """Student-t CDF by Simpson's rule on the density (exact to ~1e-9 here)."""
    if x == 0:
        return 0.5
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    t = np.linspace(0.0, abs(x), 4001)
    f = c * (1 + t * t / df) ** (-(df + 1) / 2)
    h = t[1] - t[0]
    area = h / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum())
    return 0.5 + math.copysign(area, x)


def t_quantile(p: float, df: int) -> float:
    """The p quantile of Student's t with df degrees of freedom (bisection on the CDF)."""
    if not 0 < p < 1 or df < 1:
        raise ValueError(f"t_quantile({p}, {df})")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    lo, hi = 0.0, 1.0
    while _t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


def order_interval(n: int, level: float = 0.95) -> tuple[int, float]:
    """(k, coverage): the median's interval [x_(k), x_(n+1-k)] (1-based order statistics) with
    the largest k whose coverage reaches `level`; below 6 runs none does, and it is [min, max]
    with its own coverage (5 runs: 1 - 2/32 = 93.75%)."""
    if n < 2:
        return 1, 0.0
    best = (1, 1 - 2 * 0.5 ** n)
    for k in range(1, n // 2 + 1):
        cov = 1 - 2 * sum(math.comb(n, j) for j in range(k)) * 0.5 ** n
        if cov >= level:
            best = (k, cov)
    return best


def _varied(seeds) -> str:
    return "each pair a new workload draw" if len(set(seeds)) > 1 else "one workload draw, run order only"


def log_ratios(a, b, seeds=(), level: float = 0.95) -> tuple[float, float | None, float | None, int, str]:
    """Mean of ln(a_i / b_i) and its Student-t interval: (mean, lo, hi, n, what varied)."""
    d = np.log(np.asarray(a, float) / np.asarray(b, float))
    n = len(d)
    if n == 0:
        raise ValueError("no pairs")
    m = float(d.mean())
    if n < 2:
        return m, None, None, n, _varied(seeds)
    half = t_quantile(0.5 + level / 2, n - 1) * float(d.std(ddof=1)) / math.sqrt(n)
    return m, m - half, m + half, n, _varied(seeds)


def _pairs(n: int, varied: str) -> str:
    return f"{n} pair{'s' if n != 1 else ''}, {varied}"


def gain(a, b, seeds=(), level: float = 0.95) -> Value:
    """a over b as a percent change from paired runs: exp(mean log ratio) - 1, t interval."""
    if len(a) == 0:
        return MISSING
    m, lo, hi, n, varied = log_ratios(a, b, seeds, level)
    pct = lambda x: None if x is None else 100 * math.expm1(x)  # noqa: E731
    v = Value(pct(m), "", pct(lo), pct(hi), n, level, varied)
    if v.lo is None:
        return Value(v.value, f"{v.value:+.1f}% ({_pairs(n, varied)}: no interval from one pair)", n=n, varied=varied)
    body = f"{v.value:+.1f}% ({level_text(level)} interval {v.lo:+.1f}% to {v.hi:+.1f}%; {_pairs(n, varied)})"
    return Value(v.value, body if v.resolved else f"not resolved: {body}", v.lo, v.hi, n, level, varied)


def short_gain(v: Value) -> str:
    """A gain for a table cell: value, interval and n, or "-"."""
    if v.value is None:
        return "-"
    if v.lo is None:
        return f"{v.value:+.1f}% (1 pair)"
    s = f"{v.value:+.1f}% [{v.lo:+.1f}, {v.hi:+.1f}], n={v.n}"
    return s if v.resolved else f"not resolved ({s})"


def gain_span(v: Value) -> str:
    """A gain inside a sentence: value and interval, or the value and its n without one."""
    if v.value is None:
        return NO_ROWS
    if v.lo is None:
        return f"{v.value:+.1f}% (one pair)"
    return f"{v.value:+.1f}% ({v.lo:+.1f}% to {v.hi:+.1f}%, n = {v.n})"


def multiple(a, b, seeds=(), level: float = 0.95) -> Value:
    """a over b as a multiple (a/b), same statistics as `gain`."""
    if len(a) == 0:
        return MISSING
    m, lo, hi, n, varied = log_ratios(a, b, seeds, level)
    if lo is None:
        return Value(math.exp(m), f"{times(math.exp(m))} ({_pairs(n, varied)})", n=n, varied=varied)
    # As many digits as it takes to tell the interval's ends apart (up to four): "16× to 16×" says nothing.
    digits = next((k for k in (2, 3) if sig(math.exp(lo), k) != sig(math.exp(hi), k)), 4)
    x = lambda v: f"{sig(v, digits)}×"  # noqa: E731
    return Value(math.exp(m), f"{x(math.exp(m))} ({level_text(level)} interval {x(math.exp(lo))} to "
                 f"{x(math.exp(hi))}; {_pairs(n, varied)})", math.exp(lo), math.exp(hi), n, level, varied)


def median(x, unit: str = "", what: str = "runs", level: float = 0.95, num: Callable[[float], str] | None = None) -> Value:
    """The median of repeated runs with its order-statistic interval; `unit` follows the numbers."""
    num = num or sig
    x = np.sort(np.asarray([v for v in x if finite(v)], float))
    n = len(x)
    if n == 0:
        return MISSING
    m = float(np.median(x))
    u = f" {unit}" if unit and unit != "%" else unit
    if n == 1:
        return Value(m, f"{num(m)}{u} (one run)", n=1)
    k, cov = order_interval(n, level)
    lo, hi = float(x[k - 1]), float(x[n - k])
    return Value(m, f"{num(m)}{u} (median of {n} {what}, {100 * cov:.0f}% interval {num(lo)} to {num(hi)})",
                 lo, hi, n, cov)
