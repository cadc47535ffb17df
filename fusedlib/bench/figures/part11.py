"""Part 11's page: the batch and budget grid, the host at batch 256, the ceiling, the peer."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from .. import metrics
from ..stats import MISSING, Value, fixed, gain, gain_span, median, ratio
from ..text import cell, ms, pct, rate, sig, times
from ..workloads import MIXED_BUDGET, MIXED_LENGTHS
from . import chapter, part10
from .data import SIZES, STATIC, collect, datasheet, devices, load, newest, per_rows, rates
from .not_kept import not_kept

SETTING = ["engine", "max_batch", "chunk_tokens"]


def scale_settings(d: str | Path | None = None) -> pd.DataFrame:
    """Per engine, batch and budget of part 11's newest rows, the capacity and the latency at that
    rate: at the setting's paired rate (the most rounds) if it has one, else the offered rate that
    served most."""
    m = chapter.run_medians(newest("scale", d), SETTING)
    return m.sort_values(["n", "capacity"]).groupby(SETTING).tail(1).sort_values(SETTING).reset_index(drop=True) if len(m) else m


def scale_sweeps(d: str | Path | None = None) -> pd.DataFrame:
    """Part 11's newest open-loop runs, medians over rounds per engine, setting and offered rate."""
    return chapter.sweep_table(newest("scale", d))


def best_sweep(d: str | Path | None = None) -> pd.DataFrame:
    """The sweep (offered rate -> capacity, both engines) at the fused engine's best setting."""
    return chapter.sweep_table(best_rows(d))


def best_rows(d: str | Path | None = None) -> pd.DataFrame:
    """Part 11's newest rows at the fused engine's best setting (none until it has one)."""
    v, s = scale(d=d)[1], newest("scale", d)
    b, t = v["p11_best_batch"].value, v["p11_best_budget"].value
    return s[(s["max_batch"] == b) & (s["chunk_tokens"] == t)] if b is not None else s.iloc[:0]


def fused_settings(d: str | Path | None = None) -> pd.DataFrame:
    """`scale_settings` of the fused engine: the grid's steady rates."""
    t = scale_settings(d)
    return t[t["engine"] == "fused"] if len(t) else t


def _arrivals(s: pd.DataFrame) -> Value:
    """The arrivals per run of a set of part 11's rows, by batch size, in words."""
    arrivals = s.groupby("max_batch")["n_requests"].median() if len(s) and "n_requests" in s else pd.Series(dtype=float)
    if not len(arrivals):
        return MISSING
    by_count = arrivals.groupby(arrivals).groups  # arrivals -> the batch sizes that ran them
    sizes = lambda b: f"batch {b[0]:.0f}" if len(b) == 1 else f"batches {', '.join(f'{x:.0f}' for x in b[:-1])} and {b[-1]:.0f}"  # noqa: E731
    return Value(float(arrivals.min()), ", ".join(f"{n:,.0f} at {sizes(list(batches))}" for n, batches in by_count.items()))


