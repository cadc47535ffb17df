"""The arrival sweeps appendix (book/arrivals.md): the paired runs at 40/s and the paired sweep of
served rate against offered rate, with where each engine stops keeping up and how steadily the
machine ran; then the earlier eager sweep and small-pool control, labelled as such. The page
calls these and shows what they return."""
from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import analysis as bd, paired_page as pp

# A run keeps up with its arrivals when its median request is admitted at once: it waits for a
# batch row less than this share of the time it then takes to be served. (Completions counted
# while requests still arrive are a worse test: they fall short of the arrivals by the requests
# in flight at the end, more for an engine whose requests take longer.)
KEEP_UP_WAIT = 0.1


# ---------------------------------------------------------------- the paired runs
def run_table(result) -> pd.DataFrame:
    """A comparison's arrivals runs (paired_page.runs_frame) with the rate the draw's requests
    arrived at, the median request's service time (from admission to its last token) and whether
    the run kept up with its arrivals (KEEP_UP_WAIT)."""
    runs = pp.runs_frame(result)
    if runs.empty:
        return runs
    arrived = [bd.arrived_rate(n, r, s) for n, r, s in zip(runs["n_requests"], runs["rate"], runs["seed"])]
    service = runs["e2e_median_s"] - runs["queue_wait_median_s"]
    return runs.assign(arrived_rate=arrived, service_s=service,
                       keeps_up=runs["queue_wait_median_s"] < KEEP_UP_WAIT * service)


def reading(result) -> str:
    """What a paired ratio of served rates measures, from which runs kept up with the arrivals: a
    side that never kept up served at its capacity; one that did is held to the arrival rate."""
    runs = run_table(result)
    runs = runs[runs["complete"]]
    a, b = (f"the {x} engine" if x in ("fused", "chunked") else f"the engine {x}" for x in pp.side_names(result.item))
    up = runs.groupby("side")["keeps_up"].agg(["sum", "size"])
    (ka, na), (kb, nb) = up.loc["A"], up.loc["B"]
    kept = f"{a[0].upper()}{a[1:]} kept up with the arrivals in {ka} of {na} runs, {b} in {kb} of {nb}"
    if ka == 0 and kb == 0:
        return f"{kept}: both served at capacity, so the ratio compares their capacities"
    if kb == 0:
        return (f"{kept}: {b} served at its capacity and {a} at most at its own, so the ratio is a lower bound on "
                "the ratio of their capacities")
    if ka == 0:
        return (f"{kept}: {a} served at its capacity and {b} at most at its own, so the ratio is an upper bound on "
                "the ratio of their capacities")
    return f"{kept}: the arrivals held both, at least in part, so the ratio does not compare their capacities"


def pairs_table(results: list) -> pd.DataFrame:
    """The paired comparisons with a complete pair: what they compare (the prose names what the
    two sides share, too long for a column), the offered rate and requests, each side's median
    served rate, A / B with its 95% interval, the pairs, whether resolved, and how many of each
    side's runs kept up with the arrivals."""
    out = []
    for r in results:
        c = r.comparison()
        if c is None:
            continue
        runs = run_table(r)
        runs = runs[runs["complete"]]
        med = runs.groupby("side")["served_rate"].median()
        up = runs.groupby("side")["keeps_up"].sum()
        a = r.item.a.resolved()
        out.append({"A / B": pp.sides(r.item),
                    "offered": f"{a.n_requests} at {a.rate:g}/s" + (f", pool {a.pool_gib:g} GiB" if a.pool_gib else ""),
                    "A, B (req/s)": f"{med['A']:.3g}, {med['B']:.3g}", "A / B [95%]": pp.ratio_text(c),
                    "pairs": str(c.n), "resolved?": "yes" if c.resolved else "no",
                    "kept up (A, B)": f"{int(up['A'])}, {int(up['B'])} of {c.n}"})
    return pd.DataFrame(out)


def knees(runs: pd.DataFrame) -> pd.DataFrame:
    """Per engine of a sweep's measured runs: the highest offered rate up to which every run kept
    up with its arrivals (NaN if none did), and the served rates at the rates above it (count,
    min, median, max): the engine's capacity on that draw."""
    out = []
    for engine, g in runs[~runs["warmup"]].sort_values("rate").groupby("engine"):
        missed = g.loc[~g["keeps_up"], "rate"]
        below = g[g["rate"] < missed.min()] if len(missed) else g
        past = g[g["rate"] >= missed.min()] if len(missed) else g.iloc[0:0]
        out.append({"engine": engine, "kept_up_to": below["rate"].max() if len(below) else np.nan,
                    "n_past": len(past), "past_min": past["served_rate"].min(),
                    "past_median": past["served_rate"].median(), "past_max": past["served_rate"].max()})
    return pd.DataFrame(out).set_index("engine")


