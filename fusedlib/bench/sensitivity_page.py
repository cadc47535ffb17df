"""The sensitivity appendix (book/sensitivity.md): fusion's capacity gain across draws of the
workload, and which runs ran on a slowed machine. The page calls these and shows what they return."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from . import analysis as bd


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
            "differed between campaigns (the step columns, and the {doc}`arrivals` page's run-by-run figure), so "
            "compare gains, not served rates, across them.")


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
