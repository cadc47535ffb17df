"""Part 12's page: the kernels beside the card's anchors (SDPA's fastest backend, a copy,
`torch.matmul`), a saturated run's GPU time by class, the capacity and the soak."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..stats import MISSING, Value, fixed, gain_span, ratio
from ..text import cell, finite, ms, pct, rate, sig, times
from . import chapter, part11
from .data import DATASHEETS, collect, devices, load, newest, per_rows, rates

CONFIG = "part12"
# The part's targets, set before its kernels were written: prompt attention on a fresh
# 4,096-token prompt at >= 320 TFLOP/s and >= 0.8x SDPA's fastest backend, a chunk after a
# prefix within 10% of the fresh prompt's rate; decode attention at 256 rows at >= 80% of a
# copy; each GEMM at >= 0.9x torch.matmul; capacity at >= 80% of the ceiling.
TARGET = {"prompt_tflops": 320.0, "prompt_vs_sdpa": 0.8, "chunk_vs_fresh": 0.9, "decode_copy": 0.8, "gemm": 0.9,
          "ceiling_share": 0.8}
CLASS_NAME = {"gemm": "linear-layer GEMMs", "lm_head": "LM head", "prompt_attention": "prompt attention",
              "decode_attention": "decode attention", "norm_rotary_act": "norms, rotary, activations",
              "other": "copies and sampling", "idle": "GPU idle between kernels"}
NEAR = 5.0  # decode shares this many points of a copy apart read as one (uneven rows' draws spread 7: NOTES.md)

tflops = lambda x: f"{sig(x)} TFLOP/s"  # noqa: E731


def _kernels(d: Path, kind: str) -> pd.DataFrame:
    """The newest code version's kernel rows of `kind`; none from a CPU (the interpreter's)."""
    k = load("kernels", d)
    k = k[k["device_name"] != "cpu"] if len(k) else k
    if not len(k):
        return k
    k = k[k["code_version"] == k.sort_values("time_utc")["code_version"].iloc[-1]]
    return k[k["kernel"] == kind].reset_index(drop=True)


def _versus(value: float | None, target: float, what: str, f, fine=None) -> str:
    """A figure against its target in words; where `f` rounds it onto the target, in `fine`'s digits
    so that its side shows."""
    if value is None:
        return f"(no rows to hold against the target of {f(target)})"
    shown = fine(value) if fine and f(value) == f(target) else f(value)
    return f"{shown}, {'at or above' if value >= target else 'short of'} the target of {f(target)} {what}".rstrip()


def _case(row) -> tuple:
    """A prompt row's pieces ((prefix, chunk), ...): several for a packed chunk of requests."""
    pieces = row.get("pieces")
    return tuple(map(tuple, pieces)) if isinstance(pieces, list) else ((int(row["prefix"]), int(row["chunk"])),)


def _label(case: tuple) -> str:
    if len(case) > 1:
        return f"{sum(c for _, c in case):,} packed, {len(case)} requests"
    return f"{case[0][1]:,} after {case[0][0]:,}" if case[0][0] else f"{case[0][1]:,} fresh"


