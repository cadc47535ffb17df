"""The closed-batches appendix (book/closed.md): every recorded run per configuration, the
engines' medians compared against the runs' spread. The page calls these and shows what they return."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import analysis as bd

ENGINES = ("chunked", "fused")


def configurations(summ: pd.DataFrame) -> pd.DataFrame:
    return summ[["workload", "batch_size"]].drop_duplicates().sort_values(["workload", "batch_size"])


def figure(summ: pd.DataFrame, runs: pd.DataFrame):
    """Per configuration and engine: the median run as a bar, the fastest-to-slowest range as a
    line, every recorded run as a dot; wall time in s on a log axis."""
    configs = configurations(summ)
    engines = [e for e in ENGINES if e in set(summ["engine"])]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    width = 0.8 / len(engines)
    for i, engine in enumerate(engines):
        for j, (w, b) in enumerate(configs.itertuples(index=False)):
            s = summ[(summ["engine"] == engine) & (summ["workload"] == w) & (summ["batch_size"] == b)]
            r = runs[(runs["engine"] == engine) & (runs["workload"] == w) & (runs["batch_size"] == b)]["wall_s"]
            x = j + (i - (len(engines) - 1) / 2) * width
            if len(s):
                m, lo, hi = s[["median_s", "run_min", "run_max"]].iloc[0]
                ax.bar(x, m, width=width, color=bd.color(engine), alpha=0.85, label=engine if j == 0 else None)
                ax.errorbar(x, m, yerr=[[m - lo], [hi - m]], color="k", capsize=4, lw=1.2,
                            label="fastest to slowest run" if i == j == 0 else None)
            ax.scatter(np.full(len(r), x), r, s=7, color="k", alpha=0.5, zorder=3,
                       label="recorded runs" if i == j == 0 else None)
    ax.set_xticks(range(len(configs)), [f"{w}\nbatch {b}" for w, b in configs.itertuples(index=False)])
    ax.set_yscale("log")
    lo, hi = runs["wall_s"].min(), runs["wall_s"].max()
    ticks = [t for t in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 3, 5, 10, 20, 50, 100, 200, 500) if lo / 2 <= t <= hi * 2]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_ylabel("wall time for the batch (s, log)")
    ax.set_title("Closed runs: median, fastest and slowest run")
    ax.legend(fontsize=8, loc="upper right")
    return fig


def table(summ: pd.DataFrame, comp: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: each engine's median (fastest–slowest) in s, the change of medians and
    whether it exceeds the runs' spread; a dash where an engine has no rows."""
    configs = configurations(summ)

    def cell(e, w, b):
        s = summ[(summ["engine"] == e) & (summ["workload"] == w) & (summ["batch_size"] == b)]
        if not len(s):
            return "—"
        m, lo, hi = s[["median_s", "run_min", "run_max"]].iloc[0]
        return f"{bd.sig3(m)} ({bd.sig3(lo)}–{bd.sig3(hi)})"

    out = pd.DataFrame({"workload": configs["workload"].to_numpy(), "batch": configs["batch_size"].to_numpy()})
    for e in ENGINES:
        if e in set(summ["engine"]):
            out[f"{e} (s): median (min–max)"] = [cell(e, w, b) for w, b in configs.itertuples(index=False)]
    if len(comp):
        c = comp.set_index(["workload", "batch_size"])
        idx = list(configs.itertuples(index=False, name=None))
        out["fused vs chunked"] = [bd.pct(c.loc[k, "change"]) if k in c.index else "—" for k in idx]
        out["resolved?"] = [("yes" if c.loc[k, "resolved"] else "no: within the spread") if k in c.index else "—"
                            for k in idx]
    return out


def where_run(df: pd.DataFrame) -> str:
    """Which configurations each campaign ran, and on what kind of machine (the first campaign's
    rows carry the phase they ran in; later ones do not)."""
    phase = df["campaign_phase"] if "campaign_phase" in df else pd.Series(index=df.index, dtype=object)
    first, second = df[phase.notna()], df[phase.isna()]

    def configs_of(d):
        return ", ".join(f"{w} batch {int(b)}" for w, b in configurations(d).itertuples(index=False))

    def commits(d):
        return ", ".join(sorted(d["git_commit"].astype(str).unique()))

    text = ""
    if len(first):
        text += (f"The first H200 campaign ran {configs_of(first)} (commit {commits(first)}) with one job per GPU on "
                 "a two-GPU host: the closed runs on GPU 1 while GPU 0 of the same host ran the campaign's other "
                 "jobs, sharing the host's CPUs. ")
    if len(second):
        text += (f"The second campaign ran {configs_of(second)} (commit {commits(second)}) on a one-GPU machine "
                 "with nothing else running. ")
    return text + ("Our engine's step time is set mostly by work on the host, not by the GPU (the step-trace page "
                   "tabulates the pure decode step by how many requests it carries), so whatever else the host "
                   "does lands in these wall times.")
