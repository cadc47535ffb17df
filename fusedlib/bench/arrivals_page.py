"""The arrival sweeps appendix (book/arrivals.md): served rate and queue wait against the offered
rate, the capacity pair, the run-by-run speed of the machine, and the small-pool control. The
page calls these and shows what they return."""
from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import analysis as bd


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
                    # speed of the machine; see the run-by-run figure below)
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
    fig.suptitle(f"Poisson arrivals, mixed requests, seed 0 ({gpu})")
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    return fig


def served_table(v: Sweep) -> pd.DataFrame:
    sweep, engines = v.sweep, v.engines

    t = sweep.pivot_table(index=["n_requests", "rate"], columns="engine",
                          values=["served_rate", "queue_wait_median_s"], aggfunc="median")
    out = pd.DataFrame({"requests": t.index.get_level_values(0),
                        "offered rate": [f"{r:g}" for r in t.index.get_level_values(1)],
                        "arrived rate": [bd.sig3(bd.arrived_rate(n, r, 0)) for n, r in t.index]})
    fmt = lambda v, f=None: "—" if pd.isna(v) else (f.format(v) if f else bd.sig3(v))  # noqa: E731
    for e in engines:
        out[f"{e} served"] = [fmt(v) for v in t[("served_rate", e)]]
    if set(engines) == {"chunked", "fused"}:
        ratio = t[("served_rate", "fused")] / t[("served_rate", "chunked")] - 1
        out["fused vs chunked"] = [fmt(v, "{:+.1%}") for v in ratio]
    for e in engines:
        out[f"{e} wait (s)"] = [fmt(v) for v in t[("queue_wait_median_s", e)]]
    return out