def sweep_figure(runs: pd.DataFrame):
    """Served rate (top) and median queue wait (bottom) against the offered rate, one line per
    engine from the one sweep; the recorded warm-ups hollow, the draw's own arrival rate dashed."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5.4), sharex=True)
    rates = sorted(runs["rate"].unique())
    for e in ("chunked", "fused"):
        g = runs[(runs["engine"] == e) & ~runs["warmup"]].sort_values("rate")
        w = runs[(runs["engine"] == e) & runs["warmup"]]
        kw = dict(color=bd.color(e), marker="o", ms=5)
        top.plot(g["rate"], g["served_rate"], label=e, **kw)
        bottom.plot(g["rate"], g["queue_wait_median_s"], **kw)
        top.plot(w["rate"], w["served_rate"], ls="none", mfc="white", mec=bd.color(e), marker="o", ms=7,
                 label=f"{e}, recorded warm-up (left out)")
    n, seed = int(runs["n_requests"].iloc[0]), int(runs["seed"].iloc[0])
    top.plot(rates, rates, color="0.6", ls=":", lw=1, label="served = offered")
    top.plot(rates, [bd.arrived_rate(n, r, seed) for r in rates], color="0.3", ls="--", lw=1,
             label="the draw's own arrival rate")
    top.set_ylim(0, runs["served_rate"].max() * 1.25)
    top.set_ylabel("served rate (requests/s)")
    top.legend(fontsize=7, ncol=2, loc="lower right")
    bottom.set_yscale("log")
    bottom.set_ylabel("median queue wait (s, log)")
    bottom.set_xlabel("offered rate (requests/s)")
    bottom.set_xticks(rates, [f"{r:g}" for r in rates])
    fig.suptitle(f"One sweep, {n} mixed requests per rate, seed {seed} ({runs['gpu'].iloc[0]})", fontsize=10)
    return fig


def sweep_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per offered rate of a sweep: the arrived rate, each engine's served rate and median queue
    wait, the one pair's fused / chunked ratio, and which engines kept up."""
    m = runs[~runs["warmup"]].pivot_table(index="rate", columns="engine", aggfunc="first",
                                          values=["served_rate", "queue_wait_median_s", "keeps_up", "arrived_rate"])
    return pd.DataFrame({
        "offered": [f"{r:g}" for r in m.index], "arrived": m[("arrived_rate", "fused")].map(bd.sig3).to_numpy(),
        "chunked (req/s)": m[("served_rate", "chunked")].map(bd.sig3).to_numpy(),
        "fused (req/s)": m[("served_rate", "fused")].map(bd.sig3).to_numpy(),
        "fused / chunked": (m[("served_rate", "fused")] / m[("served_rate", "chunked")]).map(
            lambda x: f"{x:.3f}×").to_numpy(),
        "chunked wait (s)": m[("queue_wait_median_s", "chunked")].map(bd.sig3).to_numpy(),
        "fused wait (s)": m[("queue_wait_median_s", "fused")].map(bd.sig3).to_numpy(),
        "kept up": [", ".join(e for e in ("chunked", "fused") if m.loc[r, ("keeps_up", e)]) or "neither"
                    for r in m.index]})


def speed_figure(runs: pd.DataFrame):
    """Each measured run's median mixed step (wall and GPU time) and median decode step, in the
    order the runs ran."""
    runs = runs[~runs["warmup"]].reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(7, 2.8))
    for e in ("chunked", "fused"):
        on = runs["engine"] == e
        for col, marker, label in (("median_mixed_step_s", "o", "mixed step"), ("median_mixed_step_gpu_s", "x",
                                                                                  "mixed step, GPU time"),
                                   ("median_decode_step_s", "s", "decode step")):
            ax.plot(runs.index[on], runs.loc[on, col] * 1e3, marker=marker, ls="none", color=bd.color(e),
                    fillstyle="none" if marker == "s" else "full", label=f"{e}, {label}")
    ax.set_xticks(runs.index, [f"{r:g}" for r in runs["rate"]], fontsize=7)
    ax.set_xlabel("measured runs in the order they ran (offered rate, requests/s)")
    ax.set_ylabel("median step (ms)")
    ax.set_ylim(0, None)
    ax.legend(fontsize=7, ncol=2, loc="lower left")
    return fig