@per_rows
def prompt(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """Prompt attention per case: the engine's tiles, part 11's shape, SDPA's fastest (no packed form)."""
    v = dict.fromkeys(("p12_prompt_tflops_4k", "p12_prompt_vs_sdpa_4k", "p12_prompt_chunk_tflops",
                       "p12_prompt_chunk_over_fresh", "p12_prompt_tiles_gain_4k", "p12_prompt_verdict",
                       "p12_kernel_device", "p12_prompt_packed_tflops", "p12_chunk_waves"), MISSING)
    k = _kernels(d, "prompt")
    if not len(k):
        return pd.DataFrame(), v
    v["p12_kernel_device"] = Value(None, devices(k))
    k = k.assign(case=[_case(r) for r in k.to_dict("records")])
    ours, small = k[k["default_tiles"].astype(bool)], k[~k["default_tiles"].astype(bool)]
    at = lambda df, case: df[df["case"] == case]  # noqa: E731
    one = lambda df, col: float(df[col].iloc[0]) if len(df) and pd.notna(df[col].iloc[0]) else None  # noqa: E731
    fresh4 = at(ours, ((0, 4096),))
    v["p12_prompt_tflops_4k"] = fixed(one(fresh4, "tflops"), tflops)
    vs = ratio(v["p12_prompt_tflops_4k"].value, one(fresh4, "sdpa_tflops"))
    v["p12_prompt_vs_sdpa_4k"] = fixed(vs, times)
    v["p12_prompt_chunk_tflops"] = fixed(one(at(ours, ((2048, 2048),)), "tflops"), tflops)
    over = ratio(v["p12_prompt_chunk_tflops"].value, v["p12_prompt_tflops_4k"].value)
    v["p12_prompt_chunk_over_fresh"] = fixed(over, times)
    v["p12_prompt_tiles_gain_4k"] = fixed(ratio(v["p12_prompt_tflops_4k"].value, one(at(small, ((0, 4096),)), "tflops")),
                                          times)
    v["p12_prompt_packed_tflops"] = fixed(one(ours[ours["case"].map(len) > 1], "tflops"), tflops)
    f2 = at(ours, ((0, 2048),))  # the engine's 2,048-token budget as one chunk
    if len(f2) and {"heads", "tiles", "device_name"} <= set(f2) and (
            sms := DATASHEETS.get(f2["device_name"].iloc[0], {}).get("sms")):
        tiles, heads = -(-int(one(f2, "context")) // int(f2["tiles"].iloc[0].split("x")[0])), one(f2, "heads")
        v["p12_chunk_waves"] = Value(None, f"a {one(f2, 'context'):,.0f}-token chunk's {tiles} query tiles by "
                                           f"{heads:.0f} heads fill the card's {sms} multiprocessors {tiles * heads / sms:.2f} times over")
    fine_times = lambda x: f"{x:.3f}×"  # noqa: E731
    v["p12_prompt_verdict"] = Value(None, "; ".join([
        f"the fresh 4,096-token prompt runs at {_versus(v['p12_prompt_tflops_4k'].value, TARGET['prompt_tflops'], '', tflops)}",
        f"against SDPA's fastest, at {_versus(vs, TARGET['prompt_vs_sdpa'], '', times, fine_times)}",
        f"the chunk after a prefix at {_versus(over, TARGET['chunk_vs_fresh'], 'of the fresh 4,096-token rate', times, fine_times)}"]) + ".")
    table = pd.DataFrame({
        "prompt (tokens)": ours["case"].map(_label), "128×128 tiles (TFLOP/s)": ours["tflops"].map(sig),
        "32×64 tiles (TFLOP/s)": [cell(one(at(small, c), "tflops")) for c in ours["case"]],
        "SDPA's fastest (TFLOP/s)": [f"{sig(t)} ({b})" if isinstance(b, str) else "-"
                                     for t, b in zip(ours["sdpa_tflops"], ours["sdpa_backend"])],
        "ours / SDPA": (ours["tflops"] / ours["sdpa_tflops"].astype(float)).map(lambda x: cell(x, times)),
        "largest error": ours["max_abs_err"].map(lambda x: f"{x:.1e}")})
    return table, v


@per_rows
def decode(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """Decode attention's speed as a share of a copy of the same bytes, per rows and context."""
    v = dict.fromkeys(("p12_decode_copy_256_1k", "p12_decode_copy_256_4k", "p12_decode_copy_256_mixed",
                       "p12_decode_verdict"), MISSING)
    k = _kernels(d, "decode")
    if not len(k):
        return pd.DataFrame(), v
    mixed = k.get("contexts", pd.Series(None, index=k.index)).eq("mixed")  # rows before the case: none
    frac = {(int(r), int(c)): f for r, c, f in zip(k["rows"], k["context"], k["fraction_of_copy"]) if pd.notna(c)}
    tenths = lambda x: f"{x:.1f}%"  # noqa: E731  (the 80% target's side shows in the tenths)
    for (r, c), name in (((256, 1024), "256_1k"), ((256, 4096), "256_4k")):
        v[f"p12_decode_copy_{name}"] = fixed(frac.get((r, c)) and 100 * frac[(r, c)], tenths)
    v["p12_decode_copy_256_mixed"] = fixed(100 * k[mixed & (k["rows"] == 256)]["fraction_of_copy"].max(), pct)
    low = min((frac[k_] for k_ in frac if k_[0] == 256), default=None)
    v["p12_decode_verdict"] = Value(None, "the lower of the two, " + _versus(
        low and 100 * low, 100 * TARGET["decode_copy"], "of a copy", tenths))
    context = k["context"].map("{:,.0f}".format).mask(mixed, k.get("context_mean", k["context"]).map(
        "mixed, mean {:,.0f}".format))
    table = pd.DataFrame({"rows": k["rows"].astype(int), "context (tokens)": context,
                          "KV read, one layer (MB)": (k["kv_bytes"] / 1e6).map(sig), "kernel (µs)": k["gpu_us"].map(sig),
                          "copy (µs)": k["copy_us"].map(sig), "share of copy speed": (100 * k["fraction_of_copy"]).map(tenths)})
    return table, v


@per_rows
def gemms(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """Each linear layer at the mixed step's shapes beside `torch.matmul` on the same shapes."""
    v = {"p12_gemm_verdict": MISSING}
    k = _kernels(d, "gemm")
    if not len(k):
        return pd.DataFrame(), v
    below = k[k["fraction_of_matmul"] < TARGET["gemm"]]
    v["p12_gemm_verdict"] = Value(None, (
        f"Every layer runs at or above {times(TARGET['gemm'])} of torch.matmul" if not len(below) else
        f"{', '.join(below['layer'])} {'runs' if len(below) == 1 else 'run'} below {times(TARGET['gemm'])} of "
        "torch.matmul" + (", all through cuBLAS" if below["calls_cublas"].astype(bool).all() else "")))
    table = pd.DataFrame({"layer": k["layer"], "M × N × K": [f"{m:,.0f} × {n:,.0f} × {kk:,.0f}" for m, n, kk in zip(k["m"], k["n"], k["k"])],
                          "ours (TFLOP/s)": k["tflops"].map(sig), "torch.matmul (TFLOP/s)": k["matmul_tflops"].map(sig),
                          "ours / matmul": k["fraction_of_matmul"].map(lambda x: f"{x:.2f}×"),
                          "cuBLAS (by size)": k["calls_cublas"].map(lambda x: "yes" if x else "no")})
    return table, v


@per_rows
def capacity(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """Capacity and fusion's gain at part 11's best setting with part 12's kernels, beside part 11's."""
    # the names part 12's predictions grade (data/predictions_part12.yaml) for two of them
    named = {"p12_capacity_fused": "p12_best_fused_steady_rate", "p12_fusion_gain": "p12_fusion_gain_best"}
    v = {named.get(k, k): x for k, x in chapter.capacity(CONFIG, d=d)[1].items()}
    p11 = part11.scale(d=d)[1]
    s = newest("capacity", d, CONFIG)
    best = (p11["p11_best_batch"].value, p11["p11_best_budget"].value)
    same = len(s) and {(b, c) for b, c in zip(s["max_batch"], s["chunk_tokens"])} == {best}  # else no comparison
    up = ratio(v["p12_best_fused_steady_rate"].value, p11["p11_best_fused_rate"].value) if same else None
    a, b = p11["p11_best_fused_rate"], v["p12_best_fused_steady_rate"]
    apart = up is not None and None not in (a.hi, b.lo) and (b.lo > a.hi or b.hi < a.lo)
    there, here = (chapter.window_skip(r) for r in (newest("scale", d), s))  # completions left out at the start
    notes = [f"windows left out {there:,} and {here:,} first completions, not one method"] * (there != here) + \
        ["intervals overlap: not resolved"] * (not apart)  # the offered rates: the page's method
    v["p12_vs_part11"] = fixed(up and 100 * (up - 1), lambda x: pct(x, True) + (f" ({'; '.join(notes)})" if notes else ""))
    ceiling = part11.ceiling(d=d)[1]["p11_ceiling_rate"].value
    share = ratio(v["p12_best_fused_steady_rate"].value, ceiling)
    v["p12_ceiling_share"] = fixed(share and 100 * share, pct)
    v["p12_ceiling_verdict"] = Value(None, "these rows set no ceiling" if share is None else (
        f"{'at or above' if share >= TARGET['ceiling_share'] else 'short of'} the four fifths "
        f"({rate(TARGET['ceiling_share'] * ceiling)}) the part aimed at"))
    small, big = p11["p11_fusion_gain_best"], v["p12_fusion_gain_best"]
    if small.lo is None or big.lo is None:
        trend = "These rows hold no paired gain at both kernels to compare."
    elif big.lo > small.hi or big.hi < small.lo:
        trend = (f"Fusion's gain {'rose' if big.lo > small.hi else 'fell'} from {gain_span(small)} with part 11's "
                 f"kernels to {gain_span(big)}.")
    else:
        trend = (f"Fusion's gain went from {gain_span(small)} with part 11's kernels to {gain_span(big)}; the intervals "
                 "overlap, so these rows do not say it changed.")
    v["p12_fusion_trend"] = Value(None, trend)
    # The sweep's plateau, in the words of the other chapters; how far apart each pair's runs came.
    v["p12_sweep_trend"] = chapter.plateau(s, v["p12_best_fused_steady_rate"]) if len(s) else MISSING
    v["p12_pair_note"] = MISSING
    if len(s):
        at = s[s["rate"] == s["rate"].max()].assign(t=lambda x: pd.to_datetime(x["time_utc"]))
        gap = at.groupby("round")["t"].agg(lambda t: (t.max() - t.min()).total_seconds()).max() / 60
        v["p12_pair_note"] = Value(gap, f"One pair's two runs came {gap:.1f} min apart, not back to back." if gap > 2
                                   else "Each pair's two runs ran back to back.")
    return pd.DataFrame(), v


def _census_classes(c: pd.DataFrame, config: str) -> pd.DataFrame | None:
    c = c[(c["config"] == config) & (c["record"] == "steady_class")] if len(c) and "record" in c else c.iloc[:0]
    return None if not len(c) or c["window_gpu_s"].isna().any() else c.set_index("kernel_class")  # None: no GPU time


def census_steps(d: str | Path | None = None) -> pd.DataFrame:
    """GPU ms a step by kernel class (rows), part 11's engine and part 12's (columns)."""
    c, out = newest("census", d), {}
    for name, config in (("part 11's kernels", "part11"), ("part 12's", CONFIG)):
        if (t := _census_classes(c, config)) is not None:
            out[name] = t["gpu_s"] / float(t["window_steps"].iloc[0]) * 1e3
    return pd.DataFrame(out).reindex(CLASS_NAME).rename(index=CLASS_NAME).dropna(how="all") if out else pd.DataFrame()


@per_rows
def census(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """A saturated run's GPU time by kernel class and rate, part 11's engine (before) beside part 12's (after);
    after, each class's time per request beside the ceiling's price for its work."""
    v = dict.fromkeys(("p12_census_step_ms", "p12_census_steps", "p12_census_after",
                       "p12_engine_prompt_tflops", "p12_engine_decode_copy", "p12_engine_gemm_tflops",
                       "p12_request_ms", "p12_distance",
                       "p12_census_step_ms_before", "p12_census_norm_ms", "p12_census_gemm_share_move"), MISSING)
    c = newest("census", d)
    by, before = _census_classes(c, CONFIG), _census_classes(c, "part11")
    cap = capacity(d=d)[1]["p12_best_fused_steady_rate"].value
    bw, gemm = rates(d)
    if by is None or not (cap and bw and gemm):
        return pd.DataFrame(), v
    steps, gpu = int(by["window_steps"].iloc[0]), float(by["window_gpu_s"].iloc[0])
    count = lambda x: f"{x:,.0f}"  # noqa: E731
    v["p12_census_steps"], v["p12_census_after"] = fixed(steps, count), fixed(by["completed_before_window"].iloc[0], count)
    v["p12_census_step_ms"] = fixed(gpu / steps * 1e3, ms)
    v["p12_engine_prompt_tflops"] = fixed(by.at["prompt_attention", "tflops"], tflops)
    v["p12_engine_gemm_tflops"] = fixed(by.at["gemm", "tflops"], tflops)
    v["p12_engine_decode_copy"] = fixed(100 * by.at["decode_attention", "tb_s"] * 1e12 / bw, pct)
    v["p12_census_norm_ms"] = fixed(float(by.at["norm_rotary_act", "gpu_s"]) / steps * 1e3, ms)
    if before is not None:
        step_ms = float(before["window_gpu_s"].iloc[0]) / float(before["window_steps"].iloc[0]) * 1e3
        v["p12_census_step_ms_before"] = fixed(step_ms, ms)
        v["p12_census_gemm_share_move"] = fixed(100 * (by.at["gemm", "share"] - before.at["gemm", "share"]),
                                                lambda x: f"{x:+.1f} points")
    cost, request_s = part11.request_cost(), 1 / cap
    v["p12_request_ms"] = fixed(request_s * 1e3, ms)
    # What the ceiling charges each class for a request: its FLOPs at the GEMM rate, or its KV
    # bytes at the copy rate; nothing for the classes it does not price.
    price = {"gemm": cost["linear"] / gemm, "lm_head": cost["lm_head"] / gemm,
             "prompt_attention": cost["prompt_attention"] / gemm, "decode_attention": cost["kv_bytes"] / bw}

    def step(t: pd.DataFrame, name: str) -> str:  # GPU time a step (share of the step), and the class's rate
        ms_step, decode = float(t.at[name, "gpu_s"]) / float(t["window_steps"].iloc[0]) * 1e3, name == "decode_attention"
        out = f"{sig(ms_step)} ({pct(100 * float(t.at[name, 'share']))})"
        if name not in price:
            return out
        achieved = t.at[name, "tb_s" if decode else "tflops"]
        return out + f", {sig(achieved)} {'TB/s' if decode else 'TFLOP/s'} ({pct(1e14 * achieved / (bw if decode else gemm))})"

    rows, beyond = [], {}
    for name in CLASS_NAME:
        spent, priced = float(by.at[name, "share"]) * request_s, price.get(name, 0.0)
        beyond[name] = spent - priced
        rows.append({"class": CLASS_NAME[name],
                     "before: ms a step (share), rate": step(before, name) if before is not None else "-",
                     "after: ms a step (share), rate": step(by, name),
                     "per request (ms)": sig(spent * 1e3), "ceiling's price (ms)": sig(priced * 1e3) if priced else "-",
                     "beyond it (ms)": sig(beyond[name] * 1e3)})
    top = sorted(beyond, key=beyond.get, reverse=True)[:3]
    v["p12_distance"] = Value(None, ", ".join(f"{CLASS_NAME[n]} ({ms(beyond[n] * 1e3)})" for n in top))
    return pd.DataFrame(rows), v


@per_rows
def soak(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """The soak: requests lost, the pool after, peak memory at 1,000 completions and at the end,
    kernels compiled after construction; its steady rate beside the pairs'."""
    v = dict.fromkeys(("p12_soak_n", "p12_soak_rate", "p12_soak_verdict", "p12_soak_mem", "p12_soak_steady",
                       "p12_soak_vs_pairs", "p12_gates"), MISSING)
    g = newest("gates", d, CONFIG)  # part 12's gates of their newest code version
    if len(g) and "chunk_tokens" in g:
        v["p12_gates"] = Value(None, ", ".join(f"{int(x['passed'].sum())} of {len(x)} pass at {b:,.0f}"
                                               for b, x in g.groupby("chunk_tokens")) + " tokens of budget")
    s = load("soak", d)
    if not len(s):
        return pd.DataFrame(), v
    r = s.sort_values("time_utc").iloc[-1]
    v["p12_soak_n"], v["p12_soak_rate"] = fixed(r["n_requests"], lambda x: f"{x:,.0f}"), fixed(r["rate"], rate)
    clean = int(r["n_lost"]) == 0 and bool(r["pool_free_after"]) and int(r["kernels_compiled_after_construction"]) == 0
    v["p12_soak_verdict"] = Value(None, (
        f"{int(r['n_lost'])} admitted requests lost, the pool {'wholly free' if r['pool_free_after'] else 'not free'} "
        f"after, {int(r['kernels_compiled_after_construction'])} kernels compiled after construction: "
        + ("nothing lost at scale." if clean else "the soak failed.")))
    early, end = r["peak_mem_1k_bytes"], r["peak_mem_end_bytes"]
    if finite(early) and finite(end):  # a CPU's run has no GPU memory to report
        change = (end - early) / early
        v["p12_soak_mem"] = Value(change, f"{early / 2**30:.2f} GiB after {r['mem_checkpoint_completions']:,.0f} "
                                          f"completions and {end / 2**30:.2f} GiB at the end ({100 * change:+.2f}%)")
    v["p12_soak_steady"] = fixed(r["steady_rate"], rate)
    pairs = capacity(d=d)[1]["p12_best_fused_steady_rate"]
    if pairs.value is not None and pairs.hi is not None:
        where = "above" if r["steady_rate"] > pairs.hi else "below" if r["steady_rate"] < pairs.lo else "inside"
        v["p12_soak_vs_pairs"] = Value(None, f"{where} the pairs' interval ({sig(pairs.lo)} to {sig(pairs.hi)})")
    return pd.DataFrame(), v


def _decode_reading(mixed: float | None, fixed_1k: float | None, engine: float | None) -> str:
    """Which cause of decode's lower share in the engine the mixed-context case, timed alone, leaves standing."""
    if None in (mixed, fixed_1k, engine):
        return "rows of uneven context and the prompt's work on the other stream both fit."
    side = lambda x: f"within {NEAR:g} points of" if abs(mixed - x) <= NEAR else "above" if mixed > x else "below"  # noqa
    to_engine, to_fixed = side(engine) + " the in-engine figure", side(fixed_1k) + " the fixed 1,024-token case"
    if fixed_1k - NEAR <= mixed <= engine + NEAR:
        why = f"{to_engine} and {to_fixed}: these rows do not separate the two causes"
    elif mixed <= engine + NEAR:
        why = f"{to_engine}: uneven contexts account for the gap"
    elif mixed >= fixed_1k - NEAR:
        why = f"{to_fixed}: uneven contexts do not account for the gap, leaving the prompt's work on the other stream"
    else:
        why = (f"between the fixed 1,024-token case's {fixed_1k:.1f}% and the in-engine {pct(engine)}: uneven contexts "
               "account for part of the gap")
    return f"at the mixed workload's uneven contexts it reads at {mixed:.1f}% alone, {why}."  # tenths, as its table


@per_rows
def readings(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """The page's conclusions and the ballpark's arithmetic, each chosen from its figures."""
    pr, cen, cap, so, dec = prompt(d=d)[1], census(d=d)[1], capacity(d=d)[1], soak(d=d)[1], decode(d=d)[1]
    cost, p11 = part11.request_cost(), part11.scale(d=d)[1]["p11_best_fused_rate"].value
    v = {"p12_prompt_target": fixed(TARGET["prompt_tflops"], tflops),
         "p12_attn_ms_at_target": fixed(cost["prompt_attention"] / (TARGET["prompt_tflops"] * 1e12) * 1e3, ms),
         "p12_request_ms_before": fixed(p11 and 1e3 / p11, ms),
         "p12_decode_reading": Value(None, _decode_reading(*(x.value for x in (
             dec["p12_decode_copy_256_mixed"], dec["p12_decode_copy_256_1k"], cen["p12_engine_decode_copy"]))))}
    fresh, chunk = pr["p12_prompt_vs_sdpa_4k"].value, pr["p12_prompt_chunk_tflops"].value
    k = _kernels(d, "prompt")
    c = k[(k["prefix"] > 0) & k["default_tiles"].astype(bool)] if len(k) else k
    sdpa_chunk = float(c["sdpa_tflops"].iloc[0]) if len(c) else None
    v["p12_kernel_reading"] = MISSING if fresh is None else Value(None, (
        "A chunk after a cached prefix runs "
        + (f"at {times(chunk / sdpa_chunk)} SDPA's fastest, which takes an explicit mask there."
           if chunk and sdpa_chunk and chunk > sdpa_chunk
           else f"at {times(chunk / sdpa_chunk)} the fastest." if chunk and sdpa_chunk else "in no row.")))
    inside = ratio(cen["p12_engine_prompt_tflops"].value, pr["p12_prompt_tflops_4k"].value)
    packed = ratio(cen["p12_engine_prompt_tflops"].value, pr["p12_prompt_packed_tflops"].value)
    v["p12_engine_reading"] = MISSING if inside is None else Value(None, (
        f"Inside the engine prompt attention runs at {times(inside)} the fresh-prompt benchmark's rate"
        + (f" and {times(packed)} a packed chunk's like the engine's" if packed else "")
        + (f"; one untested cause fits: {pr['p12_chunk_waves'].text}." if inside < 0.75 and pr["p12_chunk_waves"] is not MISSING
           else ".")))
    s, pairs = so["p12_soak_steady"].value, cap["p12_best_fused_steady_rate"]
    if s is None or pairs.hi is None:
        v["p12_soak_caveat"] = Value(None, "These rows hold no soak and pairs to compare.")
    elif s > pairs.hi:
        v["p12_soak_caveat"] = Value(None, (
            f"The soak's ({so['p12_soak_steady'].text}) is {so['p12_soak_vs_pairs'].text} at the same offered "
            "rate: the pairs' shorter runs open their window while the first batch, admitted together, still moves "
            "in step. Which reading is the capacity these rows do not resolve; the pairs' is graded."))
    else:
        v["p12_soak_caveat"] = Value(None, f"The soak's steady rate ({so['p12_soak_steady'].text}) is "
                                           f"{so['p12_soak_vs_pairs'].text}" + (
                                               ": the long run and the pairs agree." if s >= pairs.lo else
                                               ", though both were offered the same rate; these rows do not say why."))
    return pd.DataFrame(), v


def figures(d: str | Path | None = None):
    return collect(prompt=prompt(d=d), decode=decode(d=d), gemms=gemms(d=d), capacity=capacity(d=d),
                   census=census(d=d), soak=soak(d=d), readings=readings(d=d))


def sweep(d: str | Path | None = None) -> pd.DataFrame:
    """Part 12's sweep (offered rate -> capacity, both engines), medians over rounds."""
    s = chapter.capacity_sweeps(d)
    return s[s["config"] == CONFIG] if len(s) else s
