"""What every book page shares: the committed rows, one GPU's worth of them, and output
that renders as real tables and figures. Pages import this (they execute with book/ as
their working directory) and do their own plotting; nothing here measures anything.

`FUSEDLIB_DATA` points the book at another rows folder (e.g. `data-smoke/` after a CPU
`make run-all`); by default it reads the published `data/`.
"""
from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from . import rows as results, workloads

ROOT = Path(__file__).resolve().parents[2]
DATA = (ROOT / (os.environ.get("FUSEDLIB_DATA") or "data")).resolve()  # relative: to the repo root
PREFERRED_GPU = os.environ.get("FUSEDLIB_BOOK_GPU", "H200")
ENGINE_COLORS = {"fused": "#1f77b4", "chunked": "#ff7f0e", "transformers": "#2ca02c"}

matplotlib.rcParams.update({
    # 7 in at 100 dpi is the article column's width at a 1280-pixel window: text stays legible.
    "figure.dpi": 100, "savefig.dpi": 100, "figure.figsize": (7, 3.4), "font.size": 9,
    "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
    "legend.frameon": False,
})


def rel(path: Path) -> str:
    """A path as the reader knows it: relative to the repository root."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def load(experiment: str) -> pd.DataFrame:
    """Every row under `<data>/<experiment>/`, one result set per file stem, with the stem
    in a `result_set` column. A set's JSONL (the source of truth) is read with
    `fusedlib.results.load`; a set committed as CSV only is read from the CSV."""
    return _load(DATA, experiment)


def _load(data: Path, experiment: str) -> pd.DataFrame:
    folder = data / experiment
    stems = sorted({p.name.rsplit(".", 1)[0] for p in folder.glob("*.jsonl")} |
                   {p.name.rsplit(".", 1)[0] for p in folder.glob("*.csv")})
    frames = []
    for stem in stems:
        jsonl = folder / f"{stem}.jsonl"
        df = results.load(folder / stem) if jsonl.exists() else pd.read_csv(folder / f"{stem}.csv")
        if len(df):
            frames.append(df.assign(result_set=stem))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def prediction(experiment: str) -> None:
    """Show `<data>/<experiment>/PREDICTION.md`, written before the run, as written, up to
    its first section heading: a section added after the run would quote measured numbers by
    hand, and the page shows those from the rows instead."""
    path = DATA / experiment / "PREDICTION.md"
    if path.exists():
        text = path.read_text().strip().split("\n## ", 1)[0]
        title, _, body = text.partition("\n")
        display(Markdown(f"::::{{admonition}} {title.lstrip('# ').strip()}\n:class: note\n"
                         f"{body.strip()}\n\n(From `{rel(path)}`.)\n::::"))


def one_gpu(df: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The rows of one GPU, so a table never mixes cards: the preferred one (H200 unless
    FUSEDLIB_BOOK_GPU says otherwise) when present, else the one with the most rows."""
    if df.empty or "gpu" not in df:
        return df, "unknown GPU"
    gpus = df["gpu"].fillna("unknown").astype(str)
    preferred = sorted({g for g in gpus if PREFERRED_GPU.lower() in g.lower()})
    gpu = preferred[0] if preferred else gpus.value_counts().index[0]
    return df[gpus == gpu].reset_index(drop=True), gpu


def rows_for(experiment: str) -> tuple[pd.DataFrame, str]:
    """`load` then `one_gpu`; prints where the rows came from (or that there are none)."""
    df, gpu = one_gpu(load(experiment))
    if df.empty:
        no_rows(experiment)
    else:
        commits = sorted(df["git_commit"].astype(str).unique()) if "git_commit" in df else []
        note = f" at commit{'s' if len(commits) > 1 else ''} {', '.join(commits)}" if commits else ""
        display(Markdown(f"{len(df)} rows from `{rel(DATA / experiment)}/`, measured on **{gpu}**{note}."))
    return df, gpu