def speed_texts(runs: pd.DataFrame) -> dict[str, str]:
    """Per engine, the range of its measured runs' median mixed step, wall and GPU time, and its
    slowest run; the lowest SM clock read; whether the wall time's spread is the GPU's."""
    measured = runs[~runs["warmup"]]
    t = {"arr_clock": f"{measured['gpu_sm_clock_mhz_min'].min():.0f} MHz"}
    widest, width = None, -1.0
    for e, g in measured.groupby("engine"):
        wall, gpu = g["median_mixed_step_s"] * 1e3, g["median_mixed_step_gpu_s"] * 1e3
        slow = g.loc[wall.idxmax()]
        t[f"arr_mixed_{e}"] = (f"{wall.min():.2f} to {wall.max():.2f} ms (GPU time {gpu.min():.2f} to {gpu.max():.2f} "
                               f"ms), slowest in its {slow['rate']:g}/s run")
        if wall.max() - wall.min() > width:
            widest, width = e, wall.max() - wall.min()
    g = measured[measured["engine"] == widest]
    follows = g["median_mixed_step_s"].rank().corr(g["median_mixed_step_gpu_s"].rank()) >= 0.8  # rank correlation
    t["arr_speed_reading"] = (
        f"The {widest} engine's mixed step varies most, and its GPU time rises and falls with it: the slow steps "
        "are slow on the GPU, not on the host" if follows else
        f"The {widest} engine's mixed step varies most, and its GPU time does not follow it: the host's share of "
        "the step moved")
    return t


def sweep_texts(sweep, pairs: list, seeds=None) -> dict[str, str]:
    """The glued values of the paired sections: the 40/s comparisons and what each measures, the
    sweep's knees and capacities, the machine's steadiness over the sweep, and (when given) the
    capacity comparison over the seeds (sensitivity page)."""
    t = {}
    for r in pairs:
        c = r.comparison()
        if c is None:
            continue
        a = r.item.a.resolved()
        key = f"arr_{pp.differing(r.item)[0]}" + ("_pool" if a.pool_gib else "")
        t |= {key: pp.comparison_text(c), f"{key}_reading": reading(r), f"{key}_config": pp.item_configuration(r.item)}
        if a.pool_gib:
            t[f"{key}_size"] = f"{a.pool_gib:g} GiB of KV cache, {a.n_requests} requests at {a.rate:g}/s"
        # The section's opening describes the first comparison's runs; later ones name their own.
        for k, v in (("arr_gpu", pp.gpu(r)), ("arr_requests", str(a.n_requests)), ("arr_rate", f"{a.rate:g}"),
                     ("arr_arrived", bd.sig3(bd.arrived_rate(a.n_requests, a.rate, a.seed)))):
            t.setdefault(k, v)
    runs = run_table(sweep) if sweep is not None else pd.DataFrame()
    if len(runs) and runs["complete"].any():
        k = knees(runs[runs["complete"] | runs["warmup"]])
        measured = runs[~runs["warmup"]]
        for e in k.index:
            up = k.loc[e, "kept_up_to"]
            t[f"arr_knee_{e}"] = f"{up:g}/s offered" if np.isfinite(up) else "no rate of the sweep"
            t[f"arr_sat_{e}"] = (f"{k.loc[e, 'past_min']:.3g} to {k.loc[e, 'past_max']:.3g} requests/s (median "
                                 f"{k.loc[e, 'past_median']:.3g}) at the {int(k.loc[e, 'n_past'])} rates above"
                                 if k.loc[e, "n_past"] else "every rate of the sweep")
        warm = runs[runs["warmup"]].set_index("engine")
        first, last = measured["rate"].iloc[0], measured["rate"].iloc[-1]  # runs_frame: in the order they ran
        t |= {"arr_sweep_rates": f"{first:g} {'down' if first > last else 'up'} to {last:g}", "arr_sweep_gpu": pp.gpu(sweep),
              "arr_sweep_config": pp.item_configuration(sweep.item),
              "arr_share": bd.pct(bd.arrived_rate(int(runs["n_requests"].iloc[0]), 1.0, int(runs["seed"].iloc[0])),
                                  False),
              "arr_warm": f"at {warm['rate'].iloc[0]:g}/s, " + " and ".join(
                  f"{e} {bd.sig3(warm.loc[e, 'served_rate'])}" for e in warm.index) + " requests/s",
              **speed_texts(runs)}
    if seeds is not None and seeds.comparison() is not None:
        c, spec = seeds.comparison(), seeds.item.a.resolved()
        t["arr_seeds"] = f"over {c.n} draws offered at {spec.rate:g}/s, {pp.comparison_text(c)}"
    return t


