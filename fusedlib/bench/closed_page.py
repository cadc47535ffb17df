"""The closed-batches appendix (book/closed.md): the paired fused-vs-chunked runs of the engine
as it now stands, and the earlier eager runs with each configuration's spread. The page calls
these and shows what they return."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import analysis as bd, paired_page as pp

ENGINES = ("chunked", "fused")


# ---------------------------------------------------------------- the paired runs
def cell(result) -> str:
    """A closed comparison's batch in words: "mixed, batch 8"."""
    return f"{result.item.a.workload}, batch {result.item.a.batch_size}"


def paired_table(results: list) -> pd.DataFrame:
    """Per batch with a complete pair: each engine's median output throughput over its paired
    runs (tokens/s), fused / chunked with its 95% interval, the pairs, whether the interval
    excludes 1, and the share of the fused engine's steps that carry prompt chunks and decodes
    together (the only steps fusion changes)."""
    out = []
    for r in results:
        c = r.comparison()
        if c is None:
            continue
        runs = pp.runs_frame(r)
        runs = runs[runs["complete"]]
        med = runs.groupby("engine")["output_throughput"].median()
        fused = runs[runs["engine"] == "fused"]
        out.append({"batch": cell(r), "fused (tokens/s)": f"{med['fused']:,.0f}",
                    "chunked (tokens/s)": f"{med['chunked']:,.0f}", "fused / chunked [95%]": pp.ratio_text(c),
                    "pairs": str(c.n), "resolved?": "yes" if c.resolved else "no",
                    "mixed steps": bd.pct((fused["n_mixed_steps"] / fused["n_steps"]).median(), False)})
    return pd.DataFrame(out)


def paired_figure(results: list):
    """Per batch: each pair's fused / chunked ratio as a dot, the median ratio with its 95%
    interval as a bar; the dashed line is 1 (no difference)."""
    done = [r for r in results if r.comparison() is not None]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for x, r in enumerate(done):
        a, b = r.values()
        c = r.comparison()
        ax.scatter(np.full(len(a), x), np.asarray(a) / np.asarray(b), s=12, color="0.4", zorder=3,
                   label="one pair" if x == 0 else None)
        ax.errorbar(x, c.ratio, yerr=[[c.ratio - c.lo], [c.hi - c.ratio]], fmt="s", color=bd.color("fused"),
                    capsize=5, ms=6, label="median, 95% interval" if x == 0 else None)
    ax.axhline(1, color="0.5", ls="--", lw=1)
    ax.set_xticks(range(len(done)), [cell(r).replace(", ", "\n") for r in done])
    ax.set_ylabel("fused / chunked output throughput (×)")
    ax.set_title(f"Closed batches, paired runs ({pp.gpu(done[0])})" if done else "Closed batches, paired runs")
    ax.legend(fontsize=8, loc="upper left")
    return fig


def mixed_step_ms(results: list, workload: str = "mixed") -> dict[str, tuple[float, float]]:
    """Per engine, the lowest and highest of its paired runs' median mixed step (ms) over the
    batches of one workload: how steady the same kind of step ran from run to run."""
    frames = [pp.runs_frame(r) for r in results if r.item.a.workload == workload and r.pairs()]
    if not frames:
        return {}
    runs = pd.concat(frames)
    runs = runs[runs["complete"]]
    ms = runs.groupby("engine")["median_mixed_step_s"].agg(["min", "max"]) * 1e3
    return {e: (ms.loc[e, "min"], ms.loc[e, "max"]) for e in ms.index}


def verdict(done: list, cs: list) -> str:
    """How many of the batches' ratios exclude 1, and what that means, as a sentence's start."""
    resolved = [cell(r) for r, c in zip(done, cs) if c.resolved]
    if not resolved:
        return f"None of the {len(cs)} ratios excludes 1: these runs cannot tell the engines apart on a closed batch"
    if len(resolved) == len(cs):
        return f"All {len(cs)} ratios exclude 1"
    other = len(cs) - len(resolved)
    return (f"{len(resolved)} of the {len(cs)} ratios exclude{'s' * (len(resolved) == 1)} 1 ({'; '.join(resolved)}); "
            f"on the other {'batch' if other == 1 else f'{other} batches'} these runs cannot tell the engines apart")


