"""Rows -> the book's tables and named values. Imports numpy, pandas and yaml only.

`load(experiment)` reads `<data>/<experiment>.jsonl` (data: argument, else env
FUSEDLIB_DATA, else the repository's data/). Each figure the book shows is one function here
returning its table and a dict of named values (`Value`: a number, its interval, its n, and the
text a page pastes). `REGISTRY` lists those functions with the page that shows each and the
names it defines; `FIGURES` maps every name to its value for the default rows folder, so the
pages (through myst-nb glue) and the prediction grader read one estimate per claim.

Statistics, and only these: a paired ratio is the mean of the pairs' log ratios with a
Student-t interval (n >= 2); a level (a served rate, a latency) over repeated runs is a median
with its order-statistic interval (for 5 runs that is [min, max], 93.75%). Each estimate says
its n and what varied between its pairs: the run order only, or also the workload draw. An
interval that spans zero reads "not resolved".
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import yaml

from . import metrics
from .workloads import MIXED_BUDGET, MIXED_LENGTHS

# Goodput's service levels, as the metrics define them (the harness's metrics.py, numpy only).
SLO = {"ttft_s": getattr(metrics, "TTFT_SLO_S", 1.0), "itl_s": getattr(metrics, "ITL_SLO_S", 0.050)}

REPO = Path(__file__).resolve().parents[2]
STATIC = REPO / "data"  # frozen inputs (reference figures, predictions, not-kept table): always the repo's
NO_ROWS = "(no rows yet)"
PARTS = ("part7", "part8", "part9", "part10")
PAGE = {"part7": "part07", "part8": "part08", "part9": "part09", "part10": "part10", "part11": "part11"}
LABEL = {"part7": "7: one forward per step", "part8": "8: split-KV decode", "part9": "9: CUDA graphs",
         "part10": "10: fused ops, whole graphs", "part11": "11: batch 256, budgets to 8k"}
# The book's experiments: the files a page reads. A missing file renders "no rows yet".
EXPERIMENTS = ("gates", "census", "attention", "capacity", "peer", "scale")

# Datasheet rates (SXM parts, dense fp16 tensor cores without sparsity) of the cards run-all may
# get, keyed by the name torch reports, and the model's shape (Qwen2.5-1.5B's config.json: tied
# embeddings, fp16). The ballparks start from the datasheet of the card that measured the census
# rows (the H200, the series' target, before any rows exist); the measured copy bandwidth and
# GEMM rate replace the datasheet where rows exist.
DATASHEETS = {
    "NVIDIA H200": {"card": "H200", "bandwidth_Bps": 4.8e12, "fp16_flops": 989e12},
    "NVIDIA H100 80GB HBM3": {"card": "H100 SXM", "bandwidth_Bps": 3.35e12, "fp16_flops": 989e12},
    "NVIDIA A10": {"card": "A10", "bandwidth_Bps": 600e9, "fp16_flops": 125e12},
}
MODEL = {"layers": 28, "hidden": 1536, "intermediate": 8960, "heads": 12, "kv_heads": 2,
         "head_dim": 128, "vocab": 151936, "dtype_bytes": 2}


def _model_sizes(m: dict = MODEL) -> dict:
    h, i, kvd = m["hidden"], m["intermediate"], m["kv_heads"] * m["head_dim"]
    linear = m["layers"] * (h * (2 * h + 2 * kvd) + 3 * h * i)  # q, o, k, v, gate, up, down
    params = linear + m["vocab"] * h + m["layers"] * (2 * h + h + 2 * kvd) + h  # + embedding, norms, biases
    return {
        "linear_flop_per_token": 2.0 * linear,
        "lm_head_flop_per_token": 2.0 * m["vocab"] * h,
        "weight_bytes": params * m["dtype_bytes"],
        "kv_bytes_per_token": m["layers"] * 2 * kvd * m["dtype_bytes"],
        # QK^T and PV: 2 matmuls x 2 FLOP x heads x head_dim per (query, key) pair per layer
        "attn_flop_per_pair": m["layers"] * 4.0 * m["heads"] * m["head_dim"],
    }


SIZES = _model_sizes()


# ---------------------------------------------------------------------------------- rows
def rows_dir(d: str | Path | None = None) -> Path:
    """The rows folder: `d`, else env FUSEDLIB_DATA, else the repository's data/."""
    return Path(d or os.environ.get("FUSEDLIB_DATA") or REPO / "data").resolve()


def _identity(df: pd.DataFrame) -> list[str]:
    """The columns that name one run: rows sharing them are one run recorded twice (a re-run
    after an interruption); the newer one is kept."""
    skip = {"schema_version", "code_version", "commit", "time_utc", "device_name"}
    measured = {"served_rate", "ttft_p50_s", "ttft_p99_s", "itl_p50_s", "itl_p99_s", "e2e_p50_s",
                "goodput_rate", "n_steps", "gpu_ms", "gpu_ms_min", "gpu_ms_max", "wall_ms", "host_ms",
                "n_kernels", "gpu_us", "copy_us", "fraction_of_copy", "wall_s", "output_tok_s",
                "passed", "detail", "copy_bw_Bps", "gemm_tflops", "host_share", "bytes", "flops",
                "kv_bytes", "weight_bytes", "host_ms_per_step_p50", "step_gpu_ms_p50",
                "max_logit_gap", "transformers_version"}
    return [c for c in df.columns if c not in skip and c not in measured and not c.endswith(("_s", "_ms"))]


_CACHE: dict = {}


def load(experiment: str, data_dir: str | Path | None = None) -> pd.DataFrame:
    """The rows of `<data>/<experiment>.jsonl` as a DataFrame (empty if the file is missing).
    Full-profile rows win over smoke rows when a file holds both; a run recorded twice keeps
    its newer row."""
    path = rows_dir(data_dir) / f"{experiment}.jsonl"
    if not path.exists():
        return pd.DataFrame()
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _CACHE:
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        df = pd.DataFrame(rows)
        if len(df) and "profile" in df and (df["profile"] == "full").any():
            df = df[df["profile"] == "full"]
        if len(df) and "time_utc" in df:
            df = df.sort_values("time_utc", kind="stable")
            ident = _identity(df)
            hashable = df[ident].astype(str) if ident else None
            if ident:
                df = df[~hashable.duplicated(keep="last")]
        _CACHE[key] = df.reset_index(drop=True)
    return _CACHE[key].copy()


# ---------------------------------------------------------------------------- statistics
def _t_cdf(x: float, df: int) -> float:
    """Student-t CDF by Simpson's rule on the density (numpy only; exact to ~1e-9 here)."""
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


def _varied(seeds) -> str:
    return "each pair a new workload draw" if len(set(seeds)) > 1 else "one workload draw, run order only"


def _level(level: float) -> str:
    return f"{100 * level:.0f}%" if abs(100 * level - round(100 * level)) < 0.05 else f"{100 * level:.1f}%"


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


def gain(a, b, seeds=(), level: float = 0.95) -> Value:
    """a over b as a percent change from paired runs: exp(mean log ratio) - 1, t interval."""
    if len(a) == 0:
        return MISSING
    m, lo, hi, n, varied = log_ratios(a, b, seeds, level)
    pct = lambda x: 100 * math.expm1(x)  # noqa: E731
    v = Value(pct(m), "", None if lo is None else pct(lo), None if hi is None else pct(hi), n, level, varied)
    return Value(v.value, gain_text(v), v.lo, v.hi, n, level, varied)


