"""The book's figures: one function per figure, tables from `figures` in, a matplotlib Figure
out (None when the table is empty; the page then says so). No torch, no pyplot state: each
figure is a `matplotlib.figure.Figure` the page displays with `show`. Log axes carry plain numbers at
chosen ticks (no minor labels to collide with them), one either side of the data; legends draw their lines
long enough to show each line's style. A run's rate is the rate its draw arrived at, not the Poisson rate."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedFormatter, FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

from .figures.data import PARTS

PART_COLOR = {"part7": "#8c564b", "part8": "#ff7f0e", "part9": "#2ca02c", "part10": "#1f77b4", "part11": "#9467bd",
              "part12": "#d62728"}
ENGINE_STYLE = {"fused": "-", "chunked": "--"}


def _fig(ncols: int = 1, width: float = 7.0, height: float = 3.4):
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
    return fig, axes


def _legend(where, *handles_labels, **kw):
    """A legend whose lines are long enough to show dashes beside their markers."""
    return where.legend(*handles_labels, **({"frameon": False, "handlelength": 3.5, "fontsize": 7} | kw))


def _log_y(ax) -> None:
    lo, hi = ax.dataLim.intervaly
    subs = (1.0, 2.0, 3.0, 5.0) if hi >= 10 * lo else (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0)  # under a decade, more labels
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(subs=subs))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_minor_formatter(NullFormatter())
    if 0 < lo <= hi < np.inf:  # limits at the ticks around the data, so a labelled tick lies either side of it
        ticks = np.outer(10.0 ** np.arange(np.floor(np.log10(lo)), np.ceil(np.log10(hi)) + 1), subs)
        ax.set_ylim(ticks[ticks <= lo].max() / 1.08, ticks[ticks >= hi].min() * 1.08)


def _log_x_at(ax, values) -> None:
    """A log x axis ticked at `values` only, each labelled as a plain integer."""
    values = sorted(float(v) for v in values)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(values))
    ax.xaxis.set_major_formatter(FixedFormatter([f"{v:,.0f}" for v in values]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


def _part(config: str) -> str:
    return "part " + config.removeprefix("part")


def capacity_vs_rate(sweeps: pd.DataFrame, highlight: str | None = None) -> Figure | None:
    """Capacity (the steady rate) against arrived rate on the sweep's draw, a colour a part,
    fused solid, chunked dashed, hollow where the queue ran dry, the rounds' range and median
    where several; with `highlight`, that part alone, on axes fitted to its own runs."""
    if len(sweeps) and highlight is not None:
        sweeps = sweeps[sweeps["config"] == highlight]
    if not len(sweeps):
        return None
    fig, (ax,) = _fig()
    top = float(sweeps["arrived"].max())
    ax.plot([0, top], [0, top], color="0.7", lw=0.8, label="served = arrived")
    for (config, engine), g in sweeps[sweeps["engine"].isin(list(ENGINE_STYLE))].groupby(["config", "engine"], sort=False):
        color = PART_COLOR.get(config, "0.4")
        x, y = g["arrived_sweep"], g["capacity_sweep"]  # the sweep's draw at every rate; other rounds are other draws
        ax.plot(x, y, ENGINE_STYLE[engine], color=color, label=f"{_part(config)}, {engine}")
        for at, face in ((g["saturated"].ne(False), color), (g["saturated"].eq(False), "white")):
            ax.plot(x[at], y[at], "o", ms=4, mfc=face, color=color)
        many, x = g["n"] > 1, g["arrived"] * (1.015 if engine == "chunked" else 1)  # side by side at one rate
        ax.vlines(x[many], g["capacity_min"][many], g["capacity_max"][many], color=color, ls=ENGINE_STYLE[engine])
        ax.plot(x[many], g["capacity"][many], "_", ms=9, mew=1.5, color=color)
    if sweeps["saturated"].eq(False).any():
        ax.plot([], [], "o", ms=4, mfc="white", color="0.4", label="queue ran dry (below saturation)")
    if (sweeps["n"] > 1).any():
        ax.vlines([], [], [], color="0.4", lw=1, label="range and median (tick) over the rounds")
    ax.set(xlabel="arrived (requests/s; the draw's own rate)", ylabel="capacity, steady rate (requests/s)", xlim=(0, None),
           ylim=(0, float(sweeps["capacity"].max()) * 1.15))
    _legend(ax, fontsize=8)
    return fig


def latency_vs_rate(sweeps: pd.DataFrame, config: str) -> Figure | None:
    """Time to first token and inter-token latency, p50 and p99, against arrived rate (medians over rounds)."""
    s = sweeps[sweeps["config"] == config] if len(sweeps) else sweeps
    if not len(s):
        return None
    fig, axes = _fig(2)
    for ax, (metric, name, scale) in zip(axes, (("ttft", "time to first token (s)", 1.0), ("itl", "inter-token latency (ms)", 1e3))):
        for engine, g in s[s["engine"].isin(list(ENGINE_STYLE))].groupby("engine"):
            for q, marker, said in (("p50", "o", "median"), ("p99", "^", "99th percentile")):
                ax.plot(g["arrived"], g[f"{metric}_{q}_s"] * scale, ENGINE_STYLE[engine], marker=marker, ms=3,
                        color=PART_COLOR.get(config), alpha=1.0 if q == "p99" else 0.6, label=f"{engine}, {said}")
        ax.set(xlabel="arrived (requests/s)", ylabel=name)
        _log_y(ax)
    _legend(axes[0])
    return fig


def steps_vs_floor(steps: pd.DataFrame) -> Figure | None:
    """Per part, the fused engine's decode step (wall and GPU) as a multiple of its bytes floor,
    and its mixed step's as a multiple of its FLOP floor, on a linear axis from zero with the
    floor at 1×. None where the rows carry no floors (a CPU's)."""
    s = steps[steps["engine"] == "fused"] if len(steps) else steps
    if not len(s) or s[["bytes_floor_ms", "flop_floor_ms"]].isna().all().all():
        return None
    parts = [p for p in PARTS if p in set(s["config"])]
    fig, axes = _fig(2)
    x = np.arange(len(parts))
    panels = ((axes[0], "decode", "bytes_floor_ms", "its bytes floor"), (axes[1], "mixed", "flop_floor_ms", "its FLOP floor"))
    for ax, step, floor, floor_name in panels:
        t = s[s["step"] == step].set_index("config").reindex(parts)
        for i, (col, name) in enumerate((("wall_ms", "wall"), ("gpu_ms", "GPU"))):
            ax.bar(x + (i - 0.5) * 0.36, t[col] / t[floor], 0.36, label=name, color=("0.6", "#1f77b4")[i])
        ax.axhline(1.0, color="#d62728", lw=1.5, label="floor")
        ax.set(xticks=x, xticklabels=[_part(p) for p in parts], ylabel=f"multiple of {floor_name}", ylim=(0, None),
               title=f"{step} step (fused engine)")
        _legend(ax)
    return fig


def roofline(points: pd.DataFrame, copy_bw: float | None, gemm: float | None) -> Figure | None:
    """Part 10 on the card's roofline, log-log: FLOP/byte against attained FLOP/s under the measured
    copy and GEMM roofs; a point per step and kernel class, its class a colour, its step a marker
    (mixed: hollow and larger, ringing a decode point it falls on), named in the legend, so no label covers another."""
    if not len(points) or not copy_bw or not gemm:
        return None
    fig, (ax,) = _fig(height=4.2)
    lo = min(points["intensity"].min(), 0.5) / 2
    hi = max(points["intensity"].max(), gemm / copy_bw) * 4
    xs = np.logspace(np.log10(lo), np.log10(hi), 200)
    ax.plot(xs, np.minimum(gemm, copy_bw * xs) / 1e12, color="k", lw=1.2)
    ax.axvline(gemm / copy_bw, color="0.7", lw=0.8, ls=":")
    ax.text(0.02, 0.02, f"bandwidth roof: copy at {copy_bw / 1e12:.2f} TB/s", transform=ax.transAxes, fontsize=7)
    ax.text(hi / 1.2, gemm / 1e12 * 1.3, f"compute roof: GEMM at {gemm / 1e12:.0f} TFLOP/s", fontsize=7, ha="right")
    markers = {"decode": "o", "mixed": "s"}
    styles = {"step": ("k", "whole step"), "gemm": ("#1f77b4", "GEMMs"), "attention": ("#ff7f0e", "attention"),
              "norm_rotary_act": ("#2ca02c", "norm, rotary, act"), "lm_head": ("#9467bd", "LM head")}
    for (kind, step), g in points.groupby(["kind", "step"], sort=False):
        color, name = styles.get(kind, ("0.5", kind))
        edge, face = ("k", color) if kind == "step" else (color, "none" if step == "mixed" else color)  # a hollow
        ax.scatter(g["intensity"], g["attained"] / 1e12, marker=markers.get(step, "o"), s=40 if kind == "step" else 80
                   if face == "none" else 30, facecolors=face, edgecolors=edge, zorder=3, label=f"{name}, {step}")
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP/byte)", ylabel="attained (TFLOP/s)",
           ylim=(min(points["attained"].min() / 1e12 / 3, 1.0), gemm / 1e12 * 3))
    _legend(ax, loc="center left", bbox_to_anchor=(1.0, 0.5), handlelength=1.5)
    return fig