def prose(v: Sweep) -> str:
    """The capacity pair, the sweep's saturation, offered against arrived rate, as paragraphs."""
    sweep, w, cap, engines, counts, n_sweep = v.sweep, v.w, v.cap, v.engines, v.counts, v.n_sweep
    text = []
    if cap is not None:
        sat = bool(cap["saturated_chunked"] and cap["saturated_fused"])
        text.append(
            f"**Capacity.** The highest offered rate both engines ran is {cap['rate']:g} requests/s with "
            f"{int(cap['n_requests'])} requests. There the median request waits "
            f"{cap['queue_wait_median_s_fused']:.3g} s (fused) and {cap['queue_wait_median_s_chunked']:.3g} s "
            "(chunked) for a batch row, "
            + ("longer than it then takes to be served: both engines are past saturation, so their served rates, "
               if sat else "not longer than it then takes to be served, so this pair is not clearly past "
               "saturation; its served rates, ")
            + f"{cap['served_rate_fused']:.3g} and {cap['served_rate_chunked']:.3g} requests/s, "
            + ("are the engines' capacities on that draw: fused serves " if sat else "put fused at ")
            + f"{cap['gain']:+.1%} against chunked"
            + (f" (medians of {int(min(cap['runs_fused'], cap['runs_chunked']))} runs per engine, engines alternating: "
               f"fused {cap['served_min_fused']:.3g} to {cap['served_max_fused']:.3g}, chunked "
               f"{cap['served_min_chunked']:.3g} to {cap['served_max_chunked']:.3g} requests/s)."
               if min(cap["runs_fused"], cap["runs_chunked"]) > 1 else "."))
    if n_sweep is not None:
        s = w[w["n_requests"] == n_sweep]
        sw = sweep[sweep["n_requests"] == n_sweep]
        if len(s):
            parts = []
            for e in engines:
                ew = sw[sw["engine"] == e].set_index("rate").sort_index()
                sat = ew["queue_wait_median_s"] > ew["e2e_median_s"] - ew["queue_wait_median_s"]
                served = ew.loc[sat, "served_rate"]
                parts.append(
                    f"the {e} engine's median queue wait goes from {ew['queue_wait_median_s'].iloc[0]:.3g} s at "
                    f"{ew.index[0]:g}/s to {ew['queue_wait_median_s'].iloc[-1]:.3g} s at {ew.index[-1]:g}/s, and it is "
                    + (f"past saturation at {', '.join(f'{r:g}' for r in served.index)}/s, where it serves "
                       f"{served.min():.3g} to {served.max():.3g} requests/s" if len(served) else
                       "past saturation at none of them"))
            both_sat = s[s["saturated_fused"] & s["saturated_chunked"]]["rate"]
            text.append(
                f"**The {n_sweep}-request sweep.** Past saturation means the median request waits longer for a "
                "batch row than it then takes to be served. Across the offered rates " + "; ".join(parts) + ". "
                + (f"Only where both engines are past saturation ({', '.join(f'{r:g}' for r in both_sat)}/s) is the "
                   "fused-vs-chunked column a capacity gain; below that it compares an engine held to the "
                   "arrivals with one that may not be." if len(both_sat) else
                   "No rate has both engines past saturation, so the fused-vs-chunked column is not a capacity "
                   "gain at any of them."))
    if n_sweep is not None:
        share = bd.arrived_rate(n_sweep, 1.0, 0)  # the draw's arrived/offered, the same at every rate
        below = []
        for e in engines:
            ew = sweep[(sweep["engine"] == e) & (sweep["n_requests"] == n_sweep)].set_index("rate").sort_index()
            ew = ew[ew["queue_wait_median_s"] <= ew["e2e_median_s"] - ew["queue_wait_median_s"]]
            below += [(e, r, row["served_rate"] / r - 1, row["served_rate"] / bd.arrived_rate(n_sweep, r, 0) - 1,
                       row.get("window_served_rate"), row["queue_wait_median_s"],
                       row["e2e_median_s"] - row["queue_wait_median_s"]) for r, row in ew.iterrows()]
        if below:
            offd = [b[2] for b in below]
            arrd = [b[3] for b in below]
            win = [(e, r, wsr / bd.arrived_rate(n_sweep, r, 0) - 1) for e, r, _, _, wsr, *_ in below
                   if wsr is not None and not pd.isna(wsr)]
            worst = min(below, key=lambda b: b[3])
            text.append(
                f"**Offered and arrived.** The offered rate is the mean of the Poisson draw, not what it delivers: "
                f"the {n_sweep} requests of seed 0 arrive at {share:.1%} of the offered rate (their gaps happen to "
                f"run long), at every rate alike. Below saturation the served rate sits {min(offd):+.1%} to "
                f"{max(offd):+.1%} off the offered rate but {min(arrd):+.1%} to {max(arrd):+.1%} off the rate the "
                "requests arrived at. What remains is the drain of the last requests, which the served rate counts, "
                f"and near saturation a queue: the widest gap is the {worst[0]} engine's at {worst[1]:g}/s, where its "
                f"median request already waits {worst[5]:.3g} s for a row against {worst[6]:.3g} s of service."
                + (" Runs since campaign 4 also record the completions made while requests still arrive, over that "
                   "window: against the arrived rate they read " + "; ".join(
                       f"{e} at {r:g}/s {d:+.1%}" for e, r, d in win) + "."
                   + (" Within 5% of it: below saturation those runs kept up with the arrivals."
                      if all(abs(d) <= 0.05 for *_, d in win) else "") if win else ""))
    if cap is not None and n_sweep is not None and int(cap["n_requests"]) != n_sweep:
        c = sweep[(sweep["engine"] == "chunked") & (sweep["n_requests"] == n_sweep)].set_index("rate")
        if len(c):
            pk = c["served_rate"].idxmax()
            per_req = lambda d, e, n: d.loc[d["n_requests"] == n, f"n_prompt_tokens_{e}"].iloc[0] / n  # noqa: E731
            if cap["served_rate_chunked"] < c.loc[pk, "served_rate"]:
                text.append(
                    f"The chunked engine serves less in the {int(cap['n_requests'])}-request run at "
                    f"{cap['rate']:g}/s ({cap['served_rate_chunked']:.3g} requests/s) than at its sweep peak "
                    f"({c.loc[pk, 'served_rate']:.3g} at {pk:g}/s), although that draw's prompts are shorter on "
                    f"average ({per_req(w, 'chunked', int(cap['n_requests'])):.0f} against "
                    f"{per_req(w, 'chunked', n_sweep):.0f} prompt tokens per request). Its share of mixed steps, "
                    f"each two forwards, is {cap['n_mixed_steps_chunked'] / cap['n_steps_chunked']:.1%} there "
                    f"against {c.loc[pk, 'n_mixed_steps'] / c.loc[pk, 'n_steps']:.1%} at its sweep peak, and its "
                    f"mean step {cap['span_s_chunked'] / cap['n_steps_chunked'] * 1e3:.3g} ms against "
                    f"{c.loc[pk, 'span_s'] / c.loc[pk, 'n_steps'] * 1e3:.3g} ms, consistent with a standing queue "
                    "putting new prompt chunks into more of its steps. The two runs are different draws of "
                    "requests, so this describes the rows; it is not a controlled comparison.")
    # Same draw, different campaigns: runs of one request count whose rows came from more than one commit.
    if cap is not None:
        same_n = sweep[(sweep["n_requests"] == cap["n_requests"]) & (sweep["engine"] == "chunked")].sort_values("rate")
        if same_n["git_commit"].nunique() > 1:
            pw = w[w["n_requests"] == cap["n_requests"]].set_index("rate")
            runs = [f"at {r.rate:g}/s (campaign {bd.campaign_of(r.git_commit)}) {r.served_rate:.3g} requests/s"
                    + (", past saturation" if r.rate in pw.index and pw.loc[r.rate, "saturated_chunked"] else "")
                    + f", with {r.n_mixed_steps / r.n_steps:.1%} of its steps mixed and a mean step of "
                    f"{r.span_s / r.n_steps * 1e3:.3g} ms" for r in same_n.itertuples()]
            text.append(f"**The {int(cap['n_requests'])}-request runs span campaigns.** On the same requests the "
                        "chunked engine served " + "; ".join(runs) + ". The share of steps that pay two forwards "
                        "is what the arrival rate changes; where it is about the same and the mean step is not, "
                        "the steps themselves ran at a different speed: the machine, not the rate (the writeup's "
                        "paragraph on the machine's speed compares each run's median step by kind).")
    return "\n\n".join(text)