def newest_rows(experiment: str, keys: list[str]) -> pd.DataFrame:
    """One GPU's rows of an experiment, only the newest measurement of each configuration."""
    df, _ = one_gpu(load(experiment))
    return latest(df, keys) if len(df) else df


# The configuration keys a re-run of each experiment repeats (`latest` keeps its newest rows).
CLOSED_KEYS = ["engine", "workload", "batch_size", "seed", "max_batch", "chunk_tokens"]
LAYOUT_KEYS = ["result_set", "kernel", "case", "block_n", "programs_per_sm", "num_warps", "num_stages"]


def latest(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Only the newest measurement of each configuration: per `keys` group, the rows that
    share the group's latest timestamp (a re-run replaces, never averages with, the old)."""
    if df.empty or "timestamp" not in df:
        return df
    keys = [k for k in keys if k in df]
    newest = df.groupby(keys, dropna=False)["timestamp"].transform("max") if keys else df["timestamp"].max()
    return df[df["timestamp"] == newest].reset_index(drop=True)


# Each campaign is one session's device time, its runs back to back; between campaigns the
# device sat unused for hours. A gap this long with no row written starts a new campaign.
CAMPAIGN_GAP = pd.Timedelta("30min")


def campaigns() -> pd.DataFrame:
    """The device campaigns behind the rows, from every experiment's timestamps: one row per
    campaign, numbered from 1 in time order, with its commits, first and last timestamp and
    row count."""
    return _campaigns(DATA).copy()


@functools.lru_cache(maxsize=4)
def _campaigns(data: Path) -> pd.DataFrame:
    # Reads every experiment's rows (the step traces are megabytes): once per data folder.
    frames = []
    for folder in sorted(p for p in data.iterdir() if p.is_dir()):
        df = _load(data, folder.name)
        if len(df) and {"timestamp", "git_commit"} <= set(df.columns):
            frames.append(df[["timestamp", "git_commit"]])
    if not frames:
        return pd.DataFrame(columns=["campaign", "commits", "start", "end", "rows"])
    rows = pd.concat(frames, ignore_index=True).dropna()
    rows["t"] = pd.to_datetime(rows["timestamp"], utc=True)
    rows = rows.sort_values("t")
    rows["campaign"] = (rows["t"].diff() > CAMPAIGN_GAP).cumsum() + 1
    return rows.groupby("campaign").agg(
        commits=("git_commit", lambda c: list(dict.fromkeys(c))), start=("t", "min"), end=("t", "max"),
        rows=("t", "size")).reset_index()


def campaign_of(commit: str) -> int | None:
    """The campaign whose rows carry this commit (the first, if several)."""
    c = _campaigns(DATA)
    hit = c[c["commits"].map(lambda cs: commit in cs)]
    return int(hit["campaign"].iloc[0]) if len(hit) else None


NO_ROWS = "No rows"  # tests/test_book.py looks for this on pages whose data is missing
# The published rows: one H200 campaign, whose device time ran out before every experiment had
# run. A folder of it with no rows was not run in that campaign (not "still arriving").
PUBLISHED = (ROOT / "data").resolve()


def not_run_reason() -> str:
    """Why a published experiment has no rows; empty for any other rows folder."""
    return ("not run in the H200 campaign, whose device time ran out first" if DATA == PUBLISHED else "")


def no_rows(experiment: str, result_set: str | None = None, what: str | None = None) -> None:
    """Say that a part of a page has no rows: which rows, where, and (for the published rows)
    that the campaign did not run it. `what` names rows inside a folder that has other rows."""
    where = rel(DATA / experiment) + (f"/{result_set}.*" if result_set else "/")
    subject = f"{NO_ROWS} {('for ' + what + ' ') if what else ''}in `{where}`"
    reason = not_run_reason()
    tail = (f". It was {reason}. " if reason else ". ") + (
        "This part of the page shows its table and figure once the experiment's notebook has written rows there "
        "(`make run-all`).")
    say(f"```{{note}}\n{subject}{tail}\n```")


def say(text: str) -> None:
    """Computed prose: a Markdown paragraph built from the rows."""
    display(Markdown(text))


def table(df: pd.DataFrame, columns: dict[str, str] | list[str] | None = None, floatfmt: str = ".3g",
          right: bool = False) -> None:
    """A DataFrame as a MyST table (a real <table> because nb_render_markdown_format is
    myst). `columns` picks columns, in order; a dict also relabels them. `right` aligns every
    column right (for numbers already formatted as text)."""
    if columns is not None:
        labels = columns if isinstance(columns, dict) else {c: c for c in columns}
        df = df[[c for c in labels if c in df]].rename(columns=labels)
    numeric = re.compile(r"^\s*([-+−—]|\d)")
    kw = {"colalign": ["right" if df[c].map(lambda x: bool(numeric.match(str(x)))).all() else "left"
                       for c in df.columns]} if right else {}
    display(Markdown(df.to_markdown(index=False, floatfmt=floatfmt, **kw)))


def show(fig) -> None:
    """Show a figure once, as PNG, and release it."""
    fig.tight_layout()
    plt.show()
    plt.close(fig)


def color(engine: str) -> str:
    return ENGINE_COLORS.get(engine, "#7f7f7f")


# ---------------------------------------------------------------- shared analysis of the rows
# The writeup and the experiment pages compute the same things from the same rows; these
# helpers keep them from drifting apart. Nothing here types a result number.

ARRIVAL_KEYS = ["engine", "rate", "pool_gib", "n_requests", "seed", "max_batch", "chunk_tokens", "repeat"]


def default_pool(arrivals: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(default-pool rows, capped-pool rows) of an arrivals table."""
    if arrivals.empty:
        return arrivals, arrivals
    small = arrivals["pool_gib"].notna() & (arrivals["pool_gib"].astype(float) > 0) if "pool_gib" in arrivals \
        else pd.Series(False, index=arrivals.index)
    return arrivals[~small].reset_index(drop=True), arrivals[small].reset_index(drop=True)


def run_medians(arrivals: pd.DataFrame) -> pd.DataFrame:
    """One row per arrivals configuration: repeated runs (the `repeat` field) collapsed to the
    median of each numeric column, the other columns from the newest run, with `runs`, and
    `served_min`/`served_max` over the runs. Tables and per-engine lookups use this; `paired`
    takes the runs themselves."""
    if arrivals.empty or "repeat" not in arrivals:
        return arrivals.assign(runs=1, served_min=arrivals.get("served_rate"), served_max=arrivals.get("served_rate"))
    keys = [k for k in ARRIVAL_KEYS if k != "repeat" and k in arrivals]
    groups = arrivals.sort_values("timestamp").groupby(keys, dropna=False, sort=False)
    numeric = [c for c in arrivals.select_dtypes("number").columns if c not in keys + ["repeat"]]
    out = groups.last().reset_index()
    med = groups[numeric].median().reset_index()
    out = out.drop(columns=numeric).merge(med, on=keys, how="left")
    spread = groups["served_rate"].agg(runs="size", served_min="min", served_max="max").reset_index()
    return out.merge(spread, on=keys, how="left").drop(columns="repeat")[list(arrivals.columns.drop("repeat"))
                                                                           + ["runs", "served_min", "served_max"]]


def arrived_rate(n_requests: int, rate: float, seed: int) -> float:
    """The rate at which a run's requests actually arrived: its Poisson draw's (n - 1) / last
    arrival time, recomputed from the seed (the draw is deterministic). The offered rate is
    only the draw's mean."""
    times = workloads.arrival_times(int(n_requests), float(rate), int(seed))
    return (len(times) - 1) / times[-1]


def paired(arrivals: pd.DataFrame) -> pd.DataFrame:
    """One row per (n_requests, rate) that both engines ran, wide: served rate, queue wait and
    end-to-end median per engine (medians over repeated runs, with the runs' count and served
    min/max), and the fused/chunked served-rate change. Engines are only
    ever compared here, at the same offered rate and the same requests."""
    cols = ["served_rate", "queue_wait_median_s", "e2e_median_s", "n_steps", "n_mixed_steps", "span_s",
            "n_prompt_tokens"]
    if arrivals.empty:
        return pd.DataFrame()
    # Repeated runs of a configuration (the `repeat` field) count by their median.
    w = arrivals.pivot_table(index=["n_requests", "rate"], columns="engine",
                             values=[c for c in cols if c in arrivals], aggfunc="median")
    if not {"chunked", "fused"} <= set(w.columns.get_level_values(1)):
        return pd.DataFrame()
    w = w[w[("served_rate", "chunked")].notna() & w[("served_rate", "fused")].notna()]
    w.columns = [f"{v}_{e}" for v, e in w.columns]
    spread = arrivals.pivot_table(index=["n_requests", "rate"], columns="engine", values="served_rate",
                                  aggfunc=["size", "min", "max"])
    for stat, name in (("size", "runs"), ("min", "served_min"), ("max", "served_max")):
        for e in ("chunked", "fused"):
            w[f"{name}_{e}"] = spread[(stat, e)].reindex(w.index)
    w = w.reset_index()
    w["gain"] = w["served_rate_fused"] / w["served_rate_chunked"] - 1
    for e in ("chunked", "fused"):
        # Past saturation: the median request waits longer for a batch row than it then
        # takes to be served once admitted.
        w[f"saturated_{e}"] = w[f"queue_wait_median_s_{e}"] > (w[f"e2e_median_s_{e}"] - w[f"queue_wait_median_s_{e}"])
    return w


def capacity_pair(arrivals: pd.DataFrame):
    """The capacity measurement: of the (rate, n_requests) pairs both engines ran with the
    default pool, the one at the highest offered rate (ties: the most requests). None if none."""
    w = paired(default_pool(arrivals)[0])
    if w.empty:
        return None
    return w.sort_values(["rate", "n_requests"]).iloc[-1]


def capacity_by_configuration(arrivals: pd.DataFrame, beyond: pd.DataFrame) -> list[tuple[str, pd.DataFrame, object]]:
    """The capacity runs by engine configuration: eager (default-pool arrivals rows), decode
    graphs with split-KV, and every forward graphed (the beyond set's arrivals rows), all at
    the graphed runs' highest offered rate and its request count, the newest run of each
    repeat. Each entry: (name, runs, the `paired` row or None). Empty without graphed runs."""
    g = beyond[beyond["experiment"] == "arrivals"] if len(beyond) and "experiment" in beyond else beyond.iloc[0:0]
    if g.empty:
        return []
    top = g.sort_values(["rate", "n_requests"]).iloc[-1]
    at_top = lambda d: d[(d["rate"] == top["rate"]) & (d["n_requests"] == top["n_requests"])]  # noqa: E731
    g = at_top(g)
    chunks = g["graph_chunks"].fillna(False).astype(bool) if "graph_chunks" in g else pd.Series(False, index=g.index)
    eager = at_top(default_pool(arrivals)[0]) if len(arrivals) else arrivals
    out = []
    for name, rows in (("eager", eager), ("decode graphs, split-KV", g[~chunks]),
                       ("every forward graphed, split-KV", g[chunks])):
        if len(rows):
            rows = latest(rows, ARRIVAL_KEYS)
            pair = paired(rows)
            out.append((name, rows, pair.iloc[0] if len(pair) else None))
    return out


def sweep_n(arrivals: pd.DataFrame):
    """The request count of the served-vs-offered sweep: the n_requests with the most offered
    rates among the default-pool rows. None if no rows."""
    d = default_pool(arrivals)[0]
    if d.empty:
        return None
    counts = d.groupby("n_requests")["rate"].nunique()
    return int(counts[counts == counts.max()].index.max())


def closed_summary(closed: pd.DataFrame) -> pd.DataFrame:
    """Per (workload, batch, engine): the recorded median and the min and max of the recorded
    runs, and how many runs there were."""
    if closed.empty:
        return pd.DataFrame()
    runs = closed[closed["stat"] == "run"]
    med = closed[closed["stat"] == "median"]
    keys = ["workload", "batch_size", "engine"]
    spread = runs.groupby(keys)["wall_s"].agg(run_min="min", run_max="max", n_runs="size").reset_index()
    out = med[keys + ["wall_s", "output_throughput", "n_steps", "n_mixed_steps"]].merge(spread, on=keys, how="left")
    return out.rename(columns={"wall_s": "median_s"}).sort_values(keys).reset_index(drop=True)


def closed_comparison(closed: pd.DataFrame) -> pd.DataFrame:
    """Per (workload, batch) both engines ran: the change of the medians, the larger of the two
    engines' run-to-run spreads (max - min), and whether the change is resolved: its size
    exceeds that spread."""
    s = closed_summary(closed)
    if s.empty:
        return pd.DataFrame()
    w = s.pivot_table(index=["workload", "batch_size"], columns="engine",
                      values=["median_s", "run_min", "run_max", "n_runs", "n_mixed_steps", "n_steps"])
    if not {"chunked", "fused"} <= set(w.columns.get_level_values(1)):
        return pd.DataFrame()
    w.columns = [f"{v}_{e}" for v, e in w.columns]
    w = w.dropna(subset=["median_s_chunked", "median_s_fused"]).reset_index()
    w["change"] = w["median_s_fused"] / w["median_s_chunked"] - 1
    w["spread_s"] = np.maximum(w["run_max_chunked"] - w["run_min_chunked"], w["run_max_fused"] - w["run_min_fused"])
    w["diff_s"] = w["median_s_fused"] - w["median_s_chunked"]
    w["resolved"] = w["diff_s"].abs() > w["spread_s"]
    return w


def gate_split(gates: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(gates as specified, informational rows). Gate 5 (transformers) is specified for an fp32
    model (fusedlib.gates.run_all); a transformers row in another dtype compares two fp16
    implementations whose rounding differs, so it is information, not a gate."""
    if gates.empty:
        return gates, gates
    info = (gates["gate"] == "transformers") & (gates.get("dtype", pd.Series("float32", index=gates.index))
                                                .astype(str) != "float32")
    return gates[~info].reset_index(drop=True), gates[info].reset_index(drop=True)


def passed(df: pd.DataFrame) -> pd.Series:
    return df["passed"].astype(str).str.lower().eq("true")


def _gaps(value) -> np.ndarray:
    return np.asarray(json.loads(value) if isinstance(value, str) else (value or []), dtype=float)


def kv_per_step(trace: pd.DataFrame, engine: str) -> pd.DataFrame:
    """The step rows of one engine's trace with the KV positions each step's decodes read.

    Every output token is stamped when its step's forward returns, before the step's end, so a
    token belongs to the first step that ends at or after its time. A request's token times,
    from the trace's t0 (which is every request's arrival in this workload), are ttft_s for
    token 0 (made by its last prompt chunk) and ttft_s + the cumulative gaps after it. Output
    token i >= 1 comes from a decode whose input is token i-1 at position prompt_len + i - 1,
    so its attention reads prompt_len + i positions of KV. Columns added: `decode_tokens`
    (decodes found in the step: a check against the step's own `n_decode`), `kv_positions`
    (their sum) and `max_context`."""
    t = trace[trace["engine"] == engine]
    steps = t[t["record"] == "step"].sort_values("start_s").reset_index(drop=True)
    ends = (steps["start_s"] + steps["duration_s"]).to_numpy()
    kv = np.zeros(len(steps))
    count = np.zeros(len(steps), dtype=int)
    longest = np.zeros(len(steps))
    for r in t[t["record"] == "request"].itertuples():
        times = r.ttft_s + np.concatenate([[0.0], np.cumsum(_gaps(r.token_gaps_s))])
        idx = np.searchsorted(ends, times[1:], side="left")
        if len(idx) and idx.max() >= len(steps):
            raise ValueError(f"{engine}: a token of request {r.rid} is stamped after the last step ended")
        ctx = r.prompt_len + np.arange(1, len(times))
        np.add.at(kv, idx, ctx)
        np.add.at(count, idx, 1)
        np.maximum.at(longest, idx, ctx)
    return steps.assign(decode_tokens=count, kv_positions=kv, max_context=longest)


# Each run's median pure decode step and median mixed step (a 512-token chunk plus the running
# decodes) do nearly the same work in every draw of a workload, so a run whose median sits
# this far above the other runs' ran on a slowed machine, not on a harder draw.
RUN_STEPS = {"decode": "median_decode_step_s", "mixed": "median_mixed_step_s"}
SLOW_RUN = 1.25


def sensitivity_wide(df: pd.DataFrame) -> pd.DataFrame:
    """Sensitivity rows (latest per configuration) as one row per draw: `draw` ("mixed" or
    the share of longest prompts), seed, served rate per engine, `gain`, n_long_prompts and,
    where the rows have them, each engine's median decode and mixed step (`decode_fused`...)."""
    df = latest(df, ["engine", "seed", "long_share", "rate", "n_requests", "max_batch", "chunk_tokens"])
    df = df.assign(draw=df["long_share"].map(lambda s: "mixed" if pd.isna(s) else f"{float(s):.0%} longest"))
    wide = df.pivot_table(index=["draw", "seed"], columns="engine", values="served_rate").reset_index()
    wide = wide.merge(df.groupby(["draw", "seed"])["n_long_prompts"].first().reset_index(), on=["draw", "seed"])
    if all(c in df for c in RUN_STEPS.values()):
        for kind, column in RUN_STEPS.items():
            step = df.pivot_table(index=["draw", "seed"], columns="engine", values=column)
            wide = wide.merge(step.add_prefix(f"{kind}_").reset_index(), on=["draw", "seed"])
    if {"chunked", "fused"} <= set(wide):
        wide["gain"] = wide["fused"] / wide["chunked"] - 1
    return wide


def slowed_runs(wide: pd.DataFrame) -> list[dict]:
    """The runs of a `sensitivity_wide` table whose median decode or mixed step sits more than
    SLOW_RUN times its engine's median over the table: draw, seed, engine, kind, ms, typical."""
    out = []
    for kind in RUN_STEPS:
        for e in ("chunked", "fused"):
            col = f"{kind}_{e}"
            if col not in wide:
                continue
            typical = wide[col].median()
            out += [{"draw": r["draw"], "seed": r["seed"], "engine": e, "kind": kind, "ms": r[col] * 1e3,
                     "typical_ms": typical * 1e3} for _, r in wide[wide[col] > SLOW_RUN * typical].iterrows()]
    return out


def kv_bytes_per_position(cfg, dtype_bytes: int) -> int:
    """Bytes of K and V one cached position holds across the model: layers x (K, V) x KV heads
    x head dim x element size."""
    return cfg.num_layers * 2 * cfg.num_kv_heads * cfg.head_dim * dtype_bytes


def sig3(x: float) -> str:
    """Three significant digits, keeping trailing zeros (15.0, 2.60, 0.725); whole numbers from 100."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:#.3g}"


# ---------------------------------------------------------------- how pages write numbers
# One definition each: every page formats its glued values with these.

def ms(seconds: float) -> str:
    """A time in milliseconds, three significant digits: 0.01234 -> "12.3 ms"."""
    if not np.isfinite(seconds):
        raise ValueError(f"no time to format: {seconds}")
    return f"{sig3(seconds * 1e3)} ms"


def sec(seconds: float) -> str:
    if not np.isfinite(seconds):
        raise ValueError(f"no time to format: {seconds}")
    return f"{sig3(seconds)} s"


def pct(x: float, signed: bool = True) -> str:
    """A fraction as a percentage with one decimal: 0.253 -> "+25.3%" (or "25.3%")."""
    if not np.isfinite(x):
        raise ValueError(f"no fraction to format: {x}")
    return f"{x:+.1%}" if signed else f"{x:.1%}"


def times(x: float) -> str:
    """A multiple: 21.7 -> "21.7×"; 1.234 -> "1.23×"."""
    return f"{sig3(x)}×"


def glued(values: dict[str, str]) -> None:
    """Paste each text under its key for the page's prose ({glue:text}`key`), not shown where computed."""
    from myst_nb import glue

    for key, text in values.items():
        if not isinstance(text, str) or not text:
            raise ValueError(f"glue {key!r}: expected non-empty text, got {text!r}")
        glue(key, text, display=False)


def same_machine_capacity(arrivals: pd.DataFrame, beyond: pd.DataFrame):
    """(eager pair, every-forward-graphed pair, campaign) when the newest capacity runs of both
    configurations ran in one campaign, so their ratio compares configurations, not machines;
    else None."""
    by_config = {name: (rows, pair) for name, rows, pair in capacity_by_configuration(arrivals, beyond)}
    full = "every forward graphed, split-KV"
    if not ({"eager", full} <= set(by_config) and all(by_config[k][1] is not None for k in ("eager", full))):
        return None
    (er, ep), (gr, gp) = by_config["eager"], by_config[full]
    ce, cg = ({campaign_of(c) for c in rows["git_commit"]} for rows in (er, gr))
    return (ep, gp, ce.pop()) if ce == cg and len(ce) == 1 else None


def open_predictions(arrivals: pd.DataFrame, beyond: pd.DataFrame) -> dict[str, str]:
    """The predictions whose grading runs are not in the rows: key -> what they wait for."""
    waiting = {}
    if same_machine_capacity(arrivals, beyond) is None:
        waiting["B11"] = ("eager and every-forward-graphed capacity runs of 400 requests at 40/s, both engines, "
                          "on one machine in one sitting; the paired campaign ran both configurations on one "
                          "machine lease with 200 eager arrivals, and eager pairs of 400 arrivals on a later "
                          "lease, so no single sitting holds both at the 400 this prediction names")
    roofline = DATA / "roofline"
    if not any(p.suffix in (".jsonl", ".csv") for p in roofline.glob("*")):  # glob of a missing folder: nothing
        for n in range(1, 7):
            waiting[f"C{n}"] = ("part 10's runs (fused small-op kernels, retuned split-KV, kernel census and capacity), "
                                f"whose rows will be in `{rel(roofline)}/`")
    for keys, (stem, phase, grading_row) in CAMPAIGN_D.items():
        if not any(grading_row(r) for r in results.read_rows(DATA / "paired" / stem)):
            waiting |= {k: f"the paired campaign's `{phase}` phase (`python -m fusedlib.bench.campaign OUT --phase "
                           f"{phase}`), whose rows will be in `{rel(DATA / 'paired' / stem)}`" for k in keys}
    # Set F's capacity, peer and gate predictions: their configuration lost in the census.
    not_kept = ("runs of the split-K GEMMs past the census: the census at bfa3594 measured them slower "
                "than cuBLAS, so the engine does not keep them and no capacity, peer or gate run used "
                "them (checking out bfa3594 and running the campaign's phases with small_m_gemms would)")
    if not any(r.get("attention") == "triton-parallel" for r in results.read_rows(DATA / "paired" / "arrivals")):
        waiting["P4"] = ("the paired campaign's `parallel` phase (`python -m fusedlib.bench.campaign OUT --phase "
                         "parallel`): the gates with the mixed step's decode attention on a second stream and its "
                         "capacity pairs at 80/s, whose rows will be in "
                         f"`{rel(DATA / 'paired')}`; its logit check alone has rows (`{rel(roofline)}/step_check`)")
    if not results.read_rows(roofline / "loop"):
        waiting |= {f"Q{n}": ("the roofline bench's loop section (`python scripts/roofline_bench.py OUT --sections "
                              "loop --configs 5,6`): the steps as the serving loop runs them, whose rows will be in "
                              f"`{rel(roofline)}/loop`") for n in range(1, 4)}
    if not results.read_rows(roofline / "prefill_ab"):
        waiting |= {f"R{n}": ("the census A/B of part 10's prefill shape (`scripts/device_census_ab.sh` with "
                              "configuration 6 on both arms), the gates phase and the GPU tests at its commit, "
                              f"whose rows will be in `{rel(roofline)}/prefill_ab`, `{rel(DATA / 'paired')}/gates` "
                              f"and `{rel(DATA / 'gpu_tests')}`") for n in range(1, 4)}
    if not results.read_rows(roofline / "prefill_serial_ab"):
        waiting["S1"] = ("the census A/B of the 128-key prefill kernel with a mixed step's two attentions in "
                         "order (`scripts/device_census_ab.sh` with configuration 5 on both arms), whose rows "
                         f"will be in `{rel(roofline)}/prefill_serial_ab`")
    if not results.read_rows(roofline / "scorecard_census"):
        waiting |= {f"AT{n}": ("the engine measured again for the scorecard (`scripts/device_scorecard.sh OUT`: "
                               "the census of configuration 6, the loop section and decode attention at the "
                               f"engine's launch shape), whose rows will be in `{rel(roofline)}/scorecard_*`")
                    for n in range(1, 6)}
    from .campaign import FINAL_FUSED_VS_CHUNKED, FINAL_SEEDS

    final = [any(r.get("comparison") == name for r in results.read_rows(DATA / "paired" / stem))
             for stem, name in (("arrivals", FINAL_FUSED_VS_CHUNKED), ("sensitivity", FINAL_SEEDS))]
    phases = "`final` and `seeds_final`" if not any(final) else "`final`" if not final[0] else "`seeds_final`"
    waiting |= {key: (f"the paired campaign's {phases} phase{'s' if not any(final) else ''} (`python -m "
                      "fusedlib.bench.campaign OUT --phase ...`): fused against chunked at 80/s with the engine the "
                      f"series ends on, whose rows will be in `{rel(DATA / 'paired')}`")
                for key, ok in (("AU1", final[0]), ("AU2", final[1]), ("AU3", all(final))) if not ok}
    # Set AS's peer bracket: the packed kernel's runs lost on the closed pass, so it was not run.
    waiting["AS6"] = ("the peer's bracket with the packed kernel taking runs: the closed-pass A/B at 34e4dba "
                      f"(`{rel(roofline)}/closed_ab`) measured that pass slower than the code before, so the engine "
                      "does not keep runs and no peer bracket used them (checking out 34e4dba and running "
                      "`scripts/device_campaign.sh OUT peer_runs` would)")
    return waiting | {f"F{n}": not_kept for n in range(4, 8)}


# Set D's predictions -> the paired result set, the campaign phase and the kind of row that grade them.
def _with_overlap(row: dict) -> bool:
    return bool(row.get("overlap"))


CAMPAIGN_D = {("D1", "D2", "D3", "D4"): ("arrivals", "part10", _with_overlap),
              ("D5",): ("closed", "closed", _with_overlap),
              ("D6",): ("peer", "peer", lambda row: row.get("workload") == "mixed_fixed"),
              ("D7",): ("sensitivity", "sensitivity", _with_overlap)}