# ---------------------------------------------------------------- the earlier eager runs
@dataclass
class Sweep:
    """The arrivals rows one page shows: newest run of each configuration (`sweep_runs`), their
    medians split by pool (`sweep`, `pool`), the engines paired by rate (`w`), the capacity pair."""
    df: pd.DataFrame
    gpu: str
    sweep: pd.DataFrame
    pool: pd.DataFrame
    sweep_runs: pd.DataFrame
    w: pd.DataFrame
    cap: object
    engines: list
    counts: list
    n_sweep: object
    peer_open: pd.DataFrame


def view(arrivals: pd.DataFrame, gpu: str, peer: pd.DataFrame) -> Sweep:
    df = arrivals

    sweep = pool = sweep_runs = w = df
    cap, engines, counts, n_sweep, peer_open = None, [], [], None, df
    if len(df):
        df = bd.latest(df, bd.ARRIVAL_KEYS)
        sweep_runs = bd.default_pool(df)[0]  # each run: `paired` and the dots of repeated runs
        w = bd.paired(sweep_runs)
        cap = bd.capacity_pair(df)
        df = bd.run_medians(df)  # one row per configuration, medians over repeated runs
        sweep, pool = bd.default_pool(df)
        sweep, pool = sweep.sort_values(["n_requests", "rate"]), pool.sort_values(["n_requests", "rate"])
        engines = [e for e in ("chunked", "fused") if e in set(df["engine"])]
        counts = sorted(sweep["n_requests"].unique()) if len(sweep) else []
        n_sweep = bd.sweep_n(df)
        # transformers' continuous batching on the same arrivals (the peer page's open-loop rows)
        peer_open = peer
        peer_open = peer_open[(peer_open["experiment"] == "peer_arrivals") & (peer_open["gpu"] == gpu)] \
            if len(peer_open) else peer_open

    return Sweep(df, gpu, sweep, pool, sweep_runs if len(df) else df, w if len(df) else pd.DataFrame(), cap, engines,
                 counts, n_sweep, peer_open)


def load() -> Sweep:
    arrivals, gpu = bd.one_gpu(bd.load("arrivals"))
    return view(arrivals, gpu, bd.one_gpu(bd.load("peer"))[0])


def runs_line(v: Sweep) -> str:
    groups = v.sweep.groupby("n_requests")["rate"].agg(lambda r: ", ".join(f"{x:g}" for x in sorted(set(r))))
    return "Runs in these rows, by number of requests: " + "; ".join(
        f"**{n} requests** at offered rates {groups[n]} requests/s" for n in v.counts) + "."