def speed_figure(v: Sweep):
    """Each run's median mixed and decode step in the order the runs ran; with what the rows say
    about the GPU's clock and the host's launch cost. (None, []) without such runs."""
    gpu, sweep, engines, n_sweep = v.gpu, v.sweep, v.engines, v.n_sweep
    every_run = bd.default_pool(bd.one_gpu(bd.load("arrivals"))[0])[0]
    speed = every_run[every_run["n_requests"] == n_sweep] if len(sweep) and n_sweep is not None else every_run.iloc[0:0]
    speed = speed.dropna(subset=["median_mixed_step_s"]) if "median_mixed_step_s" in speed else speed.iloc[0:0]
    if len(speed):
        speed = speed.assign(campaign=speed["git_commit"].map(bd.campaign_of)).sort_values("timestamp")
        fig, ax = plt.subplots(figsize=(7, 3.2))
        x = np.arange(len(speed))
        for e in engines:
            on = (speed["engine"] == e).to_numpy()
            for col, marker, kind in (("median_mixed_step_s", "o", "mixed"), ("median_decode_step_s", "s", "decode")):
                ax.plot(x[on], speed.loc[on, col] * 1e3, marker=marker, ls="none", color=bd.color(e),
                        fillstyle="full" if kind == "mixed" else "none", label=f"{e}, {kind} step")
        bounds = np.flatnonzero(np.diff(speed["campaign"].to_numpy())) + 0.5
        for b in bounds:
            ax.axvline(b, color="0.6", lw=1, ls="--")
        ax.set_xticks(x, [f"{r:g}" for r in speed["rate"]], fontsize=7)
        ax.set_xlabel("runs in the order they ran (offered rate, requests/s); dashed: a new campaign")
        ax.set_ylabel("median step (ms)")
        ax.set_ylim(0, None)
        ax.legend(fontsize=7, ncol=2)
        ax.set_title(f"{n_sweep} requests: each run's median step by kind ({gpu})")
        texts = []
        spans = []
        for (c, e), grp in speed.groupby(["campaign", "engine"]):
            m = grp["median_mixed_step_s"]
            lo, hi = f"{m.min() * 1e3:.3g}", f"{m.max() * 1e3:.3g}"
            spans.append(f"campaign {c}, {e}: " + (f"{lo} ms" if lo == hi else f"{lo} to {hi} ms")
                         + f" over {len(m)} run" + ("s" * (len(m) > 1)))
        texts.append("Median mixed step by campaign and engine: " + "; ".join(spans) + ".")
        clocked = speed[speed["gpu_samples"].fillna(0) > 0] if "gpu_samples" in speed else speed.iloc[0:0]
        if len(clocked):
            texts.append(f"{len(clocked)} of these runs (campaign{'s' * (clocked['campaign'].nunique() > 1)} "
                   f"{', '.join(str(c) for c in sorted(clocked['campaign'].unique()))}) sampled the GPU every 2 s: its "
                   f"SM clock never read below {clocked['gpu_sm_clock_mhz_min'].min():.0f} MHz (median of the runs' "
                   f"medians {clocked['gpu_sm_clock_mhz_median'].median():.0f} MHz), the card ran at up to "
                   f"{clocked['gpu_temp_c_max'].max():.0f} °C and a median {clocked['gpu_power_w_median'].median():.0f} W. "
                   "Earlier campaigns did not sample the GPU, so whether their slower steps came from the GPU's clock "
                   "or from the host is not in the rows.")
        # Newer runs time the host's cost per kernel launch before and after (HostMeter).
        probed = speed.dropna(subset=["host_launch_us_before"]) if "host_launch_us_before" in speed else speed.iloc[0:0]
        if len(probed):
            launch = probed[["host_launch_us_before", "host_launch_us_after"]].mean(axis=1)
            corr = []
            for e in engines:
                on = probed["engine"] == e
                if on.sum() >= 3:
                    rho = launch[on].rank().corr(probed.loc[on, "median_mixed_step_s"].rank())
                    corr.append(f"{e} {rho:+.2f} over {int(on.sum())} runs")
            texts.append(f"{len(probed)} of these runs timed the host's cost per kernel launch before and after the run "
                   f"(`launch_probe_us`): {launch.min():.3g} to {launch.max():.3g} µs per launch"
                   + (f"; its rank correlation with the run's median mixed step: {'; '.join(corr)}." if corr else "."))
        return fig, texts
    return None, []

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