def gain_text(v: Value) -> str:
    pairs = f"{v.n} pair{'s' if v.n != 1 else ''}, {v.varied}"
    if v.lo is None:
        return f"{v.value:+.1f}% ({pairs}: no interval from one pair)"
    body = f"{v.value:+.1f}% ({_level(v.level)} interval {v.lo:+.1f}% to {v.hi:+.1f}%; {pairs})"
    return body if v.resolved else f"not resolved: {body}"


def multiple(a, b, seeds=(), level: float = 0.95) -> Value:
    """a over b as a multiple (a/b), same statistics as `gain`."""
    if len(a) == 0:
        return MISSING
    m, lo, hi, n, varied = log_ratios(a, b, seeds, level)
    pairs = f"{n} pair{'s' if n != 1 else ''}, {varied}"
    if lo is None:
        return Value(math.exp(m), f"{times(math.exp(m))} ({pairs})", n=n, varied=varied)
    return Value(math.exp(m), f"{times(math.exp(m))} ({_level(level)} interval {times(math.exp(lo))} to "
                 f"{times(math.exp(hi))}; {pairs})", math.exp(lo), math.exp(hi), n, level, varied)


def median(x, unit: str = "", what: str = "runs", level: float = 0.95, num: Callable[[float], str] | None = None) -> Value:
    """The median of repeated runs with its order-statistic interval; `unit` follows the numbers."""
    num = num or sig
    x = np.sort(np.asarray([v for v in x if v is not None and np.isfinite(v)], float))
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


# ---------------------------------------------------------------------------- formatting
def sig(x: float, digits: int = 3) -> str:
    """x to `digits` significant figures, never in exponent form, thousands separated."""
    if x is None or not np.isfinite(x):
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


def span(lo: float, hi: float, f: Callable[[float], str]) -> str:
    """'lo to hi', or one figure when both read the same."""
    a, b = f(lo), f(hi)
    return a if a == b else f"{a} to {b}"


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b, or None where either is missing (a CPU run has no GPU time, no bytes floor)."""
    return None if a is None or not b else a / b


def fixed(value: float | None, text: Callable[[float], str]) -> Value:
    return MISSING if value is None or not np.isfinite(value) else Value(float(value), text(float(value)))


def _cell(x, f=sig) -> str:
    return "-" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f(x)


# ------------------------------------------------------------------------------ registry
@dataclass(frozen=True)
class Figure:
    key: str
    page: str
    names: tuple[str, ...]
    compute: Callable = field(repr=False)


REGISTRY: dict[str, Figure] = {}


def _register(key: str, page: str, names, compute: Callable) -> None:
    REGISTRY[key] = Figure(key, page, tuple(names), compute)


def figure(key: str, data: str | Path | None = None) -> tuple[pd.DataFrame, dict[str, Value]]:
    """The figure's (table, values) for a rows folder, computed once per state of that folder."""
    d = rows_dir(data)
    sig_ = tuple((p.name, p.stat().st_mtime_ns) for p in sorted(d.glob("*.jsonl"))) if d.exists() else ()
    ck = ("figure", key, str(d), sig_)
    if ck not in _CACHE:
        fig = REGISTRY[key]
        table, values = fig.compute(d)
        if set(values) != set(fig.names):
            raise RuntimeError(f"{key}: computed {sorted(set(values) ^ set(fig.names))} unlike its declared names")
        _CACHE[ck] = (table, values)
    table, values = _CACHE[ck]
    return table.copy(), dict(values)


def values(data: str | Path | None = None) -> dict[str, Value]:
    out = {}
    for key in REGISTRY:
        out.update(figure(key, data)[1])
    return out


PAGE_OF: dict[str, str] = {}  # glue name -> the page that glues it (filled below)


class _Figures(Mapping):
    """Every named value, glue name -> Value, for the default rows folder (FUSEDLIB_DATA)."""

    def __getitem__(self, name: str) -> Value:
        if name not in PAGE_OF:
            raise KeyError(name)
        return values()[name]

    def __iter__(self):
        return iter(PAGE_OF)

    def __len__(self) -> int:
        return len(PAGE_OF)


FIGURES = _Figures()


# ------------------------------------------------------------------------------ hardware
def rates(d: str | Path | None = None) -> tuple[float | None, float | None]:
    """The copy bandwidth (B/s) and large-GEMM rate (FLOP/s) measured beside the census."""
    c = load("census", d)
    if not len(c) or "copy_bw_Bps" not in c:
        return None, None
    return float(c["copy_bw_Bps"].median()), float(c["gemm_tflops"].median()) * 1e12


def _devices(df: pd.DataFrame) -> Value:
    """The cards a rows file was measured on, in words."""
    names = sorted(set(df["device_name"].dropna())) if "device_name" in df else []
    return Value(None, " and ".join(names) if names else "(no rows yet)")


TARGET_CARD = "NVIDIA H200"


def datasheet(d: str | Path | None = None) -> dict:
    """The datasheet of the card the census rows were measured on. Without rows, or with the
    smoke profile's rows from a CPU (which has no datasheet worth a ballpark), the series'
    target card's, so those pages still render; an unknown GPU is refused."""
    c = load("census", d)
    names = set(c["device_name"].dropna()) if "device_name" in c else set()
    if len(names) > 1:
        raise ValueError(f"census rows come from several cards: {sorted(names)}")
    name = names.pop() if names else TARGET_CARD
    if name == "cpu":
        name = TARGET_CARD
    if name not in DATASHEETS:
        raise ValueError(f"no datasheet for {name!r}: add it to analysis.DATASHEETS")
    return DATASHEETS[name]


def _hardware(d: Path):
    bw, gemm = rates(d)
    sheet = datasheet(d)
    w = SIZES["weight_bytes"]
    chunk = 512 * SIZES["linear_flop_per_token"] + 512 * 511 / 2 * SIZES["attn_flop_per_pair"]
    dec_int = 32 * SIZES["linear_flop_per_token"] / w
    mix_int = 543 * SIZES["linear_flop_per_token"] / w
    tb = lambda x: f"{x / 1e12:.2f} TB/s"  # noqa: E731
    tf = lambda x: f"{x / 1e12:.0f} TFLOP/s"  # noqa: E731
    v = {
        "hw_device": _devices(load("census", d)),
        "hw_card": Value(None, sheet["card"]),
        "hw_bw_datasheet": fixed(sheet["bandwidth_Bps"], lambda x: f"{x / 1e12:.2f} TB/s"),
        "hw_flops_datasheet": fixed(sheet["fp16_flops"], tf),
        "hw_copy_bw": fixed(bw, tb),
        "hw_copy_share": fixed(bw and bw / sheet["bandwidth_Bps"] * 100, pct),
        "hw_gemm_rate": fixed(gemm, tf),
        "hw_gemm_share": fixed(gemm and gemm / sheet["fp16_flops"] * 100, pct),
        "model_weights_gb": fixed(w / 1e9, lambda x: f"{x:.2f} GB"),
        "model_weights_ms_datasheet": fixed(w / sheet["bandwidth_Bps"] * 1e3, ms),
        "model_weights_ms": fixed(bw and w / bw * 1e3, ms),
        "model_kv_kib": fixed(SIZES["kv_bytes_per_token"] / 1024, lambda x: f"{x:.0f} KiB"),
        "model_gflop_per_token": fixed(SIZES["linear_flop_per_token"] / 1e9, lambda x: f"{x:.2f} GFLOP"),
        "chunk_tflop": fixed(chunk / 1e12, lambda x: f"{x:.2f} TFLOP"),
        "chunk_ms_datasheet": fixed(chunk / sheet["fp16_flops"] * 1e3, ms),
        "chunk_ms": fixed(gemm and chunk / gemm * 1e3, ms),
        "ridge_datasheet": fixed(sheet["fp16_flops"] / sheet["bandwidth_Bps"], lambda x: f"{x:.0f} FLOP/byte"),
        "ridge_measured": fixed(gemm and gemm / bw, lambda x: f"{x:.0f} FLOP/byte"),
        "decode32_intensity": fixed(dec_int, lambda x: f"{x:.0f} FLOP/byte"),
        "mixed543_intensity": fixed(mix_int, lambda x: f"{x:.0f} FLOP/byte"),
        "model_layers": fixed(MODEL["layers"], lambda x: f"{x:.0f}"),
        "wl_lengths": Value(None, ", ".join(f"{n:,}" for n in MIXED_LENGTHS[:-1]) + f" or {MIXED_LENGTHS[-1]:,} tokens"),
        "wl_budgets": Value(None, f"{MIXED_BUDGET[0]} to {MIXED_BUDGET[1]} new tokens"),
    }
    table = pd.DataFrame([
        {"rate": "memory bandwidth", f"{sheet['card']} datasheet": v["hw_bw_datasheet"].text,
         "measured": v["hw_copy_bw"].text if bw else "-", "how measured": "device-to-device copy of 1 GB"},
        {"rate": "dense fp16 tensor-core throughput", f"{sheet['card']} datasheet": v["hw_flops_datasheet"].text,
         "measured": v["hw_gemm_rate"].text if gemm else "-", "how measured": "large fp16 GEMM (torch.matmul)"},
    ])
    return table, v