def attention_vs_copy(table: pd.DataFrame) -> Figure | None:
    """Decode attention's speed as a share of a copy of the same bytes, per kernel and context."""
    if not len(table):
        return None
    fig, (ax,) = _fig(height=3.0)
    names = {"triton": "per-row (part 7)", "triton-splitkv": "split-KV (parts 8-9)", "triton-parallel": "part 10's"}
    for backend, g in table.groupby("backend"):
        ax.plot(g["context"], 100 * g["fraction_of_copy"], marker="o", label=names.get(backend, backend))
    ax.set(xlabel="context (tokens per row, 32 rows)", ylabel="% of copy speed", ylim=(0, 100))
    _log_x_at(ax, table["context"].unique())
    _legend(ax, fontsize=8)
    return fig


def scale_capacity(settings: pd.DataFrame) -> Figure | None:
    """Part 11: each setting's capacity (requests/s) against max batch, one colour per chunk
    budget, fused solid and chunked dashed."""
    if not len(settings):
        return None
    fig, (ax,) = _fig()
    cmap = dict(zip(sorted(settings["chunk_tokens"].unique()), ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd")))
    for (engine, budget), g in settings[settings["engine"].isin(list(ENGINE_STYLE))].sort_values("max_batch").groupby(
            ["engine", "chunk_tokens"]):
        ax.plot(g["max_batch"], g["capacity"], ENGINE_STYLE[engine], marker="o", ms=3, color=cmap.get(budget),
                label=f"{engine}, budget {budget:,}")
    ax.set(xlabel="max batch (decode rows)", ylabel="capacity, steady rate (requests/s)", ylim=(0, None))
    _log_x_at(ax, settings["max_batch"].unique())
    _legend(ax, ncol=2)
    return fig


def scale_tail(sweeps: pd.DataFrame, engine: str = "fused") -> Figure | None:
    """Part 11's tails: the 99th-percentile time to first token and inter-token latency against
    arrived rate, a colour per batch and a marker and line style per budget (one engine)."""
    s = sweeps[sweeps["engine"] == engine] if len(sweeps) else sweeps
    if not len(s):
        return None
    fig, axes = _fig(2, height=4.2)
    colors = dict(zip(sorted(s["max_batch"].unique()), ("#8c564b", "#ff7f0e", "#2ca02c", "#1f77b4", "#9467bd")))
    styles = dict(zip(sorted(s["chunk_tokens"].unique()), ("-o", "--s", ":^", "-.D")))  # a budget's line and marker
    for ax, (col, name, scale) in zip(axes, (("ttft_p99_s", "99th-percentile time to first token (s)", 1.0),
                                             ("itl_p99_s", "99th-percentile inter-token latency (ms)", 1e3))):
        for (b, t), g in s.groupby(["max_batch", "chunk_tokens"]):
            ax.plot(g["arrived"], g[col] * scale, styles.get(t, "-o"), color=colors.get(b), ms=4, mfc="none",
                    label=f"batch {b}, budget {t:,}")
        ax.set(xlabel="arrived (requests/s)", ylabel=name, title=f"{engine} engine")
        _log_y(ax)
    _legend(fig, *axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=4, fontsize=6)
    return fig


def census_stacked(steps: pd.DataFrame) -> Figure | None:
    """Part 12: a step's GPU time stacked by kernel class, one bar per engine (`census_steps`)."""
    if not len(steps):
        return None
    fig, (ax,) = _fig(height=2.8)
    left = np.zeros(len(steps.columns))
    for name, ms in steps.fillna(0.0).iterrows():
        ax.barh(list(steps.columns), ms.values, left=left, height=0.6, label=name)
        left += ms.values
    ax.invert_yaxis()
    ax.set(xlabel="GPU time a step (ms; the two streams' classes overlap, so they sum past the step)")
    _legend(ax, ncol=3, handlelength=1.5, loc="upper center", bbox_to_anchor=(0.5, -0.3))
    return fig


def request_time_by_class(table: pd.DataFrame) -> Figure | None:
    """Part 12: each kernel class's GPU time per request at capacity beside what the ceiling
    prices its work at (nothing for the classes it does not price), one bar pair per class."""
    if not len(table):
        return None
    fig, (ax,) = _fig(height=3.2)
    num = lambda col: pd.to_numeric(table[col], errors="coerce").fillna(0.0)  # noqa: E731  ("-": unpriced)
    y = np.arange(len(table))
    ax.barh(y + 0.2, num("per request (ms)"), height=0.4, color="#1f77b4", label="spent per request")
    ax.barh(y - 0.2, num("ceiling's price (ms)"), height=0.4, color="0.7", label="the ceiling's price")
    ax.set_yticks(y, table["class"], fontsize=8)
    ax.invert_yaxis()
    ax.set(xlabel="time per request at capacity (ms; the two streams' classes overlap)")
    _legend(ax, handlelength=1.5, loc="lower right")
    return fig


def png(fig: Figure) -> bytes:
    from io import BytesIO

    fig.savefig(buf := BytesIO(), format="png", dpi=100)
    return buf.getvalue()


def show(fig: Figure | None, empty: str = "No rows yet: this figure appears once its rows exist.") -> None:
    """Display a figure as a PNG (no pyplot backend needed), or the note that rows are missing."""
    from IPython.display import Image, Markdown, display

    display(Markdown(empty) if fig is None else Image(data=png(fig)))
