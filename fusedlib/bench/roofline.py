"""Part 10's analysis: rows of `scripts/roofline_bench.py` and of the paired campaign, turned
into the numbers the "To the roofline" chapter shows.

Three floors bound a step's GPU time on one machine, each from a rate measured there:
  bytes   weights plus the KV the step reads, at the copy bandwidth;
  FLOPs   2 x parameters x tokens (the vocabulary projection only at the rows that sample),
          at the large fp16 GEMM rate;
  launch  kernels per step x the cost of one kernel inside a CUDA graph.
A step can run no faster than the largest of them (they overlap at best, never cancel).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import paired, rows, steps

MODEL_NAME = "qwen2.5-1.5b"


def _model():
    # fusedlib.config on first use: importing it imports the engine's attention (torch), which
    # a book page that only reads rows does not need
    from ..config import PRESETS

    return PRESETS[MODEL_NAME]
# The census configurations: the part-9 engine and the part-10 one (the others are the
# ablations between them).
PART9, PART10 = "part9: reference ops, split-KV", "part10: fused ops, balanced"
# Part 10's last census configuration: the mixed step as one graph, attention inside.
WHOLE = "part10 whole: fused ops, balanced, whole graphs"
# The census configurations of the decode step's last kernels: the split-K GEMMs (tried at
# bfa3594 with the in-kernel split-KV merge, not kept) and the gate_up GEMM with the
# activation in its epilogue (kept).
SPLIT_K = "part10 gemm: whole graphs, split-K GEMMs"
GATE_UP = "part10 gate_up: whole graphs, gate_up+SiLU one kernel"
# Set G's census configuration: the MLP's norm folded into that kernel (tried, not kept).
NORM_GATE_UP = "part10 norm+gate_up: whole graphs, norm+gate_up+SiLU one kernel"
PARALLEL = "part10 parallel: gate_up, decode attention beside the chunks'"  # census configuration 6
# In an A/B census the one-kernel configuration is compared across its labels.
CENSUS_ROLE = {WHOLE: "cuBLAS gate_up", GATE_UP: "one-kernel gate_up", NORM_GATE_UP: "one-kernel gate_up",
               PARALLEL: "second stream"}
DECODE_CONTEXT = 1088  # the census's decode rows' context (scripts/roofline_bench.py, full)


def _frame(data: Path, stem: str) -> pd.DataFrame:
    return pd.DataFrame(rows.read_rows(Path(data) / stem))


def _newest_commit(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of `df` from the commit of its latest row (a re-run at a new commit replaces the
    old one's rows, never averages with them)."""
    return df[df["git_commit"] == df.sort_values("timestamp")["git_commit"].iloc[-1]] if len(df) else df


def _mixed_ab(data: Path, stem: str, config: str = PARALLEL) -> dict:
    """A change's census A/B in roofline/`stem` (its latest lease): "lease", indexed by (role,
    step), and "mixed_kernels", the mixed step's kernels of census configuration `config` per
    arm, indexed by name; empty without a lease."""
    lease = _first_and_kept(data, stem).get("kept")
    if lease is None:
        return {}
    k = census_ab_kernels(data, lease["boot_id"].iloc[0], config, "mixed", min_us=0.0, min_share=0.0, stem=stem)
    return {"lease": lease, "mixed_kernels": k.set_index("name")}


def _attention_ab(data: Path, stem: str, config: str = PARALLEL) -> dict:
    """_mixed_ab's lease, and its attention kernels alone as "kernels"."""
    m = _mixed_ab(data, stem, config)
    return {"lease": m["lease"], "kernels": m["mixed_kernels"][m["mixed_kernels"].index.isin(ATTENTION_KERNELS)]} if m else {}


# cuBLAS's GEMM kernels (Hopper's nvjet_* and the reduce after a split-K one) by name.
CUBLAS_GEMM_PREFIXES = ("nvjet", "void cublasLt::splitKreduce")


def cublas_gemm_ms(data: Path, config: str, step: str) -> float:
    """The GPU time a step of census configuration `config` spends in cuBLAS's GEMM kernels
    (first_run's census_kernels, ms a step)."""
    k = first_run(_frame(data, "roofline/census_kernels"))
    k = k[(k["config"] == config) & (k["step"] == step)]
    return float(k.loc[k["kernel"].str.startswith(CUBLAS_GEMM_PREFIXES), "us_per_step"].sum()) / 1e3