_register("hardware", "part07", [
    "hw_device", "hw_card", "hw_bw_datasheet", "hw_flops_datasheet", "hw_copy_bw", "hw_copy_share", "hw_gemm_rate", "hw_gemm_share",
    "model_weights_gb", "model_weights_ms_datasheet", "model_weights_ms", "model_kv_kib",
    "model_gflop_per_token", "chunk_tflop", "chunk_ms_datasheet", "chunk_ms", "ridge_datasheet",
    "ridge_measured", "decode32_intensity", "mixed543_intensity", "model_layers", "wl_lengths", "wl_budgets"],
    _hardware)


# --------------------------------------------------------------------------------- steps
def step_rows(d: str | Path | None = None) -> pd.DataFrame:
    """Census step rows, one per (config, engine, step): medians over repeated rows, with the
    step's bytes floor (weights + KV at the copy bandwidth) and FLOP floor (at the GEMM rate)."""
    c = load("census", d)
    if not len(c) or "record" not in c:
        return pd.DataFrame()
    c = c[c["record"] == "step"].copy()
    if not len(c):
        return pd.DataFrame()
    c["bytes_floor_ms"] = (c["weight_bytes"] + c["kv_bytes"]) / c["copy_bw_Bps"] * 1e3
    c["flop_floor_ms"] = c["flops"] / (c["gemm_tflops"] * 1e12) * 1e3
    c["kernels_per_layer"] = c["n_kernels"] / c["num_layers"]
    cols = ["wall_ms", "gpu_ms", "host_ms", "bytes_floor_ms", "flop_floor_ms", "kernels_per_layer",
            "decode_rows", "chunk_tokens", "context", "n_kernels"]
    cols = [x for x in cols if x in c]
    c[cols] = c[cols].astype(float)  # a CPU run's rows hold None where GPU time would be
    return c.groupby(["config", "engine", "step"], as_index=False)[cols].median()


def _one(s: pd.DataFrame, config: str, engine: str, step: str) -> dict | None:
    if not len(s):
        return None
    r = s[(s["config"] == config) & (s["engine"] == engine) & (s["step"] == step)]
    return None if not len(r) else r.iloc[0].to_dict()


def bottleneck(host: float | None, share: float | None) -> str:
    """What sets a step's length, from the host's busy time and the GPU events' span, each as a
    share of the step's wall time. The events' span counts the GPU's waits for the next launch,
    so it bounds the GPU's work from above; a host busy for nearly the whole step is what sets
    an eager step's length."""
    if host is None or share is None:
        return "unknown: these rows carry no GPU time"
    if host >= 0.9:
        return (f"the host: it is busy for {pct(100 * min(host, 1.0))} of the step's wall time, so the GPU's "
                f"event span ({pct(100 * min(share, 1.0))} of it) includes its waits for launches")
    if share >= 0.9:
        return (f"the GPU: its events span {pct(100 * min(share, 1.0))} of the step's wall time, the host is "
                f"busy for {pct(100 * host)}")
    return (f"neither alone: the GPU's events span {pct(100 * share)} of the step's wall time, the host is "
            f"busy for {pct(100 * host)}")


def _steps(config: str, d: Path):
    s = step_rows(d)
    dec, mix = _one(s, config, "fused", "decode"), _one(s, config, "fused", "mixed")
    mixc = _one(s, config, "chunked", "mixed")
    g = lambda r, k: None if r is None or k not in r or pd.isna(r[k]) else float(r[k])  # noqa: E731
    v = {}
    v["decode_wall"] = fixed(g(dec, "wall_ms"), ms)
    v["decode_gpu"] = fixed(g(dec, "gpu_ms"), ms)
    v["decode_host"] = fixed(g(dec, "host_ms"), ms)
    v["decode_floor"] = fixed(g(dec, "bytes_floor_ms"), ms)
    v["decode_over_floor"] = fixed(ratio(g(dec, "wall_ms"), g(dec, "bytes_floor_ms")), times)
    share = ratio(g(dec, "gpu_ms"), g(dec, "wall_ms"))
    v["decode_gpu_share"] = fixed(share and 100 * min(share, 1.0), pct)
    host = ratio(g(dec, "host_ms"), g(dec, "wall_ms"))
    v["bottleneck"] = MISSING if dec is None else Value(host, bottleneck(host, share))
    v["kernels_per_layer"] = fixed(g(dec, "kernels_per_layer"), lambda x: f"{x:.1f}")
    v["decode_kernels"] = fixed(g(dec, "n_kernels"), lambda x: f"{x:,.0f}")
    per_kernel = ratio(g(dec, "host_ms"), g(dec, "n_kernels"))
    v["host_us_per_kernel"] = fixed(per_kernel and 1e3 * per_kernel, us)
    v["decode_shape"] = MISSING if dec is None else Value(
        g(dec, "decode_rows"), f"{g(dec, 'decode_rows'):.0f} rows at {g(dec, 'context'):,.0f} tokens of context each")
    v["mixed_wall"] = fixed(g(mix, "wall_ms"), ms)
    v["mixed_gpu"] = fixed(g(mix, "gpu_ms"), ms)
    v["mixed_chunked_wall"] = fixed(g(mixc, "wall_ms"), ms)
    v["mixed_chunked_gpu"] = fixed(g(mixc, "gpu_ms"), ms)
    saving = ratio(g(mix, "wall_ms"), g(mixc, "wall_ms"))
    saving = saving and 100 * (1 - saving)
    v["mixed_saving"] = fixed(saving, lambda x: f"{pct(x)} shorter" if x >= 0 else f"{pct(-x)} longer")
    v["mixed_floor"] = fixed(g(mix, "flop_floor_ms"), ms)
    v["mixed_over_floor"] = fixed(ratio(g(mix, "gpu_ms"), g(mix, "flop_floor_ms")), times)
    v["mixed_shape"] = MISSING if mix is None else Value(g(mix, "chunk_tokens"), (
        f"a {g(mix, 'chunk_tokens'):,.0f}-token prompt chunk beside {g(mix, 'decode_rows'):.0f} decode rows"))
    i = PARTS.index(config) if config in PARTS else 0
    if i > 0:
        prev = _one(s, PARTS[i - 1], "fused", "decode")
        change = ratio(g(prev, "wall_ms"), g(dec, "wall_ms"))
        v["decode_change"] = fixed(change, lambda x: f"{times(x)} shorter" if x >= 1 else f"{times(1 / x)} longer")
    rows = []
    for engine, step, r in (("fused", "decode", dec), ("fused", "mixed", mix), ("chunked", "mixed", mixc)):
        if r is None:
            continue
        floor = g(r, "bytes_floor_ms") if step == "decode" else g(r, "flop_floor_ms")
        rows.append({"step": step, "engine": engine, "wall (ms)": _cell(g(r, "wall_ms")),
                     "GPU (ms)": _cell(g(r, "gpu_ms")), "host (ms)": _cell(g(r, "host_ms")),
                     "floor (ms)": _cell(floor), "floor is": "bytes" if step == "decode" else "FLOPs",
                     "kernels per layer": _cell(g(r, "kernels_per_layer"))})
    return pd.DataFrame(rows), {f"{_prefix(config)}_{k}": x for k, x in v.items()}


