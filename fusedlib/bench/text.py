"""Numbers as the book writes them: significant figures without exponents, units that follow.
Imports nothing beyond the standard library. A missing or non-finite number reads "-"."""
from __future__ import annotations

import math
from typing import Callable


def finite(x) -> bool:
    """A number that is neither missing (None, NA) nor nan or infinite."""
    try:
        return x is not None and math.isfinite(x)
    except TypeError:
        return False


def sig(x: float | None, digits: int = 3) -> str:
    """x to `digits` significant figures, never in exponent form, thousands separated."""
    if not finite(x):
        return "-"
    if x == 0:
        return "0"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    return f"{x:,.{decimals}f}"


def ms(x: float) -> str:
    """A duration given in ms: in ms below a second, else in seconds."""
    return f"{sig(x)} ms" if abs(x) < 1000 else f"{sig(x / 1e3)} s"


def us(x: float) -> str:
    return f"{sig(x)} µs"


def rate(x: float) -> str:
    return f"{sig(x)} requests/s"


def pct(x: float, signed: bool = False) -> str:
    return f"{x:+.1f}%" if signed else f"{x:.{0 if abs(x) >= 10 else 1}f}%"


def times(x: float) -> str:
    return f"{sig(x, 2)}×"


def level(p: float) -> str:
    """A coverage as a percent: whole when it is one (95%), else to a tenth (93.8%)."""
    return f"{100 * p:.0f}%" if abs(100 * p - round(100 * p)) < 0.05 else f"{100 * p:.1f}%"


def span(lo: float, hi: float, f: Callable[[float], str]) -> str:
    """'lo to hi', or one figure when both read the same."""
    a, b = f(lo), f(hi)
    return a if a == b else f"{a} to {b}"


def cell(x, f: Callable[[float], str] = sig) -> str:
    """A table cell: the number through `f`, or "-" where there is none."""
    return f(x) if finite(x) else "-"