def first_run(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the earliest commit in a result set: the roofline bench ran twice, the
    second time on a decode kernel variant main reverted; the first is main's code."""
    first = df.sort_values("timestamp")["git_commit"].iloc[0]
    return df[df["git_commit"] == first]


def census(data: Path) -> pd.DataFrame:
    """Kernels per step and per layer, GPU and wall ms, per configuration and step kind."""
    df = first_run(_frame(data, "roofline/census"))
    return df[["config", "step", "tokens", "kernels_per_step", "kernels_per_layer", "gpu_ms_median",
               "wall_ms_median"]].reset_index(drop=True)


def whole_census(data: Path, run: int = 0) -> pd.DataFrame:
    """A census run that measured both PART10 (mixed step piecewise) and WHOLE (one graph),
    side by side, on one machine boot at one commit (`run`: 0 the first, -1 the latest, in
    time). Empty where no such run is in the rows."""
    df = _frame(data, "roofline/census")
    if df.empty or not (df["config"] == WHOLE).any():
        return pd.DataFrame()
    both = df.groupby(["git_commit", "boot_id"])["config"].transform(lambda c: {PART10, WHOLE} <= set(c))
    runs = df[both & (df["config"] == WHOLE)].sort_values("timestamp")[["git_commit", "boot_id"]].drop_duplicates()
    commit, boot = runs.iloc[run]
    one = df[(df["git_commit"] == commit) & (df["boot_id"] == boot) & df["config"].isin([PART10, WHOLE])]
    return one[["config", "step", "kernels_per_step", "kernels_per_layer", "kernel_us_per_step", "gpu_ms_median",
                "wall_ms_median"]].reset_index(drop=True)


def attention_fraction(data: Path) -> pd.DataFrame:
    """The best launch shape's share of copy bandwidth per context, split-KV (as the graphs
    launch it) and balanced, at 32 rows, L2 flushed."""
    df = first_run(_frame(data, "roofline/attention"))
    old = df[(df["kernel"] == "splitkv") & (df["split_cap"] == "graph cap")].groupby("context")["fraction_of_copy"].max()
    new = df[df["kernel"] == "balanced"].groupby("context")["fraction_of_copy"].max()
    return pd.DataFrame({"split_kv": old, "balanced": new}).reset_index()


def attention_vs_copy(data: Path) -> pd.DataFrame:
    """Per context at 32 rows, graph replays, L2 flushed: a copy moving the decode step's KV
    bytes, the fastest balanced launch shape over the engine's slot-major cache and over a
    head-major view, the copy's share of the streaming copy rate, and attention's share of the
    same-size copy's."""
    df = _frame(data, "roofline/attention_layout")
    stream = rates(data).copy_Bps
    out = []
    for context, g in df.groupby("context"):
        copy = g[g["what"].str.startswith("copy")].iloc[0]
        best = {lay: g[g["what"] == f"balanced, {lay}"]["median_ms"].min() for lay in ("slot-major", "head-major")}
        out.append({"context": int(context), "kv_mb": copy["kv_bytes"] / 1e6, "copy_us": copy["median_ms"] * 1e3,
                    "slot_major_us": best["slot-major"] * 1e3, "head_major_us": best["head-major"] * 1e3,
                    "copy_of_stream": copy["kv_bytes"] / (copy["median_ms"] / 1e3) / stream,
                    "attention_of_copy": copy["median_ms"] / best["slot-major"]})
    return pd.DataFrame(out)


# The packed kernel's (BLOCK_M, BLOCK_N, warps, stages) in part 10's backends (PackedConfig;
# parts 7-9 keep 64 keys). Written out, so a page reading rows does not import torch.
ENGINE_PREFILL_SHAPE = (32, 128, 4, 2)
PART7_PREFILL_SHAPE = (32, 64, 4, 2)


def prefill_sweep(data: Path) -> pd.DataFrame:
    """Per chunk case: the packed kernel at the engine's launch shape and at the sweep's
    fastest, in µs and TFLOP/s of causal work, beside torch's SDPA where it ran."""
    df = _frame(data, "roofline/prefill")
    ours = df[df["kernel"].isna()] if "kernel" in df else df
    ours = ours[ours["median_ms"].notna()]
    out = []
    for case, g in ours.groupby("case", sort=False):
        shape = g[["block_m", "block_n", "num_warps", "num_stages"]].astype(int).apply(tuple, axis=1)
        engine = g[shape == ENGINE_PREFILL_SHAPE].iloc[0]
        best = g.loc[g["median_ms"].idxmin()]
        sdpa = df[(df["case"] == case) & df.get("kernel", pd.Series(index=df.index, dtype=object)).notna()]
        out.append({"case": case, "engine_us": engine["median_ms"] * 1e3, "engine_tflops": engine["tflops"],
                    "best_us": best["median_ms"] * 1e3, "best_tflops": best["tflops"],
                    "best_shape": tuple(int(best[k]) for k in ("block_m", "block_n", "num_warps", "num_stages")),
                    "sdpa_us": sdpa["median_ms"].iloc[0] * 1e3 if len(sdpa) else float("nan")})
    return pd.DataFrame(out)


@dataclass(frozen=True)
class Rates:
    copy_Bps: float  # device-to-device copy, bytes read + written per second
    gemm_flops: float  # large fp16 GEMM, FLOP/s
    launch_s: float  # one kernel inside a CUDA graph


def rates(data: Path) -> Rates:
    gemm = first_run(_frame(data, "roofline/gemm"))
    attn = first_run(_frame(data, "roofline/attention"))
    square = gemm[(gemm["gemm"] == "square") & (gemm["l2_flushed"] == False)]  # noqa: E712
    launch = gemm[gemm["gemm"] == "graph_launch_cost"]["us_per_kernel_in_graph"]
    return Rates(float(attn["copy_bandwidth_gbs"].median()) * 1e9, float(square["tflops"].iloc[0]) * 1e12,
                 float(launch.iloc[0]) * 1e-6)


def floors(tokens: int, sampled: int, kv_tokens: int, kernels: float, r: Rates) -> dict:
    """The three floors of one step (seconds): `tokens` through the model, `sampled` of them
    through the vocabulary projection, `kv_tokens` of cache read."""
    cfg = _model()
    embed = cfg.vocab_size * cfg.hidden_size
    params = steps.parameters(cfg)
    weight_bytes = 2 * params  # fp16
    kv_bytes = kv_tokens * cfg.num_layers * 2 * cfg.num_kv_heads * cfg.head_dim * 2
    flops = 2 * (params - embed) * tokens + 2 * embed * sampled
    out = {"bytes_s": (weight_bytes + kv_bytes) / r.copy_Bps, "flops_s": flops / r.gemm_flops,
           "launch_s": kernels * r.launch_s}
    out["floor_s"] = max(out.values())
    return out


def placed(data: Path) -> pd.DataFrame:
    """Each census step of parts 9 and 10 against its floors: GPU time over the largest."""
    r, c = rates(data), census(data)
    out = []
    for _, row in c[c["config"].isin([PART9, PART10])].iterrows():
        decode = row["step"] == "decode"
        n_decode = int(row["tokens"]) if decode else 31
        kv = n_decode * DECODE_CONTEXT + (0 if decode else 512)  # the chunk reads at least its own keys
        f = floors(int(row["tokens"]), n_decode + (0 if decode else 1), kv, row["kernels_per_step"], r)
        out.append({"config": row["config"], "step": row["step"], "gpu_ms": row["gpu_ms_median"],
                    "wall_ms": row["wall_ms_median"], **{k.replace("_s", "_ms"): v * 1e3 for k, v in f.items()},
                    "over_floor": row["gpu_ms_median"] / (f["floor_s"] * 1e3)})
    return pd.DataFrame(out)


def capacity_comparisons(data: Path) -> pd.DataFrame:
    """Fused vs chunked capacity per part (at 40/s; with overlap and whole graphs offered 80/s,
    where 40/s no longer saturates), part 10's fused engine against part 9's, and whole graphs
    against piecewise, as paired ratios with bootstrap intervals (fusedlib.bench.paired). Runs without a
    comparison name are the first phase's: its part-10 pairs are ABBA-interleaved, but its
    part-10-vs-part-9 runs were not (the part-10 side ran first), so that row says so."""
    df = _frame(data, "paired/arrivals")
    df = df[~df["warmup"].astype(bool)]
    named = df["comparison"].notna() if "comparison" in df else pd.Series(False, index=df.index)
    out = []

    def add(label, sub, key, a, b, interleaved=True):
        x, y = paired.pair_runs(sub.to_dict("records"), key, a, b, "served_rate")
        if not x:
            return  # this comparison has no rows here
        c = paired.compare_pairs(x, y)
        # A comparison extended on a later machine lease pools its pairs (each pair's two runs
        # share one lease); by_lease keeps each lease's own comparison beside the pooled one.
        lease_of = sub["boot_id"].fillna("") if "boot_id" in sub else pd.Series("", index=sub.index)
        per_lease = (paired.pair_runs(d.to_dict("records"), key, a, b, "served_rate")
                     for _, d in sub.groupby(lease_of, sort=False))
        leases = [paired.compare_pairs(*xy) for xy in per_lease if xy[0]]
        out.append({"comparison": label, "a_median": pd.Series(x).median(), "b_median": pd.Series(y).median(),
                    "ratio": c.ratio, "lo": c.lo, "hi": c.hi, "n": c.n, "resolved": c.resolved,
                    "interleaved": interleaved, "n_requests": int(sub["n_requests"].iloc[0]),
                    "rate": float(sub["rate"].iloc[0]), "by_lease": leases, "boots": _boots(sub)})

    for part in ("part 7", "part 7, 400 arrivals", "decode graphs", "part 9"):
        add(f"{part}: fused vs chunked", df[df["comparison"] == f"{part}: fused vs chunked"], "engine", "fused", "chunked")
    first = df[~named]
    add("part 10: fused vs chunked", first[first["attention"] == "triton-balanced"], "engine", "fused", "chunked")
    fused = first[first["engine"] == "fused"]
    add("fused: part 10 vs part 9", fused, "attention", "triton-balanced", "triton-splitkv", interleaved=False)
    # Whole graphs (the whole phase), offered 80/s: against piecewise, and fused against chunked.
    from .campaign import FINAL_FUSED_VS_CHUNKED, WHOLE_FUSED_VS_CHUNKED, WHOLE_VS_PIECEWISE

    add(WHOLE_VS_PIECEWISE, df[df["comparison"] == WHOLE_VS_PIECEWISE], "whole_graphs", True, False)
    add(WHOLE_FUSED_VS_CHUNKED, df[df["comparison"] == WHOLE_FUSED_VS_CHUNKED], "engine", "fused", "chunked")
    # The same with the engine the series ends on (the final phase).
    add(FINAL_FUSED_VS_CHUNKED, df[df["comparison"] == FINAL_FUSED_VS_CHUNKED], "engine", "fused", "chunked")
    # With overlap both engines keep up with 40/s, so their capacities were measured offered
    # 80/s, one pair per workload draw (seed), alternating which engine ran first.
    sensitivity = _frame(data, "paired/sensitivity")
    for _, r in campaign_comparisons(data, phases=("sensitivity", "seeds_whole", "seeds_final")).iterrows():
        runs = sensitivity[sensitivity["comparison"] == r["comparison"]]
        out.append({"comparison": r["comparison"], "a_median": r["a"], "b_median": r["b"],
                    "ratio": r["ratio"], "lo": r["lo"], "hi": r["hi"], "n": r["n"], "resolved": r["resolved"],
                    "interleaved": True, "n_requests": int(runs["n_requests"].iloc[0]),
                    "rate": float(runs["rate"].iloc[0]), "by_lease": [], "boots": _boots(runs)})
    return pd.DataFrame(out)


def _boots(runs: pd.DataFrame) -> tuple[str, ...]:
    """The machine boots (boot_id: one per machine lease) a comparison's runs ran on, in order."""
    return tuple(runs["boot_id"].dropna().unique()) if "boot_id" in runs else ()


def campaign_comparisons(data: Path, phases=("part10", "closed", "knees", "sensitivity")) -> pd.DataFrame:
    """Every comparison of the campaign phases that measured part 10's engine with overlap,
    from the rows in data/paired: one row per ABBA comparison or pooled sweep (ratio of the
    medians of A and B's pair ratios, bootstrap interval, n pairs), and one per point of a
    rate sweep (a single pair: no interval)."""
    from . import campaign

    out = []
    for phase in phases:
        for item in campaign.plan(phase):
            if not isinstance(item, (campaign.Pairs, campaign.Sweep)):
                continue
            pairs = item.pair_specs()
            got = campaign.measured(Path(data), [s for pair in pairs for s in pair])
            done = [(got[a], got[b], a) for a, b in pairs if a in got and b in got]
            if not done:
                continue
            base = {"phase": phase, "comparison": item.name, "metric": campaign.METRIC[item.a.experiment]}
            if isinstance(item, campaign.Sweep) and not item.pooled:
                out += [{**base, "point": float(getattr(spec, item.option)), "a": x, "b": y, "ratio": x / y, "n": 1}
                        for x, y, spec in done]
                continue
            x, y = [d[0] for d in done], [d[1] for d in done]
            c = paired.compare_pairs(x, y)
            out.append({**base, "point": float("nan"), "a": pd.Series(x).median(), "b": pd.Series(y).median(),
                        "ratio": c.ratio, "lo": c.lo, "hi": c.hi, "n": c.n, "resolved": c.resolved})
    return pd.DataFrame(out)


def overlap_steps(data: Path) -> pd.DataFrame:
    """The step traces of part 10's engine with and without overlap (one commit, one machine):
    per engine and overlap, the median decode and mixed step, wall and between CUDA events."""
    df = _frame(data, "paired/step_trace")
    s = df[(df["record"] == "summary") & df.get("overlap", pd.Series(index=df.index, dtype=object)).notna()]
    if "whole_graphs" in s:  # the part10 phase's traces: piecewise graphs, with and without overlap
        s = s[~s["whole_graphs"].fillna(False).astype(bool)]
    s = _newest_commit(s)
    cols = {"median_decode_step_s": "decode_ms", "median_decode_step_gpu_s": "decode_gpu_ms",
            "median_mixed_step_s": "mixed_ms", "median_mixed_step_gpu_s": "mixed_gpu_ms"}
    out = s[["engine", "overlap", *cols]].rename(columns=cols)
    out[list(cols.values())] *= 1e3
    return out.reset_index(drop=True)


def graphed_steps(data: Path) -> pd.DataFrame:
    """Part 10's step traces with the host one step ahead, forwards with prompt chunks graphed
    piecewise and whole: per (whole_graphs, engine), the newest trace's median decode and mixed
    step, wall and between CUDA events (with overlap a step's wall ends when its tokens are
    read, a step later, so the GPU span is the one to compare)."""
    df = _frame(data, "paired/step_trace")
    if df.empty or "overlap" not in df:
        return pd.DataFrame()
    s = df[(df["record"] == "summary") & df["overlap"].fillna(False).astype(bool)].copy()
    s["whole_graphs"] = s["whole_graphs"].fillna(False).astype(bool) if "whole_graphs" in s else False
    s = s.sort_values("timestamp").drop_duplicates(["whole_graphs", "engine"], keep="last")
    cols = {"median_decode_step_s": "decode_ms", "median_mixed_step_s": "mixed_ms",
            "median_mixed_step_gpu_s": "mixed_gpu_ms"}
    out = s[["whole_graphs", "engine", *cols]].rename(columns=cols)
    out[list(cols.values())] *= 1e3
    return out.reset_index(drop=True)


def step_saving(data: Path) -> pd.DataFrame:
    """Per configuration of the step traces: the median mixed (loaded) step of each engine,
    wall and GPU, and what one forward per step saves on it."""
    df = _frame(data, "paired/step_trace")
    s = df[df["record"] == "summary"]
    if "overlap" in s:  # with overlap a step's wall holds the wait for the step before it
        s = s[s["overlap"].isna() | ~s["overlap"].astype(bool)]
    s = s.sort_values("timestamp").drop_duplicates(["attention", "fused_ops", "engine"])  # each first trace
    out = []
    for (att, fused_ops), g in s.groupby(["attention", "fused_ops"]):
        e = g.set_index("engine")
        out.append({"attention": att, "fused_ops": bool(fused_ops),
                    "fused_mixed_ms": e.loc["fused", "median_mixed_step_s"] * 1e3,
                    "chunked_mixed_ms": e.loc["chunked", "median_mixed_step_s"] * 1e3,
                    "fused_mixed_gpu_ms": e.loc["fused", "median_mixed_step_gpu_s"] * 1e3,
                    "chunked_mixed_gpu_ms": e.loc["chunked", "median_mixed_step_gpu_s"] * 1e3})
    t = pd.DataFrame(out)
    t["saved_ms"] = t["chunked_mixed_ms"] - t["fused_mixed_ms"]
    return t


def measured_for_predictions(data: Path) -> dict[str, float]:
    """What part 10's predictions (set C of data/predictions.yaml) are graded on: the part-10
    census's decode and mixed steps, the balanced kernel's worst share of copy bandwidth, and
    the paired capacity runs. The thresholds are the predictions' own (fusedlib.bench.grading)."""
    c = census(data).set_index(["config", "step"])
    dec, mix = c.loc[(PART10, "decode")], c.loc[(PART10, "mixed")]
    cap = capacity_comparisons(data).set_index("comparison")
    return {"kernels_per_layer": float(dec["kernels_per_layer"]), "decode_gpu_ms": float(dec["gpu_ms_median"]),
            "decode_host_ms": float(dec["wall_ms_median"] - dec["gpu_ms_median"]),
            "attention_worst": float(attention_fraction(data)["balanced"].min()),
            "mixed_gpu_ms": float(mix["gpu_ms_median"]), "mixed_wall_ms": float(mix["wall_ms_median"]),
            "fused_capacity": float(cap.loc["part 10: fused vs chunked", "a_median"]),
            "gain_part10": float(cap.loc["part 10: fused vs chunked", "ratio"]),
            "gain_part9": float(cap.loc["part 9: fused vs chunked", "ratio"])}


PEER_TARGET = 20.0  # part 10's target: our throughput over transformers' on these requests


def peer_comparison(data: Path, comparison: str | None = None) -> pd.DataFrame:
    """A campaign peer phase (`peer`, or `peer_whole` with comparison=PEER_WHOLE_COMPARISON):
    our fused engine closed on 128 mixed prompts x 128 tokens, once before and once after
    transformers' continuous batching on the same requests, in one lease. One row per side and
    pass (our `repeat` 1 and 2 and the peer's run, on the latest machine boot holding both): median wall and output
    tokens/s over its measured passes, and `times_peer`, its throughput over the peer's. Empty
    where the rows are missing."""
    from .campaign import PEER_COMPARISON

    ours, peer = _frame(data, "paired/closed"), _frame(data, "paired/peer")
    if ours.empty or peer.empty or "comparison" not in ours:
        return pd.DataFrame()
    ours = ours[(ours["comparison"] == (comparison or PEER_COMPARISON)) & (ours["stat"] == "median")]
    peer = peer[(peer["workload"] == "mixed_fixed") & (peer["batch_size"] == 128) & (peer["stat"] == "median")]
    peer = peer[peer["boot_id"].isin(ours["boot_id"])] if "boot_id" in peer else peer
    if ours.empty or peer.empty:
        return pd.DataFrame()
    peer = peer.sort_values("timestamp").iloc[[-1]]
    if "boot_id" in peer:  # our runs of that lease only: each lease brackets its own peer run
        ours = ours[ours["boot_id"] == peer["boot_id"].iloc[0]]
    ours = ours.sort_values("repeat")
    both = pd.concat([ours, peer], ignore_index=True)
    out = both[["engine", "wall_s", "output_throughput", "n_output_tokens"]].copy()
    out.insert(1, "pass", [{1: "before the peer", 2: "after the peer"}.get(r, f"run {r}") for r in ours["repeat"]]
               + ["transformers' run"])
    out["times_peer"] = out["output_throughput"] / float(peer["output_throughput"].iloc[0])
    return out


def measured_for_set_d(data: Path) -> dict:
    """What set D of data/predictions.yaml is graded on (fusedlib.bench.grading.overlap_grades):
    the campaign's comparisons with overlap (campaign_comparisons) and its step traces
    (overlap_steps). Keys are missing where the rows are."""
    c = campaign_comparisons(data)
    m = {}
    peer = peer_comparison(data)
    if len(peer):
        m["peer"] = peer
    if not len(c):
        return m

    def one(name):
        row = c[c["comparison"] == name]
        return None if row.empty else row.iloc[0]

    if (r := one("part 10: overlap vs not")) is not None:
        m["overlap"] = r
    if (r := one("part 10 + overlap: fused vs chunked")) is not None:
        m["fused_vs_chunked_40"] = r
    if (r := one("part 10 + overlap seeds: fused vs chunked")) is not None:
        m["seeds"] = r
    sweep = c[c["phase"] == "knees"]
    if len(sweep):
        m["sweep"] = sweep
    closed = c[c["phase"] == "closed"]
    if len(closed):
        m["closed"] = closed
    steps = overlap_steps(data)
    if len(steps):
        m["steps"] = steps.set_index(["engine", "overlap"])
    return m


def measured_for_set_e(data: Path) -> dict:
    """What set E of data/predictions.yaml (whole-forward graphs) is graded on
    (fusedlib.bench.grading.whole_graph_grades): the census run with both mixed-step paths, the
    whole phase's comparisons past the knees, the seeds, the closed cells, the peer and the
    gates of the whole-graphed configuration. Keys are missing where the rows are."""
    from .campaign import PEER_WHOLE_COMPARISON, WHOLE_FUSED_VS_CHUNKED, WHOLE_SEEDS, WHOLE_VS_PIECEWISE

    m = {}
    census_run = whole_census(data)
    if len(census_run):  # the run after the predictions grades them; a later one is shown beside it
        m["census"] = census_run.set_index(["config", "step"])
        m["census_last"] = whole_census(data, -1).set_index(["config", "step"])
    c = campaign_comparisons(data, phases=("whole", "seeds_whole", "closed_whole"))
    arrivals = _frame(data, "paired/arrivals")
    if "whole_graphs" in arrivals:  # the whole-graphed side of whole vs piecewise: its measured runs
        runs = arrivals[(arrivals["comparison"] == WHOLE_VS_PIECEWISE)
                        & arrivals["whole_graphs"].fillna(False).astype(bool) & ~arrivals["warmup"].astype(bool)]
        if len(runs):
            m["whole_runs"] = runs["served_rate"]
    m |= _named(c, {"whole_vs_piecewise": WHOLE_VS_PIECEWISE, "fused_vs_chunked": WHOLE_FUSED_VS_CHUNKED,
                    "seeds": WHOLE_SEEDS})
    if len(c) and (c["phase"] == "closed_whole").any():
        m["closed"] = c[c["phase"] == "closed_whole"]
    peer = peer_comparison(data, PEER_WHOLE_COMPARISON)
    if len(peer):
        m["peer"] = peer
    traces = graphed_steps(data)
    if len(traces):
        m["steps"] = traces.set_index(["whole_graphs", "engine"])
    run = gate_runs(_frame(data, "paired/gates"), gate_up_silu=False)
    if len(run):
        m["gates"] = run
    return m


def _named(c: pd.DataFrame, names: dict[str, str]) -> dict:
    """{key: the comparison row named names[key]} of campaign_comparisons' table, for the names it has."""
    rows = {key: c[c["comparison"] == name] for key, name in names.items()} if len(c) else {}
    return {key: row.iloc[0] for key, row in rows.items() if len(row)}


def _flag(df: pd.DataFrame, column: str) -> pd.Series:
    """A boolean option column, False where a row predates it."""
    return df[column].fillna(False).astype(bool) if column in df else pd.Series(False, index=df.index)


def gate_runs(gates: pd.DataFrame, gate_up_silu: bool, attention: str = "triton-balanced") -> pd.DataFrame:
    """Every gate run of a whole-graphed configuration, with or without gate_up+SiLU, on one
    attention backend: all four gates of each such run (one run, one timestamp; its mixed-step
    gate calls the model directly, without graphs, so that row reads whole_graphs False)."""
    if "whole_graphs" not in gates:
        return gates.iloc[:0]
    wanted = (_flag(gates, "whole_graphs") & (_flag(gates, "gate_up_silu") == gate_up_silu)
              & (gates["attention"] == attention))
    return gates[gates["timestamp"].isin(gates.loc[wanted, "timestamp"])]


def _census_with(data: Path, config: str) -> pd.DataFrame:
    """The latest census run (one commit, one boot) holding `config`, every configuration it
    measured, indexed by (config, step). Empty where none holds it."""
    df = _frame(data, "roofline/census")
    if df.empty or not (df["config"] == config).any():
        return pd.DataFrame()
    commit, boot = df[df["config"] == config].sort_values("timestamp")[["git_commit", "boot_id"]].iloc[-1]
    return df[(df["git_commit"] == commit) & (df["boot_id"] == boot)].set_index(["config", "step"])


def _step_check(data: Path, commit: str, comparison: str) -> dict:
    """{"step_check": the latest row of `comparison` at `commit`}, or {} where there is none."""
    checks = _frame(data, "roofline/step_check")
    check = checks[(checks["git_commit"] == commit) & (checks["comparison"] == comparison)]
    return {"step_check": check.iloc[-1]} if len(check) else {}


def measured_for_set_f(data: Path) -> dict:
    """What set F (the split-K GEMMs and the in-kernel split-KV merge) is graded on
    (fusedlib.bench.grading.split_k_grades): the census run that measured them, beside the
    whole-graphed cuBLAS configuration; the attention run at its commit and the latest one
    (the reduce kernel back); its decode step check; the per-projection GEMM sweep. Keys are
    missing where the rows are."""
    m = {}
    census_run = _census_with(data, SPLIT_K)
    if census_run.empty:
        return m
    m["census"] = census_run
    commit = census_run["git_commit"].iloc[0]
    attention = _frame(data, "roofline/attention").sort_values("timestamp")
    balanced = attention[(attention["kernel"] == "balanced") & (attention["context"] == 1024)]
    merge, reduce = (balanced[balanced["git_commit"] == c] for c in (commit, attention["git_commit"].iloc[-1]))
    if len(merge):  # the fastest launch shape's graph replay, at 1k context
        m["attention_1k"] = {"merge_us": float(merge["graph_median_ms"].min()) * 1e3,
                             "reduce_us": float(reduce["graph_median_ms"].min()) * 1e3,
                             "merge_fraction": float(merge["graph_fraction_of_copy"].max())}
    m |= _step_check(data, commit, "decode_small_m_gemms_vs_cublas")
    sweep = _frame(data, "roofline/small_gemm")
    if len(sweep):
        sweep = sweep[sweep["git_commit"] == commit]
        m["gemms"] = pd.DataFrame([
            {"gemm": name, "weight_mb": g["weight_bytes"].iloc[0] / 1e6,
             "floor_us": g["weight_bytes"].iloc[0] / g["copy_bandwidth_gbs"].iloc[0] / 1e3,
             "cublas_us": g[g["kernel"].str.startswith("cublas")]["us_per_call"].min(),
             "split_k_us": g[g["kernel"] == "split-K"]["us_per_call"].min()}
            for name, g in sweep.groupby("gemm", sort=False)]).set_index("gemm")
    return m


def gate_up_results(data: Path) -> dict:
    """The gate_up GEMM with the activation in its epilogue, measured without a prediction
    written first: the latest census run holding it (beside the cuBLAS configuration), the
    launch-shape sweep at that commit, the gate_up campaign phase's two comparisons, the peer
    bracket and the gate run. Keys are missing where the rows are."""
    from .campaign import GATE_UP_FUSED_VS_CHUNKED, GATE_UP_VS_CUBLAS, PEER_GATE_UP_COMPARISON

    m = {}
    census_run = _census_with(data, GATE_UP)
    if len(census_run):
        m["census"] = census_run
        sweep = _frame(data, "roofline/gate_up")
        if len(sweep):
            sweep = sweep[sweep["git_commit"] == census_run["git_commit"].iloc[0]].dropna(subset=["us_per_call"])
            m["sweep"] = {"cublas": sweep[sweep["kernel"].str.startswith("cublas")].iloc[0],
                          "one_kernel": sweep[sweep["kernel"] == "one kernel"].sort_values("us_per_call").iloc[0]}
    m |= _named(campaign_comparisons(data, phases=("gate_up",)),
                {"vs_cublas": GATE_UP_VS_CUBLAS, "fused_vs_chunked": GATE_UP_FUSED_VS_CHUNKED})
    peer = peer_comparison(data, PEER_GATE_UP_COMPARISON)
    if len(peer):
        m["peer"] = peer
    run = gate_runs(_frame(data, "paired/gates"), gate_up_silu=True)
    if len(run):
        m["gates"] = run
    return m


def _arms_by_round(g: pd.DataFrame, column: str) -> tuple[dict[str, pd.DataFrame], paired.Comparison]:
    """An interleaved A/B's rows `g` per arm ("base", "new"), indexed by round, and new/base of
    `column` paired by the rounds both arms ran."""
    arm = {name: g[g["arm"] == name].set_index("round") for name in ("base", "new")}
    rounds = arm["base"].index.intersection(arm["new"].index)
    return arm, paired.compare_pairs(arm["new"].loc[rounds, column], arm["base"].loc[rounds, column])


def census_ab(data: Path, stem: str = "census_ab") -> pd.DataFrame:
    """Every interleaved census A/B (scripts/device_census_ab.sh; rows in roofline/census_ab):
    per lease (machine boot), configuration role (CENSUS_ROLE) and step kind, both arms'
    medians over their rounds (GPU ms, wall ms, kernels per step and per layer) and new/base
    GPU time paired by round (median ratio, bootstrap interval, pairs). Round 0 rows, census
    runs with no base beside them, are left out. Leases in time order."""
    df = _frame(data, f"roofline/{stem}")
    if df.empty:
        return pd.DataFrame()
    df = df[df["round"] > 0].assign(role=lambda d: d["config"].map(CENSUS_ROLE))
    out = []
    for boot in df.sort_values("timestamp")["boot_id"].unique():
        lease = df[df["boot_id"] == boot]
        for (role, step), g in lease.groupby(["role", "step"], sort=False):
            arm, cmp = _arms_by_round(g, "gpu_ms_median")
            row = {"boot_id": boot, "role": role, "step": step, "ratio": cmp.ratio, "lo": cmp.lo, "hi": cmp.hi,
                   "n": cmp.n, "new_config": arm["new"]["config"].iloc[0]}
            for name, a in arm.items():
                row |= {f"{name}_commit": a["git_commit"].iloc[0], f"{name}_gpu_ms": a["gpu_ms_median"].median(),
                        f"{name}_wall_ms": a["wall_ms_median"].median(),
                        f"{name}_kernels": a["kernels_per_step"].median(),
                        f"{name}_copies": a["copies_per_step"].median() if "copies_per_step" in a else float("nan"),
                        f"{name}_per_layer": a["kernels_per_layer"].median()}
            out.append(row)
    return pd.DataFrame(out)


def measured_for_set_g(data: Path) -> dict:
    """What set G (the MLP's norm folded into the one-kernel gate_up GEMM) is graded on
    (fusedlib.bench.grading.norm_gate_up_grades), and the change kept after it: the A/B census
    lease whose new arm ran the fold ("fold") and the latest one without it ("kept"), indexed by
    (role, step); the fold's gate_up sweeps (three kernels against the one kernel, default and
    best launch shape, per commit, the first the A/B's); the rotary kernel's time per step in
    that lease, per arm, and the add + norm kernel's per launch before the fold; its decode step check; the gate runs at the fold's commit and at the
    kept change's. Keys are missing where the rows are."""
    m = {}
    ab = census_ab(data)
    if ab.empty:
        return m
    folded = ab["new_config"] == NORM_GATE_UP
    for key, leases in (("fold", ab[folded]), ("kept", ab[~folded])):
        if len(leases):
            last = leases[leases["boot_id"] == leases["boot_id"].iloc[-1]]
            m[key] = last.set_index(["role", "step"])
    if "fold" not in m:
        return m
    commit = m["fold"]["new_commit"].iloc[0]
    sweep = _frame(data, "roofline/gate_up")  # in file order: a sweep's first shape is the default
    three = "norm kernel + cublas + silu_mul kernel"  # the fold's baseline, by its row name
    fold_commits = sweep.loc[sweep["kernel"] == three, "git_commit"].unique()
    m["sweeps"] = pd.DataFrame([
        {"commit": c, "three_us": g.loc[g["kernel"] == three, "us_per_call"].iloc[0],
         "default_us": g[g["kernel"] == "one kernel"]["us_per_call"].iloc[0],
         "best_us": g[g["kernel"] == "one kernel"]["us_per_call"].min()}
        for c, g in ((c, sweep[(sweep["git_commit"] == c) & (sweep["us_per_call"] > 0)]) for c in fold_commits)])
    kernels = _frame(data, "roofline/census_ab_kernels")
    if len(kernels):  # in the fold's lease: the rotary kernel reading its table by position, and
        # one launch of the add + norm kernel the fold removes (the code before, per launch)
        lease = kernels[(kernels["boot_id"] == m["fold"]["boot_id"].iloc[0]) & (kernels["step"] == "decode")]
        rotary = lease[(lease["config"] == WHOLE) & (lease["kernel"] == "rotary_to_cache_kernel")]
        m["rotary_us"] = rotary.groupby("arm")["us_per_step"].median().to_dict()
        norm = lease[(lease["arm"] == "base") & (lease["config"] == GATE_UP) & (lease["kernel"] == "add_rms_norm_kernel")]
        if len(norm):
            m["norm_us"] = float((norm["us_per_step"] / norm["per_step"]).median())
    m |= _step_check(data, commit, "decode_norm_gate_up_silu_vs_three_kernels")
    gates = _frame(data, "paired/gates")
    if len(gates):
        m["gates"] = gates[gates["git_commit"] == commit]
        if "kept" in m:
            m["kept_gates"] = gates[gates["git_commit"] == m["kept"]["new_commit"].iloc[0]]
    return m


def census_ab_kernels(data: Path, boot_id: str, config: str, step: str, min_us: float = 0.5,
                      min_share: float = 0.02, stem: str = "census_ab") -> pd.DataFrame:
    """One A/B census lease's kernels for one configuration and step kind, by name (cut at its
    template or argument list): launches and µs per step in each arm, medians over the rounds,
    only the names whose launches changed or whose time moved by more than `min_us` and
    `min_share` of the base's (less is the rounds' noise). Where a change's time went."""
    k = _frame(data, f"roofline/{stem}_kernels")
    if k.empty:
        return pd.DataFrame()
    k = k[(k["boot_id"] == boot_id) & (k["config"] == config) & (k["step"] == step) & (k["round"] > 0)]
    k = k.assign(name=k["kernel"].str.split(r"[<(]", regex=True).str[0].str.replace("void ", "").str.strip())
    per_round = k.groupby(["arm", "round", "name"])[["per_step", "us_per_step"]].sum().reset_index()
    arms = per_round.groupby(["name", "arm"])[["per_step", "us_per_step"]].median().unstack("arm").fillna(0.0)
    arms.columns = [f"{arm}_{'launches' if col == 'per_step' else 'us'}" for col, arm in arms.columns]
    moved = (arms["new_us"] - arms["base_us"]).abs()
    changed = ((moved > min_us) & (moved > min_share * arms["base_us"])) | (arms["new_launches"] != arms["base_launches"])
    return arms[changed].reset_index().sort_values("base_us", ascending=False).reset_index(drop=True)


SHAPE_KEYS = ["block_n", "programs_per_sm", "num_warps", "num_stages"]


def flush_sweep(data: Path, run: int) -> pd.DataFrame:
    """Run `run` (0 the first, -1 the latest) of the attention_flush section: per context and L2
    flush, the same-size copy's µs, the fastest balanced shape's µs, its share of the copy rate
    and its shape (with KV heads per program where that run swept them), and the engine
    default's µs (the run's first shape)."""
    df = _frame(data, "roofline/attention_flush")
    if df.empty:
        return pd.DataFrame()
    commit = df.sort_values("timestamp")["git_commit"].unique()[run]
    df = df[(df["git_commit"] == commit) & df["median_ms"].notna()]
    keys = SHAPE_KEYS + (["kv_heads_per_program"] if "kv_heads_per_program" in df else [])
    out = []
    for (context, flush), g in df.groupby(["context", "l2_flush"]):
        att = g[g["what"] == "balanced"]
        best = att.loc[att["median_ms"].idxmin()]
        out.append({"commit": commit, "context": int(context), "l2_flush": flush,
                    "copy_us": g[g["what"] == "copy"]["median_ms"].iloc[0] * 1e3,
                    "best_us": best["median_ms"] * 1e3, "best_fraction": best["fraction_of_copy"],
                    "default_us": att["median_ms"].iloc[0] * 1e3, "shapes": len(att),
                    "stream_us": g["kv_bytes"].iloc[0] / (g["copy_bandwidth_gbs"].iloc[0] * 1e3),
                    **{k: best[k] for k in keys}})
    return pd.DataFrame(out)


def flush_probe_bytes(path: Path) -> pd.DataFrame:
    """ncu's counts over the flush probe (roofline_bench flush_probe): per profiled kernel in
    launch order, the L2 flush it followed (the zeroing fill or the reading reduction before
    it), its name, DRAM MB read and written and its µs."""
    import csv

    lines = [line for line in Path(path).read_text().splitlines() if line.startswith('"')]
    table = pd.DataFrame(list(csv.reader(lines))[1:], columns=next(csv.reader(lines[:1])))
    table["value"] = table["Metric Value"].str.replace(",", "").astype(float)
    wide = table.pivot_table(index=["ID", "Kernel Name"], columns="Metric Name", values="value").reset_index()
    wide = wide.assign(ID=wide["ID"].astype(int)).sort_values("ID")
    flush, out = None, []
    for _, r in wide.iterrows():
        name = r["Kernel Name"]
        if "FillFunctor" in name:
            flush = "zero"
        elif name.startswith("void at::reduce_kernel"):
            flush = "read"
        else:
            out.append({"l2_flush": flush, "kernel": name, "read_mb": r["dram__bytes_read.sum"] / 1e6,
                        "write_mb": r["dram__bytes_write.sum"] / 1e6, "us": r["gpu__time_duration.sum"] / 1e3})
    return pd.DataFrame(out)


SHAPE_AB_ROLE = "one-kernel gate_up"  # the engine's configuration in the attention and PDL A/Bs


def measured_for_sets_h_i(data: Path) -> dict:
    """What sets H (decode attention from a clean L2; programs over two KV heads) and I (PDL,
    the reduce reading every split) are graded on (grading.attention_flush_grades): the first
    and latest attention_flush runs, ncu's flush probe, the A/B census leases of
    roofline/attention_ab keyed "shape" (one tree, the default launch shape against the
    sweep's best), "pdl_tree" (the code before against the tree with PDL) and "kept" (against
    the change kept), each indexed by (role, step); the PDL on/off lease (roofline/pdl_ab);
    the PDL step checks; the gate runs at the kept commit. Keys are missing where rows are."""
    m = {}
    first, latest = flush_sweep(data, 0), flush_sweep(data, -1)
    if len(first):
        m["sweep"], m["sweep_latest"] = first, latest
    probe = Path(data) / "roofline" / "flush_probe_ncu.csv"
    if probe.exists():
        m["probe"] = flush_probe_bytes(probe)
    pdl = census_ab(data, "pdl_ab")
    if len(pdl):
        m["pdl"] = pdl.set_index(["role", "step"])
    pdl_commit = pdl["new_commit"].iloc[0] if len(pdl) else None  # the one tree that had PDL
    ab = census_ab(data, "attention_ab")
    for boot in ab["boot_id"].unique() if len(ab) else []:
        lease = ab[ab["boot_id"] == boot].set_index(["role", "step"])
        base, new = lease["base_commit"].iloc[0], lease["new_commit"].iloc[0]
        m["shape" if base == new else "pdl_tree" if new == pdl_commit else "kept"] = lease
    checks = _frame(data, "roofline/step_check")
    if len(checks):
        m["pdl_checks"] = checks[checks["comparison"].str.contains("pdl_vs_plain")]
    gates = _frame(data, "paired/gates")
    if "kept" in m and len(gates):
        m["kept_gates"] = gates[gates["git_commit"] == m["kept"]["new_commit"].iloc[0]]
    return m


# The decode step check the roofline bench ran at the two rotary-in-attention trees only
# (6d438d6, 2fdcdaa; its code went with them): which of set J's leases ran such a tree.
ROTARY_CHECK = "decode_rotary_in_attention_vs_rotary_kernel"


def measured_for_set_j(data: Path) -> dict:
    """What set J (a decode-only forward's rotary, bias and cache write inside split-KV decode
    attention) is graded on (grading.rotary_in_attention_grades): the A/B census leases of
    roofline/rotary_ab keyed "select" (one tree, the rotary kernel against the first form, a
    select on every K/V tile), "after_loop" (the code before against the second form, the new
    key folded in after the loop) and "kept" (against the change kept: the rotary kernel, the
    table in the model's dtype), each indexed by (role, step); the decode step check of each
    form's tree ("select_check", "after_loop_check"); the gate runs at the kept commit.
    Keys are missing where rows are."""
    m = {}
    ab = census_ab(data, "rotary_ab")
    checks = _frame(data, "roofline/step_check")
    rotary_trees = set(checks.loc[checks["comparison"] == ROTARY_CHECK, "git_commit"]) if len(checks) else set()
    for boot in ab["boot_id"].unique() if len(ab) else []:
        lease = ab[ab["boot_id"] == boot].set_index(["role", "step"])
        base, new = lease["base_commit"].iloc[0], lease["new_commit"].iloc[0]
        key = "select" if base == new else "after_loop" if new in rotary_trees else "kept"
        m[key] = lease
        if key != "kept":
            m[f"{key}_check"] = _step_check(data, new, ROTARY_CHECK)["step_check"]
    gates = _frame(data, "paired/gates")
    if "kept" in m and len(gates):
        m["kept_gates"] = gates[gates["git_commit"] == m["kept"]["new_commit"].iloc[0]]
    return m


GATE_UP_CHECK = "decode_gate_up_silu_vs_cublas"  # the decode step with the one-kernel MLP GEMMs and without


def _first_and_kept(data: Path, stem: str) -> dict:
    """A change's A/B census leases in roofline/`stem` (census_ab), each indexed by (role,
    step): "first" (the earliest, where there are two or more) and "kept" (the latest)."""
    ab = census_ab(data, stem)
    leases = list(ab["boot_id"].unique()) if len(ab) else []
    picks = (("first", leases[0] if len(leases) > 1 else None), ("kept", leases[-1] if leases else None))
    return {key: ab[ab["boot_id"] == boot].set_index(["role", "step"]) for key, boot in picks if boot is not None}


def measured_for_set_k(data: Path) -> dict:
    """What set K (the down projection as one split-K launch with its reduce inside) is graded
    on (grading.down_split_k_grades): the A/B census leases of roofline/down_ab, the first
    ("first": the kernel's first default shape) and the last ("kept": the sweep's best shape),
    each indexed by (role, step); the down sweeps, one summary per commit in time order
    ("sweeps": cuBLAS's time, the first shape listed, the best shape, the largest difference
    from cuBLAS of any shape); the kept tree's decode step check and gate runs, and that
    check's latest run before it ("before_step_check", the gate_up kernel alone). Keys are
    missing where rows are."""
    m = _first_and_kept(data, "down_ab")
    sweep = _frame(data, "roofline/down")
    if len(sweep):
        out = []
        for commit, g in sweep.sort_values("timestamp", kind="stable").groupby("git_commit", sort=False):
            one = g[g["kernel"] == "one kernel"].dropna(subset=["us_per_call"])
            cublas = g[g["kernel"] == "cublas"].iloc[0]
            best = one.sort_values("us_per_call").iloc[0]
            out.append({"commit": commit, "cublas_us": cublas["us_per_call"], "cublas_frac": cublas["fraction_of_copy"],
                        "first_us": one["us_per_call"].iloc[0], "best_us": best["us_per_call"],
                        "best_frac": best["fraction_of_copy"], "shapes": len(one),
                        "best_shape": f"{best['block_n']:.0f} columns x {best['block_k']:.0f} of K, "
                                      f"{best['splits']:.0f} splits, {best['num_stages']:.0f} stages",
                        "max_err": one[["max_abs_err_vs_cublas", "max_abs_err_after_replays"]].max().max()})
        m["sweeps"] = pd.DataFrame(out)
    if "kept" in m:
        commit = m["kept"]["new_commit"].iloc[0]
        m |= {f"kept_{k}": v for k, v in _step_check(data, commit, GATE_UP_CHECK).items()}
        checks = _frame(data, "roofline/step_check")
        if "kept_step_check" in m:  # the same check's latest run before the kernel (gate_up's alone)
            earlier = checks[(checks["comparison"] == GATE_UP_CHECK) & (checks["git_commit"] != commit)
                             & (checks["timestamp"] < m["kept_step_check"]["timestamp"])]
            if len(earlier):
                m["before_step_check"] = earlier.sort_values("timestamp", kind="stable").iloc[-1]
        gates = _frame(data, "paired/gates")
        if len(gates):
            m["kept_gates"] = gates[gates["git_commit"] == commit]
    return m


def measured_for_set_l(data: Path) -> dict:
    """What set L (qkv, o_proj and down as split-K partials summed by their readers) is graded
    on (grading.split_k_partials_grades): the A/B census leases of roofline/split_k_ab, the
    first ("first": the first launch shapes) and the last ("kept": the sweep's), indexed by
    (role, step); the sweep ("sweep": per projection, cuBLAS's time, the first shape listed,
    the best shape, the largest difference from cuBLAS of any shape); the kept lease's decode
    step kernels ("kernels", by name); the kept tree's decode step check and gate runs. Keys
    are missing where rows are."""
    m = _first_and_kept(data, "split_k_ab")
    sweep = _frame(data, "roofline/split_k")
    if len(sweep):
        out = []
        for gemm, g in sweep.groupby("gemm", sort=False):
            split = g[g["kernel"] == "split-K partials"].dropna(subset=["us_per_call"])
            cublas, best = g[g["kernel"] == "cublas"].iloc[0], split.sort_values("us_per_call").iloc[0]
            out.append({"gemm": gemm, "commit": best["git_commit"], "weight_mb": best["weight_bytes"] / 1e6,
                        "cublas_us": cublas["us_per_call"], "cublas_frac": cublas["fraction_of_copy"],
                        "first_us": split["us_per_call"].iloc[0], "best_us": best["us_per_call"],
                        "best_frac": best["fraction_of_copy"], "shapes": len(split),
                        "best_shape": f"{best['block_n']:.0f} x {best['block_k']:.0f}, {best['splits']:.0f} splits",
                        "max_err": split[["max_abs_err_vs_cublas", "max_abs_err_after_replays"]].max().max()})
        m["sweep"] = pd.DataFrame(out).set_index("gemm")
    if "kept" in m:
        commit = m["kept"]["new_commit"].iloc[0]
        m["kernels"] = census_ab_kernels(data, m["kept"]["boot_id"].iloc[0], GATE_UP, "decode",
                                         stem="split_k_ab").set_index("name")
        m |= {f"kept_{k}": v for k, v in _step_check(data, commit, GATE_UP_CHECK).items()}
        gates = _frame(data, "paired/gates")
        if len(gates):
            m["kept_gates"] = gates[gates["git_commit"] == commit]
    return m


def measured_for_set_m(data: Path) -> dict:
    """What set M (split-KV decode merging its own partials) is graded on
    (grading.in_kernel_merge_grades): the A/B census lease of roofline/merge_ab ("merge",
    indexed by (role, step)) and its decode step's kernels ("kernels", by name)."""
    lease = _first_and_kept(data, "merge_ab").get("kept")
    if lease is None:
        return {}
    return {"merge": lease, "kernels": census_ab_kernels(data, lease["boot_id"].iloc[0], GATE_UP, "decode",
                                                         stem="merge_ab").set_index("name")}


def wall_gap_passes(data: Path) -> pd.DataFrame:
    """The wall-gap section's passes (roofline/wall_gap), one row each in time order: commit,
    machine boot, time, each measure in ms as a column, and `after_census`, whether a census
    (roofline/census, wall_gap_census or parallel_ab) ran earlier on that boot: its profiler
    leaves host calls slower."""
    df = _frame(data, "roofline/wall_gap")
    if df.empty:
        return pd.DataFrame()
    # A pass writes each measure once; passes written within one second share a timestamp.
    df = df.assign(n=df.groupby(["git_commit", "boot_id", "timestamp", "measure"]).cumcount())
    passes = df.pivot_table(index=["git_commit", "boot_id", "timestamp", "n"], columns="measure",
                            values="ms").reset_index().drop(columns="n")
    # A census run beside wall-gap passes keeps its rows in roofline/wall_gap_census, out of the
    # census the book reads.
    census = pd.concat([_frame(data, f"roofline/{stem}") for stem in ("census", "wall_gap_census", "parallel_ab")])
    first = census.groupby("boot_id")["timestamp"].min() if len(census) else pd.Series(dtype=object)
    passes["after_census"] = [b in first.index and first[b] < t for b, t in zip(passes["boot_id"], passes["timestamp"])]
    return passes.sort_values("timestamp", kind="stable").reset_index(drop=True)


def wall_gap(data: Path, commit: str | None = None, after_census: bool = False,
             boot_id: str | None = None) -> dict[str, float]:
    """The whole-graphed decode step's host times at `commit` (default: the latest commit with
    passes), over its passes (on one machine boot, if given) with no census before them on
    their boot (or, `after_census`, only those after one): each measure's median in ms, and
    `passes`. Empty where no such passes are."""
    df = wall_gap_passes(data)
    if df.empty:
        return {}
    commit = commit or df["git_commit"].iloc[-1]
    mine = df[(df["git_commit"] == commit) & (df["after_census"] == after_census)
              & ((df["boot_id"] == boot_id) if boot_id else True)]
    if mine.empty:
        return {}
    return mine.drop(columns=["git_commit", "boot_id", "timestamp", "after_census"]).median().to_dict() | {
        "passes": len(mine)}


def measured_for_staging(data: Path, stem: str) -> dict:
    """What sets N (a step staged in one copy, roofline/staging_ab) and O (block tables kept
    across steps, roofline/tables_ab) are graded on (grading.staging_grades, tables_grades): the
    A/B census lease ("lease", indexed by (role, step)) and the new tree's wall-gap passes on
    that lease ("gap"). Keys are missing where rows are."""
    lease = _first_and_kept(data, stem).get("kept")
    if lease is None:
        return {}
    gap = wall_gap(data, lease["new_commit"].iloc[0], boot_id=lease["boot_id"].iloc[0])
    return {"lease": lease} | ({"gap": gap} if gap else {})


PARALLEL_CHECK = "whole_parallel_vs_whole"  # step_check: the whole-graphed mixed step with it and without
ATTENTION_KERNELS = ("packed_attention_kernel", "splitkv_decode_kernel", "splitkv_reduce_kernel")


def _newest_boot(data: Path, stem: str) -> pd.DataFrame:
    """The rows of `stem` from the newest machine boot (one lease)."""
    df = _frame(data, stem)
    return df if df.empty else df[df["boot_id"] == df.sort_values("timestamp")["boot_id"].iloc[-1]]


def _rounds_by_side(df: pd.DataFrame):
    """Per step kind: (step, configuration 6's rows, configuration 5's), each indexed by round,
    over the rounds that ran both."""
    for step, g in df.groupby("step", sort=False):
        parallel, serial = (g[g["config"] == label].set_index("round") for label in (PARALLEL, GATE_UP))
        rounds = serial.index.intersection(parallel.index)
        yield step, parallel.loc[rounds], serial.loc[rounds]


def measured_for_parallel(data: Path) -> dict:
    """What set P is graded on (grading.parallel_grades): census configuration 5 (GATE_UP, the
    mixed step's two attentions in order: "serial") against 6 (PARALLEL, decode attention on a
    second stream: "parallel"), both in every process of roofline/parallel_ab, one lease, timed
    before the profiler (`*_wall_ms`, `*_gpu_ms`) and after it (`*_wall_profiled`).
    "steps": per step kind, each side's medians over the rounds, the parallel/serial GPU and wall
    ratios paired by round (bootstrap intervals) and the median per-round GPU fall, and the range
    of the serial side's wall over the rounds; "kernels": the mixed step's attention kernels, µs a
    step per side (median over the rounds with kernel rows); "step_check" (PARALLEL_CHECK) at
    its commit; "capacity", the campaign phase "parallel"'s comparison at 80/s offered, and
    "gates", the first commit's gate run with the second stream, where they have rows. {} without rows."""
    df = _newest_boot(data, "roofline/parallel_ab")
    if df.empty:
        return {}
    side = {"serial": GATE_UP, "parallel": PARALLEL}
    steps = []
    for step, a, b in _rounds_by_side(df):
        gpu, wall = (paired.compare_pairs(a[col], b[col]) for col in ("gpu_ms_median", "wall_ms_median"))
        row = {"step": step, "ratio": gpu.ratio, "lo": gpu.lo, "hi": gpu.hi, "n": gpu.n,
               "wall_ratio": wall.ratio, "wall_lo": wall.lo, "wall_hi": wall.hi,
               "gpu_fall_ms": float((b["gpu_ms_median"] - a["gpu_ms_median"]).median()),
               "serial_wall_min": b["wall_ms_median"].min(), "serial_wall_max": b["wall_ms_median"].max()}
        for name, r in (("serial", b), ("parallel", a)):
            row |= {f"{name}_gpu_ms": r["gpu_ms_median"].median(), f"{name}_wall_ms": r["wall_ms_median"].median(),
                    f"{name}_wall_profiled": r["wall_ms_profiled"].median(),
                    f"{name}_kernels": r["kernels_per_step"].median()}
        steps.append(row)
    m = {"steps": pd.DataFrame(steps).set_index("step"), "commit": df["git_commit"].iloc[0],
         "boot_id": df["boot_id"].iloc[0]}
    kernels = _frame(data, "roofline/parallel_ab_kernels")
    if len(kernels):
        k = kernels[(kernels["boot_id"] == m["boot_id"]) & (kernels["step"] == "mixed")
                    & kernels["kernel"].isin(ATTENTION_KERNELS)]
        per = k.groupby(["config", "kernel", "round"])["us_per_step"].sum().groupby(["config", "kernel"]).median()
        m["kernels"] = pd.DataFrame({name: per.loc[label] for name, label in side.items()})
    from .campaign import PARALLEL_VS_SERIAL

    m |= _named(campaign_comparisons(data, phases=("parallel",)), {"capacity": PARALLEL_VS_SERIAL})
    run = gate_runs(_frame(data, "paired/gates"), gate_up_silu=True, attention="triton-parallel")
    if len(run):  # the phase's own run: later commits' gate runs of this configuration are set R's
        m["gates"] = run[run["git_commit"] == run.sort_values("timestamp")["git_commit"].iloc[0]]
    return m | _step_check(data, m["commit"], PARALLEL_CHECK)


def profiler_residue(data: Path) -> pd.DataFrame:
    """Wall-gap passes on a boot where a census ran between them: the pass before it and the
    one after (roofline.wall_gap_passes), in time order. Empty where no boot has both."""
    df = wall_gap_passes(data)
    if df.empty:
        return df
    both = df.groupby("boot_id")["after_census"].transform(lambda a: a.any() and not a.all())
    return df[both].reset_index(drop=True)


def measured_for_loop(data: Path, stem: str = "loop") -> dict:
    """What set Q is graded on (grading.loop_grades): the roofline bench's loop section, census
    configurations 5 ("serial") and 6 ("parallel") in every process of roofline/`stem` on the
    newest boot. "steps": per step kind, each side's medians over the rounds of the per-round
    medians (interval start to start, GPU span, the decode rows' mean context, steady steps a
    round), the largest per-round interval above the GPU span, the
    parallel/serial interval ratio paired by round (bootstrap interval) and the median per-round
    interval fall. {} without rows."""
    df = _newest_boot(data, f"roofline/{stem}")
    if df.empty:
        return {}
    steps = []
    for step, a, b in _rounds_by_side(df):
        interval = paired.compare_pairs(a["interval_ms_median"], b["interval_ms_median"])
        row = {"step": step, "ratio": interval.ratio, "lo": interval.lo, "hi": interval.hi, "n": interval.n,
               "interval_fall_ms": float((b["interval_ms_median"] - a["interval_ms_median"]).median()),
               "chunk_tokens": int(a["chunk_tokens"].iloc[0]), "decode_rows": int(a["decode_rows"].iloc[0])}
        for name, r in (("serial", b), ("parallel", a)):
            row |= {f"{name}_interval_ms": r["interval_ms_median"].median(), f"{name}_gpu_ms": r["gpu_ms_median"].median(),
                    f"{name}_above_gpu_ms": float((r["interval_ms_median"] - r["gpu_ms_median"]).max()),
                    f"{name}_interval_min": r["interval_ms_median"].min(),
                    f"{name}_interval_max": r["interval_ms_median"].max(),
                    f"{name}_context": r["decode_context_mean"].median(), f"{name}_steps": r["steps"].median()}
        steps.append(row)
    return {"steps": pd.DataFrame(steps).set_index("step"), "commit": df["git_commit"].iloc[0],
            "boot_id": df["boot_id"].iloc[0]}


def gpu_test_log(data: Path, commit: str) -> dict:
    """The GPU-only tests' log at `commit` (data/gpu_tests/h200_<commit>.log, scripts/gpu_tests.py):
    pytest's counts ("passed", "failed", "skipped", each 0 where pytest named none) and the exit
    status. {} where there is no log."""
    path = Path(data) / "gpu_tests" / f"h200_{commit}.log"
    if not path.exists():
        return {}
    text = path.read_text()
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", text)}
    status = re.search(r"exit status: (-?\d+)", text)
    return {"passed": counts.get("passed", 0), "failed": counts.get("failed", 0) + counts.get("error", 0)
            + counts.get("errors", 0), "skipped": counts.get("skipped", 0),
            "exit_status": int(status[1]) if status else None}


# The prefill bench's chunk cases (roofline_bench.py), by the short names the pages' texts use.
CHUNK_CASES = {"first chunk": "first", "chunk after 2 chunks": "long", "setup mixed step": "setup"}
PREFILL_SWEEP_COMMIT = "d5b8aa9"  # the prefill sweep set R was written on (its premise's figures)


def measured_for_prefill(data: Path) -> dict:
    """What set R (128 keys per prefill iteration in part 10's backends, and the engine's device
    defaults) is graded on (grading.prefill_grades): the A/B census lease of roofline/prefill_ab
    ("lease", indexed by (role, step): configuration 6, the code before against after), its
    mixed step's attention kernels per arm ("kernels": µs a step, medians over the rounds, by
    kernel name), the gate runs at the new commit ("gates": every configuration the gates phase
    ran), the GPU tests' log there ("gpu_tests"), the serving loop on the new code
    (roofline/loop_prefill: "loop", as measured_for_loop), the peer bracket of the engine part
    10 ends on ("peer", campaign phase peer_parallel; "peer_steps", our passes' medians of wall and
    step counts and totals by kind) and the isolated prefill sweep's µs at
    parts 7-9's shape and part 10's, per chunk case ("sweep"); for set S, the same A/B of
    configuration 5 (roofline/prefill_serial_ab: "serial_lease", "serial_kernels"). Keys are
    missing where rows are."""
    from .campaign import PEER_PARALLEL_COMPARISON

    m = _attention_ab(data, "prefill_ab")
    if not m:
        return {}
    lease = m["lease"]
    commit = lease["new_commit"].iloc[0]
    m |= {"commit": commit, "base_commit": lease["base_commit"].iloc[0]}
    if not len(m["kernels"]):
        del m["kernels"]
    serial = _attention_ab(data, "prefill_serial_ab", GATE_UP)  # set S: configuration 5, the two attentions in order
    if serial:
        m["serial_lease"] = serial["lease"]
        if len(serial["kernels"]):
            m["serial_kernels"] = serial["kernels"]
    gates = _frame(data, "paired/gates")
    if len(gates) and (gates["git_commit"] == commit).any():
        m["gates"] = gates[gates["git_commit"] == commit]
    if log := gpu_test_log(data, commit):
        m["gpu_tests"] = log
    if loop := measured_for_loop(data, "loop_prefill"):
        m["loop"] = loop
    peer = peer_comparison(data, PEER_PARALLEL_COMPARISON)
    if len(peer):
        m["peer"] = peer
        closed = _frame(data, "paired/closed")
        ours = closed[(closed["comparison"] == PEER_PARALLEL_COMPARISON) & (closed["stat"] == "median")]
        m["peer_steps"] = ours[["repeat", "wall_s", "n_mixed_steps", "total_mixed_step_s", "n_decode_steps",
                                "total_decode_step_s"]].median()
    sweep = _frame(data, "roofline/prefill")
    if len(sweep):  # the isolated sweep's two shapes, per chunk case, from the run set R's premise cites
        sweep = sweep[(sweep["git_commit"] == PREFILL_SWEEP_COMMIT) & sweep["median_ms"].notna()
                      & sweep["block_m"].notna()]
    if len(sweep):
        shape = sweep[["block_m", "block_n", "num_warps", "num_stages"]].astype(int).apply(tuple, axis=1)
        m["sweep"] = pd.DataFrame({name: sweep[shape == want].set_index("case")["median_ms"] * 1e3
                                   for name, want in (("part7_us", PART7_PREFILL_SHAPE),
                                                      ("part10_us", ENGINE_PREFILL_SHAPE))})
    return m


TILE_SHAPE = ["block_m", "block_n", "block_k", "num_warps", "num_stages"]


def measured_for_gate_up_tiles(data: Path) -> dict:
    """What set T (the mixed step's gate_up with SiLU in its epilogue) is graded on
    (grading.gate_up_tiles_grades): the sweep of roofline/gate_up_tiles at its newest commit,
    cuBLAS plus the activation kernel ("cublas", its row) against the tiles kernel's timed
    shapes ("tiles", fastest first; "best" the fastest), with how many shapes the compiler
    rejected ("rejected"), the batch's rows and the commit. Empty without rows."""
    sweep = _frame(data, "roofline/gate_up_tiles")
    if not len(sweep):
        return {}
    sweep = _newest_commit(sweep)
    cublas = sweep[sweep["kernel"].str.startswith("cublas")]
    ours = sweep[sweep["kernel"] == "tiles kernel"]
    timed = ours[ours["us_per_call"].notna()].sort_values("us_per_call")
    if not len(cublas) or not len(timed):
        return {}
    timed = timed.assign(**{c: timed[c].astype(int) for c in TILE_SHAPE})
    return {"cublas": cublas.iloc[0], "tiles": timed.reset_index(drop=True), "best": timed.iloc[0],
            "rejected": int(len(ours) - len(timed)), "rows": int(cublas["m"].iloc[0]),
            "commit": cublas["git_commit"].iloc[0]}


def measured_for_prefill_group(data: Path) -> dict:
    """What set U (the prefill kernel with the GQA group in its rows) is graded on
    (grading.prefill_group_grades): the sweep of roofline/prefill_group at its newest commit,
    per chunk case ("cases", indexed by case): part 10's one-head shape ("one_head_us") and
    the fastest group-packed shape ("group_us", "group_shape", "group_tflops"), the number of
    group shapes timed ("shapes") and the commit. Empty without rows."""
    sweep = _frame(data, "roofline/prefill_group")
    if not len(sweep):
        return {}
    sweep = _newest_commit(sweep)
    sweep = sweep[sweep["median_ms"].notna()]
    shape = sweep[["block_m", "block_n", "num_warps", "num_stages"]].astype(int).apply(tuple, axis=1)
    group = sweep["pack_group"].astype(bool)
    out = []
    for case in sweep["case"].unique():
        mine = sweep["case"] == case
        one = sweep[mine & ~group & (shape == ENGINE_PREFILL_SHAPE)]
        packed = sweep[mine & group]
        if not len(one) or not len(packed):
            continue
        best = packed.loc[packed["median_ms"].idxmin()]
        out.append({"case": case, "one_head_us": one["median_ms"].iloc[0] * 1e3,
                    "group_us": best["median_ms"] * 1e3, "group_tflops": best["tflops"],
                    "group_shape": shape[best.name], "shapes": len(packed)})
    if not out:
        return {}
    return {"cases": pd.DataFrame(out).set_index("case"), "commit": sweep["git_commit"].iloc[0]}


def measured_for_prefill_v(data: Path) -> dict:
    """What set V (each V tile requested beside its K tile in the packed kernel) is graded on
    (grading.prefill_v_grades): roofline/prefill_v at its newest commit, per (case, BLOCK_N) of
    the shapes it ran ("cases"): the medians over the alternations of V after the softmax
    ("after_us") and beside K ("beside_us"), their ratio, and the lowest and highest ratio of one
    alternation's pair ("ratio_lo", "ratio_hi"); the alternations ("repeats") and the commit;
    and the census A/B of configuration 6 in roofline/prefill_v_ab ("lease", indexed by (role,
    step); "kernels", the mixed step's attention kernels per arm)."""
    runs = _frame(data, "roofline/prefill_v")
    if not len(runs):
        return {}
    runs = _newest_commit(runs)
    runs = runs[runs["median_ms"].notna()]
    out = []
    for (case, block_n), g in runs.groupby(["case", "block_n"], sort=False):
        by = g.assign(us=g["median_ms"] * 1e3).pivot_table(index="repeat", columns="v_with_k", values="us")
        if not {False, True} <= set(by.columns):
            continue
        pair = by[True] / by[False]
        out.append({"case": case, "block_n": int(block_n), "after_us": by[False].median(),
                    "beside_us": by[True].median(), "ratio": by[True].median() / by[False].median(),
                    "ratio_lo": pair.min(), "ratio_hi": pair.max(), "repeats": len(by)})
    if not out:
        return {}
    return _attention_ab(data, "prefill_v_ab") | {"cases": pd.DataFrame(out).set_index(["case", "block_n"]),
                                                   "commit": runs["git_commit"].iloc[0]}


def measured_for_prefill_splits(data: Path) -> dict:
    """What set W (the packed kernel's causal spans split across programs) is graded on
    (grading.prefill_splits_grades): roofline/prefill_splits at its newest commit, the median
    µs per (case, runs a span) over the alternations ("sweep": cases as rows, run counts as
    columns) and the alternations ("repeats"); the census A/B of configuration 6 in
    roofline/prefill_splits_ab ("lease", indexed by (role, step); "kernels", the mixed step's
    attention kernels per arm, by name). Empty without sweep rows."""
    runs = _frame(data, "roofline/prefill_splits")
    if not len(runs):
        return {}
    runs = _newest_commit(runs)
    return _attention_ab(data, "prefill_splits_ab") | {
        "sweep": runs.assign(us=runs["median_ms"] * 1e3).pivot_table(index="case", columns="splits", values="us",
                                                                     aggfunc="median"),
        "repeats": int(runs["repeat"].nunique()), "commit": runs["git_commit"].iloc[0]}


MARKER_KERNEL = "spin_kernel"  # kernel_probe's marker before each call under ncu
# ncu's raw metrics kernel_probe_counters keeps: column -> its raw name
PROBE_COUNTERS = {
    "us": "gpu__time_duration.sum",  # ns in the file; converted below
    "dram_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "tensor_pct": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "theoretical_pct": "sm__maximum_warps_per_active_cycle_pct",
    "issue_per_cycle": "smsp__issue_active.avg.per_cycle_active",
    "registers": "launch__registers_per_thread",
    "shared_bytes": "launch__shared_mem_per_block_dynamic",
    "grid": "launch__grid_size",
    "block": "launch__block_size",
    "waves": "launch__waves_per_multiprocessor",
}
_STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio")


def _short_kernel_name(name: str) -> str:
    """A CUDA kernel's name without "void ", template arguments or parameters."""
    return re.split(r"[<(]", name.removeprefix("void "), maxsplit=1)[0]


def kernel_probe_counters(path: Path, probe: pd.DataFrame) -> pd.DataFrame:
    """Nsight Compute's raw page over roofline_bench's kernel_probe (`--page raw --csv`, the
    program's own output before the table): one row per profiled kernel, charged to the call
    it belongs to through the spin markers and `probe`'s rows (their `probe_order`), with
    PROBE_COUNTERS, the largest stall reason per issued instruction and its cycles
    ("top_stall", "top_stall_cycles") and every reason's ("stalls")."""
    import csv

    lines = Path(path).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    header, _units, *body = list(csv.reader(lines[start:]))
    table = pd.DataFrame(body, columns=header)
    calls = probe.dropna(subset=["probe_order"]).set_index("probe_order")[["case", "kernel"]]
    stall_columns = {c: m.group(1) for c in header if (m := _STALL.fullmatch(c))}
    out, call = [], -1
    for _, r in table.iterrows():
        if MARKER_KERNEL in r["Kernel Name"]:
            call += 1
            continue
        if call not in calls.index:
            raise ValueError(f"{path}: kernel {r['Kernel Name'][:60]!r} after marker {call}, but the probe "
                             f"rows name {len(calls)} calls")
        value = lambda column: float(r[column].replace(",", ""))  # noqa: E731
        stalls = {reason: value(c) for c, reason in stall_columns.items()}
        top = max(stalls, key=stalls.get)
        out.append({"case": calls.loc[call, "case"], "call": calls.loc[call, "kernel"],
                    "kernel": _short_kernel_name(r["Kernel Name"]),
                    **{k: value(c) for k, c in PROBE_COUNTERS.items()},
                    "top_stall": top, "top_stall_cycles": stalls[top], "stalls": stalls})
    if call != len(calls) - 1:
        raise ValueError(f"{path}: {call + 1} markers for {len(calls)} probe calls")
    df = pd.DataFrame(out)
    return df.assign(us=df["us"] / 1e3)


def measured_for_attention_bound(data: Path) -> dict:
    """What set X (what bounds the two attention kernels, beside torch's SDPA) is graded on
    (grading.attention_bound_grades): roofline/kernel_probe at its newest commit ("probe": µs,
    the fraction of the copy rate or TFLOP/s, per case and call, the calls that ran), the GEMM
    rate for the ballpark ("gemm_flops", FLOP/s) and, where ncu ran over it, the counters per kernel (kernel_probe_counters, "counters")."""
    probe = _frame(data, "roofline/kernel_probe")
    if not len(probe):
        return {}
    probe = _newest_commit(probe)
    out = {"commit": probe["git_commit"].iloc[0],
           **({"gemm_flops": rates(data).gemm_flops} if (Path(data) / "roofline" / "gemm.jsonl").exists() else {}),
           "probe": probe.dropna(subset=["median_ms"]).assign(us=lambda d: d["median_ms"] * 1e3)
                         .set_index(["case", "kernel"])}
    ncu = Path(data) / "roofline" / "ncu" / "kernel_probe_ncu.csv"  # not a result set: outside the folder's glob
    if ncu.exists():
        out["counters"] = kernel_probe_counters(ncu, probe)
    return out


def measured_for_unmasked(data: Path) -> dict:
    """What set Y (the packed kernel's whole tiles walked without masks) is graded on
    (grading.unmasked_grades): roofline/kernel_probe_ab, the kernel_probe section on the code
    before ("base") and after ("new") in alternated processes, our kernel's median µs per case
    and arm ("cases", with the ratio new / base and the rounds); the census A/B of
    configuration 6 in roofline/unmasked_ab (as _attention_ab). Empty without probe rows."""
    runs = _frame(data, "roofline/kernel_probe_ab")
    if not len(runs):
        return {}
    ours = runs[(runs["kernel"] == "ours") & runs["median_ms"].notna()]
    cases = ours.assign(us=ours["median_ms"] * 1e3).pivot_table(index="case", columns="arm", values="us", aggfunc="median")
    return _attention_ab(data, "unmasked_ab") | {
        "cases": cases.assign(ratio=cases["new"] / cases["base"]), "rounds": int(runs["round"].nunique()),
        "commit": str(ours[ours["arm"] == "new"]["git_commit"].iloc[0]),
        "base_commit": str(ours[ours["arm"] == "base"]["git_commit"].iloc[0])}


def _plan_medians(sweep: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """A prefetch sweep's plans (by `keys`, in sweep order, whose first plan is no prefetch):
    median GPU and wall ms over rounds, the largest logit difference, the rounds, and the
    change of GPU time against the first plan."""
    plans = sweep.groupby(keys, sort=False).agg(gpu_ms=("gpu_ms_median", "median"), wall_ms=("wall_ms_median", "median"),
                                                max_abs_diff=("max_abs_diff", "max"), rounds=("round", "nunique"))
    return plans.assign(change=plans["gpu_ms"] / plans["gpu_ms"].iloc[0] - 1).reset_index()


def measured_for_prefetch(data: Path) -> dict:
    """What set Z (weights asked into L2 while the layer leaves memory idle) is graded on
    (grading.prefetch_grades): roofline/prefetch_sweep's newest lease, per plan (gate_up MB,
    down MB, bulk, from the rotary kernel) as _plan_medians ("plans"; "best", the fastest;
    "none_ms", no prefetch's GPU ms); the census A/B of roofline/prefetch_ab ("lease", as
    _attention_ab) and its decode step's kernels per arm ("decode_kernels", by name). Empty
    without sweep rows."""
    sweep = _newest_boot(data, "roofline/prefetch_sweep")
    if not len(sweep):
        return {}
    plans = _plan_medians(sweep, ["gate_up_mb", "down_mb", "bulk", "in_rotary"])
    m = {"plans": plans, "best": plans.loc[plans["gpu_ms"].idxmin()], "none_ms": float(plans["gpu_ms"].iloc[0]),
         "commit": str(sweep["git_commit"].iloc[0])}
    ab = _attention_ab(data, "prefetch_ab")
    if ab:
        k = census_ab_kernels(data, ab["lease"]["boot_id"].iloc[0], PARALLEL, "decode", min_us=0.0, min_share=0.0,
                              stem="prefetch_ab")
        m |= {"lease": ab["lease"], "decode_kernels": k.set_index("name")}
    return m


def measured_for_prefetch_after(data: Path) -> dict:
    """What set AA (set Z's gate_up prefetch forked once attention is done) is graded on
    (grading.prefetch_after_grades): roofline/prefetch_after's newest lease, per plan (gate_up
    MB, forked after attention) as _plan_medians ("plans"; "best", the fastest forked after
    attention; "none_ms"). Empty without rows."""
    sweep = _newest_boot(data, "roofline/prefetch_after")
    if not len(sweep):
        return {}
    plans = _plan_medians(sweep, ["gate_up_mb", "after_attention"])
    after = plans[plans["after_attention"]]
    return {"plans": plans, "best": after.loc[after["gpu_ms"].idxmin()], "none_ms": float(plans["gpu_ms"].iloc[0]),
            "commit": str(sweep["git_commit"].iloc[0])}


def measured_for_gate_up_prefill(data: Path) -> dict:
    """What set AB (the decode step's gate_up + SiLU kernel over row tiles at a prompt chunk's
    batch sizes) is graded on (grading.gate_up_prefill_grades): roofline/gate_up_prefill's
    newest lease, per batch size ("sizes", indexed by rows: cuBLAS with the activation kernel,
    the fastest launch shape and the slowest, in µs a layer, the fastest's shape and
    TFLOP/s, the shapes timed and the largest difference from cuBLAS's output); the census
    A/B of roofline/gate_up_prefill_ab ("lease", indexed by (role, step)) and its mixed step's
    kernels per arm ("mixed_kernels", by name). Empty without sweep rows."""
    sweep = _newest_boot(data, "roofline/gate_up_prefill")
    if not len(sweep):
        return {}
    sizes = []
    for rows, g in sweep.groupby("m"):
        cublas = g[g["kernel"] != "one kernel"].iloc[0]
        one = g[g["kernel"] == "one kernel"].dropna(subset=["us_per_call"])
        best = one.loc[one["us_per_call"].idxmin()]
        flop = 2 * rows * best["k"] * best["n"]
        sizes.append({"rows": rows, "cublas_us": cublas["us_per_call"], "best_us": best["us_per_call"],
                      "worst_us": one["us_per_call"].max(), "best_tflops": flop / best["us_per_call"] / 1e6,
                      "cublas_tflops": flop / cublas["us_per_call"] / 1e6, "shapes": len(one),
                      "best_shape": f"{best['block_m']:.0f} × {best['block_n']:.0f} (K {best['block_k']:.0f}, "
                                    f"{best['num_warps']:.0f} warps, {best['num_stages']:.0f} stages)",
                      "max_err": one[["max_abs_err_vs_cublas", "max_abs_err_after_replays"]].max().max()})
    m = {"sizes": pd.DataFrame(sizes).set_index("rows").assign(ratio=lambda d: d["best_us"] / d["cublas_us"]),
         "commit": str(sweep["git_commit"].iloc[0])}
    return m | _mixed_ab(data, "gate_up_prefill_ab")


def measured_for_pdl_prefetch(data: Path) -> dict:
    """What set AC (PDL with the decode GEMMs' weights asked into L2 before they wait) is graded
    on (grading.pdl_prefetch_grades): roofline/pdl_sweep's newest lease per step and plan
    (_plan_medians over pdl, qkv_k, o_proj_k, gate_up_k, down_k; the first plan is no PDL) as
    "decode" and "mixed", and the census A/B of roofline/pdl_prefetch_ab ("lease", indexed by
    (role, step)). Empty without sweep rows."""
    sweep = _newest_boot(data, "roofline/pdl_sweep")
    if not len(sweep):
        return {}
    keys = ["pdl", "qkv_k", "o_proj_k", "gate_up_k", "down_k"]
    m = {step: _plan_medians(sweep[sweep["step"] == step], keys) for step in ("decode", "mixed")}
    m["commit"] = str(sweep["git_commit"].iloc[0])
    lease = _first_and_kept(data, "pdl_prefetch_ab").get("kept")
    return m | ({"lease": lease} if lease is not None else {})


def measured_for_blas(data: Path) -> dict:
    """What set AD (the mixed step's GEMMs on the cuBLASLt algorithm timed fastest) is graded on
    (grading.blas_grades): roofline/blas's newest lease, per projection ("gemms", indexed by
    name: cuBLAS's µs a layer, the fastest listed algorithm's µs, tile, split-K and waves, the
    algorithms listed, the one the engine's own timing kept, the largest difference from
    cuBLAS's output), "saving_ms" (the fastest's saving summed over the projections and
    `layers`); the census A/B of roofline/blas_ab ("lease", indexed by (role, step)) and its
    mixed step's kernels that moved ("mixed_kernels", by name). Empty without sweep rows."""
    sweep = _newest_boot(data, "roofline/blas")
    if not len(sweep):
        return {}
    gemms = []
    for name, g in sweep.groupby("gemm", sort=False):
        cublas = g[g["kernel"] == "cublas"].iloc[0]
        listed = g[g["kernel"].str.startswith("cublasLt")].dropna(subset=["us_per_call"])
        best = listed.loc[listed["us_per_call"].idxmin()]
        engine = g[g["kernel"] == "engine choice"].iloc[0]
        gemms.append({"gemm": name, "rows": int(cublas["m"]), "cublas_us": cublas["us_per_call"],
                      "best_us": best["us_per_call"], "best_tile": int(best["tile_id"]),
                      "best_splitk": int(best["splitk"]), "best_waves": best["waves"],
                      "first_us": listed["us_per_call"].iloc[0], "listed": len(listed),
                      "kept": None if pd.isna(engine["kept"]) else int(engine["kept"]),
                      "max_err": listed[["max_abs_err_vs_cublas", "max_abs_err_after_replays"]].max().max()})
    gemms = pd.DataFrame(gemms).set_index("gemm").assign(fall=lambda d: 1 - d["best_us"] / d["cublas_us"])
    layers = int(sweep["layers"].iloc[0])
    m = {"gemms": gemms, "saving_ms": float((gemms["cublas_us"] - gemms["best_us"]).sum() * layers / 1e3),
         "layers": layers, "commit": str(sweep["git_commit"].iloc[0])}
    return m | _mixed_ab(data, "blas_ab")


def measured_for_beside(data: Path) -> dict:
    """What set AE (the mixed step's decode attention given fewer programs beside the chunk,
    and the chunk's longest tiles first) is graded on (grading.beside_grades):
    roofline/beside_sweep's newest lease per plan (split-KV programs per SM beside the chunk,
    longest tiles first; the first plan the code before) as _plan_medians with each plan's
    splits ("plans"), roofline/beside_more's likewise ("more", more programs per SM), and the
    census A/B of roofline/beside_ab ("lease", indexed by (role, step)). Empty without sweep rows."""
    sweep = _newest_boot(data, "roofline/beside_sweep")
    if not len(sweep):
        return {}
    keys = ["programs_per_sm", "longest_first"]

    def plans(rows: pd.DataFrame) -> pd.DataFrame:
        splits = rows.groupby(keys, sort=False)["splits"].first().to_numpy()
        return _plan_medians(rows, keys).assign(splits=splits)

    m = {"plans": plans(sweep), "commit": str(sweep["git_commit"].iloc[0])}
    more = _newest_boot(data, "roofline/beside_more")
    if len(more):
        m |= {"more": plans(more), "more_commit": str(more["git_commit"].iloc[0])}
    lease = _first_and_kept(data, "beside_ab").get("kept")
    return m | ({"lease": lease} if lease is not None else {})


def measured_for_pair(data: Path) -> dict:
    """What set AF (the mixed step's prefill tile height and split-KV decode's shape beside it)
    is graded on (grading.pair_grades): roofline/pair_sweep's newest lease per plan (the packed
    kernel's tile height, decode's keys per iteration and warps; the first plan the code before)
    as _plan_medians ("plans"), the census A/B of roofline/pair_ab ("lease", indexed by (role,
    step)) and its mixed step's kernels that moved ("mixed_kernels", by name). Empty without
    sweep rows."""
    sweep = _newest_boot(data, "roofline/pair_sweep")
    if not len(sweep):
        return {}
    m = {"plans": _plan_medians(sweep, ["block_m", "decode_block_n", "decode_warps"]),
         "commit": str(sweep["git_commit"].iloc[0])}
    return m | _mixed_ab(data, "pair_ab")


def pair_timeline(data: Path, stem: str = "roofline/pair_timeline") -> dict:
    """The whole-graphed mixed step's attention pair per layer (`stem`'s newest lease; by default
    the engine's, roofline/pair_timeline): medians over layers and replays of each kernel's start
    and end and of the join, in µs after the fork ("medians", a Series), the layers and replays
    measured, the commit, and how much later the decode branch (the reduce) ends than the
    prefill kernel ("decode_branch_lag_us"). Empty without rows."""
    df = _newest_boot(data, stem)
    if not len(df):
        return {}
    cols = [f"{k}_{edge}_us" for k in ("prefill", "decode", "reduce") for edge in ("start", "end")] + ["join_us"]
    med = df[cols].median()
    return {"medians": med, "layers": len(df), "replays": int(df["replay"].nunique()),
            "commit": str(df["git_commit"].iloc[0]),
            "decode_branch_lag_us": float((df["reduce_end_us"] - df["prefill_end_us"]).median())}


def measured_for_order(data: Path) -> dict:
    """What set AG (the mixed step's decode rows launched before the prefill kernel) is graded on
    (grading.order_grades): the pair's timeline on the swapped code
    (roofline/pair_timeline_order, as pair_timeline: "timeline") and before it ("before"); the
    census A/B of roofline/order_ab ("lease", indexed by (role, step)) and the step check of
    two streams against in order at its new commit ("step_check"). Empty without the swapped
    timeline."""
    timeline = pair_timeline(data, "roofline/pair_timeline_order")
    if not timeline:
        return {}
    m = {"timeline": timeline, "before": pair_timeline(data)}
    lease = _first_and_kept(data, "order_ab").get("kept")
    if lease is not None:
        m |= {"lease": lease} | _step_check(data, str(lease["new_commit"].iloc[0]), "whole_parallel_vs_whole")
    return m


def pair_copies(data: Path) -> dict:
    """The whole-graphed mixed step's memsets in the profiled replays (roofline/pair_copies's
    newest lease): how many ("count"), their median µs ("us"), the kernel most of them come just
    before ("before", its name cut at the argument list) and how many do ("before_count"). Empty
    without memset rows."""
    df = _newest_boot(data, "roofline/pair_copies")
    sets = df[df["copy"].str.startswith("Memset")] if len(df) else df
    if not len(sets):
        return {}
    before = sets["before"].mode().iloc[0]
    return {"count": len(sets), "us": float(sets["us"].median()), "before": before.split("(")[0].replace("void ", ""),
            "before_count": int((sets["before"] == before).sum())}


# The newest census of the engine as it is on main: set AG's A/B, whose code before is main's.
MAIN_CENSUS_KERNELS = "roofline/order_ab_kernels"
DECODE_GEMM_KERNELS = ("gate_up_silu_kernel", "split_k_kernel")


def measured_for_chain(data: Path) -> dict:
    """What set AH (the decode step's GEMM chain as separate kernels, as one persistent kernel
    with grid barriers, and with weights loaded before each barrier) is graded on
    (grading.chain_grades): roofline/chain's newest lease, per plan (launch shape, arm, grid) the
    median ms over rounds and whether every round's output equalled the separate kernels'
    ("plans"); each arm's fastest plan ("best", by arm); the chain's bytes floor, its weights, its
    GEMMs, the frame every graph holds, the separate kernels' largest difference from PyTorch;
    the launch cost of a kernel inside a graph ("launch_us"); and the engine's own q/k/v,
    output, gate_up and down kernels a decode step in main's newest census (µs,
    "engine_gemm_us"). Empty without rows."""
    df = _newest_boot(data, "roofline/chain")
    if not len(df):
        return {}
    keys = ["block_n", "block_k", "num_warps", "num_stages", "arm", "grid"]
    plans = (df.groupby(keys, sort=False)
             .agg(ms=("ms", "median"), equal=("equal_to_kernels", "all"), rounds=("round", "nunique"))
             .reset_index())
    best = plans.loc[plans.groupby("arm", sort=False)["ms"].idxmin()].set_index("arm")
    first = df.iloc[0]
    m = {"plans": plans, "best": best, "floor_ms": float(first["floor_ms"]), "frame_ms": float(first["frame_ms"]),
         "weight_gb": float(first["weight_bytes"]) / 1e9, "gemms": 4 * int(first["layers"]),
         "max_err": float(df["max_abs_err_vs_torch"].max()), "commit": str(first["git_commit"]),
         "regs": int(df["persistent_regs"].max()) if "persistent_regs" in df else None}
    if (Path(data) / "roofline" / "gemm.jsonl").exists():  # the launch cost inside a graph
        m["launch_us"] = rates(data).launch_s * 1e6
    census = _newest_boot(data, MAIN_CENSUS_KERNELS)
    if len(census):
        c = census[(census["arm"] == "base") & (census["config"] == PARALLEL) & (census["step"] == "decode")
                   & census["kernel"].isin(DECODE_GEMM_KERNELS)]
        m["engine_gemm_us"] = float(c.groupby(["kernel", "round"])["us_per_step"].sum()
                                    .groupby("kernel").median().sum())
    return m


def measured_for_reads(data: Path) -> dict:
    """What set AI (each decode-step weight-streaming kernel against reads of its own weight)
    is graded on (grading.read_grades): roofline/read_sizes's newest lease. "weights", by
    weight: its MB, the engine's kernel µs, torch's amax µs, the fastest read (the read probe's
    fastest grid: µs, programs, fraction of the 1 GB copy rate) and the read's share of the
    engine's time, medians over rounds; "step": the same summed over a decode step (each
    projection once a layer, the lm_head once; µs) and the read's share; the layers, rounds
    and commit; and main's decode step GPU ms in its newest census ("decode_gpu_ms", the code
    before of set AG's A/B). Empty without rows."""
    df = _newest_boot(data, "roofline/read_sizes")
    if not len(df):
        return {}
    med = (df.groupby(["weight", "arm", "programs"], sort=False)
           .agg(us=("us_per_call", "median"), frac=("fraction_of_copy", "median"), mb=("bytes", "first"))
           .reset_index())
    out = []
    for weight, g in med.groupby("weight", sort=False):
        reads = g[g["arm"] == "read"]
        best = reads.loc[reads["us"].idxmin()]
        engine = g.loc[g["arm"] == "engine", "us"].iloc[0]
        out.append({"weight": weight, "mb": best["mb"] / 1e6, "engine_us": engine,
                    "amax_us": g.loc[g["arm"] == "amax", "us"].iloc[0], "read_us": best["us"],
                    "read_programs": int(best["programs"]), "read_frac": best["frac"], "share": best["us"] / engine})
    weights = pd.DataFrame(out).set_index("weight")
    layers = int(df["copies"].iloc[0])
    per_step = weights["engine_us"] * layers, weights["read_us"] * layers
    once = weights.index == "lm_head"  # the lm_head runs once a step, the projections once a layer
    engine_us = float(per_step[0][~once].sum() + weights.loc[once, "engine_us"].sum())
    read_us = float(per_step[1][~once].sum() + weights.loc[once, "read_us"].sum())
    m = {"weights": weights, "step": {"engine_us": engine_us, "read_us": read_us, "share": read_us / engine_us},
         "layers": layers, "rounds": int(df["round"].nunique()), "commit": str(df["git_commit"].iloc[0])}
    lease = _first_and_kept(data, "order_ab").get("kept")
    if lease is not None:
        m["decode_gpu_ms"] = float(lease.loc[("second stream", "decode"), "base_gpu_ms"])
    return m


OURS_ANCHOR = f"ours: {PARALLEL}"
PLAIN_GRAPH, PLAIN_COMPILED = "plain PyTorch, one CUDA graph", "plain PyTorch, torch.compile, one CUDA graph"


def measured_for_anchors(data: Path) -> dict:
    """What set AJ (our decode step beside plain PyTorch and transformers) is graded on
    (grading.anchor_grades): roofline/anchors's newest lease, per anchor the median GPU and
    wall ms over rounds, its first call's seconds (a compile's) and, for the plain steps, its
    logits against ours ("anchors", indexed by name); the step's rows, mean and longest
    context and the plain cache's length; the commit; transformers' steps beside it
    (roofline/anchors_transformers's newest row, "transformers"); the profiler's kernels and
    time by class per anchor (anchor_kernels, "kernels"); the compiled plain step with every
    row at the mean context (roofline/anchors_uniform's median GPU ms and context, "uniform");
    and the first plain run's
    compiled step, which wrote one cache tensor for all layers (roofline/anchors_first,
    "first_compiled_ms"). Empty without rows."""
    df = _newest_boot(data, "roofline/anchors")
    if not len(df):
        return {}
    checks = ["max_abs_diff_vs_ours", "rows_outside_ties", "argmax_agree_outside_ties"]
    anchors = (df.groupby("anchor", sort=False)
               .agg(gpu_ms=("gpu_ms", "median"), wall_ms=("wall_ms", "median"), first_call_s=("first_call_s", "first"),
                    rounds=("round", "nunique"), **{c: (c, "first") for c in checks}))
    first = df.iloc[0]
    m = {"anchors": anchors, "rows": int(first["rows"]), "context_mean": float(first["context_mean"]),
         "context_max": int(first["context_max"]), "cache_len": int(first["plain_cache_len"]),
         "commit": str(first["git_commit"])}
    hf = _newest_boot(data, "roofline/anchors_transformers")
    if len(hf):
        m["transformers"] = hf.iloc[-1]
    kernels = anchor_kernels(data)
    if len(kernels):
        m["kernels"] = kernels
    uniform = _newest_boot(data, "roofline/anchors_uniform")
    if len(uniform):
        m["uniform"] = {"gpu_ms": float(uniform["gpu_ms"].median()), "context": int(uniform["context"].iloc[0])}
    old = _frame(data, "roofline/anchors_first")
    if len(old):
        m["first_compiled_ms"] = float(old.loc[old["anchor"] == PLAIN_COMPILED, "gpu_ms"].median())
    return m


def kernel_class(name: str) -> str:
    """A decode-step kernel's class by its name: "GEMM" (cuBLAS's nvjet kernels and split-K
    reduce, our gate_up and split-K kernels), "attention" (ours, cuDNN's and SDPA's), or
    "other" (norms, rotary, cache writes, activations, copies; every Inductor kernel, whose
    names list the ops they fuse, attention's preparation among them)."""
    if name.startswith("triton_"):
        return "other"
    if name.startswith("nvjet") or "splitKreduce" in name or name in ("gate_up_silu_kernel", "split_k_kernel"):
        return "GEMM"
    if name.startswith(("splitkv_", "cudnn", "void cudnn::")) or "flash" in name or "fmha" in name:
        return "attention"
    return "other"


def anchor_kernels(data: Path) -> pd.DataFrame:
    """Per anchor of roofline/anchors_kernels (its newest lease), in the order measured: kernels
    and copies a step, and µs a step by kernel_class and in all. Empty without rows."""
    df = _newest_boot(data, "roofline/anchors_kernels")
    if not len(df):
        return df
    df = df.assign(cls=df["kernel"].map(kernel_class))
    us = df.pivot_table(index="anchor", columns="cls", values="us_per_step", aggfunc="sum", sort=False).fillna(0.0)
    out = pd.DataFrame({"kernels": df.groupby("anchor", sort=False)["per_step"].sum()})
    for cls in ("GEMM", "attention", "other"):
        out[f"{cls}_us"] = us.get(cls, 0.0)
    return out.assign(total_us=out[["GEMM_us", "attention_us", "other_us"]].sum(axis=1))


def measured_for_read_kv(data: Path) -> dict:
    """What set AK (decode attention against a read of its own bytes) is graded on
    (grading.read_kv_grades): roofline/read_kv's newest lease, the fastest grid's median µs a
    layer ("read_us"), the bytes and layers; the engine's decode attention a step from
    anchor_kernels (ours, "engine_us") and set AI's GEMM reads a step (measured_for_reads,
    "gemm_read_us"), where those rows are there. Empty without rows."""
    df = _newest_boot(data, "roofline/read_kv")
    if not len(df):
        return {}
    read_us = float(df.groupby("programs")["us_per_layer"].median().min())
    m = {"read_us": read_us, "mb": float(df["bytes"].iloc[0]) / 1e6, "layers": int(df["layers"].iloc[0]),
         "commit": str(df["git_commit"].iloc[0]), "rounds": int(df["round"].nunique())}
    kernels = anchor_kernels(data)
    if len(kernels):
        m["engine_us"] = float(kernels.loc[OURS_ANCHOR, "attention_us"])
    reads = measured_for_reads(data)
    if reads:
        m["gemm_read_us"] = reads["step"]["read_us"]
    return m


def _tma_sweep(data: Path, stem: str) -> dict:
    """One TMA sweep (roofline/tma_gate_up or tma_gate_up_more, newest commit): cuBLAS with the
    activation kernel ("cublas_us"), every timed TMA shape fastest first ("timed"), the fastest
    one tile per program ("tiles") and persistent ("persistent"), each a row with its µs and
    TFLOP/s, how many shapes timed and how many the compiler rejected. Empty without rows."""
    sweep = _frame(data, stem)
    if not len(sweep):
        return {}
    sweep = _newest_commit(sweep)
    cublas = sweep[sweep["kernel"].str.startswith("cublas")]
    timed = sweep[sweep["kernel"].str.startswith("tma") & sweep["us_per_call"].notna()].sort_values("us_per_call")
    if not len(cublas) or not len(timed):
        return {}
    persistent = timed["persistent"].astype(bool)
    m = {"cublas_us": float(cublas["us_per_call"].iloc[0]), "cublas_tflops": float(cublas["tflops"].iloc[0]),
         "timed": timed.reset_index(drop=True), "shapes": int(len(timed)), "rejected": int((sweep["kernel"].str.startswith("tma")).sum() - len(timed)),
         "rows": int(cublas["m"].iloc[0]), "commit": str(cublas["git_commit"].iloc[0])}
    for key, rows in (("tiles", timed[~persistent]), ("persistent", timed[persistent])):
        if len(rows):
            m[key] = rows.iloc[0]
    return m


def measured_for_tma(data: Path) -> dict:
    """What set AL (the mixed step's gate_up fed by TMA, fusedlib.bench.tma) is graded on
    (grading.tma_grades): roofline/tma_gate_up as _tma_sweep reads it, "best" the faster of its
    two fastest rows, and the follow-up sweep of deeper pipelines (tma_gate_up_more) as
    "more", where its rows are. Empty without rows."""
    m = _tma_sweep(data, "roofline/tma_gate_up")
    if not m:
        return {}
    m["best"] = min((m[k] for k in ("tiles", "persistent") if k in m), key=lambda r: r["us_per_call"])
    if more := _tma_sweep(data, "roofline/tma_gate_up_more"):
        m["more"] = more
    return m


def prefill_rates(data: Path) -> pd.DataFrame:
    """roofline/prefill_rates at its newest commit: per cached prefix (index, keys before a
    512-token chunk), our packed kernel's TFLOP/s ("ours"), the fastest SDPA backend's
    ("sdpa", with its name "sdpa_kernel"), the fastest of all ("best") and our time over the
    fastest SDPA backend's ("ours_vs_sdpa"). Empty without rows."""
    df = _frame(data, "roofline/prefill_rates")
    if not len(df):
        return pd.DataFrame()
    df = _newest_commit(df)
    df = df[df["tflops"].notna()]
    out = []
    for cached, g in df.groupby("cached"):
        ours, sdpa = g[g["kernel"] == "ours"], g[g["kernel"].str.startswith("sdpa")]
        fastest = sdpa.loc[sdpa["tflops"].idxmax()]
        out.append({"cached": int(cached), "ours": float(ours["tflops"].iloc[0]), "sdpa": float(fastest["tflops"]),
                    "sdpa_kernel": fastest["kernel"], "best": float(g["tflops"].max()),
                    "ours_vs_sdpa": float(ours["median_ms"].iloc[0]) / float(fastest["median_ms"]),
                    "commit": str(g["git_commit"].iloc[0])})
    return pd.DataFrame(out).set_index("cached")


def prompt_attention_s(prompts, rates_by_prefix: pd.Series, chunk: int, cfg) -> tuple[int, float]:
    """(FLOP, seconds) of causal attention over whole prompts cut into `chunk`-token chunks,
    each chunk at the rate measured at its prefix or, between measured prefixes, at the next
    longer one (`rates_by_prefix`, FLOP/s by keys cached before the chunk; past the longest, the
    longest's): a lower bound on the time wherever the rate grows with the prefix, as the
    fastest kernel's does in prefill_rates."""
    prefixes = sorted(rates_by_prefix.index)
    flop = seconds = 0
    for length in prompts:
        for cached in range(0, length, chunk):
            n = min(chunk, length - cached)
            f = 4 * (n * cached + n * (n + 1) // 2) * cfg.num_heads * cfg.head_dim * cfg.num_layers
            rate = rates_by_prefix[next((p for p in prefixes if p >= cached), prefixes[-1])]
            flop, seconds = flop + f, seconds + f / rate
    return flop, seconds


def closed_floor(data: Path) -> dict:
    """What part 10's 20x target asks of the 128 x 128 closed pass, against a floor of that pass
    built from the best rates measured on this GPU: the lease of the peer bracket the part ends
    on (PEER_PARALLEL_COMPARISON): transformers' pass ("peer_s"; over every lease's peer run, the
    fastest and slowest, "peer_lo_s" and "peer_hi_s", of "peer_leases") and the budget 20x leaves
    ("budget_s"); our median pass ("ours_s") and its mixed and decode-only steps ("n_mixed",
    "mixed_s", "n_decode", "decode_s"); the requests' prompt tokens (the workload, rebuilt from
    the rows' seed) and the floor's three terms, each a lower bound on its share: every GEMM
    FLOP of every forward position (prompt tokens, then each decode forward; the vocabulary
    projection once per sampled token) at the large-GEMM rate ("gemm_s"), the prompts' causal
    attention in 512-token chunks, each at the fastest kernel's rate (ours or SDPA's) measured
    at its prefix or the next longer one (prefill_rates, prompt_attention_s: "attention_s"; with our kernel's rates,
    "attention_ours_s"), and each decode-only step at the pace of a step of nothing but reads
    (set AK, "decode_floor_s"); the floor with our kernel's attention rates ("floor_ours_s")
    and with attention at the GEMM rate ("strict_floor_s"); the rates by prefix ("rates",
    prefill_rates). Empty without the rows."""
    from . import runs
    from .campaign import PEER_PARALLEL_COMPARISON
    from .spec import RunSpec

    peer = peer_comparison(data, PEER_PARALLEL_COMPARISON)
    reads, rates_ = measured_for_read_kv(data), prefill_rates(data)
    if not len(peer) or "gemm_read_us" not in reads or not len(rates_):
        return {}
    closed = _frame(data, "paired/closed")
    ours = closed[(closed["comparison"] == PEER_PARALLEL_COMPARISON) & (closed["stat"] == "median")]
    row = ours.iloc[0]
    spec = RunSpec.build("closed", profile=row["profile"], workload=row["workload"],
                         batch_size=int(row["batch_size"]), seed=int(row["seed"]))
    cfg = _model()
    specs = runs.spec_workload(spec, row["workload"], int(row["batch_size"]), int(row["seed"]), cfg.vocab_size)
    prompts = [len(s.prompt) for s in specs]
    sampled = sum(s.max_new_tokens for s in specs)
    positions = sum(prompts) + sampled - len(specs)  # the last sampled token is never fed back
    embed = cfg.vocab_size * cfg.hidden_size
    gemm_flop = 2 * (steps.parameters(cfg) - embed) * positions + 2 * embed * sampled
    chunk = int(row["chunk_tokens"])
    attention_flop, attention_s = prompt_attention_s(prompts, rates_["best"] * 1e12, chunk, cfg)
    decode_floor = (reads["read_us"] * reads["layers"] + reads["gemm_read_us"]) * 1e-6
    steps_ = ours[["wall_s", "n_mixed_steps", "total_mixed_step_s", "n_decode_steps", "total_decode_step_s"]].median()
    peer_s = float(peer.loc[peer["engine"] == "transformers", "wall_s"].iloc[0])
    passes = _frame(data, "paired/peer")
    passes = passes[(passes["workload"] == "mixed_fixed") & (passes["batch_size"] == 128) & (passes["stat"] == "median")]
    m = {"peer_s": peer_s, "peer_leases": int(len(passes)), "peer_lo_s": float(passes["wall_s"].min()),
         "peer_hi_s": float(passes["wall_s"].max()), "budget_hi_s": float(passes["wall_s"].max()) / PEER_TARGET,
         "budget_s": peer_s / PEER_TARGET, "ours_s": float(steps_["wall_s"]),
         "n_mixed": int(steps_["n_mixed_steps"]), "mixed_s": float(steps_["total_mixed_step_s"]),
         "n_decode": int(steps_["n_decode_steps"]), "decode_s": float(steps_["total_decode_step_s"]),
         "requests": len(specs), "prompt_tokens": sum(prompts), "sampled": sampled, "chunk": chunk,
         "gemm_flop": gemm_flop, "gemm_flops": rates(data).gemm_flops, "attention_flop": attention_flop,
         "attention_s": attention_s, "attention_ours_s": prompt_attention_s(prompts, rates_["ours"] * 1e12, chunk, cfg)[1],
         "rates": rates_, "decode_floor_s": decode_floor}
    m |= {"gemm_s": gemm_flop / m["gemm_flops"], "decode_steps_s": m["n_decode"] * decode_floor}
    m["floor_s"] = m["gemm_s"] + m["attention_s"] + m["decode_steps_s"]
    # the same with attention at the GEMM rate too: no attention kernel has come near it here
    m["strict_floor_s"] = m["gemm_s"] + attention_flop / m["gemm_flops"] + m["decode_steps_s"]
    m["floor_ours_s"] = m["gemm_s"] + m["attention_ours_s"] + m["decode_steps_s"]  # our prefill kernel's rates
    return m


def measured_for_prefill_long(data: Path) -> dict:
    """What set AN (the prefill sweep after longer prefixes) is graded on
    (grading.prefill_long_grades): roofline/prefill_long at its newest commit, per case
    (keys cached before the chunk) the engine's launch shape ("engine") and the sweep's fastest
    ("best"), each a row with its µs, TFLOP/s and shape, the commit and the shapes timed a case.
    Empty without rows."""
    sweep = _frame(data, "roofline/prefill_long")
    if not len(sweep):
        return {}
    sweep = _newest_commit(sweep)
    sweep = sweep[sweep["median_ms"].notna() & sweep["block_m"].notna()]
    shape = sweep[["block_m", "block_n", "num_warps", "num_stages"]].astype(int).apply(tuple, axis=1)
    cases = {}
    for case, g in sweep.groupby("case"):
        engine = g[shape[g.index] == ENGINE_PREFILL_SHAPE]
        cases[int(case.split()[-1])] = {"engine": engine.iloc[0] if len(engine) else None,
                                        "best": g.loc[g["median_ms"].idxmin()], "shapes": int(len(g))}
    return {"cases": dict(sorted(cases.items())), "commit": str(sweep["git_commit"].iloc[0])}


def measured_for_split_prefill(data: Path) -> dict:
    """What set AO (prompt attention split over programs, fusedlib.bench.split_prefill) is graded
    on (grading.split_prefill_grades): roofline/split_prefill at its newest commit, per cached
    prefix ("cases", by keys before the chunk): our packed kernel's µs ("ours_us"), the fastest
    SDPA backend's ("sdpa_us"), every split row ("splits": splits, block_m, µs, TFLOP/s) and the
    fastest of them ("best"), and the commit. Empty without rows."""
    df = _frame(data, "roofline/split_prefill")
    if not len(df):
        return {}
    df = _newest_commit(df)
    df = df[df["median_ms"].notna()].assign(us=lambda d: d["median_ms"] * 1e3)
    cases = {}
    for cached, g in df.groupby("cached"):
        split = g[g["kernel"] == "split"].assign(splits=lambda d: d["splits"].astype(int),
                                                   block_m=lambda d: d["block_m"].astype(int))
        cases[int(cached)] = {"ours_us": float(g.loc[g["kernel"] == "ours", "us"].iloc[0]),
                              "sdpa_us": float(g.loc[g["kernel"].str.startswith("sdpa"), "us"].min()),
                              "splits": split[["splits", "block_m", "us", "tflops"]].reset_index(drop=True),
                              "best": split.loc[split["us"].idxmin()]}
    return {"cases": dict(sorted(cases.items())), "commit": str(df["git_commit"].iloc[0])}


def measured_for_runs(data: Path) -> dict:
    """What set AS (the engine's packed kernel taking runs, not kept) is graded on
    (grading.runs_grades): roofline/prefill_runs's first commit ("first", the run the predictions
    name: per cached prefix the default's µs "runs_us", one run's "one_us", the faster SDPA
    backend's "sdpa_us" and runs over one run, "ratio"; "first_commit"); the newest
    roofline/prefill_runs_parts (runs past a tile's count exiting before the tile's loads), µs
    per cached prefix (rows) and kernel (columns), "parts" and "parts_commit"; the
    census A/B of roofline/runs_ab ("lease", indexed by (role, step)); and our closed passes of
    roofline/closed_ab ("closed": per arm the medians over rounds of the pass's wall and its
    mixed steps' summed wall and median GPU time, commits, and new/base wall paired by round).
    Keys are missing where the rows are."""
    m = {}
    runs = _frame(data, "roofline/prefill_runs")
    if not len(runs):
        return m
    runs = runs[runs["median_ms"].notna()].assign(us=lambda d: d["median_ms"] * 1e3)
    commit = runs.sort_values("timestamp")["git_commit"].iloc[0]
    r = runs[runs["git_commit"] == commit].pivot_table(index="cached", columns="kernel", values="us")
    m["first"] = pd.DataFrame({"runs_us": r["ours"], "one_us": r["ours, one run"],
                               "sdpa_us": r[[c for c in r.columns if c.startswith("sdpa")]].min(axis=1)}
                              ).assign(ratio=lambda d: d["runs_us"] / d["one_us"])
    m["first_commit"] = str(commit)
    parts = _frame(data, "roofline/prefill_runs_parts")
    if len(parts):
        parts = _newest_commit(parts[parts["median_ms"].notna()])
        m["parts"] = parts.assign(us=parts["median_ms"] * 1e3).pivot_table(index="cached", columns="kernel", values="us")
        m["parts_commit"] = str(parts["git_commit"].iloc[0])
    ab = census_ab(data, "runs_ab")
    if len(ab):
        m["lease"] = ab[ab["boot_id"] == ab["boot_id"].iloc[-1]].set_index(["role", "step"])
    closed = _frame(data, "roofline/closed_ab")
    if len(closed):
        arm, cmp = _arms_by_round(closed[closed["stat"] == "median"], "wall_s")
        m["closed"] = {"ratio": cmp.ratio, "lo": cmp.lo, "hi": cmp.hi, "n": cmp.n} | {
            f"{a}_{k}": v for a, g in arm.items() for k, v in (
                ("commit", str(g["git_commit"].iloc[0])), ("wall_s", g["wall_s"].median()),
                ("mixed_s", g["total_mixed_step_s"].median()), ("mixed_gpu_ms", g["median_mixed_step_gpu_s"].median() * 1e3))}
    return m


def measured_for_split_parts(data: Path, stem: str = "roofline/split_prefill_parts") -> dict:
    """What sets AP and AQ (the split probe with and without its merge, and merged by tile) are
    graded on (grading.split_parts_grades, split_merge_grades): `stem` (AP's
    split_prefill_parts, AQ's split_prefill_merge) at its newest commit, per cached prefix, our
    packed kernel's µs ("ours_us") and by (kernel, splits, block_m) the probe's µs and TFLOP/s
    ("probe", kernel "split" merged by row, "split, merged by tile" or "split kernel alone"),
    and the commit. Empty without rows."""
    df = _frame(data, stem)
    if not len(df):
        return {}
    df = _newest_commit(df)
    df = df[df["median_ms"].notna()].assign(us=lambda d: d["median_ms"] * 1e3)
    probe = df[df["kernel"].str.startswith("split")].astype({"splits": int, "block_m": int})
    return {"ours_us": df[df["kernel"] == "ours"].set_index("cached")["us"],
            "probe": probe.set_index(["cached", "kernel", "splits", "block_m"])[["us", "tflops"]],
            "commit": str(df["git_commit"].iloc[0])}


# The scorecard's step figures (set AT), by key: what each one is.
SCORECARD_FIGURES = {
    "decode_gpu_ms": "decode step, GPU time", "kernels_per_layer": "decode step, kernels per layer",
    "mixed_gpu_ms": "mixed step alone, GPU time", "loop_decode_ms": "decode step in the serving loop",
    "loop_mixed_ms": "mixed step in the serving loop",
    **{f"attention_{k}k": f"decode attention at {k}k context" for k in (1, 2, 4)}}


def measured_for_scorecard(data: Path) -> dict:
    """What set AT (the engine measured again on one lease) is graded on
    (grading.scorecard_grades), and the book's scorecard: "figures", per SCORECARD_FIGURES key,
    the figure measured again ("again": the census of configuration 6 in roofline/scorecard_census,
    the median over its processes; the loop's configuration-6 medians over its rounds in
    roofline/scorecard_loop; decode attention at the engine's launch shape after the clean-L2 flush
    in roofline/scorecard_attention, its share of the copy rate) beside the figure the book
    published for it ("published": set L's kept lease for the decode step, set R's lease for the
    mixed step alone, set Q's loop for the decode step and set R's for the mixed one, set H's
    latest flush sweep at the engine's shape) and the set that published it ("source"); the copy
    of the same bytes at 1k as a share of the copy rate ("copy_1k"); set R's peer bracket
    ("peer", None without it); the commit and the census's processes. Empty without the
    scorecard's rows."""
    census_rows = _newest_boot(data, "roofline/scorecard_census")
    attention = _newest_boot(data, "roofline/scorecard_attention")
    loop = measured_for_loop(data, "scorecard_loop")
    if census_rows.empty or attention.empty or not loop:
        return {}
    census_ = census_rows[census_rows["config"] == PARALLEL].groupby("step")[
        ["gpu_ms_median", "kernels_per_layer"]].median()
    clean = attention[(attention["l2_flush"] == "read") & attention["median_ms"].notna()]
    shares = clean[clean["what"] == "balanced"].set_index("context")["fraction_of_copy"]
    again = {"decode_gpu_ms": census_.loc["decode", "gpu_ms_median"],
             "kernels_per_layer": census_.loc["decode", "kernels_per_layer"],
             "mixed_gpu_ms": census_.loc["mixed", "gpu_ms_median"],
             "loop_decode_ms": loop["steps"].loc["decode", "parallel_interval_ms"],
             "loop_mixed_ms": loop["steps"].loc["mixed", "parallel_interval_ms"],
             **{f"attention_{c // 1024}k": shares.loc[c] for c in (1024, 2048, 4096)}}
    published, source = {}, {}
    kept = measured_for_set_l(data).get("kept")
    if kept is not None:
        dec = kept.loc[(SHAPE_AB_ROLE, "decode")]
        published |= {"decode_gpu_ms": dec["new_gpu_ms"], "kernels_per_layer": dec["new_per_layer"]}
        source |= {"decode_gpu_ms": "L", "kernels_per_layer": "L"}
    prefill = measured_for_prefill(data)
    if "lease" in prefill:
        published["mixed_gpu_ms"] = prefill["lease"].loc[("second stream", "mixed"), "new_gpu_ms"]
        source["mixed_gpu_ms"] = "R"
    if "loop" in prefill:
        published["loop_mixed_ms"] = prefill["loop"]["steps"].loc["mixed", "parallel_interval_ms"]
        source["loop_mixed_ms"] = "R"
    peer = prefill.get("peer")  # set R's peer bracket, the scorecard's throughput row
    first_loop = measured_for_loop(data)
    if first_loop:
        published["loop_decode_ms"] = first_loop["steps"].loc["decode", "parallel_interval_ms"]
        source["loop_decode_ms"] = "Q"
    sweep = flush_sweep(data, -1)
    if len(sweep):
        at = sweep[sweep["l2_flush"] == "read"].set_index("context")
        for c in (1024, 2048, 4096):
            published[f"attention_{c // 1024}k"] = at.loc[c, "stream_us"] / at.loc[c, "default_us"]
            source[f"attention_{c // 1024}k"] = "H"
    figures = pd.DataFrame({"what": SCORECARD_FIGURES, "again": again})
    figures["published"], figures["source"] = pd.Series(published, dtype=float), pd.Series(source, dtype=object)
    copy = clean[(clean["what"] == "copy") & (clean["context"] == 1024)].iloc[0]
    return {"figures": figures, "copy_1k": float(copy["fraction_of_copy"]), "peer": peer,
            "commit": str(census_rows["git_commit"].iloc[0]), "processes": int(census_rows["round"].nunique()),
            "loop_rounds": int(loop["steps"].loc["decode", "n"])}


def measured_for_final(data: Path) -> dict:
    """What set AU (fusion's gain with the engine the series ends on) is graded on
    (grading.final_grades): capacity_comparisons's rows for the final phase's pairs ("pairs") and
    the eight draws of seeds_final ("seeds"), and set E's same two comparisons with whole graphs
    alone ("whole_pairs", "whole_seeds"); the final pairs' commit ("commit"). Keys are missing
    where rows are."""
    from .campaign import FINAL_FUSED_VS_CHUNKED, FINAL_SEEDS, WHOLE_FUSED_VS_CHUNKED, WHOLE_SEEDS

    pc = capacity_comparisons(data)
    if not len(pc):
        return {}
    pc = pc.set_index("comparison")
    names = {"pairs": FINAL_FUSED_VS_CHUNKED, "seeds": FINAL_SEEDS, "whole_pairs": WHOLE_FUSED_VS_CHUNKED,
             "whole_seeds": WHOLE_SEEDS}
    m = {key: pc.loc[name] for key, name in names.items() if name in pc.index}
    if "pairs" in m:
        runs = _frame(data, "paired/arrivals")
        m["commit"] = str(runs.loc[runs["comparison"] == FINAL_FUSED_VS_CHUNKED, "git_commit"].iloc[0])
    return m