STEP_NAMES = ["decode_wall", "decode_gpu", "decode_host", "decode_floor", "decode_over_floor",
              "decode_gpu_share", "bottleneck", "kernels_per_layer", "decode_kernels", "host_us_per_kernel", "decode_shape", "mixed_wall", "mixed_gpu",
              "mixed_chunked_wall", "mixed_chunked_gpu", "mixed_saving", "mixed_floor", "mixed_over_floor",
              "mixed_shape"]


def _prefix(config: str) -> str:
    return "p" + PAGE[config][4:]


for _i, _c in enumerate(PARTS):
    _register(f"steps:{_c}", PAGE[_c], [f"{_prefix(_c)}_{k}" for k in STEP_NAMES + (["decode_change"] if _i else [])],
              partial(_steps, _c))


# ------------------------------------------------------------------------------ capacity
def run_medians(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Open-loop runs: per keys + rate, the median over rounds of each measured field."""
    if not len(df):
        return pd.DataFrame()
    fields = [c for c in ("served_rate", "ttft_p50_s", "ttft_p99_s", "itl_p50_s", "itl_p99_s", "e2e_p50_s",
                          "goodput_rate", "host_share", "host_ms_per_step_p50", "step_gpu_ms_p50") if c in df]
    out = df.groupby(keys + ["rate"], as_index=False)[fields].median()
    out["n"] = df.groupby(keys + ["rate"]).size().values
    return out


def pairs(df: pd.DataFrame) -> pd.DataFrame:
    """The paired comparison in a set of open-loop rows of one setting: the rate with the most
    rounds (the highest such rate), one row per round holding both engines: round, seed, fused,
    chunked (served rates) and rate."""
    if not len(df) or not {"fused", "chunked"} <= set(df["engine"]):
        return pd.DataFrame(columns=["round", "seed", "fused", "chunked"])
    both = df.groupby(["rate", "round"])["engine"].nunique()
    both = both[both == 2].reset_index()
    if not len(both):
        return pd.DataFrame(columns=["round", "seed", "fused", "chunked"])
    counts = both.groupby("rate").size()
    r = float(max(counts[counts == counts.max()].index))
    at = df[df["rate"] == r]
    wide = at.pivot_table(index="round", columns="engine", values="served_rate", aggfunc="last")
    seeds = at.groupby("round")["seed"].first() if "seed" in at else pd.Series(0, index=wide.index)
    out = wide[["fused", "chunked"]].dropna().reset_index()
    out["seed"] = out["round"].map(seeds)
    out["rate"] = r
    return out


def _gain_verdict(v: Value, ahead: str = "the fused engine serves more", behind: str = "the chunked engine serves more") -> Value:
    if v.value is None:
        return MISSING
    if v.lo is None:
        return Value(v.value, "unresolved (one pair)")
    if not v.resolved:
        return Value(v.value, "neither engine is resolved ahead of the other")
    return Value(v.value, ahead if v.lo > 0 else behind)


def _capacity(config: str, d: Path):
    p = _prefix(config)
    c = load("capacity", d)
    c = c[c["config"] == config] if len(c) else c
    names = {}
    pr = pairs(c)
    if len(pr):
        g = gain(pr["fused"], pr["chunked"], pr["seed"])
        names["capacity_fused"] = median(pr["fused"], "requests/s")
        names["capacity_chunked"] = median(pr["chunked"], "requests/s")
        names["fusion_gain"] = g
        names["fusion_verdict"] = _gain_verdict(g)
        r = float(pr["rate"].iloc[0])
        names["pair_rate"] = Value(r, f"{sig(r)} requests/s")
        nr = c["n_requests"].median() if "n_requests" in c else None
        names["n_requests"] = fixed(nr, lambda x: f"{x:,.0f}")
        at = c[c["rate"] == r]
        for eng in ("fused", "chunked"):
            e = at[at["engine"] == eng]
            names[f"ttft_p50_{eng}"] = median(e["ttft_p50_s"], "s", num=lambda x: sig(x, 2))
            names[f"itl_p99_{eng}"] = median(e["itl_p99_s"] * 1e3, "ms")
    else:
        names = {k: MISSING for k in CAPACITY_NAMES}
    table = sweep_table(c)
    return table, {f"{p}_{k}": x for k, x in names.items()}


CAPACITY_NAMES = ["capacity_fused", "capacity_chunked", "fusion_gain", "fusion_verdict", "pair_rate", "n_requests",
                  "ttft_p50_fused", "ttft_p50_chunked", "itl_p99_fused", "itl_p99_chunked"]

for _c in PARTS:
    _register(f"capacity:{_c}", PAGE[_c], [f"{_prefix(_c)}_{k}" for k in CAPACITY_NAMES], partial(_capacity, _c))


def sweep_table(c: pd.DataFrame) -> pd.DataFrame:
    """Served rate and latency per engine and offered rate (medians over rounds)."""
    keys = [k for k in ("config", "engine", "max_batch", "chunk_tokens") if k in c]
    m = run_medians(c, keys)
    if not len(m):
        return m
    m = m.sort_values(keys + ["rate"]).reset_index(drop=True)
    return m


def capacity_sweeps(data: str | Path | None = None) -> pd.DataFrame:
    """Every part's open-loop sweep (medians over rounds), for the capacity and latency figures."""
    return sweep_table(load("capacity", rows_dir(data)))


# ----------------------------------------------------------------------------- attention
def attention_table(d: str | Path | None = None) -> pd.DataFrame:
    a = load("attention", d)
    if not len(a):
        return a
    return a.groupby(["backend", "context"], as_index=False)[["gpu_us", "copy_us", "fraction_of_copy", "kv_bytes"]].median()


def _attention(d: Path):
    a = attention_table(d)
    names = ["att_frac_triton", "att_frac_splitkv", "att_frac_parallel", "att_speedup_splitkv",
             "att_speedup_parallel", "att_1k_triton", "att_1k_splitkv", "att_1k_parallel", "att_1k_copy",
             "att_1k_mb", "att_1k_floor", "att_1k_step_floor"]
    v = {k: MISSING for k in names}
    kv1k = 32 * 1024 * SIZES["kv_bytes_per_token"] / MODEL["layers"]
    bw, _ = rates(d)
    v["att_1k_mb"] = fixed(kv1k / 1e6, lambda x: f"{x:.1f} MB")
    bw = bw or datasheet(d)["bandwidth_Bps"]
    v["att_1k_floor"] = fixed(kv1k / bw * 1e6, us)
    v["att_1k_step_floor"] = fixed(MODEL["layers"] * kv1k / bw * 1e3, ms)
    if not len(a):
        return pd.DataFrame(), v
    rng = lambda s: span(100 * s.min(), 100 * s.max(), pct)  # noqa: E731
    by = {b: a[a["backend"] == b].set_index("context") for b in a["backend"].unique()}
    for b, short in (("triton", "triton"), ("triton-splitkv", "splitkv"), ("triton-parallel", "parallel")):
        if b in by and len(by[b]):
            f = by[b]["fraction_of_copy"]
            v[f"att_frac_{short}"] = Value(float(f.median()), rng(f), float(f.min()), float(f.max()), len(f))
            if 1024 in by[b].index:
                v[f"att_1k_{short}"] = fixed(float(by[b].loc[1024, "gpu_us"]), us)
    copy1k = a[a["context"] == 1024]["copy_us"]  # timed beside each kernel: one figure, their median
    if len(copy1k):
        v["att_1k_copy"] = fixed(float(copy1k.median()), us)
    for a_, b_, k in (("triton", "triton-splitkv", "att_speedup_splitkv"),
                      ("triton-splitkv", "triton-parallel", "att_speedup_parallel")):
        if a_ in by and b_ in by:
            r = (by[a_]["gpu_us"] / by[b_]["gpu_us"]).dropna()
            if len(r):
                v[k] = Value(float(r.median()), span(r.min(), r.max(), lambda x: f"{x:.2f}×"),
                             float(r.min()), float(r.max()), len(r))
    table = pd.DataFrame({"kernel": a["backend"], "context (tokens)": a["context"],
                          "attention (µs)": a["gpu_us"].map(sig), "copy of the same bytes (µs)": a["copy_us"].map(sig),
                          "share of copy speed": (100 * a["fraction_of_copy"]).map(pct)})
    return table, v


_register("attention", "part08", ["att_frac_triton", "att_frac_splitkv", "att_frac_parallel", "att_speedup_splitkv",
                                  "att_speedup_parallel", "att_1k_triton", "att_1k_splitkv", "att_1k_parallel",
                                  "att_1k_copy", "att_1k_mb", "att_1k_floor", "att_1k_step_floor"], _attention)


# ------------------------------------------------------------------------------ roofline
def roofline_points(d: str | Path | None = None, config: str = "part10") -> pd.DataFrame:
    """Each step kind and each kernel class of `config` as a roofline point: FLOPs, bytes,
    GPU time, arithmetic intensity (FLOP/byte) and attained FLOP/s. Kernel classes without
    modelled bytes or FLOPs are left out."""
    c = load("census", d)
    if not len(c) or "record" not in c:
        return pd.DataFrame()
    pts = []
    s = c[(c["record"] == "step") & (c["config"] == config) & (c["engine"] == "fused")]
    for step, r in s.groupby("step"):
        pts.append({"point": f"{step} step", "kind": "step", "step": step, "flops": r["flops"].median(),
                    "bytes": (r["weight_bytes"] + r["kv_bytes"]).median(), "gpu_ms": r["gpu_ms"].median()})
    k = c[(c["record"] == "kernel_class") & (c["config"] == config)]
    for (step, cls), r in k.groupby(["step", "kernel_class"]):
        pts.append({"point": f"{cls} ({step})", "kind": cls, "step": step, "flops": r["flops"].median(),
                    "bytes": r["bytes"].median(), "gpu_ms": r["gpu_ms"].median()})
    p = pd.DataFrame(pts)
    if not len(p):
        return p
    p = p.dropna(subset=["flops", "bytes", "gpu_ms"])
    p = p[(p["flops"] > 0) & (p["bytes"] > 0) & (p["gpu_ms"] > 0)]
    p["intensity"] = p["flops"] / p["bytes"]
    p["attained"] = p["flops"] / (p["gpu_ms"] / 1e3)
    return p.reset_index(drop=True)


def _roofline(d: Path):
    bw, gemm = rates(d)
    p = roofline_points(d)
    names = ["rf_decode_intensity", "rf_decode_attained", "rf_decode_roof_share", "rf_mixed_intensity",
             "rf_mixed_attained", "rf_mixed_roof_share", "rf_gemm_share_decode", "rf_gemm_share_mixed"]
    v = {k: MISSING for k in names}
    if not len(p) or bw is None:
        return pd.DataFrame(), v
    p["roof"] = np.minimum(gemm, bw * p["intensity"])
    p["share"] = p["attained"] / p["roof"]
    for step in ("decode", "mixed"):
        r = p[(p["kind"] == "step") & (p["step"] == step)]
        if len(r):
            r = r.iloc[0]
            v[f"rf_{step}_intensity"] = fixed(r["intensity"], lambda x: f"{sig(x, 2)} FLOP/byte")
            v[f"rf_{step}_attained"] = fixed(r["attained"] / 1e12, lambda x: f"{sig(x)} TFLOP/s")
            v[f"rf_{step}_roof_share"] = fixed(100 * r["share"], pct)
    c = load("census", d)
    k = c[(c["record"] == "kernel_class") & (c["config"] == "part10")]
    for step in ("decode", "mixed"):
        ks = k[k["step"] == step]
        if len(ks):
            v[f"rf_gemm_share_{step}"] = fixed(100 * ks[ks["kernel_class"] == "gemm"]["gpu_ms"].sum() / ks["gpu_ms"].sum(), pct)
    table = pd.DataFrame({"point": p["point"], "FLOP/byte": p["intensity"].map(lambda x: sig(x, 2)),
                          "attained (TFLOP/s)": (p["attained"] / 1e12).map(sig),
                          "share of the roof above it": (100 * p["share"]).map(pct)})
    return table, v


_register("roofline", "part10", ["rf_decode_intensity", "rf_decode_attained", "rf_decode_roof_share",
                                 "rf_mixed_intensity", "rf_mixed_attained", "rf_mixed_roof_share",
                                 "rf_gemm_share_decode", "rf_gemm_share_mixed"], _roofline)


# ---------------------------------------------------------------------------------- peer
def _peer(config: str, d: Path):
    p = _prefix(config)
    names = {"peer_ratio": MISSING, "peer_tok_s": MISSING, "peer_transformers_tok_s": MISSING, "peer_batch": MISSING}
    df = load("peer", d)
    if not len(df):
        return pd.DataFrame(), {f"{p}_{k}": x for k, x in names.items()}
    ours = df[(df["engine"] == "fused") & (df["config"] == config)].set_index("round")["output_tok_s"]
    hf = df[(df["engine"] == "transformers") & (df["config"] == config)].set_index("round")["output_tok_s"]
    both = ours.to_frame("ours").join(hf.to_frame("hf"), how="inner").dropna()
    if len(both):
        names["peer_ratio"] = multiple(both["ours"], both["hf"])
    names["peer_tok_s"] = median(ours, "tokens/s")
    names["peer_transformers_tok_s"] = median(hf, "tokens/s")
    b = df[(df["engine"] == "fused") & (df["config"] == config)]["batch"]
    names["peer_batch"] = fixed(float(b.max()) if len(b) else None, lambda x: f"{x:.0f}")
    t = df[df["config"] == config]
    table = t.groupby(["engine", "batch"], as_index=False, dropna=False)["output_tok_s"].agg(["median", "count"])
    table = pd.DataFrame({"engine": table["engine"], "batch": table["batch"],
                          "output tokens/s (median)": table["median"].map(sig), "runs": table["count"]})
    return table, {f"{p}_{k}": x for k, x in names.items()}


for _c in ("part10", "part11"):
    _register(f"peer:{_c}", PAGE[_c], [f"{_prefix(_c)}_{k}" for k in ("peer_ratio", "peer_tok_s",
                                                                        "peer_transformers_tok_s", "peer_batch")],
              partial(_peer, _c))


# --------------------------------------------------------------------------------- gates
def _gates(d: Path):
    g = load("gates", d)
    names = {"gates_passed": MISSING, "gates_b256": MISSING}
    if not len(g):
        return pd.DataFrame(), names
    ok = g["passed"].astype(bool)
    names["gates_passed"] = Value(float(ok.mean()), "every one passed" if ok.all() else f"{int(ok.sum())} of {len(ok)} passed")
    big = g[g["config"] == "part11"]
    if len(big):
        okb = big["passed"].astype(bool)
        names["gates_b256"] = Value(float(okb.mean()), f"{int(okb.sum())} of {len(okb)} pass")
    table = g.pivot_table(index="gate", columns="config", values="passed", aggfunc=lambda s: "pass" if all(s) else "FAIL")
    cols = [c for c in (*PARTS, "part11") if c in table.columns]
    table = table[cols].reset_index().fillna("-")
    return table, names


_register("gates", "part07", ["gates_passed", "gates_b256"], _gates)


# --------------------------------------------------------------------------------- scale
def scale_settings(d: str | Path | None = None) -> pd.DataFrame:
    """Part 11: per engine, batch and budget, the capacity (the highest median served rate over
    offered rates) and the latency and goodput at that rate."""
    s = load("scale", d)
    m = run_medians(s, ["engine", "max_batch", "chunk_tokens"])
    if not len(m):
        return m
    # The setting's capacity: at its paired rate (the most rounds) if it has one, else the
    # offered rate that served most.
    best = m.sort_values(["n", "served_rate"]).groupby(["engine", "max_batch", "chunk_tokens"]).tail(1)
    good = m.groupby(["engine", "max_batch", "chunk_tokens"], as_index=False)["goodput_rate"].max()
    best = best.drop(columns=["goodput_rate"]).merge(good, on=["engine", "max_batch", "chunk_tokens"])
    return best.sort_values(["engine", "max_batch", "chunk_tokens"]).reset_index(drop=True)


def _setting(b: float, t: float) -> str:
    return f"batch {b:.0f}, budget {t:,.0f} tokens"


def _scale(d: Path):
    names = ["p11_best_fused_rate", "p11_best_setting", "p11_best_chunked_rate", "p11_chunked_at_best",
             "p11_fusion_gain_best", "p11_fusion_verdict", "p11_vs_small", "p11_goodput_best",
             "p11_ttft_p99_best", "p11_itl_p99_best", "p11_settings"]
    v = {k: MISSING for k in names}
    v["p11_device"] = _devices(load("scale", d))
    v["goodput_ttft"] = fixed(SLO["ttft_s"] * 1e3, ms)
    v["goodput_itl"] = fixed(SLO["itl_s"] * 1e3, ms)
    t = scale_settings(d)
    if not len(t):
        return pd.DataFrame(), v
    f, ch = t[t["engine"] == "fused"], t[t["engine"] == "chunked"]
    s = load("scale", d)
    v["p11_settings"] = Value(float(len(t[["max_batch", "chunk_tokens"]].drop_duplicates())),
                              f"{len(t[['max_batch', 'chunk_tokens']].drop_duplicates())}")
    if len(f):
        b = f.loc[f["served_rate"].idxmax()]
        at = s[(s["max_batch"] == b["max_batch"]) & (s["chunk_tokens"] == b["chunk_tokens"])]
        pr = pairs(at)
        runs = at[(at["engine"] == "fused") & (at["rate"] == b["rate"])]["served_rate"]
        est = median(runs, "requests/s")
        v["p11_best_fused_rate"] = Value(float(b["served_rate"]), est.text, est.lo, est.hi, est.n, est.level)
        v["p11_best_setting"] = Value(None, _setting(b["max_batch"], b["chunk_tokens"]))
        v["p11_goodput_best"] = fixed(float(f["goodput_rate"].max()), rate)
        v["p11_ttft_p99_best"] = fixed(float(b["ttft_p99_s"]) * 1e3, ms)
        v["p11_itl_p99_best"] = fixed(float(b["itl_p99_s"]) * 1e3, ms)
        cb = ch[(ch["max_batch"] == b["max_batch"]) & (ch["chunk_tokens"] == b["chunk_tokens"])]
        if len(cb):
            v["p11_chunked_at_best"] = fixed(float(cb["served_rate"].iloc[0]), rate)
        if len(pr):
            g = gain(pr["fused"], pr["chunked"], pr["seed"])
            v["p11_fusion_gain_best"] = g
            v["p11_fusion_verdict"] = _gain_verdict(g)
        _, small = figure("capacity:part10", d)
        if small["p10_capacity_fused"].value:
            v["p11_vs_small"] = fixed(float(b["served_rate"]) / small["p10_capacity_fused"].value, times)
    if len(ch):
        c = ch.loc[ch["served_rate"].idxmax()]
        v["p11_best_chunked_rate"] = Value(float(c["served_rate"]), f"{rate(float(c['served_rate']))} "
                                           f"({_setting(c['max_batch'], c['chunk_tokens'])})")
    table = t.pivot_table(index=["max_batch", "chunk_tokens"], columns="engine", values="served_rate").reset_index()
    out = pd.DataFrame({"batch": table["max_batch"].astype(int), "budget (tokens)": table["chunk_tokens"].astype(int)})
    for eng in ("fused", "chunked"):
        if eng in table:
            out[f"{eng} (req/s)"] = table[eng].map(sig)
    return out, v


_register("scale", "part11", ["p11_best_fused_rate", "p11_best_setting", "p11_best_chunked_rate",
                              "p11_chunked_at_best", "p11_fusion_gain_best", "p11_fusion_verdict", "p11_vs_small",
                              "p11_goodput_best", "p11_ttft_p99_best", "p11_itl_p99_best", "p11_settings",
                              "goodput_ttft", "goodput_itl", "p11_device"], _scale)


def scale_sweeps(data: str | Path | None = None) -> pd.DataFrame:
    """Part 11's open-loop runs, medians over rounds per engine, setting and offered rate."""
    return sweep_table(load("scale", rows_dir(data)))


def _host(d: Path):
    """At each max_batch, the fused runs whose decode steps filled the batch (at lower offered
    rates, or a budget too small to keep it full, the steps stay smaller): medians over those
    runs of the host's share of the loop, the host's and the GPU's time per full decode step,
    and a decode step's wall over its GPU time (1.00: the host's work is hidden behind the GPU's)."""
    names = {"p11_host_share_b256": MISSING, "p11_host_ms_b256": MISSING, "p11_step_gpu_b256": MISSING,
             "p11_decode_wall_over_gpu_b256": MISSING, "p11_decode_gpu_over_floor": MISSING,
             "p11_host_over_step_b256": MISSING}
    s = load("scale", d)
    if not len(s) or "largest_batch_decode_rows" not in s:
        return pd.DataFrame(), names
    full = s[(s["engine"] == "fused") & (s["largest_batch_decode_rows"] == s["max_batch"])]
    full = full.assign(wall_over_gpu=full["decode_step_s_p50"] / full["decode_step_gpu_s_p50"],
                       host_over_step=full["host_ms_per_step_p50"] / full["step_gpu_ms_p50"])
    b = full[full["max_batch"] == 256]
    e = median(b["host_share"] * 100, num=lambda x: f"{x:.1f}%")
    names["p11_host_share_b256"] = Value(None if e.value is None else e.value / 100, e.text,
                                         e.lo and e.lo / 100, e.hi and e.hi / 100, e.n, e.level)
    names["p11_host_ms_b256"] = median(b["host_ms_per_step_p50"], "ms")
    names["p11_step_gpu_b256"] = median(b["step_gpu_ms_p50"], "ms")
    names["p11_decode_wall_over_gpu_b256"] = median(b["wall_over_gpu"], num=lambda x: f"{x:.2f}×")
    # The host's time per full decode step over that step's GPU time (its wall time, where the
    # two are equal): how much of a step the host's work would be if it did not overlap.
    names["p11_host_over_step_b256"] = median(100 * b["host_over_step"], num=lambda x: f"{x:.0f}%")
    gpu, floor = names["p11_step_gpu_b256"].value, figure("ceiling", d)[1]["p11_decode256_floor"].value
    names["p11_decode_gpu_over_floor"] = fixed(ratio(gpu, floor), times)
    table = full.groupby("max_batch", as_index=False).agg(
        runs=("host_share", "size"), host_share=("host_share", "median"),
        host_ms=("host_ms_per_step_p50", "median"), gpu_ms=("step_gpu_ms_p50", "median"),
        wall_over_gpu=("wall_over_gpu", "median"))
    out = pd.DataFrame({"batch": table["max_batch"].astype(int), "runs": table["runs"],
                        "host share of the loop": (100 * table["host_share"]).map(pct),
                        "host per full decode step (ms)": table["host_ms"].map(sig),
                        "GPU per full decode step (ms)": table["gpu_ms"].map(sig),
                        "decode step wall / GPU": table["wall_over_gpu"].map(lambda x: f"{x:.2f}")})
    return out, names


_register("host", "part11", ["p11_host_share_b256", "p11_host_ms_b256", "p11_step_gpu_b256",
                             "p11_decode_wall_over_gpu_b256", "p11_decode_gpu_over_floor",
                             "p11_host_over_step_b256"], _host)


def request_cost() -> dict[str, float]:
    """The mixed draw's expected work per request (prompts of MIXED_LENGTHS, equally likely;
    budgets uniform in MIXED_BUDGET): FLOPs by kind and the KV bytes its decode rows read."""
    L = np.asarray(MIXED_LENGTHS, float)
    B = np.arange(MIXED_BUDGET[0], MIXED_BUDGET[1] + 1, dtype=float)
    eL, eL2, eB = L.mean(), (L * L).mean(), B.mean()
    e_pairs = (B * (B - 1) / 2).mean()  # sum over the generated tokens of their offset
    positions = eL + eB
    decode_keys = eB * eL + e_pairs + eB  # keys a decode row attends to, summed over its tokens
    out = {
        "linear": positions * SIZES["linear_flop_per_token"],
        "lm_head": eB * SIZES["lm_head_flop_per_token"],
        "prompt_attention": eL2 / 2 * SIZES["attn_flop_per_pair"],
        "decode_attention": decode_keys * SIZES["attn_flop_per_pair"],
        "kv_bytes": decode_keys * SIZES["kv_bytes_per_token"],
        "positions": positions,
        "decode_context": decode_keys / eB,  # a decode row's mean context
    }
    out["flops"] = out["linear"] + out["lm_head"] + out["prompt_attention"] + out["decode_attention"]
    return out


# The served rate part 11 set out to reach, before any run at its sizes.
TARGET_RATE = 150.0


def _ceiling(d: Path):
    cost = request_cost()
    bw, gemm = rates(d)
    sheet = datasheet(d)
    t_sheet = cost["flops"] / sheet["fp16_flops"] + cost["kv_bytes"] / sheet["bandwidth_Bps"]
    t = gemm and cost["flops"] / gemm + cost["kv_bytes"] / bw
    dec256 = SIZES["weight_bytes"] + 256 * cost["decode_context"] * SIZES["kv_bytes_per_token"]
    v = {
        "p11_req_tflop": fixed(cost["flops"] / 1e12, lambda x: f"{x:.2f} TFLOP"),
        "p11_req_linear_tflop": fixed(cost["linear"] / 1e12, lambda x: f"{x:.2f} TFLOP"),
        "p11_req_attn_tflop": fixed(cost["prompt_attention"] / 1e12, lambda x: f"{x:.2f} TFLOP"),
        "p11_req_kv_gb": fixed(cost["kv_bytes"] / 1e9, lambda x: f"{x:.1f} GB"),
        "p11_req_positions": fixed(cost["positions"], lambda x: f"{x:,.0f}"),
        "p11_req_ms": fixed(t and t * 1e3, ms),
        "p11_ceiling_rate": fixed(t and 1 / t, rate),
        "p11_ceiling_datasheet": fixed(1 / t_sheet, rate),
        "p11_decode256_floor": fixed(dec256 / (bw or sheet["bandwidth_Bps"]) * 1e3, ms),
        "p11_ceiling_share": MISSING,
        "p11_target_rate": fixed(TARGET_RATE, rate),
    }
    _, sc = figure("scale", d)
    best = sc["p11_best_fused_rate"].value
    if best and t:
        v["p11_ceiling_share"] = fixed(100 * best * t, pct)
    table = pd.DataFrame([
        {"work per request": "linear layers", "amount": v["p11_req_linear_tflop"].text},
        {"work per request": "LM head", "amount": f"{cost['lm_head'] / 1e12:.2f} TFLOP"},
        {"work per request": "prompt attention (causal)", "amount": v["p11_req_attn_tflop"].text},
        {"work per request": "decode attention", "amount": f"{cost['decode_attention'] / 1e12:.2f} TFLOP"},
        {"work per request": "KV cache read by decode rows", "amount": v["p11_req_kv_gb"].text},
    ])
    return table, v


_register("ceiling", "part11", ["p11_req_tflop", "p11_req_linear_tflop", "p11_req_attn_tflop", "p11_req_kv_gb",
                                "p11_req_positions", "p11_req_ms", "p11_ceiling_rate", "p11_ceiling_datasheet",
                                "p11_decode256_floor", "p11_ceiling_share", "p11_target_rate"], _ceiling)


# ---------------------------------------------------------------------------- the intro
def _series(d: Path):
    """One row per part: the decode and mixed steps beside their floors, kernels per layer,
    capacity and fusion's gain."""
    rows = []
    vals = {}
    for c in PARTS:
        vals.update(figure(f"steps:{c}", d)[1])
        vals.update(figure(f"capacity:{c}", d)[1])
    for c in PARTS:
        p = _prefix(c)
        t = lambda k: vals[f"{p}_{k}"]  # noqa: E731
        num = lambda k: "-" if t(k).value is None else sig(t(k).value)  # noqa: E731
        rows.append({"part": LABEL[c], "decode wall (ms)": _num(vals, f"{p}_decode_wall"),
                     "decode GPU (ms)": _num(vals, f"{p}_decode_gpu"), "bytes floor (ms)": _num(vals, f"{p}_decode_floor"),
                     "mixed GPU (ms)": _num(vals, f"{p}_mixed_gpu"), "FLOP floor (ms)": _num(vals, f"{p}_mixed_floor"),
                     "kernels per layer": _num(vals, f"{p}_kernels_per_layer"),
                     "capacity fused / chunked (req/s)": f"{num('capacity_fused')} / {num('capacity_chunked')}",
                     "fusion's gain": _short_gain(t("fusion_gain"))})
    _, sc = figure("scale", d)
    best, chunk = sc["p11_best_fused_rate"], sc["p11_chunked_at_best"]
    rows.append({"part": LABEL["part11"] + (f" ({sc['p11_best_setting'].text})" if best.value else ""),
                 "decode wall (ms)": "-", "decode GPU (ms)": "-", "bytes floor (ms)": "-", "mixed GPU (ms)": "-",
                 "FLOP floor (ms)": "-", "kernels per layer": "-",
                 "capacity fused / chunked (req/s)": "-" if best.value is None else
                 f"{sig(best.value)} / {'-' if chunk.value is None else sig(chunk.value)}",
                 "fusion's gain": _short_gain(sc["p11_fusion_gain_best"])})
    first, last = vals["p07_decode_wall"].value, vals["p10_decode_wall"].value
    v = {"series_decode_speedup": fixed(ratio(first, last), times)}
    return pd.DataFrame(rows), v


def _num(vals, k):
    return "-" if vals[k].value is None else sig(vals[k].value)


def _short_gain(v: Value) -> str:
    if v.value is None:
        return "-"
    if v.lo is None:
        return f"{v.value:+.1f}% (1 pair)"
    s = f"{v.value:+.1f}% [{v.lo:+.1f}, {v.hi:+.1f}], n={v.n}"
    return s if v.resolved else f"not resolved ({s})"


_register("series", "intro", ["series_decode_speedup"], _series)


def reference_figures() -> dict[str, dict]:
    with open(STATIC / "reference" / "a10.yaml") as f:
        ref = yaml.safe_load(f)
    return {x["id"]: x for x in ref["figures"]} | {"_machine": ref["machine"], "_source": ref["source"]}


def _reference(d: Path):
    """The reference's A10 figures (its own measurements, from its text) beside ours."""
    r = reference_figures()
    val = lambda k: r[k]["value"]  # noqa: E731
    vals = {}
    for c in ("part7", "part10"):
        vals.update(figure(f"steps:{c}", d)[1])
        vals.update(figure(f"capacity:{c}", d)[1])
    _, hw = figure("hardware", d)
    a10_read = val("weight_read")
    w = hw["model_weights_ms"].value
    mult = lambda k: "-" if vals[k].value is None or not w else times(vals[k].value / w)  # noqa: E731
    g = lambda k: "-" if vals[k].value is None else sig(vals[k].value)  # noqa: E731
    rows = [
        ("capacity, fused (req/s)", sig(val("capacity_fused")), g("p07_capacity_fused"), g("p10_capacity_fused")),
        ("capacity, two forwards (req/s)", sig(val("capacity_chunked")), g("p07_capacity_chunked"), g("p10_capacity_chunked")),
        ("fusion's capacity gain", pct(100 * val("capacity_gain"), True), _short_gain(vals["p07_fusion_gain"]),
         _short_gain(vals["p10_fusion_gain"])),
        ("pure decode step, fused (ms)", sig(val("decode_step_fused")), g("p07_decode_wall"), g("p10_decode_wall")),
        ("mixed step, fused (ms)", sig(val("mixed_step_fused")), g("p07_mixed_wall"), g("p10_mixed_wall")),
        ("mixed step, two forwards (ms)", sig(val("mixed_step_chunked")), g("p07_mixed_chunked_wall"),
         g("p10_mixed_chunked_wall")),
        ("reading the weights once (ms)", sig(val("weight_read")), "-" if not w else sig(w), "-" if not w else sig(w)),
        ("decode step / weight read", times(val("decode_step_fused") / a10_read), mult("p07_decode_wall"),
         mult("p10_decode_wall")),
    ]
    card = hw["hw_card"].text
    table = pd.DataFrame(rows, columns=["figure", "A10, the reference's", f"{card}, part 7's engine",
                                        f"{card}, part 10's engine"])
    v = {
        "a10_gain": fixed(100 * val("capacity_gain"), lambda x: pct(x, True)),
        "a10_capacity_fused": fixed(val("capacity_fused"), rate),
        "a10_capacity_chunked": fixed(val("capacity_chunked"), rate),
        "a10_decode_multiple": fixed(val("decode_step_fused") / a10_read, times),
        "ours_decode_multiple": fixed(ratio(vals["p07_decode_wall"].value, w), times),
    }
    return table, v


_register("reference", "intro", ["a10_gain", "a10_capacity_fused", "a10_capacity_chunked", "a10_decode_multiple",
                                 "ours_decode_multiple"], _reference)


# ---------------------------------------------------------------------------- appendices
def not_kept() -> pd.DataFrame:
    path = STATIC / "not_kept.csv"
    return pd.read_csv(path).fillna("-") if path.exists() else pd.DataFrame()


def provenance(data: str | Path | None = None) -> pd.DataFrame:
    """Per rows file: its rows, commits, code versions, devices, profile and dates."""
    d = rows_dir(data)
    out = []
    for name in EXPERIMENTS:
        df = load(name, d)
        if not len(df):
            out.append({"file": f"{name}.jsonl", "rows": 0})
            continue
        j = lambda col: ", ".join(sorted({str(x) for x in df[col].dropna()})) if col in df else "-"  # noqa: E731
        dates = sorted(str(t)[:10] for t in df["time_utc"].dropna()) if "time_utc" in df else []
        out.append({"file": f"{name}.jsonl", "rows": len(df), "device": j("device_name"), "profile": j("profile"),
                    "code version": j("code_version"), "commit": j("commit") or "-",
                    "dates": "-" if not dates else (dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}")})
    return pd.DataFrame(out).fillna("-")


def software() -> pd.DataFrame:
    """The pinned packages (pyproject.toml's dependencies) the rows were measured with."""
    import re
    text = (REPO / "pyproject.toml").read_text()
    pins = re.findall(r'"([A-Za-z0-9_.\-\[\]]+)==([^"]+)"', text)
    keep = {"torch", "triton", "transformers", "numpy", "pandas", "jupyter-book", "myst-nb", "papermill"}
    return pd.DataFrame([{"package": p, "version": v} for p, v in pins if p.split("[")[0] in keep])


# ------------------------------------------------------------------------ page helpers
for _fig in REGISTRY.values():
    for _name in _fig.names:
        if _name in PAGE_OF:
            raise RuntimeError(f"glue name {_name!r} defined twice")
        PAGE_OF[_name] = _fig.page


def glue_page(page: str, data: str | Path | None = None) -> dict[str, pd.DataFrame]:
    """Glue every value of the figures this page shows ({glue:text}`name` in its prose);
    return their tables by figure key. The only place the book's pages glue."""
    from myst_nb import glue

    tables = {}
    for key, fig in REGISTRY.items():
        if fig.page == page:
            table, vals = figure(key, data)
            tables[key] = table
            for name in fig.names:
                glue(name, vals[name].text, display=False)
    return tables


def show(table: pd.DataFrame, empty: str = "No rows yet.") -> None:
    """A table as Markdown (a real table in the built page), or the note that rows are missing."""
    from IPython.display import Markdown, display

    display(Markdown(empty if table is None or not len(table) else table.to_markdown(index=False, disable_numparse=True)))