def paired_texts(results: list, key: str = "closed") -> dict[str, str]:
    """The glued values of a paired section (keys start with `key`): GPU, configuration, pairs,
    how many ratios are resolved, their range, the widest interval, and the run-to-run range of
    the mixed step."""
    done = [r for r in results if r.comparison() is not None]
    if not done:
        return {}
    cs = [r.comparison() for r in done]
    ns = sorted({c.n for c in cs})
    widest = max(zip(done, cs), key=lambda rc: rc[1].hi - rc[1].lo)
    steps = mixed_step_ms(done)
    share = pd.concat([pp.runs_frame(r) for r in done]).query("complete and engine == 'fused'")
    share = share["n_mixed_steps"] / share["n_steps"]
    texts = {"gpu": pp.gpu(done[0]), "config": pp.item_configuration(done[0].item),
             "pairs": str(ns[0]) if len(ns) == 1 else f"{ns[0]} to {ns[-1]}",
             "verdict": verdict(done, cs),
             "range": f"{min(c.ratio for c in cs):.3f}× to {max(c.ratio for c in cs):.3f}×",
             "widest": f"{cell(widest[0])}, {pp.ratio_text(widest[1])}",
             "mixed_share": f"{bd.pct(share.min(), False)} to {bd.pct(share.max(), False)}",
             **{f"mixed_{e}": f"{lo:.2f} to {hi:.2f} ms" for e, (lo, hi) in steps.items()}}
    return {f"{key}_{k}": v for k, v in texts.items()}


# ---------------------------------------------------------------- the earlier eager runs


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
    ax.set_title("Earlier eager closed runs: median, fastest and slowest run")
    ax.legend(fontsize=8, loc="upper right")
    return fig


def table(summ: pd.DataFrame, comp: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: each engine's median (fastest–slowest) in s, the change of medians and
    whether it exceeds the runs' spread; a dash where an engine has no rows."""
    configs = configurations(summ)

    def entry(e, w, b):
        s = summ[(summ["engine"] == e) & (summ["workload"] == w) & (summ["batch_size"] == b)]
        if not len(s):
            return "—"
        m, lo, hi = s[["median_s", "run_min", "run_max"]].iloc[0]
        return f"{bd.sig3(m)} ({bd.sig3(lo)}–{bd.sig3(hi)})"

    out = pd.DataFrame({"workload": configs["workload"].to_numpy(), "batch": configs["batch_size"].to_numpy()})
    for e in ENGINES:
        if e in set(summ["engine"]):
            out[f"{e} (s): median (min–max)"] = [entry(e, w, b) for w, b in configs.itertuples(index=False)]
    if len(comp):
        c = comp.set_index(["workload", "batch_size"])
        idx = list(configs.itertuples(index=False, name=None))
        out["fused vs chunked"] = [bd.pct(c.loc[k, "change"]) if k in c.index else "—" for k in idx]
        out["resolved?"] = [("yes" if c.loc[k, "resolved"] else "no: within the spread") if k in c.index else "—"
                            for k in idx]
    return out


def older_label(df: pd.DataFrame) -> str:
    """What the earlier closed rows are: the configuration they ran in, and which campaign ran
    which batches (from the rows' timestamps, analysis.campaign_of)."""
    camp = df.assign(campaign=df["git_commit"].map(bd.campaign_of))
    per = [f"campaign {c}: " + ", ".join(f"{w} batch {int(b)}" for w, b in configurations(d).itertuples(index=False))
           for c, d in camp.groupby("campaign")]
    return (f"Configuration: {pp.row_configurations(df)}. Measured on the {df['gpu'].iloc[0]} in "
            f"{len(per)} earlier campaign{'s' * (len(per) > 1)} ({'; '.join(per)}), each engine's runs of a "
            "batch back to back, not interleaved with the other engine's.")


def older_text(summ: pd.DataFrame, comp: pd.DataFrame) -> str:
    """The earlier runs' verdicts: how wide each configuration's runs spread, how many engine
    differences exceed it, and how many of each batch's steps fusion changes."""
    rel_spread = (summ["run_max"] - summ["run_min"]) / summ["median_s"]
    worst = summ.loc[rel_spread.idxmax()]
    resolved = int(comp["resolved"].sum())
    return (f"Across these configurations the slowest recorded run is {rel_spread.min():.0%} to "
            f"{rel_spread.max():.0%} of the median slower than the fastest (most: {worst['engine']} "
            f"{worst['workload']} batch {int(worst['batch_size'])}, {bd.sig3(worst['run_min'])} to "
            f"{bd.sig3(worst['run_max'])} s). " + (f"None of the {len(comp)}" if not resolved else
                                                  f"{resolved} of the {len(comp)}")
            + " differences between the engines' medians is larger than the wider of the two engines' spreads. "
            "Steps that carry prompt chunks and decodes together, the only ones fusion changes: "
            + "; ".join(f"{w} batch {int(b)}: {m:.0f} of {n:.0f}" for w, b, m, n in
                        comp[["workload", "batch_size", "n_mixed_steps_fused", "n_steps_fused"]].itertuples(index=False))
            + ".")
