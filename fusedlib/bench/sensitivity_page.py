"""The sensitivity appendix (book/sensitivity.md): fusion's capacity gain across draws of the
workload, from paired runs of the engine as it now stands and from the earlier eager runs
(with which of those ran on a slowed machine). The page calls these and shows what they return."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import analysis as bd, paired_page as pp


# ---------------------------------------------------------------- the paired seeds
def seeds_frame(result) -> pd.DataFrame:
    """Per seed with a complete pair: the draw's longest prompts, each engine's served rate, the
    fused / chunked ratio, the rate the draw's requests arrived at, and which engine ran first."""
    runs = pp.runs_frame(result)
    runs = runs[runs["complete"]]
    out = []
    for seed, g in runs.groupby("seed"):
        e = g.set_index("engine")
        out.append({"seed": int(seed), "n_long_prompts": int(e["n_long_prompts"].iloc[0]),
                    "chunked": e.loc["chunked", "served_rate"], "fused": e.loc["fused", "served_rate"],
                    "ratio": e.loc["fused", "served_rate"] / e.loc["chunked", "served_rate"],
                    "arrived": bd.arrived_rate(int(g["n_requests"].iloc[0]), float(g["rate"].iloc[0]), int(seed)),
                    "first": g.sort_values("timestamp")["engine"].iloc[0]})
    return pd.DataFrame(out)


def seeds_table(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"seed": frame["seed"].astype(str), "longest prompts": frame["n_long_prompts"].astype(str),
                         "arrived (req/s)": frame["arrived"].map(bd.sig3),
                         "chunked (req/s)": frame["chunked"].map(bd.sig3), "fused (req/s)": frame["fused"].map(bd.sig3),
                         "fused / chunked": frame["ratio"].map(lambda x: f"{x:.3f}×"), "ran first": frame["first"]})


def seeds_figure(result):
    """Each seed's fused / chunked ratio; the pooled median with its 95% interval as a band."""
    frame, c = seeds_frame(result), result.comparison()
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.axhspan(c.lo, c.hi, color=bd.color("fused"), alpha=0.15, label="95% interval of the median")
    ax.axhline(c.ratio, color=bd.color("fused"), lw=1.5, label=f"median over {c.n} seeds")
    ax.axhline(1, color="0.5", ls="--", lw=1)
    ax.plot(frame["seed"], frame["ratio"], "o", color="k", label="one seed (one pair)")
    ax.set_xticks(frame["seed"])
    ax.set_xlabel("mixed draw seed")
    ax.set_ylabel("fused / chunked served rate (×)")
    ax.set_title(f"Capacity across draws, paired runs ({pp.gpu(result)})")
    ax.legend(fontsize=8, loc="upper left", ncol=3)
    ax.set_ylim(min(frame["ratio"].min(), c.lo) - 0.05, max(frame["ratio"].max(), c.hi) + 0.1)
    return fig


def seeds_texts(result, key: str = "sens") -> dict[str, str]:
    """The glued values of the paired seeds (keys start with `key`): GPU, configuration, offered
    and arrived rates, each engine's median served rate, the pooled ratio with its interval, and
    the per-seed range."""
    c = result.comparison()
    if c is None:
        return {}
    frame = seeds_frame(result)
    spec = result.item.a.resolved()
    verdict = ("its interval excludes 1: over these draws the fused engine serves "
               + ("more" if c.ratio > 1 else "less") if c.resolved else
               "its interval includes 1: over these draws the two engines' capacities cannot be told apart")
    saturated = frame["arrived"].min() > max(frame["chunked"].max(), frame["fused"].max())
    texts = {"gpu": pp.gpu(result), "config": pp.item_configuration(result.item),
             "rate": f"{spec.rate:g}", "requests": str(spec.n_requests), "n": str(c.n),
             "arrived": f"{frame['arrived'].min():.3g} to {frame['arrived'].max():.3g}",
             "served": f"{min(frame['chunked'].min(), frame['fused'].min()):.3g} to "
                       f"{max(frame['chunked'].max(), frame['fused'].max()):.3g}",
             "fused": f"{np.median(frame['fused']):.3g}", "chunked": f"{np.median(frame['chunked']):.3g}",
             "saturated": ("every run is past saturation, so its served rate is that engine's capacity on that draw"
                           if saturated else "not every run is past saturation, so not every served rate is a "
                           "capacity"),
             "ratio": pp.comparison_text(c), "verdict": verdict,
             "range": f"{frame['ratio'].min():.3f}× to {frame['ratio'].max():.3f}×"}
    return {f"{key}_{k}": v for k, v in texts.items()}


# ---------------------------------------------------------------- the earlier eager runs
def older_label(df: pd.DataFrame) -> str:
    """What the earlier rows are: their configuration, offered rate and requests, and that each
    engine's runs came in their own stretch of time."""
    return (f"Configuration: {pp.row_configurations(df)}; {int(df['n_requests'].iloc[0])} requests offered at "
            f"{df['rate'].iloc[0]:g}/s, measured on the {df['gpu'].iloc[0]}. Not paired: the engines' runs were not "
            "interleaved, so a machine that slowed or sped up between them moved one engine only.")


def has_step_medians(wide: pd.DataFrame) -> bool:
    """Whether the rows record each run's median decode and mixed step (the slowed-run check)."""
    return all(f"{k}_{e}" in wide for k in bd.RUN_STEPS for e in ("chunked", "fused"))


