"""The chapters' figures, built from the tables of fusedlib.bench.steps and .grading. Every axis
carries its unit; times are in ms; a figure returns its matplotlib Figure and the page shows it
(analysis.show)."""
from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import analysis as bd, steps


def step_times(table: pd.DataFrame, configurations: list[str], floor_s: float | None = None):
    """Median full-batch pure decode step and median mixed step per configuration, one bar per
    engine; a dashed line at the decode step's bytes floor when given."""
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4), sharey=True)
    x = np.arange(len(configurations))
    for i, engine in enumerate(("chunked", "fused")):
        for ax, column, title in ((axes[0], "decode_full_s", f"pure decode step, {steps.FULL_ROWS} rows"),
                                  (axes[1], "mixed_s", "mixed step (chunks + decodes)")):
            vals = [steps.lookup(table, c, engine, column) * 1e3 for c in configurations]
            ax.bar(x + (i - 0.5) * 0.38, vals, width=0.38, color=bd.color(engine), label=f"{engine} engine")
            # Wrapped to a few words a line: five configurations share a half-width panel.
            ax.set_xticks(x, ["\n".join(textwrap.wrap(c.replace(",", ""), 9, break_on_hyphens=False)) for c in configurations], fontsize=7)
            ax.set_title(title)
    if floor_s is not None:
        axes[0].axhline(floor_s * 1e3, color="black", ls="--", lw=1, label="bytes floor")
    axes[0].set_ylabel("median step time (ms)")
    axes[0].legend(loc="upper right")
    return fig


def decode_breakdown(terms: dict[str, float], step_s: float, title: str):
    """A pure decode step as additive terms (seconds), a horizontal stacked bar in ms."""
    fig, ax = plt.subplots(figsize=(7, 1.9))
    left = 0.0
    for (name, secs), c in zip(terms.items(), ["#4c72b0", "#c44e52", "#8c8c8c"]):
        ax.barh([0], [secs * 1e3], left=left, color=c, label=f"{name}: {bd.ms(secs)}")
        left += secs * 1e3
    ax.set_xlim(0, step_s * 1e3 * 1.02)
    ax.set_yticks([])
    ax.set_xlabel("time in the step (ms)")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.55), ncol=3)
    fig.subplots_adjust(bottom=0.5)
    return fig


def kernel_times(kernels: dict[str, float], floor_s: float):
    """One layer's decode attention per kernel (ms, log scale), with the bytes floor."""
    fig, ax = plt.subplots(figsize=(7, 2.4))
    names = sorted(kernels, key=kernels.get)
    ax.barh(names, [kernels[k] for k in names], color="#4c72b0")
    ax.axvline(floor_s * 1e3, color="black", ls="--", lw=1, label=f"bytes floor {bd.ms(floor_s)}")
    ax.set_xscale("log")
    ax.set_xlabel("one layer's decode attention, 32 rows (ms, log scale)")
    ax.legend(loc="lower right")
    return fig


def mixed_steps_in_order(traces: pd.DataFrame, engine: str):
    """One engine's mixed steps in step order (ms), one line per configuration; with each
    line's interquartile range as a share of its median."""
    fig, ax = plt.subplots(figsize=(7, 3))
    spread = {}
    t = traces[(traces["engine"] == engine) & (traces["record"] == "step") & (traces["kind"] == "mixed")]
    for (attention, graphs, chunks), m in t.groupby(["attention", "cuda_graphs", "graph_chunks"]):
        label = steps.label_of(attention, graphs, chunks)
        ax.plot(m["step"], m["duration_s"] * 1e3, lw=0.8, label=label)
        q1, q3 = m["duration_s"].quantile([0.25, 0.75])
        spread[label] = (q3 - q1) / m["duration_s"].median()
    ax.set_xlabel("step number in the trace")
    ax.set_ylabel(f"{engine} mixed step (ms)")
    ax.legend(fontsize=8, ncol=2)
    return fig, spread


def floors(placed: pd.DataFrame, names: dict[str, str]):
    """Each census step's measured GPU time (bar) against its three floors (bytes at the copy
    rate, FLOPs at the GEMM rate, launches at the in-graph launch cost), in ms;
    `names` shortens the configurations for the axis."""
    fig, ax = plt.subplots(figsize=(7, 3))
    x = np.arange(len(placed))
    ax.bar(x, placed["gpu_ms"], color="#1f77b4", label="measured GPU time")
    for col, mark, name in (("bytes_ms", "_", "bytes floor"), ("flops_ms", "x", "FLOP floor"),
                            ("launch_ms", ".", "launch floor")):
        ax.scatter(x, placed[col], marker=mark, s=300 if mark == "_" else 60, color="k", label=name, zorder=3)
    ax.set_xticks(x, [f"{names.get(r.config, r.config)}\n{r.step}" for r in placed.itertuples()])
    ax.set_ylabel("GPU time per step (ms)")
    ax.legend(fontsize=8)
    return fig