def served_figure(v: Sweep):
    """Served rate and median queue wait against the offered rate (log axis), per engine."""
    gpu, sweep, sweep_runs, engines, counts, n_sweep, peer_open = (
        v.gpu, v.sweep, v.sweep_runs, v.engines, v.counts, v.n_sweep, v.peer_open)
    # The sweep's request count gets the wide panels; runs with other counts (a different draw)
    # get a narrow panel of their own, never a line joining them to the sweep.
    others = [n for n in counts if n != n_sweep]
    ncols = 1 + bool(others)
    fig, axes = plt.subplots(2, ncols, figsize=(7, 5.6), sharey="row", squeeze=False,
                             gridspec_kw={"width_ratios": [4, 1][:ncols]})
    markers = dict(zip(counts, ["o", "s", "^", "D", "v"]))
    for col, group in enumerate([[n_sweep], others][:ncols]):
        sub = sweep[sweep["n_requests"].isin(group)]
        rates = sorted(sub["rate"].unique())
        x_of = {r: i for i, r in enumerate(rates)} if col else {r: r for r in rates}
        for n in group:
            for e in engines:
                s = sub[(sub["engine"] == e) & (sub["n_requests"] == n)]
                if len(s):
                    kw = dict(color=bd.color(e), marker=markers[n], ls="-" if col == 0 else "none", ms=5,
                              label=f"{e}, {n} requests")
                    axes[0, col].plot(s["rate"].map(x_of), s["served_rate"], **kw)
                    axes[1, col].plot(s["rate"].map(x_of), s["queue_wait_median_s"], **kw)
                    # lines join medians; where a rate ran more than once, each run is a dot
                    r = sweep_runs[(sweep_runs["engine"] == e) & (sweep_runs["n_requests"] == n)]
                    r = r[r.groupby("rate")["rate"].transform("size") > 1]
                    axes[0, col].plot(r["rate"].map(x_of), r["served_rate"], color=bd.color(e), marker=".",
                                      ls="none", alpha=0.6)
                    # hollow: a rate that ran in another campaign than most of this line (another
                    # speed of the machine)
                    c = s["git_commit"].map(bd.campaign_of)
                    other = s[c != c.mode().iloc[0]]
                    for ax, column in ((axes[0, col], "served_rate"), (axes[1, col], "queue_wait_median_s")):
                        ax.plot(other["rate"].map(x_of), other[column], marker=markers[n], ms=5, ls="none",
                                mfc="white", mec=bd.color(e), label="hollow: another campaign")
        if col == 0:
            axes[0, 0].plot(rates, rates, color="0.6", ls=":", lw=1, label="served = offered")
            axes[0, 0].plot(rates, [bd.arrived_rate(n_sweep, r, 0) for r in rates], color="0.3", ls="--", lw=1,
                            label="the draw's own arrival rate")
            po = peer_open[peer_open["n_requests"] == n_sweep] if len(peer_open) else peer_open
            if len(po):
                kw = dict(color=bd.color("transformers"), marker="*", ls="none", ms=9,
                          label=f"transformers, {n_sweep} requests")
                axes[0, 0].plot(po["rate"], po["served_rate"], **kw)
                axes[1, 0].plot(po["rate"], po["queue_wait_median_s"], **kw)
        for ax in axes[:, col]:
            ax.set_xticks([x_of[r] for r in rates], [f"{r:g}" for r in rates])
            if col:
                ax.set_xlim(-0.8, len(rates) - 0.2)
        axes[1, col].set_xlabel("offered rate (requests/s, log scale)" if col == 0 else "offered rate (requests/s)")
        if col == 0:
            rates0 = rates
    axes[0, 0].set_ylim(0, sweep["served_rate"].max() * 1.2)
    axes[0, 0].set_ylabel("served rate (requests/s)")
    axes[1, 0].set_yscale("log")
    for ax in axes[:, 0]:  # the offered rates span more than a decade
        ax.set_xscale("log")
        ax.set_xticks(rates0, [f"{r:g}" for r in rates0])
        ax.minorticks_off()
    axes[1, 0].set_ylabel("median queue wait (s, log)")
    axes[0, 0].set_title(f"{n_sweep} requests per rate", fontsize=9)
    if others:
        axes[0, 1].set_title(f"{', '.join(str(n) for n in others)} requests\n(another draw)", fontsize=8)
        axes[1, 1].set_xlabel("offered rate\n(requests/s)")
    handles = {l: h for ax in axes[0] for h, l in zip(*ax.get_legend_handles_labels())}
    fig.legend(handles.values(), handles.keys(), fontsize=8, loc="lower center", ncol=3, bbox_to_anchor=(0.5, 0))
    fig.suptitle(f"Earlier eager runs: Poisson arrivals, mixed requests, seed 0 ({gpu})")
    fig.tight_layout(rect=(0, 0.11, 1, 1))
    return fig


def served_table(v: Sweep) -> pd.DataFrame:
    sweep, engines = v.sweep, v.engines

    t = sweep.pivot_table(index=["n_requests", "rate"], columns="engine",
                          values=["served_rate", "queue_wait_median_s"], aggfunc="median")
    out = pd.DataFrame({"requests": t.index.get_level_values(0),
                        "offered rate": [f"{r:g}" for r in t.index.get_level_values(1)],
                        "arrived rate": [bd.sig3(bd.arrived_rate(n, r, 0)) for n, r in t.index]})
    fmt = lambda x, f=None: "—" if pd.isna(x) else (f.format(x) if f else bd.sig3(x))  # noqa: E731
    for e in engines:
        out[f"{e} served"] = [fmt(x) for x in t[("served_rate", e)]]
    if set(engines) == {"chunked", "fused"}:
        ratio = t[("served_rate", "fused")] / t[("served_rate", "chunked")] - 1
        crossed = [n == v.n_sweep and r in crossed_rates(v) for n, r in t.index]
        out["fused vs chunked"] = [fmt(x, "{:+.1%}") + (" †" if c and not pd.isna(x) else "")
                                   for x, c in zip(ratio, crossed)]
    for e in engines:
        out[f"{e} wait (s)"] = [fmt(x) for x in t[("queue_wait_median_s", e)]]
    return out