def flagged(wide: pd.DataFrame) -> set[tuple[str, int]]:
    """(draw, seed) of every draw with a slowed run (analysis.slowed_runs)."""
    return {(r["draw"], r["seed"]) for r in bd.slowed_runs(wide)} if has_step_medians(wide) else set()


def figure(wide: pd.DataFrame, n_requests: int, rate: float):
    """The gain per mixed-draw seed and per share of longest prompts (%); a draw with a slowed run
    (the ones the text below names) drawn hollow and ringed."""
    mixed = wide[wide["draw"] == "mixed"].sort_values("seed")
    shares = wide[wide["draw"] != "mixed"].sort_values("n_long_prompts")
    slow = flagged(wide)
    is_slow = lambda d: pd.Series([(a, b) in slow for a, b in zip(d["draw"], d["seed"])], index=d.index,  # noqa: E731
                                  dtype=bool)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(7, 3.2), sharey=True)
    for ax, d, x in ((a1, mixed, "seed"), (a2, shares, "n_long_prompts")):
        if ax is a2:  # shares are an ordered series; seeds are not
            ax.plot(d[x], d["gain"] * 100, "-", color=bd.color("fused"), lw=1)
        ok, bad = d[~is_slow(d)], d[is_slow(d)]
        ax.plot(ok[x], ok["gain"] * 100, "o", color=bd.color("fused"), label="runs on a steady machine")
        ax.plot(bad[x], bad["gain"] * 100, "o", mfc="white", mec="#d62728", mew=1.5, ms=8,
                label=f"a run's median step > {bd.SLOW_RUN:g}× usual")
        ax.axhline(0, color="0.6", lw=1)
    a1.set_xticks(mixed["seed"])
    a1.set_xlabel("mixed draw seed")
    a1.set_ylabel("fused served rate vs chunked (%)")
    a2.set_xlabel("longest-length prompts in the draw (count, seed 0)")
    handles = {l: h for ax in (a1, a2) for h, l in zip(*ax.get_legend_handles_labels())}
    a2.legend(handles.values(), handles.keys(), fontsize=8, loc="upper left")
    fig.suptitle(f"Capacity gain across draws, {n_requests} requests offered at {rate:g}/s")
    return fig


def table(wide: pd.DataFrame) -> pd.DataFrame:
    """The draws as a reader's table: served rates (requests/s), gain, and each run's median steps (ms)."""
    t = wide.assign(gain=wide["gain"].map(bd.pct), draw=[f"{d}, seed {s}" for d, s in zip(wide["draw"], wide["seed"])])
    columns = {"draw": "draw", "n_long_prompts": "longest prompts", "chunked": "chunked (req/s)",
               "fused": "fused (req/s)", "gain": "fused vs chunked"}
    if has_step_medians(wide):
        for kind in bd.RUN_STEPS:
            for e in ("chunked", "fused"):
                t[f"{kind}_{e}"] = t[f"{kind}_{e}"] * 1e3
                columns[f"{kind}_{e}"] = f"{e} {kind} (ms)"
    return t[list(columns)].rename(columns=columns)


def campaign_note(df: pd.DataFrame) -> str:
    """Which draws ran in which campaign, when more than one did; empty otherwise."""
    camp = df.assign(campaign=df["git_commit"].map(bd.campaign_of),
                     draw=df["long_share"].map(lambda x: "mixed" if pd.isna(x) else f"{x:.0%} longest"))
    per = {c: ", ".join(sorted({f"{a} seed {b}" for a, b in zip(d["draw"], d["seed"])}))
           for c, d in camp.groupby("campaign")}
    if len(per) < 2:
        return ""
    return ("These rows come from more than one campaign (" + "; ".join(f"campaign {c}: {x}" for c, x in per.items())
            + "); both engines of a draw always ran in the same one, one after the other. The machine's step speed "
            "differed between campaigns (the step columns), so compare gains, not served rates, across them.")


def prose(wide: pd.DataFrame) -> str:
    """The gain's range over the seeds; the slowed runs by name; the range without them."""
    mixed = wide[wide["draw"] == "mixed"]
    g = mixed["gain"]
    out = [f"Across {len(g)} mixed-draw seeds the gain ranges from {bd.pct(g.min())} to {bd.pct(g.max())} "
           f"(spread {(g.max() - g.min()) * 100:.1f} percentage points; median {bd.pct(g.median())})."]
    if not has_step_medians(wide):
        return out[0]
    runs = bd.slowed_runs(wide)
    slow = [f"the {r['engine']} engine's {r['draw']} seed {r['seed']} run ({r['kind']} step {r['ms']:.3g} ms "
            f"against a median of {r['typical_ms']:.3g} ms over these runs)" for r in runs]
    out.append("A pure decode step, and a mixed step with its 512-token chunk, do nearly the same work in every "
               "draw, so their medians are a check on the run itself. "
               + (f"One of them sat more than {bd.SLOW_RUN - 1:.0%} above the usual in " + "; ".join(slow)
                  + " (ringed in the figure). Those runs' served rates measure a slowed host as much as the draw, and "
                  "the gains on their rows inherit it: the spread above is partly the host's, not the workload's."
                  if slow else f"No run's medians sit more than {bd.SLOW_RUN - 1:.0%} above its engine's usual ones."))
    slow_draws = flagged(wide)
    clean = mixed[[(d, s) not in slow_draws for d, s in zip(mixed["draw"], mixed["seed"])]]["gain"]
    if slow and len(clean):
        out.append(f"Over the {len(clean)} mixed-draw seeds whose runs pass that check, the gain ranges from "
                   f"{bd.pct(clean.min())} to {bd.pct(clean.max())}.")
    return "\n\n".join(out)