@per_rows
def scale(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """The fused engine's best setting on the newest rows, its capacity and fusion's gain there."""
    v = dict.fromkeys(("p11_n_requests", "p11_best_n_requests", "p11_best_fused_rate", "p11_best_setting", "p11_best_batch",
                       "p11_best_budget", "p11_chunked_at_best", "p11_fusion_gain_best", "p11_fusion_verdict", "p11_vs_small",
                       "p11_goodput_best", "p11_ttft_p99_best", "p11_itl_p99_best", "p11_offered_rates", "p11_pair_rate",
                       "p11_capacity_method", "p11_plateau", "p11_grid_vs_p10"), MISSING)
    s = newest("scale", d)
    v |= {"p11_device": Value(None, devices(s)), "goodput_ttft": fixed(metrics.TTFT_SLO_S * 1e3, ms),
          "goodput_itl": fixed(metrics.ITL_SLO_S * 1e3, ms)}
    t = scale_settings(d)
    if not len(t):
        return pd.DataFrame(), v
    v["p11_n_requests"] = _arrivals(s)
    f = t[t["engine"] == "fused"]
    if len(f):
        b = f.loc[f["capacity"].idxmax()]
        at = s[(s["max_batch"] == b["max_batch"]) & (s["chunk_tokens"] == b["chunk_tokens"])]
        arrivals = at["n_requests"].median() if "n_requests" in at else None
        v["p11_best_n_requests"] = fixed(arrivals, lambda x: f"{x:,.0f}")
        here = at[at["rate"] == b["rate"]]
        v["p11_best_fused_rate"] = chapter.capacity_level(here[here["engine"] == "fused"]["steady_rate"], arrivals)
        v["p11_chunked_at_best"] = chapter.capacity_level(here[here["engine"] == "chunked"]["steady_rate"], arrivals)
        v["p11_best_setting"] = Value(None, f"batch {b['max_batch']:.0f}, budget {b['chunk_tokens']:,.0f} tokens")
        v["p11_best_batch"] = fixed(float(b["max_batch"]), lambda x: f"{x:.0f}")
        v["p11_best_budget"] = fixed(float(b["chunk_tokens"]), lambda x: f"{x:,.0f}")
        v["p11_pair_rate"] = fixed(float(b["rate"]), rate)
        v["p11_offered_rates"] = chapter.in_words(at[at["engine"] == "fused"]["rate"])
        v["p11_capacity_method"] = chapter.method_line(here, s)
        v["p11_plateau"] = chapter.plateau(at, v["p11_best_fused_rate"])
        m = chapter.run_medians(s[s["engine"] == "fused"], SETTING)
        g = m.loc[m["goodput_rate"].idxmax()]  # the runs that reached the most goodput, with what arrived (a cap below saturation)
        how = "below saturation, capped by the {} that arrived" if g["saturated"] == False else "with {} arriving"  # noqa: E712
        v["p11_goodput_best"] = Value(float(g["goodput_rate"]), f"{rate(g['goodput_rate'])} (batch {g['max_batch']:.0f}, budget "
                                      f"{g['chunk_tokens']:,.0f} tokens; {'one run' if g['n'] == 1 else f'{g.n} runs'}, "
                                      + how.format(rate(g["arrived"])) + ")")
        v["p11_ttft_p99_best"] = fixed(float(b["ttft_p99_s"]) * 1e3, ms)
        v["p11_itl_p99_best"] = fixed(float(b["itl_p99_s"]) * 1e3, ms)
        pr = chapter.pairs(at)  # without pairs, MISSING
        v["p11_fusion_gain_best"] = gain(pr["fused"], pr["chunked"], pr["seed"])
        v["p11_fusion_verdict"] = chapter.gain_verdict(v["p11_fusion_gain_best"])
        small = chapter.capacity("part10", d=d)[1]["p10_capacity_fused"]
        v["p11_vs_small"] = fixed(ratio(v["p11_best_fused_rate"].value, small.value), times)
        grid_cell = f[(f["max_batch"] == 32) & (f["chunk_tokens"] == 512)]  # part 10's engine, in the grid: one setting
        if len(grid_cell):
            c = grid_cell.iloc[0]
            where = "" if small.lo is None else f", hold it {'in' if small.lo <= c['capacity'] <= small.hi else 'out'}side their interval"
            v["p11_grid_vs_p10"] = Value(c["capacity"], f"The grid's 32-row, 512-token cell, part 10's engine on "
                                         f"{'one draw' if c['n'] == 1 else f'{c.n:.0f} draws'} of {c['n_requests']:,.0f} arrivals, "
                                         f"served {rate(c['capacity'])}; part 10's pairs, {small.text}{where}.")
    return pd.DataFrame(), v


@per_rows
def grid(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """Each batch x budget's fused steady rate beside the rate that arrived."""
    v = dict.fromkeys(("p11_grid", "p11_grid_settings", "p11_grid_over_steady"), MISSING)
    t = fused_settings(d)
    if not len(t):
        return pd.DataFrame(), v
    v["p11_grid"] = Value(None, " × ".join("{" + ", ".join(f"{x:,.0f}" for x in sorted(t[c].unique())) + "}"
                                           for c in ("max_batch", "chunk_tokens")))
    v["p11_grid_settings"] = fixed(float(len(t)), lambda x: f"{x:.0f}")
    v["p11_grid_over_steady"] = fixed(float((t["arrived"] / t["capacity"]).median()), times)
    return pd.DataFrame({"batch": t["max_batch"].astype(int), "budget (tokens)": t["chunk_tokens"].astype(int),
                         "arrived (req/s)": t["arrived"].map(sig),
                         "fused, steady (req/s)": t["capacity"].map(sig)}), v


def request_cost() -> dict[str, float]:
    """The mixed draw's expected work per request (prompts of MIXED_LENGTHS, equally likely;
    budgets uniform in MIXED_BUDGET): FLOPs by kind and the KV bytes its decode rows read."""
    L = np.asarray(MIXED_LENGTHS, float)
    B = np.arange(MIXED_BUDGET[0], MIXED_BUDGET[1] + 1, dtype=float)
    eL, eL2, eB = L.mean(), (L * L).mean(), B.mean()
    e_pairs = (B * (B - 1) / 2).mean()  # sum over the generated tokens of their offset
    positions = eL + eB
    decode_keys = eB * eL + e_pairs + eB  # keys a decode row attends to, summed over its tokens
    out = {
        "linear": positions * SIZES["linear_flop_per_token"],
        "lm_head": eB * SIZES["lm_head_flop_per_token"],
        "prompt_attention": eL2 / 2 * SIZES["attn_flop_per_pair"],
        "decode_attention": decode_keys * SIZES["attn_flop_per_pair"],
        "kv_bytes": decode_keys * SIZES["kv_bytes_per_token"],
        "positions": positions,
        "decode_context": decode_keys / eB,  # a decode row's mean context
    }
    out["flops"] = out["linear"] + out["lm_head"] + out["prompt_attention"] + out["decode_attention"]
    return out


@per_rows
def ceiling(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """The served rate the card's measured rates allow the request mix, and the best setting's share of it."""
    cost = request_cost()
    bw, gemm = rates(d)
    sheet = datasheet(d)
    t_sheet = cost["flops"] / sheet["fp16_flops"] + cost["kv_bytes"] / sheet["bandwidth_Bps"]
    t = gemm and bw and cost["flops"] / gemm + cost["kv_bytes"] / bw
    dec256 = SIZES["weight_bytes"] + 256 * cost["decode_context"] * SIZES["kv_bytes_per_token"]
    tflop = lambda x: f"{x:.2f} TFLOP"  # noqa: E731
    best = scale(d=d)[1]["p11_best_fused_rate"].value
    v = {
        "p11_req_tflop": fixed(cost["flops"] / 1e12, tflop),
        "p11_req_linear_tflop": fixed(cost["linear"] / 1e12, tflop),
        "p11_req_attn_tflop": fixed(cost["prompt_attention"] / 1e12, tflop),
        "p11_req_kv_gb": fixed(cost["kv_bytes"] / 1e9, lambda x: f"{x:.1f} GB"),
        "p11_req_positions": fixed(cost["positions"], lambda x: f"{x:,.0f}"),
        "p11_req_ms": fixed(t and t * 1e3, ms),
        "p11_ceiling_rate": fixed(t and 1 / t, rate),
        "p11_ceiling_datasheet": fixed(1 / t_sheet, rate),
        "p11_decode256_floor": fixed(dec256 / (bw or sheet["bandwidth_Bps"]) * 1e3, ms),
        "p11_ceiling_share": fixed(best and t and 100 * best * t, pct),
    }
    table = pd.DataFrame([
        {"work per request": "linear layers", "amount": v["p11_req_linear_tflop"].text},
        {"work per request": "LM head", "amount": tflop(cost["lm_head"] / 1e12)},
        {"work per request": "prompt attention (causal)", "amount": v["p11_req_attn_tflop"].text},
        {"work per request": "decode attention", "amount": tflop(cost["decode_attention"] / 1e12)},
        {"work per request": "KV cache read by decode rows", "amount": v["p11_req_kv_gb"].text},
    ])
    return table, v


@per_rows
def host(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """At each max_batch, medians over the fused runs whose decode steps filled the batch of the
    host's share of the loop, host and GPU time a full decode step, and its wall over GPU time."""
    # At lower offered rates, or a budget too small to keep the batch full, the steps stay
    # smaller. A wall over GPU time of 1.00: the host's work is hidden behind the GPU's.
    names = dict.fromkeys(("p11_host_share_b256", "p11_host_ms_b256", "p11_step_gpu_b256", "p11_decode_wall_over_gpu_b256",
                           "p11_decode_gpu_over_floor", "p11_host_over_step_b256"), MISSING)
    s = newest("scale", d)
    if not len(s) or "largest_batch_decode_rows" not in s:
        return pd.DataFrame(), names
    full = s[(s["engine"] == "fused") & (s["largest_batch_decode_rows"] == s["max_batch"])]
    num = lambda col: full[col].astype(float)  # noqa: E731  (a CPU run's rows hold None for GPU time)
    full = full.assign(wall_over_gpu=num("decode_step_s_p50") / num("decode_step_gpu_s_p50"),
                       host_over_step=num("host_ms_per_step_p50") / num("step_gpu_ms_p50"))
    b = full[full["max_batch"] == 256]
    names["p11_host_share_b256"] = median(b["host_share"], num=lambda x: f"{100 * x:.1f}%")
    names["p11_host_ms_b256"] = median(b["host_ms_per_step_p50"], "ms")
    names["p11_step_gpu_b256"] = median(b["step_gpu_ms_p50"], "ms")
    names["p11_decode_wall_over_gpu_b256"] = median(b["wall_over_gpu"], num=lambda x: f"{x:.2f}×")
    # The host's time per full decode step over that step's GPU time (its wall time, where the
    # two are equal): how much of a step the host's work would be if it did not overlap.
    names["p11_host_over_step_b256"] = median(100 * b["host_over_step"], num=lambda x: f"{x:.0f}%")
    floor = ceiling(d=d)[1]["p11_decode256_floor"].value
    names["p11_decode_gpu_over_floor"] = fixed(ratio(names["p11_step_gpu_b256"].value, floor), times)
    table = full.groupby("max_batch", as_index=False).agg(
        runs=("host_share", "size"), host_share=("host_share", "median"),
        host_ms=("host_ms_per_step_p50", "median"), gpu_ms=("step_gpu_ms_p50", "median"),
        wall_over_gpu=("wall_over_gpu", "median"))
    out = pd.DataFrame({"batch": table["max_batch"].astype(int), "runs": table["runs"],
                        "host share of the loop": (100 * table["host_share"]).map(lambda x: cell(x, pct)),
                        "host per full decode step (ms)": table["host_ms"].map(sig),
                        "GPU per full decode step (ms)": table["gpu_ms"].map(sig),
                        "decode step wall / GPU": table["wall_over_gpu"].map(lambda x: cell(x, lambda y: f"{y:.2f}"))})
    return out, names


def _bound(prediction: str) -> float:
    """The upper bound a part 11 prediction named (data/predictions_part11.yaml)."""
    doc = yaml.safe_load((STATIC / "predictions_part11.yaml").read_text())
    return next(e for e in doc["predictions"] if e["id"] == prediction)["high"]


def _against(v: Value, bound: float) -> str | None:
    """Where an estimate stands against a bound: "below", "above" or "straddles" (its interval
    holds the bound); None without a value."""
    if v.value is None:
        return None
    if v.lo is not None and v.hi is not None and v.lo < bound < v.hi:
        return "straddles"
    return "below" if v.value < bound else "above"


@per_rows
def readings(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """The page's conclusions, each chosen from the figures it rests on."""
    sc, hs = scale(d=d)[1], host(d=d)[1]
    small = chapter.capacity("part10", d=d)[1]["p10_fusion_gain"]
    big = sc["p11_fusion_gain_best"]
    v = {}
    bound = _bound("P11-3")  # a percent of the decode step's time
    where = _against(hs["p11_host_over_step_b256"], bound)
    v["p11_host_over_step_verdict"] = Value(None, "which these rows do not measure" if where is None else
                                            f"{'whose interval straddles' if where == 'straddles' else where} its "
                                            f"bound of {pct(bound)}")
    w, hides = hs["p11_decode_wall_over_gpu_b256"], 1.05  # wall within 5% of GPU time: the host is hidden
    lo, hi = (w.value, w.value) if w.lo is None else (w.lo, w.hi)
    hidden = None if w.value is None else True if hi <= hides else False if lo > hides else "straddles"
    v["p11_host_sets"] = Value(None, {
        True: "with the host one step ahead, its work runs under the GPU's, and the GPU, not the host, sets the step",
        False: "the host's work does not all hide under the GPU's, so the host sets part of the step",
        "straddles": "its interval does not resolve whether the host's work hides under the GPU's",
        None: "these rows hold no GPU time to compare it with"}[hidden])
    v["p11_host_limit"] = Value(None, {
        True: "The host is not the limit: its work is hidden under the GPU's.",
        False: "The host is part of the limit: its work does not all hide under the GPU's.",
        "straddles": "Whether the host is part of the limit, these rows do not resolve.",
        None: "These rows do not say whether the host is the limit."}[hidden])
    fell = rose = False
    if small.value is None or big.value is None:
        trend = "These rows hold no paired gain at both sizes to compare."
    elif None not in (small.lo, big.hi) and big.hi < small.lo:
        fell = True
        trend = (f"Fusion's gain fell from {gain_span(small)} at 32 rows and a 512-token budget to {gain_span(big)} here, as "
                 "the ballpark expected: the forward it removes costs the same weight read and fixed costs at any "
                 "size, while the step around it grows with the batch and the budget.")
    elif None not in (small.hi, big.lo) and big.lo > small.hi:
        rose = True
        trend = (f"Fusion's gain rose from {gain_span(small)} at 32 rows and a 512-token budget to {gain_span(big)} here, "
                 "against the ballpark, which expected it to shrink as the step grows.")
    else:
        trend = (f"Fusion's gain went from {gain_span(small)} at 32 rows and a 512-token budget to {gain_span(big)} here; "
                 "their intervals overlap, so these rows do not say it changed.")
    if big.value is None or not big.resolved:
        pays = "Whether one forward per step still pays at this size, these rows do not resolve."
    elif big.lo > 0:
        pays = "One forward per step still pays" + (", by a smaller share of a larger step." if fell else
                                                    ", by a larger share." if rose else ".")
    else:
        pays = "One forward per step costs capacity at this size."
    v["p11_fusion_trend"] = Value(None, f"{trend} {pays}")
    return pd.DataFrame(), v


def drain() -> tuple[pd.DataFrame, dict[str, Value]]:
    """What the earlier drain grid read at the best setting: its first figure in the record of
    changes not kept (data/not_kept.csv, typed as measured; no rows of it remain)."""
    cells = t[t["part"].astype(str) == "11"]["measured"] if len(t := not_kept()) else []
    found = [float(m.group(1)) for c in cells if (m := re.search(r"([\d.]+) requests/s", c))]
    return pd.DataFrame(), {"p11_drain_rate": fixed(found[0], rate) if found else MISSING}


def figures(d: str | Path | None = None):
    return collect(ceiling=ceiling(d=d), scale=scale(d=d), grid=grid(d=d), host=host(d=d),
                   peer=part10.peer("part11", d=d), drain=drain(),
                   readings=readings(d=d))