def capacity_text(v: Sweep) -> str:
    """The older capacity pair: the highest offered rate both engines ran, their served rates and
    queue waits there, and whether both were past saturation (a median wait longer than service)."""
    cap = v.cap
    sat = bool(cap["saturated_chunked"] and cap["saturated_fused"])
    runs = int(min(cap["runs_fused"], cap["runs_chunked"]))
    return (f"**Capacity.** The highest offered rate both engines ran is {cap['rate']:g} requests/s with "
            f"{int(cap['n_requests'])} requests. There the median request waits {cap['queue_wait_median_s_fused']:.3g} s "
            f"(fused) and {cap['queue_wait_median_s_chunked']:.3g} s (chunked) for a batch row, "
            + ("longer than it then takes to be served: both engines are past saturation, and fused serves "
               if sat else "not longer than it then takes to be served in both, so this pair is not clearly past "
               "saturation; fused serves ")
            + f"{cap['served_rate_fused']:.3g} against chunked's {cap['served_rate_chunked']:.3g} requests/s, "
            f"{cap['gain']:+.1%}"
            + (f" (medians of {runs} runs per engine, engines alternating but not paired: fused "
               f"{cap['served_min_fused']:.3g} to {cap['served_max_fused']:.3g}, chunked {cap['served_min_chunked']:.3g} "
               f"to {cap['served_max_chunked']:.3g} requests/s)." if runs > 1 else "."))


def campaigns_label(v: Sweep) -> str:
    """Which campaigns each engine's line of the older sweep came from, and the rates at which the
    two engines' runs came from different campaigns (those ratios compare machines as well)."""
    s = v.sweep[v.sweep["n_requests"] == v.n_sweep].assign(campaign=lambda d: d["git_commit"].map(bd.campaign_of))
    lines = "; ".join(f"{e}: campaign{'s' * (g['campaign'].nunique() > 1)} "
                      f"{', '.join(str(c) for c in sorted(g['campaign'].unique()))}" for e, g in s.groupby("engine"))
    split = crossed_rates(v)
    return (f"The {v.n_sweep}-request lines join rates measured in different campaigns ({lines}); the hollow markers "
            "are rates outside a line's main campaign. "
            + (f"At {', '.join(f'{r:g}' for r in split)}/s the two engines' runs came from different campaigns, so the "
               "fused-vs-chunked column there (marked †) compares machines as well as engines." if split else
               "At every rate both engines' runs came from one campaign."))


def crossed_rates(v: Sweep) -> list[float]:
    """Rates of the sweep's request count at which the engines' rows come from different campaigns."""
    s = v.sweep[v.sweep["n_requests"] == v.n_sweep]
    camp = s.assign(campaign=s["git_commit"].map(bd.campaign_of)).groupby("rate")["campaign"].nunique()
    return [float(r) for r in camp.index[camp > 1]]


def pool_figure(v: Sweep):
    gpu, pool, engines = v.gpu, v.pool, v.engines
    fig, ax = plt.subplots(figsize=(7, 3.2))
    rates = sorted(pool["rate"].unique())
    width = 0.8 / len(engines)
    for i, e in enumerate(engines):
        s = pool[pool["engine"] == e].set_index("rate").reindex(rates)
        ax.bar(np.arange(len(rates)) + (i - (len(engines) - 1) / 2) * width, s["served_rate"], width=width,
               color=bd.color(e), label=e)
    ax.set_xticks(range(len(rates)), [f"offered {r:g}/s" for r in rates])
    ax.set_ylabel("served rate (requests/s)")
    ax.set_title(f"Pool capped at {pool['pool_gib'].iloc[0]:g} GiB ({gpu})")
    ax.legend(fontsize=8)
    return fig


def pool_table(v: Sweep) -> pd.DataFrame:
    pool = v.pool
    names = {"engine": "engine", "rate": "offered rate", "n_requests": "requests", "pool_gib": "pool (GiB)",
             "pool_blocks": "blocks", "served_rate": "served rate", "queue_wait_median_s": "median wait (s)"}
    return pool[[c for c in names if c in pool]].rename(columns=names)
