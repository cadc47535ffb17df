"""What each chapter computes: its grades (fusedlib.bench.grading) and the texts its prose glues,
from one `grading.Rows`. A chapter page calls one function here, glues the texts, and plots.

Each function returns (grades by prediction key, texts by glue key). A grade of None means the
rows that grade it are not there; the chapter then points to the open-predictions appendix.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from . import analysis as bd, grading as gr, steps
from .predictions import Grade, by_key, chapter_opening, for_chapter

E = ("chunked", "fused")


NOT_MEASURED = "not measured"


def baseline(traces: pd.DataFrame) -> pd.DataFrame:
    """The eager, per-row traces: the reproduction's configuration (and the reference's); the
    eager torch-attention traces where there are none (the CPU smoke runs)."""
    return traces[(traces["attention"] == "triton") & ~traces["cuda_graphs"] & ~traces["graph_chunks"]]


def full_rows(traces: pd.DataFrame) -> int:
    b = baseline(traces)
    return int(b["max_batch"].iloc[0]) if "max_batch" in b else steps.FULL_ROWS


def measured(rows: gr.Rows, configurations: list[str], kernels: tuple[str, ...] = ()) -> bool:
    """Whether the rows hold what a chapter's prose is computed from: both engines' full-batch
    pure decode and mixed steps in each configuration, and the layout bench's kernels. The CPU
    smoke rows (torch attention, one engine for the graph runs) do not."""
    table = steps.summary(rows.traces)
    steps_ok = all(np.isfinite(steps.lookup(table, c, e, col)) for c in configurations for e in E
                   for col in ("decode_full_s", "mixed_s"))
    return steps_ok and set(kernels) <= set(steps.kernel_ms(rows.layout) if len(rows.layout) else {})


def complete(texts: dict[str, str], page: str) -> dict[str, str]:
    """Every glue key a chapter page's prose uses: the computed text, or that it was not measured
    (so a page built from rows that lack a configuration reads as such instead of failing)."""
    source = (Path(__file__).resolve().parents[2] / "book" / page).read_text()
    keys = re.findall(r"\{glue:text\}`([^`]+)`", source)
    return {k: texts.get(k, NOT_MEASURED) for k in keys} | texts


def hardware(rows: gr.Rows) -> dict:
    """The floor of a full-batch pure decode step per engine (eager, per-row), with the weights'
    bytes, the KV bytes per position and the copy bandwidth it rests on."""
    from ..config import PRESETS

    base = baseline(rows.traces)
    n_params, weight_bytes, kv_pos = steps.model_bytes(str(base["model"].iloc[0]), str(base["dtype"].iloc[0]))
    bw, bw_source = steps.copy_bandwidth(base, rows.layout)
    floors = {e: steps.decode_floor(steps.decode_kv_positions(base, e), weight_bytes, kv_pos, bw, full_rows(rows.traces))
              for e in E}
    return {"n_params": n_params, "weight_bytes": weight_bytes, "kv_pos": kv_pos, "bw": bw, "bw_source": bw_source,
            "floors": floors, "num_layers": PRESETS[str(base["model"].iloc[0])].num_layers}


def part7(rows: gr.Rows) -> tuple[dict[str, Grade | None], dict[str, str]]:
    p = by_key()
    table = steps.summary(rows.traces)
    ok = measured(rows, ["eager, per-row"], ("rows",))
    hw = hardware(rows) if ok else None
    fl = hw["floors"] if ok else {}
    grades = {"A1": gr.pure_decode_step(p["A1"], table), "A2": gr.loaded_step_saving(p["A2"], table),
              "A3": gr.capacity_gain(p["A3"], rows.arrivals), "A4": gr.uniform_controls(p["A4"], rows.closed),
              "A5": gr.floor_multiple(p["A5"], {e: fl[e]["multiple"] for e in fl}),
              "A6": gr.peer_closed(p["A6"], rows.closed, rows.peer), "A7": gr.sensitivity(p["A7"], rows.sensitivity),
              "B5": gr.small_pool(p["B5"], rows.arrivals), "B6": gr.sweep(p["B6"], rows.arrivals),
              "B7": gr.peer_open(p["B7"], rows.arrivals, rows.peer),
              "B8": gr.repeated_capacity(p["B8"], rows.arrivals)}
    if not ok:
        return grades, {}
    get = lambda e, c: steps.lookup(table, "eager, per-row", e, c)  # noqa: E731
    growth = steps.step_growth(steps.decode_kv_positions(baseline(rows.traces), "fused"))
    base = baseline(rows.traces)
    by_step = base[base["record"] == "step"].pivot_table(index="step", columns="engine", values="duration_s")
    share = float((by_step["chunked"] - by_step["fused"]).sum() / by_step["chunked"].sum())
    saved = get("chunked", "mixed_s") - get("fused", "mixed_s")
    texts = {"weights_gb": f"{hw['weight_bytes'] / 1e9:.3f} GB", "bw": f"{hw['bw'] / 1e12:.2f} TB/s",
             "weights_ms": bd.ms(fl["fused"]["weights_s"]), "kv_positions": f"{fl['fused']['kv_positions']:,.0f}",
             "kv_gb": f"{fl['fused']['kv_positions'] * hw['kv_pos'] / 1e9:.2f} GB", "floor_ms": bd.ms(fl["fused"]["floor_s"]),
             "decode_fused": bd.ms(get("fused", "decode_full_s")), "decode_chunked": bd.ms(get("chunked", "decode_full_s")),
             "multiple_fused": bd.times(fl["fused"]["multiple"]), "multiple_chunked": bd.times(fl["chunked"]["multiple"]),
             "few_rows": str(growth["few_rows"]), "decode_few": bd.ms(growth["few_s"]),
             "growth": bd.pct(growth["growth"], False), "mixed_chunked": bd.ms(get("chunked", "mixed_s")),
             "mixed_fused": bd.ms(get("fused", "mixed_s")), "saved_ms": bd.ms(saved),
             "saved_vs_floor": bd.times(saved / fl["fused"]["weights_s"]),
             "first_forward": bd.ms(get("chunked", "first_forward_s")),
             "second_forward": bd.ms(get("chunked", "second_forward_s")),
             "weight_multiple": bd.times(get("fused", "decode_full_s") / fl["fused"]["weights_s"]),
             "a10_multiple": bd.times(a10_multiple()),
             "trace_share": bd.pct(share, False), "trace_gain": bd.pct(1 / (1 - share) - 1, False)}
    cap = gr.capacity(rows.arrivals)
    if cap is not None:
        texts.update({"cap_text": gr.capacity_text(cap), "cap_n": str(cap[1])})
        pair = bd.capacity_pair(rows.arrivals)
        texts.update(paired_eager_texts())
        texts["cap_mixed_share"] = bd.pct(pair["n_mixed_steps_chunked"] / pair["n_steps_chunked"], False)
        texts["trace_mixed_share"] = bd.pct(by_step.index.isin(
            base[(base["record"] == "step") & (base["kind"] == "mixed") & (base["engine"] == "chunked")]["step"]).mean(),
            False)
    return grades, texts


def paired_eager_texts(data=bd.DATA) -> dict[str, str]:
    """Part 7's capacity from the paired campaign (eager, per-row attention, ABBA pairs)."""
    from . import answer

    pc = answer.paired_capacity(data).set_index("comparison")
    if not answer.eager_headline(pc):
        return {}
    r = pc.loc[answer.eager_headline(pc)]
    return {"paired_fused": f"{r['a_median']:.3g} requests/s", "paired_chunked": f"{r['b_median']:.3g}",
            "paired_gain": answer.interval(r["ratio"], r["lo"], r["hi"]), "paired_n": str(int(r["n"])),
            "paired_arrivals": str(int(r["n_requests"]))}


def cheaper(saving: float) -> str:
    """A saving as prose: 0.29 -> "29.0% cheaper", -0.19 -> "19.0% dearer"."""
    return f"{bd.pct(saving, False)} cheaper" if saving >= 0 else f"{bd.pct(-saving, False)} dearer"


def a10_multiple() -> float:
    """The reference's fused pure decode step as a multiple of its A10's weight-read floor
    (the reference's own figures and bandwidth, data/reference/a10.yaml)."""
    from . import answer

    ref = answer.reference()
    figs = ref.figures.set_index("id")["value"]
    return float(figs["decode_step_fused"] / (figs["weight_read"]))


def decomposition(rows: gr.Rows) -> tuple[dict[str, float], float]:
    """The fused engine's eager full-batch pure decode step as additive terms (seconds): the
    weights at the copy bandwidth, 28 layers of the per-row attention kernel as the layout
    bench timed it, and everything else; with the step's median."""
    hw = hardware(rows)
    table = steps.summary(rows.traces)
    step = steps.lookup(table, "eager, per-row", "fused", "decode_full_s")
    attention = steps.kernel_ms(rows.layout)["rows"] / 1e3 * hw["num_layers"]
    weights = hw["floors"]["fused"]["weights_s"]
    return {"weights at copy bandwidth": weights, f"attention, {hw['num_layers']} layers": attention,
            "everything else": step - weights - attention}, step


def attention_floor(rows: gr.Rows) -> float:
    """One layer's decode attention on the layout bench's cache state at the copy rate, seconds."""
    hw = hardware(rows)
    return steps.attention_floor_s(rows.layout, hw["kv_pos"] / hw["num_layers"], hw["bw"])


def part8(rows: gr.Rows) -> tuple[dict[str, Grade | None], dict[str, str]]:
    p = by_key()
    table = steps.summary(rows.traces)
    grades = {"B3": gr.splitkv_eager(p["B3"], table)}
    if not measured(rows, ["eager, per-row", "eager, split-KV"], ("rows", "splitkv")):
        return grades, {}
    hw = hardware(rows)
    k = steps.kernel_ms(rows.layout)
    per_layer_kv = hw["kv_pos"] / hw["num_layers"]
    floor = attention_floor(rows)
    saved = (k["rows"] - k["splitkv"]) / 1e3 * hw["num_layers"]
    get = lambda c, e: steps.lookup(table, c, e, "decode_full_s")  # noqa: E731
    texts = {"bench_positions": f"{int(rows.layout['context_sum'].iloc[0]):,}",
             "bench_rows": str(int(rows.layout["num_requests"].iloc[0])),
             "bench_max": f"{int(rows.layout['context_max'].iloc[0]):,}",
             "layer_kv_mb": f"{float(rows.layout['context_sum'].iloc[0]) * per_layer_kv / 1e6:.1f} MB",
             "attn_floor": bd.ms(floor), "rows_ms": bd.ms(k["rows"] / 1e3), "splitkv_ms": bd.ms(k["splitkv"] / 1e3),
             "packed_ms": bd.ms(k["packed"] / 1e3) if "packed" in k else "",
             "rows_multiple": bd.times(k["rows"] / 1e3 / floor), "splitkv_multiple": bd.times(k["splitkv"] / 1e3 / floor),
             "num_layers": str(hw["num_layers"]), "attn_saved": bd.ms(saved),
             "expected_fused": bd.ms(get("eager, per-row", "fused") - saved),
             "rows_fused": bd.ms(get("eager, per-row", "fused")), "rows_chunked": bd.ms(get("eager, per-row", "chunked")),
             "splitkv_fused": bd.ms(get("eager, split-KV", "fused")),
             "splitkv_chunked": bd.ms(get("eager, split-KV", "chunked")),
             "kernel_speedup": bd.times(k["rows"] / k["splitkv"]),
             "step_change_fused": bd.pct(get("eager, split-KV", "fused") / get("eager, per-row", "fused") - 1),
             "step_change_chunked": bd.pct(get("eager, split-KV", "chunked") / get("eager, per-row", "chunked") - 1)}
    return grades, texts


def part9(rows: gr.Rows) -> tuple[dict[str, Grade | None], dict[str, str]]:
    p = by_key()
    table = steps.summary(rows.traces)
    full = "every forward graphed, split-KV"
    grades = {"B1": gr.decode_in_range(p["B1"], table, "decode graphs, per-row"),
              "B2": gr.decode_in_range(p["B2"], table, "decode graphs, split-KV"),
              "B4": gr.graphed_capacity(p["B4"], rows.arrivals, rows.beyond, "decode graphs, split-KV"),
              "B9": gr.piecewise_mixed(p["B9"], table),
              "B10": gr.graphed_capacity(p["B10"], rows.arrivals, rows.beyond, full),
              "B11": gr.same_machine(p["B11"], rows.arrivals, rows.beyond)}
    if not measured(rows, [c for *_, c in steps.CONFIGS[1:]], ("splitkv",)):
        return grades, {}
    hw = hardware(rows)
    get = lambda c, e, col="decode_full_s": steps.lookup(table, c, e, col)  # noqa: E731
    k = steps.kernel_ms(rows.layout)
    floor = hw["floors"]["fused"]["floor_s"]
    gpu_est = hw["floors"]["fused"]["weights_s"] + k["splitkv"] / 1e3 * hw["num_layers"]
    allg = "every forward graphed, split-KV"
    texts = {"floor_ms": bd.ms(floor), "gpu_est": bd.ms(gpu_est), "weights_ms": bd.ms(hw["floors"]["fused"]["weights_s"]), "eager_fused": bd.ms(get("eager, per-row", "fused")),
             "graphs_rows_fused": bd.ms(get("decode graphs, per-row", "fused")),
             "graphs_splitkv_fused": bd.ms(get("decode graphs, split-KV", "fused")),
             "graphs_splitkv_chunked": bd.ms(get("decode graphs, split-KV", "chunked")),
             "graphed_multiple": bd.times(get("decode graphs, split-KV", "fused") / floor),
             "eager_multiple": bd.times(get("eager, per-row", "fused") / floor),
             "all_mixed_fused": bd.ms(get(allg, "fused", "mixed_s")),
             "all_mixed_chunked": bd.ms(get(allg, "chunked", "mixed_s")),
             "all_forwards": f"{bd.ms(get(allg, 'chunked', 'first_forward_s'))} and "
                             f"{bd.ms(get(allg, 'chunked', 'second_forward_s'))}",
             "dg_mixed_fused": bd.ms(get("decode graphs, split-KV", "fused", "mixed_s")),
             "dg_mixed_chunked": bd.ms(get("decode graphs, split-KV", "chunked", "mixed_s")),
             "dg_saving": cheaper(1 - get("decode graphs, split-KV", "fused", "mixed_s")
                                  / get("decode graphs, split-KV", "chunked", "mixed_s")),
             "all_saving": cheaper(1 - get(allg, "fused", "mixed_s") / get(allg, "chunked", "mixed_s"))}
    speed = {e: get("eager, per-row", e, "step_time_s") / get(allg, e, "step_time_s") for e in E}
    texts.update({f"speedup_{e}": bd.times(speed[e]) for e in E})
    texts.update(graphed_capacity_texts(speed))
    return grades, texts


PART9_PAIRED = ("part 7: fused vs chunked", "part 9: fused vs chunked")  # eager, every forward graphed
DECODE_GRAPHS_PAIRED = "decode graphs: fused vs chunked"


def graphed_capacity_texts(speed: dict[str, float], data=bd.DATA) -> dict[str, str]:
    """Eager (part 7) against every forward graphed (part 9) from the paired comparisons that
    ran both: each engine's graphed capacity over its eager one, what the step trace's speed-up
    would predict, fusion's paired gain in each configuration and the machine leases the pairs
    ran on; with decode graphs alone, fusion's paired gain (decode_graphs_texts)."""
    from . import answer

    pc = answer.paired_capacity(data).set_index("comparison")
    eager, graphed = PART9_PAIRED
    if not {eager, graphed} <= set(pc.index):
        return {}
    e, g = pc.loc[eager], pc.loc[graphed]
    boots = set(e["boots"]) | set(g["boots"])
    cap = {"fused": (e["a_median"], g["a_median"]), "chunked": (e["b_median"], g["b_median"])}
    return {"eager_cap_fused": f"{e['a_median']:.3g} requests/s", "eager_cap_chunked": f"{e['b_median']:.3g}",
            "eager_arrivals": f"{int(e['n_requests'])}", "graphed_arrivals": f"{int(g['n_requests'])}",
            "expect_fused": f"{e['a_median'] * speed['fused']:.3g}", "expect_chunked": f"{e['b_median'] * speed['chunked']:.3g}",
            "graphed_cap_fused": f"{g['a_median']:.3g} requests/s", "graphed_cap_chunked": f"{g['b_median']:.3g}",
            **{f"graphs_up_{x}": bd.times(cap[x][1] / cap[x][0]) for x in E},
            "gain_eager": answer.interval(e["ratio"], e["lo"], e["hi"]),
            "gain_graphed": answer.interval(g["ratio"], g["lo"], g["hi"]),
            "pairs": f"{int(min(e['n'], g['n']))}",
            "graphed_lease": "one machine lease" if len(boots) == 1 else f"{len(boots)} machine leases",
            "gain_shrank": ("smaller" if g["hi"] < e["lo"] else "smaller by the medians, though the intervals overlap"
                            if g["ratio"] < e["ratio"] else "no smaller"),
            **decode_graphs_texts(pc)}


def decode_graphs_texts(pc: pd.DataFrame) -> dict[str, str]:
    """Fusion's paired gain with decode graphs alone (answer.paired_capacity, indexed by
    comparison): its interval, pairs and arrivals, whether it is resolved, and whether its pairs
    ran on the machine lease (boot_id) of the eager and every-forward-graphed pairs; empty
    without its rows."""
    from . import answer

    if DECODE_GRAPHS_PAIRED not in pc.index:
        return {}
    d = pc.loc[DECODE_GRAPHS_PAIRED]
    mine = set(d["boots"])
    others = set().union(*(pc.loc[c, "boots"] for c in PART9_PAIRED if c in pc.index))
    lease = ("a machine lease not recorded" if not mine or not others else
             "the same machine lease" + "s" * (len(mine) > 1) if mine == others else
             "another machine lease" if not mine & others else "partly another machine lease")
    return {"dg_gain": answer.interval(d["ratio"], d["lo"], d["hi"]), "dg_pairs": str(int(d["n"])),
            "dg_arrivals": str(int(d["n_requests"])), "dg_lease": lease,
            "dg_resolved": "resolved" if d["resolved"] else "not resolved, the interval includes no change"}


def capacity_table(configs: pd.DataFrame) -> pd.DataFrame:
    """answer.capacity_by_configuration as a reader's table: per configuration, each engine's
    median and range over its runs and the fused/chunked ratio with its interval and n."""
    out = []
    for name, d in configs.groupby("configuration", sort=False):
        e = d.set_index("engine")
        out.append({"configuration": name,
                    **{f"{x} (requests/s)": f"{bd.sig3(e.loc[x, 'median'])} ({bd.sig3(e.loc[x, 'min'])}–{bd.sig3(e.loc[x, 'max'])})"
                       for x in ("chunked", "fused")},
                    "fused / chunked": f"{e['ratio'].iloc[0]:.2f}× [{e['lo'].iloc[0]:.2f}, {e['hi'].iloc[0]:.2f}]",
                    "runs per engine": str(int(e["n"].iloc[0]))})
    return pd.DataFrame(out)


def part10(data=bd.DATA) -> tuple[dict[str, Grade], dict[str, str]]:
    """Part 10's grades (set C of data/predictions.yaml on the roofline census and the paired
    capacity runs, fusedlib.bench.roofline) and the texts its prose glues."""
    from . import answer, roofline as rf

    pc = answer.paired_capacity(data)
    if not len(rf.rows.read_rows(data / "roofline/census")) or not {"part 9: fused vs chunked",
                                                                   "part 10: fused vs chunked"} <= set(pc["comparison"]):
        return {}, {}  # part 10's rows are not here: its predictions stay open
    grades = gr.roofline_grades(by_key(), rf.measured_for_predictions(data))
    set_d = rf.measured_for_set_d(data)
    grades |= {k: g for k, g in gr.overlap_grades(by_key(), set_d).items() if k in ("D1", "D2", "D3", "D4")}
    c = rf.census(data).set_index(["config", "step"])
    p = rf.placed(data).set_index(["config", "step"])
    rates, attn = rf.rates(data), rf.attention_fraction(data)
    t = {}
    for key, cfg in (("p9", rf.PART9), ("p10", rf.PART10)):
        for step in ("decode", "mixed"):
            row = c.loc[(cfg, step)]
            t |= {f"{key}_{step}_kernels": f"{row['kernels_per_step']:,.0f}",
                  f"{key}_{step}_per_layer": f"{row['kernels_per_layer']:.1f}",
                  f"{key}_{step}_gpu": f"{row['gpu_ms_median']:.2f} ms", f"{key}_{step}_wall": f"{row['wall_ms_median']:.2f} ms",
                  f"{key}_{step}_over": f"{p.loc[(cfg, step), 'over_floor']:.1f}×"}
    t |= {"dec_bytes": f"{p.loc[(rf.PART10, 'decode'), 'bytes_ms']:.2f} ms",
          "dec_launch9": f"{p.loc[(rf.PART9, 'decode'), 'launch_ms']:.2f} ms",
          "mix_flops": f"{p.loc[(rf.PART10, 'mixed'), 'flops_ms']:.2f} ms",
          "copy": f"{rates.copy_Bps / 1e12:.2f} TB/s", "gemm": f"{rates.gemm_flops / 1e12:.0f} TFLOP/s",
          "launch": f"{rates.launch_s * 1e6:.2f} µs", "weights_ms": f"{steps.model_bytes(rf.MODEL_NAME)[1] / rates.copy_Bps * 1e3:.2f} ms",
          "att_lo": f"{attn['balanced'].min():.0%}", "att_hi": f"{attn['balanced'].max():.0%}",
          "p10_decode_gemms": f"{rf.cublas_gemm_ms(data, rf.PART10, 'decode'):.2f} ms"}
    if rf.rows.read_rows(data / "roofline/attention_layout"):
        av = rf.attention_vs_copy(data).set_index("context")
        t |= {"attc_lo": f"{av['attention_of_copy'].min():.0%}", "attc_hi": f"{av['attention_of_copy'].max():.0%}",
              "copy1k_us": f"{av.loc[1024, 'copy_us']:.1f} µs", "copy1k_share": f"{av.loc[1024, 'copy_of_stream']:.0%}",
              "att1k_us": f"{av.loc[1024, 'slot_major_us']:.1f} µs", "att1k_head_us": f"{av.loc[1024, 'head_major_us']:.1f} µs",
              "kv1k_mb": f"{av.loc[1024, 'kv_mb']:.0f} MB"}
    if rf.rows.read_rows(data / "roofline/prefill"):
        pf = rf.prefill_sweep(data).set_index("case")
        first = pf.loc["first chunk"]
        t |= {"pre_first": f"{first['engine_us']:.1f} µs ({first['engine_tflops']:.0f} TFLOP/s)",
              "pre_first_sdpa": f"{first['sdpa_us']:.1f} µs"}
    census_all = pd.DataFrame(rf.rows.read_rows(data / "roofline/census"))
    later = census_all[~census_all["git_commit"].isin(rf.first_run(census_all)["git_commit"])]
    whole_runs = later[later["config"] == rf.WHOLE]["git_commit"]
    variant = later[~later["git_commit"].isin(whole_runs)]
    variant = variant[(variant["config"] == rf.PART10) & (variant["step"] == "decode")]
    if len(variant):  # the in-kernel split merge main reverted
        t["variant_per_layer"] = f"{variant['kernels_per_layer'].iloc[-1]:.1f}"
    for r in rf.capacity_comparisons(data).itertuples():
        if r.comparison in answer.WHOLE_COMPARISONS + answer.FINAL_COMPARISONS:  # whole.md's and the intro's
            continue
        if "fused vs chunked" in r.comparison:
            key = r.comparison.split(":")[0].replace(" + overlap seeds", "o").replace(" ", "")
        else:  # fused: part 10 vs part 9
            key = "p10vp9"
        t |= {f"cap_{key}": f"{r.ratio - 1:+.0%} [{r.lo - 1:+.0%}, {r.hi - 1:+.0%}], n = {r.n} pairs",
              f"capa_{key}": f"{r.a_median:.1f} requests/s", f"capb_{key}": f"{r.b_median:.1f} requests/s",
              f"capn_{key}": str(r.n_requests)}
    if "steps" in set_d and "overlap" in set_d:
        on, off = set_d["steps"].loc[("fused", True)], set_d["steps"].loc[("fused", False)]
        ov, sweep = set_d["overlap"], set_d.get("sweep")
        t |= {"ov_dec_off": f"{off['decode_ms']:.2f} ms", "ov_dec_on": f"{on['decode_ms']:.2f} ms",
              "cap_overlap": f"{answer.interval(ov['ratio'], ov['lo'], ov['hi'])} ({int(ov['n'])} pairs)",
              "ov_bound": f"{ov['a']:.1f} requests/s"}
        if sweep is not None:
            past = sweep[sweep["point"] >= 52]
            served = pd.concat([past["a"], past["b"]])
            t |= {"sat_lo": f"{served.min():.1f}", "sat_hi": f"{served.max():.1f} requests/s",
                  "sat_from": f"{past['point'].min():g}/s"}
    s = rf.step_saving(data).set_index("attention")
    for key, att in (("p7", "triton"), ("p9", "triton-splitkv"), ("p10", "triton-balanced")):
        t |= {f"save_{key}": f"{s.loc[att, 'saved_ms']:.2f} ms", f"mixf_{key}": f"{s.loc[att, 'fused_mixed_ms']:.2f} ms",
              f"mixc_{key}": f"{s.loc[att, 'chunked_mixed_ms']:.2f} ms"}
    return grades, t


# Set E (every forward one graph) is graded in its own chapter, book/whole.md, but E4 on the peer
# page; sets F to I (the decode step's last kernels, decode attention from a clean L2, PDL) in
# its appendix, book/last_kernels.md.
WHOLE_SET, GEMM_SET, NORM_SET, FLUSH_SET, PDL_SET, ROTARY_SET, DOWN_SET = "E", "F", "G", "H", "I", "J", "K"
PARTIALS_SET, MERGE_SET, STAGING_SET, TABLES_SET, PARALLEL_SET, LOOP_SET = "L", "M", "N", "O", "P", "Q"
PREFILL_SET, PREFILL_SERIAL_SET, TILES_SET, GROUP_ROWS_SET, V_LOAD_SET, SPLIT_SPAN_SET = "R", "S", "T", "U", "V", "W"
ATTENTION_BOUND_SET, UNMASKED_SET, PREFETCH_SET, PREFETCH_AFTER_SET, GATE_UP_PREFILL_SET = "X", "Y", "Z", "AA", "AB"
PDL_PREFETCH_SET, BLAS_SET, BESIDE_SET, PAIR_SET, ORDER_SET, CHAIN_SET = "AC", "AD", "AE", "AF", "AG", "AH"
READ_SET, ANCHOR_SET, READ_KV_SET, TMA_SET, PREFILL_RATES_SET, PREFILL_LONG_SET = "AI", "AJ", "AK", "AL", "AM", "AN"
SPLIT_PREFILL_SET, SPLIT_PARTS_SET, SPLIT_MERGE_SET, SPLIT_ADAPTIVE_SET, RUNS_SET = "AO", "AP", "AQ", "AR", "AS"
# Sets AT (the engine measured again for the book's scorecard) and AU (fusion's gain with the
# engine as the series ends) are graded on the intro page.
SCORECARD_SET, FINAL_SET = "AT", "AU"


def part10_predictions() -> list:
    """Part 10's predictions but sets E to AU, which book/whole.md, its appendix and the intro grade."""
    return [p for p in for_chapter(10)
            if not p.key.startswith((WHOLE_SET, GEMM_SET, NORM_SET, FLUSH_SET, PDL_SET, ROTARY_SET, DOWN_SET,
                                     PARTIALS_SET, MERGE_SET, STAGING_SET, TABLES_SET, PARALLEL_SET,
                                     LOOP_SET, PREFILL_SET, PREFILL_SERIAL_SET, TILES_SET, GROUP_ROWS_SET,
                                     V_LOAD_SET, SPLIT_SPAN_SET, ATTENTION_BOUND_SET,
                                     UNMASKED_SET, PREFETCH_SET, PREFETCH_AFTER_SET, GATE_UP_PREFILL_SET,
                                     PDL_PREFETCH_SET, BLAS_SET, BESIDE_SET, PAIR_SET, ORDER_SET,
                                     CHAIN_SET, READ_SET, ANCHOR_SET, READ_KV_SET, TMA_SET,
                                     PREFILL_RATES_SET, PREFILL_LONG_SET, SPLIT_PREFILL_SET,
                                     SPLIT_PARTS_SET, SPLIT_MERGE_SET, SPLIT_ADAPTIVE_SET, RUNS_SET,
                                     SCORECARD_SET, FINAL_SET))]


def whole_graph_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(WHOLE_SET)]


def split_k_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(GEMM_SET)]


def norm_gate_up_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(NORM_SET)]


def flush_pdl_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith((FLUSH_SET, PDL_SET))]


def rotary_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(ROTARY_SET)]


def down_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(DOWN_SET)]


def partials_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith((PARTIALS_SET, MERGE_SET))]


def staging_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith((STAGING_SET, TABLES_SET))]


def parallel_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(PARALLEL_SET)]


def loop_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(LOOP_SET)]


def prefill_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith((PREFILL_SET, PREFILL_SERIAL_SET))]


def gate_up_tiles_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(TILES_SET)]


def prefill_group_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(GROUP_ROWS_SET)]


def prefill_v_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(V_LOAD_SET)]


def prefill_splits_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(SPLIT_SPAN_SET)]


def attention_bound_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(ATTENTION_BOUND_SET)]


def unmasked_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(UNMASKED_SET)]


def prefetch_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(PREFETCH_SET)]


def prefetch_after_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(PREFETCH_AFTER_SET)]


def gate_up_prefill_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(GATE_UP_PREFILL_SET)]


def pdl_prefetch_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(PDL_PREFETCH_SET)]


def blas_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(BLAS_SET)]


def beside_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(BESIDE_SET)]


def pair_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(PAIR_SET)]


def order_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(ORDER_SET)]


def chain_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(CHAIN_SET)]


def read_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(READ_SET)]


def anchor_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(ANCHOR_SET)]


def read_kv_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(READ_KV_SET)]


def tma_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(TMA_SET)]


def prefill_rates_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(PREFILL_RATES_SET)]


def prefill_long_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(PREFILL_LONG_SET)]


def split_prefill_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(SPLIT_PREFILL_SET)]


def split_parts_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(SPLIT_PARTS_SET)]


def split_merge_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(SPLIT_MERGE_SET)]


def split_adaptive_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(SPLIT_ADAPTIVE_SET)]


def runs_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(RUNS_SET)]


def scorecard_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(SCORECARD_SET)]


def final_predictions() -> list:
    return [p for p in for_chapter(10) if p.key.startswith(FINAL_SET)]


def last_kernels(data=bd.DATA) -> tuple[dict[str, Grade], dict[str, str]]:
    """The whole-graph chapter's section on the decode step's last small kernels: the grades of
    sets F (the split-K GEMMs and the in-kernel merge, from roofline.measured_for_set_f) and G
    (the MLP's norm in the gate_up GEMM, roofline.measured_for_set_g), and the glued texts of
    those attempts, the kept gate_up+SiLU kernel (roofline.gate_up_results, measured without a
    prediction) and the change kept after set G."""
    from . import roofline as rf

    f, g, n = rf.measured_for_set_f(data), rf.gate_up_results(data), rf.measured_for_set_g(data)
    has_rates = (Path(data) / "roofline" / "gemm.jsonl").exists()  # the GEMM section's launch cost
    t = {"k_launch": f"{rf.rates(data).launch_s * 1e6:.2f} µs"} if has_rates else {}
    if "census" in f:
        c = f["census"]
        split_k, base = c.loc[(rf.SPLIT_K, "decode")], c.loc[(rf.WHOLE, "decode")]
        t |= {"k_sk_dec": f"{split_k['gpu_ms_median']:.2f} ms", "k_sk_per_layer": f"{split_k['kernels_per_layer']:.1f}",
              "k_sk_base": f"{base['gpu_ms_median']:.2f} ms"}
    if "gemms" in f:
        for name, r in f["gemms"].iterrows():
            t |= {f"k_{name}_cublas": f"{r['cublas_us']:.1f} µs", f"k_{name}_sk": f"{r['split_k_us']:.1f} µs",
                  f"k_{name}_floor": f"{r['floor_us']:.1f} µs", f"k_{name}_mb": f"{r['weight_mb']:.1f} MB"}
    if "attention_1k" in f:
        a = f["attention_1k"]
        t |= {"k_att_merge": f"{a['merge_us']:.1f} µs", "k_att_reduce": f"{a['reduce_us']:.1f} µs"}
    if "gemms" in f and "down" in f["gemms"].index and "sweep" in g:  # set K's ballpark: the down weight at the gate_up kernel's rate
        frac = g["sweep"]["one_kernel"]["fraction_of_copy"]
        t |= {"d_gate_up_frac": f"{frac:.0%}", "d_ballpark": f"{f['gemms'].loc['down', 'floor_us'] / frac:.1f} µs"}
    if "step_check" in f:
        sc = f["step_check"]
        t["k_sk_check"] = (f"{sc['max_abs_diff']:.3f}, argmax {int(sc['argmax_agree_outside_ties'])} of "
                           f"{int(sc['rows_outside_ties'])} outside ties")
    if "census" in g:
        c = g["census"]
        one, base = c.loc[(rf.GATE_UP, "decode")], c.loc[(rf.WHOLE, "decode")]
        t |= {"g_dec": f"{one['gpu_ms_median']:.2f} ms", "g_dec_base": f"{base['gpu_ms_median']:.2f} ms",
              "g_kernels": f"{one['kernels_per_step']:,.0f}", "g_per_layer": f"{one['kernels_per_layer']:.1f}",
              "g_kernels_base": f"{base['kernels_per_step']:,.0f}",
              "g_per_layer_base": f"{base['kernels_per_layer']:.1f}",
              "g_dec_wall": f"{one['wall_ms_median']:.2f} ms"}
    if "sweep" in g:
        cub, one = g["sweep"]["cublas"], g["sweep"]["one_kernel"]
        t |= {"g_cublas": f"{cub['us_per_call']:.1f} µs ({cub['fraction_of_copy']:.0%} of the copy rate)",
              "g_one": f"{one['us_per_call']:.1f} µs ({one['fraction_of_copy']:.0%})",
              "g_same": ("identical to theirs" if one["max_abs_err_vs_cublas"] == 0 else
                         f"within {one['max_abs_err_vs_cublas']:.2g} of theirs")}
    for key in ("vs_cublas", "fused_vs_chunked"):
        if key in g:
            r = g[key]
            # one decimal: the change is about a percent
            t |= {f"g_cap_{key}": _change(r),
                  f"g_capa_{key}": f"{r['a']:.1f} requests/s", f"g_capb_{key}": f"{r['b']:.1f} requests/s"}
    if "peer" in g:
        t["g_peer"] = _times_peer(g["peer"])
    if "gates" in g:
        t["g_gates"] = _passed(g["gates"])
    h, j, k = rf.measured_for_sets_h_i(data), rf.measured_for_set_j(data), rf.measured_for_set_k(data)
    ls, ms = rf.measured_for_set_l(data), rf.measured_for_set_m(data)
    ns, os_ = rf.measured_for_staging(data, "staging_ab"), rf.measured_for_staging(data, "tables_ab")
    ps, qs, rs = rf.measured_for_parallel(data), rf.measured_for_loop(data), rf.measured_for_prefill(data)
    ts, us, vs = rf.measured_for_gate_up_tiles(data), rf.measured_for_prefill_group(data), rf.measured_for_prefill_v(data)
    ws, xs, ys = rf.measured_for_prefill_splits(data), rf.measured_for_attention_bound(data), rf.measured_for_unmasked(data)
    zs, aas, abs_ = rf.measured_for_prefetch(data), rf.measured_for_prefetch_after(data), rf.measured_for_gate_up_prefill(data)
    acs, ads, aes = rf.measured_for_pdl_prefetch(data), rf.measured_for_blas(data), rf.measured_for_beside(data)
    afs, timeline, ags = rf.measured_for_pair(data), rf.pair_timeline(data), rf.measured_for_order(data)
    ahs, ais, aks = rf.measured_for_chain(data), rf.measured_for_reads(data), rf.measured_for_read_kv(data)
    als, cfs, ans = rf.measured_for_tma(data), rf.closed_floor(data), rf.measured_for_prefill_long(data)
    aos, aps = rf.measured_for_split_prefill(data), rf.measured_for_split_parts(data)
    aqs = rf.measured_for_split_parts(data, "roofline/split_prefill_merge")
    ars = rf.measured_for_split_parts(data, "roofline/split_prefill_adaptive")
    ass = rf.measured_for_runs(data)
    grades = (gr.split_k_grades(by_key(), f) | gr.norm_gate_up_grades(by_key(), n)
              | gr.attention_flush_grades(by_key(), h) | gr.rotary_in_attention_grades(by_key(), j)
              | gr.down_split_k_grades(by_key(), k) | gr.split_k_partials_grades(by_key(), ls)
              | gr.in_kernel_merge_grades(by_key(), ms) | gr.staging_grades(by_key(), ns)
              | gr.tables_grades(by_key(), os_) | gr.parallel_grades(by_key(), ps) | gr.loop_grades(by_key(), qs)
              | gr.prefill_grades(by_key(), rs) | gr.gate_up_tiles_grades(by_key(), ts)
              | gr.prefill_group_grades(by_key(), us) | gr.prefill_v_grades(by_key(), vs)
              | gr.prefill_splits_grades(by_key(), ws) | gr.attention_bound_grades(by_key(), xs)
              | gr.unmasked_grades(by_key(), ys) | gr.prefetch_grades(by_key(), zs)
              | gr.prefetch_after_grades(by_key(), aas) | gr.gate_up_prefill_grades(by_key(), abs_)
              | gr.pdl_prefetch_grades(by_key(), acs) | gr.blas_grades(by_key(), ads)
              | gr.beside_grades(by_key(), aes) | gr.pair_grades(by_key(), afs) | gr.order_grades(by_key(), ags)
              | gr.chain_grades(by_key(), ahs) | gr.read_grades(by_key(), ais)
              | gr.read_kv_grades(by_key(), aks) | gr.tma_grades(by_key(), als)
              | gr.prefill_rates_grades(by_key(), cfs) | gr.prefill_long_grades(by_key(), ans)
              | gr.split_prefill_grades(by_key(), aos) | gr.split_parts_grades(by_key(), aps)
              | gr.split_merge_grades(by_key(), aqs) | gr.split_adaptive_grades(by_key(), ars)
              | gr.runs_grades(by_key(), ass))
    return grades, (t | norm_gate_up_texts(n) | flush_pdl_texts(h) | rotary_texts(j) | down_texts(k)
                    | partials_texts(ls, ms) | staging_texts(data, ns, os_) | parallel_texts(ps) | loop_texts(qs)
                    | prefill_texts(rs) | gate_up_tiles_texts(ts) | prefill_group_texts(us) | prefill_v_texts(vs)
                    | prefill_splits_texts(ws) | attention_bound_texts(xs)
                    | unmasked_texts(ys) | prefetch_texts(zs) | prefetch_after_texts(aas)
                    | gate_up_prefill_texts(abs_) | pdl_prefetch_texts(acs) | blas_texts(ads)
                    | beside_texts(aes) | pair_texts(afs) | timeline_texts(timeline) | order_texts(ags)
                    | copies_texts(rf.pair_copies(data)) | chain_texts(ahs) | read_texts(ais)
                    | read_kv_texts(aks) | tma_texts(als) | prefill_rates_texts(cfs) | closed_floor_texts(cfs)
                    | prefill_long_texts(ans) | split_prefill_texts(aos) | split_parts_texts(aps)
                    | split_merge_texts(aqs) | split_adaptive_texts(ars) | runs_texts(ass))


def _gap_texts(gap: dict[str, float], prefix: str) -> dict[str, str]:
    """A wall-gap median's texts (roofline.wall_gap): the step's GPU time, its call's return and
    completion, the replay's alone."""
    if not gap:
        return {}
    return {f"{prefix}_gpu": f"{gap['step_gpu']:.2f} ms", f"{prefix}_step": f"{gap['step_to_completion']:.2f} ms",
            f"{prefix}_stage": f"{gap['step_call_returns'] * 1e3:.0f} µs",
            f"{prefix}_replay": f"{gap['replay_to_completion']:.2f} ms",
            f"{prefix}_replay_call": f"{gap['replay_call_returns'] * 1e3:.0f} µs"}


def staging_texts(data, n: dict, o: dict) -> dict[str, str]:
    """Sets N and O's section (roofline.measured_for_staging of staging_ab and tables_ab): both
    A/B leases ("st", "tb": decode and mixed, GPU and wall, kernels and copies), the wall-gap
    passes of the code before (the earliest commit with passes, "wg"), of each lease, and
    the passes before and after a census on one boot (roofline.profiler_residue, "pr_before",
    "pr_after")."""
    from . import roofline as rf

    t = {}
    for prefix, m in (("st", n), ("tb", o)):
        if "lease" not in m:
            continue
        dec, mixed = m["lease"].loc[(rf.SHAPE_AB_ROLE, "decode")], m["lease"].loc[(rf.SHAPE_AB_ROLE, "mixed")]
        t |= _ab_texts(m["lease"], prefix) | {
            f"{prefix}_copies_before": f"{dec['base_copies']:.0f}", f"{prefix}_copies": f"{dec['new_copies']:.0f}",
            f"{prefix}_wall_fall": f"{(dec['base_wall_ms'] - dec['new_wall_ms']) * 1e3:.0f} µs",
            f"{prefix}_mixed_wall_before": f"{mixed['base_wall_ms']:.2f} ms",
            f"{prefix}_mixed_wall": f"{mixed['new_wall_ms']:.2f} ms",
            f"{prefix}_mixed_kernels_before": f"{mixed['base_kernels']:.0f}",
            f"{prefix}_mixed_kernels": f"{mixed['new_kernels']:.0f}",
            f"{prefix}_mixed_copies_before": f"{mixed['base_copies']:.0f}",
            f"{prefix}_mixed_copies": f"{mixed['new_copies']:.0f}"}
        t |= _gap_texts(m.get("gap", {}), f"{prefix}_gap")
        gates = rf._frame(data, "paired/gates")
        if len(gates):
            t[f"{prefix}_gates"] = _passed(gates[gates["git_commit"] == dec["new_commit"]])
    passes = rf.wall_gap_passes(data)
    if len(passes):
        t |= _gap_texts(rf.wall_gap(data, passes["git_commit"].iloc[0]), "wg")
    residue = rf.profiler_residue(data)
    if len(residue):
        for key, after in (("pr_before", False), ("pr_after", True)):
            t |= _gap_texts(residue[residue["after_census"] == after].iloc[0].to_dict(), key)
    return t


def parallel_texts(m: dict) -> dict[str, str]:
    """Set P's section (roofline.measured_for_parallel), prefix "pa": both steps per side (GPU,
    wall before and after the profiler), the paired changes, the serial decode wall's range over
    the rounds, the mixed step's attention kernels per side, the logit check."""
    if "steps" not in m:
        return {}
    dec, mixed = m["steps"].loc["decode"], m["steps"].loc["mixed"]
    t = {"pa_rounds": f"{int(mixed['n'])}", "pa_mixed_change": _change(mixed),
         "pa_mixed_fall": f"{mixed['gpu_fall_ms'] * 1e3:.0f} µs", "pa_dec_change": _change(dec),
         "pa_mixed_wall_change": (f"{mixed['wall_ratio'] - 1:+.1%} [{mixed['wall_lo'] - 1:+.1%}, "
                                  f"{mixed['wall_hi'] - 1:+.1%}]"),
         "pa_dec_wall_lo": f"{dec['serial_wall_min']:.2f} ms", "pa_dec_wall_hi": f"{dec['serial_wall_max']:.2f} ms",
         "pa_kernels": f"{mixed['parallel_kernels']:.0f}"}
    for name in ("serial", "parallel"):
        for step, r in (("dec", dec), ("mixed", mixed)):
            t |= {f"pa_{step}_{name}_gpu": f"{r[f'{name}_gpu_ms']:.2f} ms",
                  f"pa_{step}_{name}_wall": f"{r[f'{name}_wall_ms']:.2f} ms",
                  f"pa_{step}_{name}_profiled": f"{r[f'{name}_wall_profiled']:.2f} ms"}
    if "kernels" in m:
        for kernel, short in (("packed_attention_kernel", "prefill"), ("splitkv_decode_kernel", "decode"),
                              ("splitkv_reduce_kernel", "reduce")):
            for name in ("serial", "parallel"):
                t[f"pa_{short}_{name}"] = f"{m['kernels'].loc[kernel, name]:.0f} µs"
    if "step_check" in m:
        c = m["step_check"]
        t["pa_check"] = (f"max |d| {c['max_abs_diff']:.4g}, argmax {int(c['argmax_agree_outside_ties'])} of "
                         f"{int(c['rows_outside_ties'])} outside ties")
    if "capacity" in m:
        r = m["capacity"]
        t |= {"pa_cap": _change(r), "pa_capa": f"{r['a']:.1f} requests/s", "pa_capb": f"{r['b']:.1f} requests/s"}
    if "gates" in m:
        t["pa_gates"] = _passed(m["gates"])
    return t


def loop_texts(m: dict) -> dict[str, str]:
    """Set Q's section (roofline.measured_for_loop), prefix "lp": per step kind and side the
    interval and GPU span (medians over the rounds); with the second stream the interval's range
    over the rounds and its largest excess over the GPU span; the decode step's context and
    steady steps a round; the paired changes and the rounds."""
    if "steps" not in m:
        return {}
    dec, mixed = m["steps"].loc["decode"], m["steps"].loc["mixed"]
    t = {"lp_rounds": f"{int(dec['n'])}", "lp_mixed_change": _change(mixed), "lp_dec_change": _change(dec),
         "lp_mixed_fall": f"{mixed['interval_fall_ms'] * 1e3:.0f} µs",
         "lp_context": f"{dec['parallel_context']:,.0f}", "lp_dec_steps": f"{dec['parallel_steps']:.0f}"}
    for step, r in (("dec", dec), ("mixed", mixed)):
        for name in ("serial", "parallel"):
            t |= {f"lp_{step}_{name}": f"{r[f'{name}_interval_ms']:.2f} ms",
                  f"lp_{step}_{name}_gpu": f"{r[f'{name}_gpu_ms']:.2f} ms"}
        t |= {f"lp_{step}_parallel_above": f"{r['parallel_above_gpu_ms'] * 1e3:.0f} µs",
              f"lp_{step}_parallel_lo": f"{r['parallel_interval_min']:.3f} ms",
              f"lp_{step}_parallel_hi": f"{r['parallel_interval_max']:.3f} ms"}
    return t


def gate_up_tiles_texts(m: dict) -> dict[str, str]:
    """Set T's section (roofline.measured_for_gate_up_tiles), prefix "gt": cuBLAS plus the
    activation kernel and the best tiles shape, µs a layer and TFLOP/s, their ratio, the
    shapes timed and rejected, the batch's rows and the commit the kernel was measured at."""
    if "best" not in m:
        return {}
    best, cublas = m["best"], m["cublas"]
    act_bytes = cublas["m"] * cublas["n"] * 3 // 2 * 2  # [M, 2I] read, [M, I] written, 2 bytes each
    return {"gt_rows": f"{m['rows']}", "gt_commit": m["commit"], "gt_shapes": f"{len(m['tiles'])}",
            "gt_rejected": f"{m['rejected']}", "gt_cublas": f"{cublas['us_per_call']:.1f} µs",
            "gt_cublas_tflops": f"{cublas['tflops']:.0f} TFLOP/s", "gt_best": f"{best['us_per_call']:.1f} µs",
            "gt_best_tflops": f"{best['tflops']:.0f} TFLOP/s",
            "gt_best_shape": f"{best['block_m']} × {best['block_n']} (K {best['block_k']}, {best['num_warps']} warps, "
                             f"{best['num_stages']} stages)",
            "gt_ratio": f"{best['us_per_call'] / cublas['us_per_call']:.2f}×",
            "gt_worst": f"{m['tiles']['us_per_call'].iloc[-1]:.1f} µs",
            # the ballpark: the activation's round trip (the projection read, half of it written)
            # at the copy rate, and the GEMM's work
            "gt_act_mb": f"{act_bytes / 1e6:.0f} MB", "gt_act_us": f"{act_bytes / cublas['copy_bandwidth_gbs'] / 1e3:.1f} µs",
            "gt_gflop": f"{2 * cublas['m'] * cublas['n'] * cublas['k'] / 1e9:.0f} GFLOP"}


def prefill_group_texts(m: dict) -> dict[str, str]:
    """Set U's section (roofline.measured_for_prefill_group), prefix "pg": per chunk case
    ("first", "long"), the one-head shape's and the best group-packed shape's µs, the latter's
    shape and TFLOP/s, their ratio; the group shapes timed; the commit."""
    from . import roofline as rf

    if "cases" not in m:
        return {}
    t = {"pg_commit": m["commit"]}
    for case, c in m["cases"].iterrows():
        key = rf.CHUNK_CASES[case]
        block_m, block_n, warps, stages = c["group_shape"]
        t |= {f"pg_{key}_one": f"{c['one_head_us']:.1f} µs", f"pg_{key}_group": f"{c['group_us']:.1f} µs",
              f"pg_{key}_ratio": f"{c['group_us'] / c['one_head_us']:.2f}×",
              f"pg_{key}_tflops": f"{c['group_tflops']:.0f} TFLOP/s",
              f"pg_{key}_shape": f"{block_m} rows, {block_n} keys, {warps} warps, {stages} stages",
              "pg_shapes": f"{int(c['shapes'])}"}
    return t


def prefill_v_texts(m: dict) -> dict[str, str]:
    """Set V's section (roofline.measured_for_prefill_v), prefix "pv": per chunk case ("first",
    "long") and keys an iteration (128, 64), V after the softmax and beside K in µs, their ratio
    and the range of one alternation's; the alternations; the commit."""
    from . import roofline as rf

    if "cases" not in m:
        return {}
    t = {"pv_commit": m["commit"], "pv_repeats": f"{int(m['cases']['repeats'].min())}"}
    for (case, block_n), c in m["cases"].iterrows():
        key = f"pv_{rf.CHUNK_CASES[case]}_{block_n}"
        t |= {f"{key}_after": f"{c['after_us']:.1f} µs", f"{key}_beside": f"{c['beside_us']:.1f} µs",
              f"{key}_ratio": f"{c['ratio']:.2f}×", f"{key}_pairs": f"{c['ratio_lo']:.2f}-{c['ratio_hi']:.2f}×"}
    if "lease" in m:
        dec, mixed = (m["lease"].loc[("second stream", step)] for step in ("decode", "mixed"))
        packed = m["kernels"].loc["packed_attention_kernel"]
        t |= {"pv_mixed_base": f"{mixed['base_gpu_ms']:.3f} ms", "pv_mixed_new": f"{mixed['new_gpu_ms']:.3f} ms",
              "pv_mixed_change": _change(mixed), "pv_dec_change": _change(dec), "pv_rounds": f"{int(mixed['n'])}",
              "pv_packed_base": f"{packed['base_us']:.0f} µs", "pv_packed_new": f"{packed['new_us']:.0f} µs"}
    return t


def prefill_splits_texts(m: dict) -> dict[str, str]:
    """Set W's section (roofline.measured_for_prefill_splits), prefix "ps": per chunk case
    ("first", "long") the medians at 1 to 4 runs a span; the alternations; the A/B lease's mixed
    step per arm and its change, its kernel counts, and the packed kernel's and the reduce's µs
    a mixed step per arm; the commit."""
    from . import roofline as rf

    if "sweep" not in m:
        return {}
    t = {"ps_commit": m["commit"], "ps_repeats": f"{m['repeats']}"}
    for case, row in m["sweep"].iterrows():
        t |= {f"ps_{rf.CHUNK_CASES[case]}_{n}": f"{us:.1f} µs" for n, us in row.items()}
    if "lease" in m:
        mixed, k = m["lease"].loc[("second stream", "mixed")], m["kernels"]
        t |= {"ps_rounds": f"{int(mixed['n'])}", "ps_mixed_base": f"{mixed['base_gpu_ms']:.2f} ms", "ps_mixed_new": f"{mixed['new_gpu_ms']:.2f} ms",
              "ps_mixed_change": _change(mixed), "ps_kernels_base": f"{mixed['base_kernels']:.0f}",
              "ps_kernels_new": f"{mixed['new_kernels']:.0f}",
              **{f"ps_{short}_{arm}": f"{k.loc[name, f'{arm}_us']:.0f} µs"
                 for short, name in (("packed", "packed_attention_kernel"), ("reduce", "splitkv_reduce_kernel"))
                 for arm in ("base", "new")}}
    return t


PROBE_CASES = {"decode 1024": "d1k", "decode 2048": "d2k", "decode 4096": "d4k",
               "first chunk": "first", "chunk after 2 chunks": "long"}
PROBE_CALLS = {"ours": "ours", "sdpa flash": "flash", "sdpa cudnn": "cudnn"}


def attention_bound_texts(m: dict) -> dict[str, str]:
    """Set X's section (roofline.measured_for_attention_bound), prefix "xb": per case
    (PROBE_CASES) and call (PROBE_CALLS) the graph replay's µs with the fraction of the copy
    rate (decode) or TFLOP/s (prefill); the commit; from the counters, ncu's time of our decode
    kernel and of its reduce at 1k and each one's share of the pair, the decode kernel's own
    fraction of the copy rate, the packed kernel's warps per scheduler and, on the fresh chunk,
    the instructions it issues against FlashAttention-2's main kernel."""
    if "probe" not in m:
        return {}
    probe = m["probe"]
    t = {"xb_commit": m["commit"]}
    if "gemm_flops" in m:  # the ballpark: the 1k decode case's bytes at the copy rate, the long chunk's FLOP at the GEMM rate
        dec, long = probe.loc[("decode 1024", "ours")], probe.loc[("chunk after 2 chunks", "ours")]
        t |= {"xb_dec_mb": f"{dec['kv_bytes'] / 1e6:.1f} MB",
              "xb_dec_floor": f"{dec['kv_bytes'] / (dec['copy_bandwidth_gbs'] * 1e9) * 1e6:.1f} µs",
              "xb_long_gflop": f"{long['flop'] / 1e9:.1f} GFLOP", "xb_long_floor": f"{long['flop'] / m['gemm_flops'] * 1e6:.1f} µs"}
    for (case, call), r in probe.iterrows():
        if case in PROBE_CASES and call in PROBE_CALLS:
            rate = (f"{r['fraction_of_copy']:.0%} of the copy rate" if r["kind"] == "decode"
                    else f"{r['tflops']:.0f} TFLOP/s")
            t[f"xb_{PROBE_CASES[case]}_{PROBE_CALLS[call]}"] = f"{r['us']:.1f} µs ({rate})"
    if "counters" in m:
        c = m["counters"][m["counters"]["call"] == "ours"].set_index(["case", "kernel"])
        dec, red = c.loc[("decode 1024", "splitkv_decode_kernel")], c.loc[("decode 1024", "splitkv_reduce_kernel")]
        kv, bw = probe.loc[("decode 1024", "ours"), ["kv_bytes", "copy_bandwidth_gbs"]]
        t |= {"xb_dec_kernel": f"{dec['us']:.1f} µs", "xb_dec_reduce": f"{red['us']:.1f} µs",
              "xb_dec_reduce_share": f"{red['us'] / (dec['us'] + red['us']):.0%}",
              "xb_dec_kernel_frac": f"{kv / (dec['us'] * 1e-6) / (bw * 1e9):.0%}"}
        packed = c.xs("packed_attention_kernel", level="kernel")
        # warps resident per SM (64 slots) over its 4 schedulers
        t["xb_packed_warps"] = f"{packed['occupancy_pct'].max() / 100 * 64 / 4:.1f}"
        first = packed.iloc[0]
        t |= {"xb_packed_regs": f"{first['registers']:.0f}", "xb_packed_kb": f"{first['shared_bytes'] / 1024:.0f} KB",
              "xb_packed_programs": f"{first['grid']:.0f}", "xb_packed_issue": f"{packed['issue_per_cycle'].max():.2f}",
              "xb_packed_tensor": f"{packed['tensor_pct'].min():.0f}–{packed['tensor_pct'].max():.0f}%",
              "xb_dec_waves": f"{dec['waves']:.2f}",
              # warp slots at most (of 64) over the warps a program has
              "xb_packed_per_sm": f"{first['theoretical_pct'] / 100 * 64 / (first['block'] / 32):.0f}"}
        cudnn = m["counters"][m["counters"]["kernel"].str.contains("sm90")].iloc[0]
        t |= {"xb_cudnn_programs": f"{cudnn['grid']:.0f}", "xb_cudnn_groups": f"{cudnn['block'] / 128:.0f}"}
        flash = m["counters"].set_index(["case", "call", "kernel"]).loc[
            ("first chunk", "sdpa flash", "pytorch_flash::flash_fwd_splitkv_kernel")]
        ours = packed.loc["first chunk"]
        # Same grid (192 programs) and occupancy, so instructions issued scale as time x issue rate.
        t["xb_issued_vs_flash"] = f"{ours['us'] * ours['issue_per_cycle'] / (flash['us'] * flash['issue_per_cycle']):.1f}×"
        t["xb_flash_vs_ours"] = f"{flash['us'] / ours['us']:.2f}×"
    return t


def unmasked_texts(m: dict) -> dict[str, str]:
    """Set Y's section (roofline.measured_for_unmasked), prefix "um": per chunk case ("first",
    "long") the packed kernel's µs before and after and the ratio; the rounds and commits; the
    A/B lease's mixed and decode steps per arm and their changes, and the mixed step's packed and
    split-KV decode kernels' µs a step per arm."""
    from . import roofline as rf

    if "cases" not in m:
        return {}
    t = {"um_commit": m["commit"], "um_base_commit": m["base_commit"], "um_rounds": f"{m['rounds']}"}
    for case, c in m["cases"].iterrows():
        short = rf.CHUNK_CASES.get(case)
        if short:
            t |= {f"um_{short}_base": f"{c['base']:.1f} µs", f"um_{short}_new": f"{c['new']:.1f} µs",
                  f"um_{short}_ratio": f"{c['ratio']:.2f}×"}
    if "lease" in m:
        lease, k = m["lease"], m["kernels"]
        t |= _step_change_texts("um", lease)
        t["um_ab_rounds"] = f"{int(lease.loc[('second stream', 'mixed'), 'n'])}"
        t |= {f"um_{short}_{arm}_us": f"{k.loc[name, f'{arm}_us']:.0f} µs"
              for short, name in (("packed", "packed_attention_kernel"), ("splitkv", "splitkv_decode_kernel"))
              for arm in ("base", "new")}
    return t


def prefetch_texts(m: dict) -> dict[str, str]:
    """Set Z's section (roofline.measured_for_prefetch), prefix "pf": the sweep's commit and
    rounds, the step without prefetch, each plan's GPU time and change ("pf_<gate_up MB>" for
    bulk requests from the side stream, "_lines", "_down<MB>" beside 24 MB of gate_up,
    "_down_only", "_rotary<MB>"), the fastest plan; the A/B's decode step per arm, its
    change and rounds, the decode kernels that moved (gate_up, split-KV decode, the prefetch
    kernel itself) a step per arm, and the mixed step's change."""
    if "plans" not in m:
        return {}
    t = {"pf_commit": m["commit"], "pf_none": f"{m['none_ms']:.3f} ms",
         "pf_rounds": f"{int(m['plans']['rounds'].min())}",
         "pf_best_mb": f"{m['best']['gate_up_mb']:g} MB"}
    for _, r in m["plans"].iloc[1:].iterrows():  # the first plan is no prefetch
        g, d = f"{r['gate_up_mb']:g}", f"{r['down_mb']:g}"
        if r["in_rotary"]:
            key = f"pf_rotary{g}"
        elif r["down_mb"]:
            key = f"pf_down{d}" if r["gate_up_mb"] else "pf_down_only"
        else:
            key = f"pf_{g}" if r["bulk"] else "pf_lines"
        t |= {key: f"{r['gpu_ms']:.3f} ms", f"{key}_change": bd.pct(r["change"])}
    if "lease" in m:
        dec, mixed = (m["lease"].loc[("second stream", step)] for step in ("decode", "mixed"))
        t |= {"pf_ab_base": f"{dec['base_gpu_ms']:.3f} ms", "pf_ab_new": f"{dec['new_gpu_ms']:.3f} ms",
              "pf_ab_change": _change(dec), "pf_ab_rounds": f"{int(dec['n'])}", "pf_ab_mixed": _change(mixed),
              "pf_ab_per_layer": f"{dec['new_per_layer']:.1f}", "pf_ab_commit": str(dec["new_commit"])}
        k = m["decode_kernels"]
        for short, name in (("gate_up", "gate_up_silu_kernel"), ("decode", "splitkv_decode_kernel")):
            t |= {f"pf_{short}_{arm}_us": f"{k.loc[name, f'{arm}_us']:.0f} µs" for arm in ("base", "new")}
        t["pf_kernel_us"] = f"{k.loc['l2_prefetch_kernel', 'new_us'] / k.loc['l2_prefetch_kernel', 'new_launches']:.0f} µs"
    return t


def prefetch_after_texts(m: dict) -> dict[str, str]:
    """Set AA's paragraph (roofline.measured_for_prefetch_after), prefix "pa2": the commit, the
    rounds, the step without prefetch, and each plan's GPU time and change ("pa2_after<MB>",
    "pa2_before24")."""
    if "plans" not in m:
        return {}
    t = {"pa2_commit": m["commit"], "pa2_none": f"{m['none_ms']:.3f} ms",
         "pa2_rounds": f"{int(m['plans']['rounds'].min())}"}
    for _, r in m["plans"].iloc[1:].iterrows():  # the first plan is no prefetch
        key = f"pa2_{'after' if r['after_attention'] else 'before'}{r['gate_up_mb']:g}"
        t |= {key: f"{r['gpu_ms']:.3f} ms", f"{key}_change": bd.pct(r["change"])}
    return t


def gate_up_prefill_texts(m: dict) -> dict[str, str]:
    """Set AB's section (roofline.measured_for_gate_up_prefill), prefix "gp": the sweep's
    commit and shapes, per batch size ("gp_<rows>_...") cuBLAS with the activation kernel and
    the fastest shape (µs a layer, TFLOP/s), their ratio, the shape and the slowest; the
    largest output difference; the A/B's mixed and decode steps per arm and their changes,
    rounds and kernels per layer, and the mixed step's gate_up time a step per arm (cuBLAS's
    GEMM and the activation kernel, against the one kernel)."""
    if "sizes" not in m:
        return {}
    sizes = m["sizes"]
    t = {"gp_commit": m["commit"], "gp_shapes": f"{int(sizes['shapes'].max())}",
         "gp_max_err": f"{sizes['max_err'].max():.2g}"}
    for rows, r in sizes.iterrows():
        t |= {f"gp_{rows}_cublas": f"{r['cublas_us']:.1f} µs", f"gp_{rows}_best": f"{r['best_us']:.1f} µs",
              f"gp_{rows}_cublas_tflops": f"{r['cublas_tflops']:.0f} TFLOP/s",
              f"gp_{rows}_best_tflops": f"{r['best_tflops']:.0f} TFLOP/s", f"gp_{rows}_ratio": f"{r['ratio']:.2f}×",
              f"gp_{rows}_shape": r["best_shape"], f"gp_{rows}_worst": f"{r['worst_us']:.0f} µs"}
    if "lease" in m:
        lease, k = m["lease"], m["mixed_kernels"]
        t |= _step_change_texts("gp", lease)
        mixed = lease.loc[("second stream", "mixed")]
        t |= {"gp_ab_rounds": f"{int(mixed['n'])}", "gp_per_layer_base": f"{mixed['base_per_layer']:.1f}",
              "gp_per_layer_new": f"{mixed['new_per_layer']:.1f}"}
        gemm = k[k.index.str.startswith("nvjet") & (k["new_launches"] == 0)]  # cuBLAS's gate_up, gone after
        one, top = k.loc["gate_up_silu_kernel"], sizes.loc[sizes.index.max()]
        flop = top["best_tflops"] * top["best_us"] * 1e6 * one["new_launches"]  # a step's gate_up FLOP
        t |= {"gp_cublas_step": f"{gemm['base_us'].sum():.0f} µs",
              "gp_cublas_step_tflops": f"{flop / gemm['base_us'].sum() / 1e6:.0f} TFLOP/s",
              "gp_silu_step": f"{k.loc['silu_mul_kernel', 'base_us']:.0f} µs", "gp_one_step": f"{one['new_us']:.0f} µs",
              "gp_one_step_tflops": f"{flop / one['new_us'] / 1e6:.0f} TFLOP/s"}
    return t


def pdl_prefetch_texts(m: dict) -> dict[str, str]:
    """Set AC's section (roofline.measured_for_pdl_prefetch), prefix "pp": the sweep's commit
    and rounds, the decode step per plan ("pp_<qkv>_<o_proj>_<gate_up>_<down>" with PDL,
    "pp_off" without) and its change, the A/B's decode and mixed changes."""
    if "decode" not in m:
        return {}
    dec = m["decode"]
    t = {"pp_commit": m["commit"], "pp_rounds": f"{int(dec['rounds'].min())}"}
    for _, r in dec.iterrows():
        key = "pp_off" if not r["pdl"] else f"pp_{r['qkv_k']:.0f}_{r['o_proj_k']:.0f}_{r['gate_up_k']:.0f}_{r['down_k']:.0f}"
        t |= {key: f"{r['gpu_ms']:.3f} ms", f"{key}_change": bd.pct(r["change"])}
    if "lease" in m:
        for step, short in (("decode", "dec"), ("mixed", "mixed")):
            t[f"pp_ab_{short}"] = _change(m["lease"].loc[("second stream", step)])
    return t


def blas_texts(m: dict) -> dict[str, str]:
    """Set AD's section (roofline.measured_for_blas), prefix "bl": the sweep's commit, rows and
    algorithms listed; per projection cuBLAS's µs a layer, the fastest listed algorithm's and
    its change; the step's summed saving; the A/B's step changes and, in its mixed step, the
    gate_up GEMM's and the down GEMM's µs a step per arm."""
    if "gemms" not in m:
        return {}
    g = m["gemms"]
    t = {"bl_commit": m["commit"], "bl_rows": f"{int(g['rows'].iloc[0])}", "bl_listed": f"{int(g['listed'].max())}",
         "bl_saving": f"{m['saving_ms'] * 1e3:.0f} µs", "bl_max_err": f"{g['max_err'].max():.2g}",
         "bl_first_within": f"{(g['first_us'] / g['cublas_us'] - 1).abs().max():.1%}"}
    for name, r in g.iterrows():
        t |= {f"bl_{name}_cublas": f"{r['cublas_us']:.1f} µs", f"bl_{name}_best": f"{r['best_us']:.1f} µs",
              f"bl_{name}_change": bd.pct(-r["fall"]), f"bl_{name}_first": f"{r['first_us']:.1f} µs"}
    if "lease" in m:
        k = m["mixed_kernels"]
        t |= _step_change_texts("bl", m["lease"]) | {"bl_ab_rounds": f"{int(m['lease']['n'].min())}"}
        gone, came = k[k["new_launches"] == 0], k[k["base_launches"] == 0]  # gate_up's GEMM, before and after
        down = k[k.index.str.startswith("nvjet") & (k["new_launches"] > 0) & (k["base_launches"] > 0)]
        down = down.loc[(down["new_us"] - down["base_us"]).abs().idxmax()]
        t |= {"bl_gate_up_base_step": f"{gone['base_us'].sum():.0f} µs", "bl_gate_up_new_step": f"{came['new_us'].sum():.0f} µs",
              "bl_down_base_step": f"{down['base_us']:.0f} µs", "bl_down_new_step": f"{down['new_us']:.0f} µs"}
    return t


def beside_texts(m: dict) -> dict[str, str]:
    """Set AE's section (roofline.measured_for_beside), prefix "bs": the sweeps' commits and
    rounds; per plan the mixed step's GPU ms, its change and the decode rows' splits
    ("bs_<per SM>_lpt" or "_pos" for the first sweep, "bsm_<per SM>" for the second, a
    decimal point written "p"); the A/B's step changes."""
    if "plans" not in m:
        return {}
    t = {"bs_commit": m["commit"], "bs_rounds": f"{int(m['plans']['rounds'].min())}"}
    name = lambda per_sm: f"{per_sm:g}".replace(".", "p")  # noqa: E731
    for _, r in m["plans"].iterrows():
        key = f"bs_{name(r['programs_per_sm'])}_{'lpt' if r['longest_first'] else 'pos'}"
        t |= {key: f"{r['gpu_ms']:.3f} ms", f"{key}_change": bd.pct(r["change"]), f"{key}_splits": f"{int(r['splits'])}"}
    if "more" in m:
        t["bsm_commit"] = m["more_commit"]
        for _, r in m["more"].iterrows():
            key = f"bsm_{name(r['programs_per_sm'])}"
            t |= {key: f"{r['gpu_ms']:.3f} ms", f"{key}_change": bd.pct(r["change"]), f"{key}_splits": f"{int(r['splits'])}"}
    if "lease" in m:
        t |= _step_change_texts("bs", m["lease"]) | {"bs_ab_rounds": f"{int(m['lease']['n'].min())}"}
    return t


def pair_texts(m: dict) -> dict[str, str]:
    """Set AF's section (roofline.measured_for_pair), prefix "pr": the sweep's commit and rounds;
    per plan the mixed step's GPU ms and change ("pr_<tile height>_<decode keys>_<warps>"); the
    A/B's step changes and, in its mixed step, split-KV decode's and the packed kernel's µs a
    step per arm."""
    if "plans" not in m:
        return {}
    t = {"pr_commit": m["commit"], "pr_rounds": f"{int(m['plans']['rounds'].min())}"}
    for _, r in m["plans"].iterrows():
        key = f"pr_{r['block_m']:.0f}_{r['decode_block_n']:.0f}_{r['decode_warps']:.0f}"
        t |= {key: f"{r['gpu_ms']:.3f} ms", f"{key}_change": bd.pct(r["change"])}
    if "lease" in m:
        k = m["mixed_kernels"]
        t |= _step_change_texts("pr", m["lease"]) | {"pr_ab_rounds": f"{int(m['lease']['n'].min())}"}
        for name, short in (("splitkv_decode_kernel", "decode"), ("packed_attention_kernel", "packed")):
            t |= {f"pr_{short}_base_step": f"{k.loc[name, 'base_us']:.0f} µs",
                  f"pr_{short}_new_step": f"{k.loc[name, 'new_us']:.0f} µs"}
    return t


def timeline_texts(m: dict) -> dict[str, str]:
    """The mixed step's attention pair per layer (roofline.pair_timeline), prefix "tl": the
    commit and layers measured, each kernel's start and end and the join after the fork, each
    kernel's duration, and how much later the decode branch ends than the prefill kernel."""
    if "medians" not in m:
        return {}
    med = m["medians"]
    t = {"tl_commit": m["commit"], "tl_layers": f"{m['layers']}", "tl_replays": f"{m['replays']}",
         "tl_join": f"{med['join_us']:.1f} µs",
         "tl_lag": f"{m['decode_branch_lag_us']:.1f} µs",
         "tl_decode_delay": f"{med['decode_start_us'] - med['prefill_start_us']:.1f} µs"}
    for k in ("prefill", "decode", "reduce"):
        t |= {f"tl_{k}_start": f"{med[f'{k}_start_us']:.1f} µs", f"tl_{k}_end": f"{med[f'{k}_end_us']:.1f} µs",
              f"tl_{k}_us": f"{med[f'{k}_end_us'] - med[f'{k}_start_us']:.1f} µs"}
    return t


def copies_texts(m: dict) -> dict[str, str]:
    """The mixed step's memsets (roofline.pair_copies), prefix "pc": how many, how many come just
    before one kernel, that kernel, their median µs."""
    if not m:
        return {}
    return {"pc_count": f"{m['count']}", "pc_before_count": f"{m['before_count']}", "pc_us": f"{m['us']:.1f} µs",
            "pc_before": m["before"]}


def order_texts(m: dict) -> dict[str, str]:
    """Set AG's section (roofline.measured_for_order), prefix "or": the swapped code's timeline
    (each kernel's start, the join), the A/B's step changes."""
    if "timeline" not in m:
        return {}
    med = m["timeline"]["medians"]
    t = {"or_commit": m["timeline"]["commit"], "or_join": f"{med['join_us']:.1f} µs",
         "or_prefill_start": f"{med['prefill_start_us']:.1f} µs", "or_decode_start": f"{med['decode_start_us']:.1f} µs"}
    if "lease" in m:
        t |= _step_change_texts("or", m["lease"]) | {"or_ab_rounds": f"{int(m['lease']['n'].min())}"}
    if "step_check" in m:
        t["or_check"] = f"max |d| {m['step_check']['max_abs_diff']:g}"
    return t


def _chain_shape(row, grid: bool = True) -> str:
    tiles = f"{row['block_n']:.0f} × {row['block_k']:.0f}, {row['num_stages']:.0f} stages"
    return tiles + (f", {row['grid']:.0f} programs" if grid and row["grid"] else "")


def _chain_same_tiles(m: dict, arm: str, row) -> float:
    """`arm`'s ms at `row`'s launch shape (and grid, for the persistent arms)."""
    p = m["plans"]
    same = (p["arm"] == arm) & (p["block_n"] == row["block_n"]) & (p["block_k"] == row["block_k"]) \
        & (p["num_stages"] == row["num_stages"])
    if arm != "kernels":
        same &= p["grid"] == row["grid"]
    return float(p.loc[same, "ms"].iloc[0])


def chain_texts(m: dict) -> dict[str, str]:
    """Set AH's section (roofline.measured_for_chain), prefix "ch": the chain (weights, GEMMs,
    floor, the engine's own kernels for them), each arm's fastest plan, the persistent arm's
    change and its cost per barrier against the separate kernels at its own tiles, weights
    loaded before the barrier at the same plan, the persistent kernel's registers."""
    if "best" not in m:
        return {}
    best = m["best"]
    k, per, pre = best.loc["kernels"], best.loc["persistent"], best.loc["prefetch"]
    same_kernels = _chain_same_tiles(m, "kernels", per)
    same_prefetch = _chain_same_tiles(m, "prefetch", per)
    barriers = m["gemms"] - 1
    t = {"ch_commit": m["commit"], "ch_gb": f"{m['weight_gb']:.2f} GB", "ch_floor": f"{m['floor_ms']:.3f} ms",
         "ch_gemms": f"{m['gemms']}", "ch_barriers": f"{barriers}", "ch_plans": f"{len(m['plans'])}",
         "ch_rounds": f"{int(m['plans']['rounds'].min())}", "ch_frame": f"{m['frame_ms'] * 1e3:.1f} µs",
         "ch_err": f"{m['max_err']:.3f}",
         "ch_kernels": f"{k['ms']:.3f} ms", "ch_kernels_shape": _chain_shape(k, grid=False),
         "ch_kernels_over": bd.times(k["ms"] / m["floor_ms"]),
         "ch_persistent": f"{per['ms']:.3f} ms", "ch_persistent_shape": _chain_shape(per),
         "ch_persistent_change": bd.pct(per["ms"] / k["ms"] - 1),
         "ch_same_kernels": f"{same_kernels:.3f} ms",
         "ch_per_barrier": f"{(per['ms'] - same_kernels) / barriers * 1e3:.1f} µs",
         "ch_prefetch_same": f"{same_prefetch:.3f} ms", "ch_prefetch_change": bd.pct(same_prefetch / per["ms"] - 1),
         "ch_prefetch_best": f"{pre['ms']:.3f} ms", "ch_prefetch_shape": _chain_shape(pre)}
    if m.get("regs") is not None:
        t["ch_regs"] = f"{m['regs']}"
    if "launch_us" in m:  # every boundary's launch, as a share of the separate kernels' chain
        t["ch_launch_share"] = f"{barriers * m['launch_us'] / 1e3 / k['ms']:.0%}"
    if "engine_gemm_us" in m:
        t["ch_engine"] = f"{m['engine_gemm_us'] / 1e3:.2f} ms"
    return t


def anchors(data=bd.DATA) -> tuple[dict[str, Grade], dict[str, str]]:
    """Part 10's section on what a reader would use instead (set AJ): its grades
    (grading.anchor_grades) and texts (anchor_texts), with the copy rate for the floors."""
    from . import roofline as rf

    m = rf.measured_for_anchors(data)
    if "anchors" not in m:
        return {}, {}
    return gr.anchor_grades(by_key(), m), anchor_texts(m, rf.rates(data).copy_Bps)


def anchor_texts(m: dict, copy_bps: float) -> dict[str, str]:
    """Set AJ's texts (roofline.measured_for_anchors), prefix "an": each step's GPU ms, ours
    against the compiled plain step and transformers', the compile times, the contexts and the
    plain cache's length, the bytes each step must read at the copy rate (ours: weights and
    the requests' cached positions; the plain step: the whole dense cache), the logits check
    and the first plain run's compiled step."""
    from .roofline import MODEL_NAME, OURS_ANCHOR, PLAIN_COMPILED, PLAIN_GRAPH

    a = m["anchors"]
    ours, graph, compiled = (a.loc[k, "gpu_ms"] for k in (OURS_ANCHOR, PLAIN_GRAPH, PLAIN_COMPILED))
    _, weights, per_position = steps.model_bytes(MODEL_NAME)
    floor = lambda positions: (weights + positions * per_position) / copy_bps * 1e3  # noqa: E731
    plain = a.loc[[PLAIN_GRAPH, PLAIN_COMPILED]]
    t = {"an_commit": m["commit"], "an_rows": f"{m['rows']}", "an_rounds": f"{int(a['rounds'].min())}",
         "an_ours": f"{ours:.2f} ms", "an_plain_graph": f"{graph:.2f} ms", "an_plain_compiled": f"{compiled:.2f} ms",
         "an_below": f"{1 - ours / compiled:.0%}", "an_compile_gain": bd.times(graph / compiled),
         "an_compile_s": f"{a.loc[PLAIN_COMPILED, 'first_call_s']:.0f} s",
         "an_ctx_mean": f"{m['context_mean']:,.0f}", "an_ctx_max": f"{m['context_max']:,}",
         "an_cache_len": f"{m['cache_len']:,}",
         "an_floor_ours": f"{floor(m['rows'] * m['context_mean']):.2f} ms",
         "an_floor_plain": f"{floor(m['rows'] * m['cache_len']):.2f} ms",
         "an_diff": f"{plain['max_abs_diff_vs_ours'].max():.3f}",
         "an_agree": f"{int(plain['argmax_agree_outside_ties'].min())} of {int(plain['rows_outside_ties'].min())}"}
    if "transformers" in m:
        hf = m["transformers"]
        t |= {"an_hf": f"{hf['gpu_ms']:.2f} ms", "an_hf_times": bd.times(hf["gpu_ms"] / ours),
              "an_hf_ctx": f"{hf['context_mean']:,.0f}", "an_hf_first_s": f"{hf['first_call_s']:.0f} s"}
    if "first_compiled_ms" in m:
        t["an_first_compiled"] = f"{m['first_compiled_ms']:.1f} ms"
    if "uniform" in m:
        t |= {"an_uniform": f"{m['uniform']['gpu_ms']:.2f} ms", "an_uniform_ctx": f"{m['uniform']['context']:,}",
              "an_uniform_below": f"{1 - ours / m['uniform']['gpu_ms']:.0%}"}
    if "kernels" in m:
        for short, name in (("ours", OURS_ANCHOR), ("graph", PLAIN_GRAPH), ("compiled", PLAIN_COMPILED)):
            r = m["kernels"].loc[name]
            t |= {f"an_k_{short}_kernels": f"{r['kernels']:,.0f}"} | {
                f"an_k_{short}_{cls.lower()}": f"{r[f'{cls}_us'] / 1e3:.2f} ms" for cls in ("GEMM", "attention", "other")}
    return t


def anchor_kernel_table(m: dict) -> pd.DataFrame:
    """Set AJ's profiled steps (roofline.anchor_kernels) for the page: per anchor, kernels a
    step and kernel time by class."""
    from .roofline import OURS_ANCHOR, PLAIN_COMPILED, PLAIN_GRAPH

    k = m["kernels"].loc[[OURS_ANCHOR, PLAIN_GRAPH, PLAIN_COMPILED]]
    ms = lambda col: (k[col] / 1e3).map("{:.2f}".format)  # noqa: E731
    return pd.DataFrame({"decode step": ["ours", "plain PyTorch, one CUDA graph", "plain PyTorch, torch.compile"],
                         "kernels a step": k["kernels"].map("{:,.0f}".format).to_numpy(),
                         "GEMMs, ms": ms("GEMM_us").to_numpy(), "attention, ms": ms("attention_us").to_numpy(),
                         "the rest, ms": ms("other_us").to_numpy(), "all kernels, ms": ms("total_us").to_numpy()})


def read_texts(m: dict) -> dict[str, str]:
    """Set AI's section (roofline.measured_for_reads), prefix "rd": per weight its MB, the
    engine's kernel, the fastest read and its share; over a decode step the kernels, the reads,
    the share and the difference, and main's decode step with and without that difference."""
    if "weights" not in m:
        return {}
    t = {"rd_commit": m["commit"], "rd_rounds": f"{m['rounds']}", "rd_layers": f"{m['layers']}"}
    for name, r in m["weights"].iterrows():
        t |= {f"rd_{name}_mb": f"{r['mb']:.1f} MB", f"rd_{name}_engine": f"{r['engine_us']:.1f} µs",
              f"rd_{name}_read": f"{r['read_us']:.1f} µs", f"rd_{name}_share": f"{r['share']:.0%}",
              f"rd_{name}_amax": f"{r['amax_us']:.1f} µs", f"rd_{name}_rate": f"{r['read_frac']:.0%}"}
    longer = 1 / m["weights"]["share"] - 1  # how much longer each kernel takes than its read
    t |= {"rd_longer_lo": f"{longer.min():.0%}", "rd_longer_hi": f"{longer.max():.0%}"}
    step = m["step"]
    headroom = step["engine_us"] - step["read_us"]
    t |= {"rd_step_engine": f"{step['engine_us'] / 1e3:.2f} ms", "rd_step_read": f"{step['read_us'] / 1e3:.2f} ms",
          "rd_step_share": f"{step['share']:.0%}", "rd_headroom": f"{headroom:.0f} µs"}
    if "decode_gpu_ms" in m:
        t |= {"rd_decode": f"{m['decode_gpu_ms']:.2f} ms",
              "rd_decode_if": f"{m['decode_gpu_ms'] - headroom / 1e3:.2f} ms"}
    return t


def read_kv_texts(m: dict) -> dict[str, str]:
    """Set AK's texts (roofline.measured_for_read_kv), prefix "rk": one layer's attention bytes
    and their read, the engine's attention a layer and a step, the reads a step and their share,
    and a step of nothing but reads (set AI's GEMM reads and these)."""
    if "read_us" not in m:
        return {}
    step = m["read_us"] * m["layers"]
    t = {"rk_commit": m["commit"], "rk_mb": f"{m['mb']:.1f} MB", "rk_read": f"{m['read_us']:.1f} µs",
         "rk_step_read": f"{step / 1e3:.2f} ms", "rk_rounds": f"{m['rounds']}"}
    if "engine_us" in m:
        t |= {"rk_engine": f"{m['engine_us'] / m['layers']:.1f} µs", "rk_engine_step": f"{m['engine_us'] / 1e3:.2f} ms",
              "rk_share": f"{step / m['engine_us']:.0%}"}
    if "gemm_read_us" in m:
        t["rk_floor"] = f"{(step + m['gemm_read_us']) / 1e3:.2f} ms"
    return t


def tma_texts(m: dict) -> dict[str, str]:
    """Set AL's texts (roofline.measured_for_tma), prefix "tm": the batch's rows, cuBLAS with the
    activation kernel, the fastest TMA shapes one tile a program and persistent (µs, TFLOP/s,
    tiles), the shapes timed, and the follow-up sweep's best beside its own cuBLAS timing."""
    if "best" not in m:
        return {}
    shape = lambda r: f"{int(r['block_m'])} × {int(r['block_n'])}, K {int(r['block_k'])}, {int(r['num_stages'])} stages"  # noqa: E731
    t = {"tm_commit": m["commit"], "tm_rows": f"{m['rows']}", "tm_cublas": f"{m['cublas_us']:.1f} µs",
         "tm_cublas_tflops": f"{m['cublas_tflops']:.0f} TFLOP/s", "tm_shapes": f"{m['shapes']}",
         "tm_best": f"{m['best']['us_per_call']:.1f} µs", "tm_best_tflops": f"{m['best']['tflops']:.0f} TFLOP/s",
         "tm_best_shape": shape(m["best"]),
         "tm_change": f"{m['best']['us_per_call'] / m['cublas_us'] - 1:+.1%}"}
    tiles = ["block_m", "block_n", "block_k", "num_warps", "persistent"]
    same = m["timed"][(m["timed"][tiles] == m["best"][tiles]).all(axis=1)]
    shallow = same.loc[same["num_stages"].idxmin()]
    if shallow["num_stages"] < m["best"]["num_stages"]:  # the best shape's tiles with the fewest stages timed
        t |= {"tm_shallow_stages": f"{int(shallow['num_stages'])}", "tm_shallow": f"{shallow['us_per_call']:.1f} µs"}
    if "tiles" in m and "persistent" in m:
        t |= {"tm_tiles": f"{m['tiles']['us_per_call']:.1f} µs", "tm_persistent": f"{m['persistent']['us_per_call']:.1f} µs",
              "tm_persistent_shape": shape(m["persistent"])}
    if more := m.get("more"):
        best = min((more[k] for k in ("tiles", "persistent") if k in more), key=lambda r: r["us_per_call"])
        t |= {"tm_more_shapes": f"{more['shapes']}", "tm_more_best": f"{best['us_per_call']:.1f} µs",
              "tm_more_cublas": f"{more['cublas_us']:.1f} µs", "tm_more_best_shape": shape(best)}
    return t


def prefill_rates_texts(m: dict) -> dict[str, str]:
    """Set AM's texts (roofline.closed_floor's "rates" and attention terms), prefix "pr": the
    commit, the longest prefix, our kernel against the fastest SDPA backend after 1,024 keys and
    after the longest prefix, and the 128 x 128 pass's prompt attention at our kernel's rates and
    at the fastest measured."""
    if "rates" not in m:
        return {}
    r = m["rates"]
    t = {"pr_commit": r["commit"].iloc[0], "pr_prefix_hi": f"{r.index[-1]:,}",
         "pr_ours_hi": f"{r['ours'].iloc[-1]:.0f} TFLOP/s", "pr_sdpa_hi": f"{r['sdpa'].iloc[-1]:.0f} TFLOP/s",
         "pr_ratio_hi": f"{r['ours_vs_sdpa'].iloc[-1]:.2f}×", "pr_sdpa_kernel": r["sdpa_kernel"].iloc[-1],
         "pr_pass_ours": f"{m['attention_ours_s']:.2f} s", "pr_pass_best": f"{m['attention_s']:.2f} s"}
    if 1024 in r.index:  # the texts after 1,024 keys, where set X's probe stopped
        k = r.loc[1024]
        t |= {"pr_ours_1k": f"{k['ours']:.0f} TFLOP/s", "pr_sdpa_1k": f"{k['sdpa']:.0f} TFLOP/s",
              "pr_sdpa_growth": f"{r['sdpa'].iloc[-1] / k['sdpa']:.2f}×",
              "pr_ours_growth": f"{r['ours'].iloc[-1] / k['ours']:.2f}×"}
    return t


def prefill_long_texts(m: dict) -> dict[str, str]:
    """Set AN's texts (roofline.measured_for_prefill_long), prefix "pl": the commit, the shapes a
    case, and after the shortest and the longest prefix the engine's shape against the sweep's
    fastest (µs, TFLOP/s, its shape, the engine's time over it)."""
    if "cases" not in m:
        return {}
    t = {"pl_commit": m["commit"]}
    for key, cached in (("lo", min(m["cases"])), ("hi", max(m["cases"]))):
        case = m["cases"][cached]
        best, engine = case["best"], case["engine"]
        t |= {f"pl_prefix_{key}": f"{cached:,}", f"pl_best_{key}": f"{best['median_ms'] * 1e3:.1f} µs",
              f"pl_best_{key}_tflops": f"{best['tflops']:.0f} TFLOP/s",
              f"pl_shape_{key}": f"{int(best['block_m'])} rows × {int(best['block_n'])} keys, {int(best['num_stages'])} stages"}
        t["pl_shapes"] = f"{case['shapes']}"
        if engine is not None:
            t |= {f"pl_engine_{key}": f"{engine['median_ms'] * 1e3:.1f} µs",
                  f"pl_gain_{key}": f"{engine['median_ms'] / best['median_ms'] - 1:.1%}"}
    return t


def split_prefill_texts(m: dict) -> dict[str, str]:
    """Set AO's texts (roofline.measured_for_split_prefill), prefix "sp": the commit; after the
    longest prefix the fastest split probe (µs, TFLOP/s, splits, rows), one split at the same
    rows, ours and the fastest SDPA backend; on the fresh chunk one split at 64 rows against
    ours (what the partials and the reduce add)."""
    if "cases" not in m:
        return {}
    us = lambda x: f"{x:.1f} µs"  # noqa: E731
    longest, fresh = m["cases"][max(m["cases"])], m["cases"][min(m["cases"])]
    best = longest["best"]
    one = lambda case, rows: case["splits"][(case["splits"]["splits"] == 1)  # noqa: E731
                                            & (case["splits"]["block_m"] == rows)]["us"].iloc[0]
    return {"sp_commit": m["commit"], "sp_prefix_hi": f"{max(m['cases']):,}", "sp_best": us(best["us"]),
            "sp_best_tflops": f"{best['tflops']:.0f} TFLOP/s", "sp_best_splits": f"{int(best['splits'])}",
            "sp_best_rows": f"{int(best['block_m'])}", "sp_one_hi": us(one(longest, int(best["block_m"]))),
            "sp_ours_hi": us(longest["ours_us"]), "sp_sdpa_hi": us(longest["sdpa_us"]),
            "sp_one_fresh": us(one(fresh, int(best["block_m"]))), "sp_ours_fresh": us(fresh["ours_us"])}


def split_parts_texts(m: dict) -> dict[str, str]:
    """Set AP's texts (roofline.measured_for_split_parts), prefix "spp": on the fresh chunk (one
    run) and after the longest prefix (4 runs), 64-row tiles, the split kernel alone and merged,
    beside the packed kernel, and what the merge adds."""
    if "probe" not in m:
        return {}
    probe, ours = m["probe"], m["ours_us"]
    t = {"spp_commit": m["commit"], "spp_prefix_hi": f"{max(ours.index):,}"}
    for key, cached, runs in (("fresh", min(ours.index), 1), ("hi", max(ours.index), 4)):
        alone, merged = (probe.loc[(cached, kernel, runs, 64)] for kernel in ("split kernel alone", "split"))
        t |= {f"spp_alone_{key}": f"{alone['us']:.1f} µs", f"spp_merged_{key}": f"{merged['us']:.1f} µs",
              f"spp_ours_{key}": f"{ours[cached]:.1f} µs", f"spp_merge_{key}": f"{merged['us'] - alone['us']:.0f} µs",
              f"spp_alone_{key}_tflops": f"{alone['tflops']:.0f} TFLOP/s"}
        t[f"spp_saving_{key}"] = f"{1 - alone['us'] / ours[cached]:.0%}"
    return t


def _split_probe_texts(m: dict, kernel: str, prefix: str, fresh_runs: int) -> dict[str, str]:
    """Per prefix, 64-row tiles, the split probe's `kernel` rows (roofline.measured_for_split_parts)
    at 4 runs (`fresh_runs` on the fresh chunk) against the packed kernel: µs and the change."""
    if "probe" not in m:
        return {}
    probe, ours = m["probe"], m["ours_us"]
    t = {f"{prefix}_commit": m["commit"]}
    for cached in ours.index:
        us = probe.loc[(cached, kernel, fresh_runs if cached == min(ours.index) else 4, 64)]["us"]
        t |= {f"{prefix}_{cached}": f"{us:.1f} µs", f"{prefix}_ours_{cached}": f"{ours[cached]:.1f} µs",
              f"{prefix}_change_{cached}": f"{us / ours[cached] - 1:+.0%}"}
    return t


def split_merge_texts(m: dict) -> dict[str, str]:
    """Set AQ's texts (split_prefill_merge), prefix "sq": merged by tile, one run on the fresh chunk."""
    return _split_probe_texts(m, "split, merged by tile", "sq", 1)


def split_adaptive_texts(m: dict) -> dict[str, str]:
    """Set AR's texts (split_prefill_adaptive), prefix "sr": runs chosen per tile, at most 4."""
    return _split_probe_texts(m, "split, adaptive", "sr", 4)


def runs_texts(m: dict) -> dict[str, str]:
    """Set AS's texts (roofline.measured_for_runs), prefix "ru": the first and the fixed kernel
    against one run a tile by prefix, the census A/B and our closed pass before and after."""
    if "first" not in m:
        return {}
    t = {"ru_first_commit": m["first_commit"]} | {f"ru_first_{k}": f"{r:.2f}×" for k, r in m["first"]["ratio"].items()}
    if "parts" in m:  # the fixed kernel, in the table's run
        ratio = m["parts"]["ours"] / m["parts"]["ours, one run"]
        t |= {"ru_fixed_commit": m["parts_commit"], "ru_fixed_best": f"{ratio.min():.2f}×"} | {
            f"ru_fixed_{k}": f"{r:.2f}×" for k, r in ratio.items()}
    if "lease" in m:
        mixed = m["lease"].loc[("one-kernel gate_up", "mixed")]
        t |= {"ru_census_mixed": f"{mixed['base_gpu_ms']:.2f} to {mixed['new_gpu_ms']:.2f} ms",
              "ru_census_change": f"{bd.pct(mixed['ratio'] - 1)}", "ru_census_rounds": f"{int(mixed['n'])}"}
    if "closed" in m:
        c = m["closed"]
        t |= {"ru_closed_base": f"{c['base_wall_s']:.3f} s", "ru_closed_new": f"{c['new_wall_s']:.3f} s",
              "ru_closed_change": f"{bd.pct(c['ratio'] - 1)} [{bd.pct(c['lo'] - 1)}, {bd.pct(c['hi'] - 1)}]",
              "ru_closed_rounds": f"{c['n']}",
              "ru_mixed_gpu_base": f"{c['base_mixed_gpu_ms']:.2f} ms", "ru_mixed_gpu_new": f"{c['new_mixed_gpu_ms']:.2f} ms",
              "ru_mixed_s_base": f"{c['base_mixed_s']:.3f} s", "ru_mixed_s_new": f"{c['new_mixed_s']:.3f} s"}
    return t


# prefill_runs_parts' columns for the page, in order: (kernel label in the rows, column name).
RUNS_PARTS_COLUMNS = (("ours, one run", "one run a tile"), ("ours", "at most 4 runs (the change)"),
                      ("ours, never split", "4 runs' grid, none split"), ("ours, at most 2 runs", "at most 2 runs"),
                      ("ours, runs of at least 3", "runs of at least 3 key tiles"),
                      ("split, adaptive", "set AR's probe"), ("sdpa flash", "SDPA flash"))


def runs_table(m: dict) -> pd.DataFrame:
    """Set AS's variants by prefix, µs (roofline.measured_for_runs's "parts") for the page."""
    parts = m["parts"]
    return pd.DataFrame({"keys cached before the chunk": [f"{k:,}" for k in parts.index]}
                        | {name: parts[label].to_list() for label, name in RUNS_PARTS_COLUMNS})


def prefill_rates_table(m: dict) -> pd.DataFrame:
    """Set AM's rates by prefix (roofline.closed_floor's "rates") for the page."""
    r = m["rates"]
    return pd.DataFrame({"keys cached before the chunk": [f"{k:,}" for k in r.index],
                         "ours, TFLOP/s": r["ours"].map("{:.0f}".format),
                         "fastest SDPA backend, TFLOP/s": [f"{x:.0f} ({k.removeprefix('sdpa ')})"
                                                           for x, k in zip(r["sdpa"], r["sdpa_kernel"])],
                         "ours / SDPA, time": r["ours_vs_sdpa"].map("{:.2f}×".format)}).reset_index(drop=True)


def closed_floor_texts(m: dict) -> dict[str, str]:
    """The 20x target's budget against the closed pass's floor (roofline.closed_floor), prefix
    "cf"."""
    if not m:
        return {}
    sec = lambda x: f"{x:.2f} s"  # noqa: E731
    times = lambda x: f"{m['peer_s'] / x:.1f}×"  # noqa: E731
    r = m["rates"]
    return {"cf_peer": f"{m['peer_s']:.1f} s", "cf_budget": sec(m["budget_s"]), "cf_peer_leases": f"{m['peer_leases']}",
            "cf_peer_range": f"{m['peer_lo_s']:.1f} to {m['peer_hi_s']:.1f} s", "cf_budget_hi": sec(m["budget_hi_s"]),
            "cf_ours": sec(m["ours_s"]), "cf_n_mixed": f"{m['n_mixed']}", "cf_mixed": sec(m["mixed_s"]),
            "cf_n_decode": f"{m['n_decode']}", "cf_decode": sec(m["decode_s"]), "cf_requests": f"{m['requests']}",
            "cf_prompt_tokens": f"{m['prompt_tokens']:,}", "cf_chunk": f"{m['chunk']}",
            "cf_gemm_tflop": f"{m['gemm_flop'] / 1e12:.0f} TFLOP", "cf_gemm_rate": f"{m['gemm_flops'] / 1e12:.0f} TFLOP/s",
            "cf_gemm": sec(m["gemm_s"]), "cf_attention_tflop": f"{m['attention_flop'] / 1e12:.1f} TFLOP",
            "cf_rate_lo": f"{r['best'].iloc[0]:.0f} TFLOP/s", "cf_rate_hi": f"{r['best'].iloc[-1]:.0f} TFLOP/s",
            "cf_prefix_hi": f"{r.index[-1]:,}", "cf_attention": sec(m["attention_s"]),
            "cf_attention_ours": sec(m["attention_ours_s"]), "cf_read_step": f"{m['decode_floor_s'] * 1e3:.2f} ms",
            "cf_decode_floor": sec(m["decode_steps_s"]), "cf_floor": sec(m["floor_s"]), "cf_floor_times": times(m["floor_s"]),
            "cf_against": (f"20× needs a pass {1 - m['budget_s'] / m['floor_s']:.0%} shorter than that floor"
                           if m["budget_s"] < m["floor_s"] else
                           f"20× leaves the pass {m['budget_s'] / m['floor_s'] - 1:.0%} above that floor, with no norm, launch, "
                           "host gap or scheduling loss anywhere in it"),
            "cf_ours_over_floor": f"{m['ours_s'] / m['floor_s']:.2f}×",
            "cf_floor_ours": sec(m["floor_ours_s"]), "cf_floor_ours_times": times(m["floor_ours_s"]),
            "cf_strict_floor": sec(m["strict_floor_s"]), "cf_strict_times": times(m["strict_floor_s"])}


def read_table(m: dict) -> pd.DataFrame:
    """Set AI's weights (roofline.measured_for_reads) for the page."""
    w = m["weights"]
    return pd.DataFrame({"weight": w.index, "MB": w["mb"].map("{:.1f}".format),
                         "engine's kernel, µs": w["engine_us"].map("{:.1f}".format),
                         "fastest read, µs (programs)": [f"{r.read_us:.1f} ({r.read_programs})" for r in w.itertuples()],
                         "read / kernel": w["share"].map("{:.0%}".format),
                         "read, of the copy rate": w["read_frac"].map("{:.0%}".format),
                         "torch amax, µs": w["amax_us"].map("{:.1f}".format)}).reset_index(drop=True)


def chain_table(m: dict) -> pd.DataFrame:
    """Set AH's plans (roofline.measured_for_chain) for the page: tiles, arm, programs, the
    chain's ms, and its change against the separate kernels at the same tiles."""
    p = m["plans"]
    base = {(r.block_n, r.block_k, r.num_stages): r.ms for r in p[p["arm"] == "kernels"].itertuples()}
    vs = [r.ms / base[(r.block_n, r.block_k, r.num_stages)] - 1 for r in p.itertuples()]
    return pd.DataFrame({"tile (columns × K), stages": [_chain_shape(r, grid=False) for _, r in p.iterrows()],
                         "arm": p["arm"].map({"kernels": "separate kernels", "persistent": "persistent, barriers",
                                              "prefetch": "persistent, weights first"}),
                         "programs": [("one per tile" if r.arm == "kernels" else f"{r.grid:.0f}") for r in p.itertuples()],
                         "chain, GPU": p["ms"].map("{:.3f} ms".format),
                         "against separate kernels": [("" if r.arm == "kernels" else bd.pct(x))
                                                      for r, x in zip(p.itertuples(), vs)]})


def beside_table(m: dict) -> pd.DataFrame:
    """Set AE's plans, both sweeps (roofline.measured_for_beside), formatted for the page: the
    sweep, decode programs per SM beside the chunk, the tile order, the decode rows' splits,
    the mixed step's GPU ms and its change against the sweep's first plan."""
    frames = [m[k].assign(sweep=label) for k, label in (("plans", "first"), ("more", "second")) if k in m]
    df = pd.concat(frames, ignore_index=True)
    return pd.DataFrame({"sweep": df["sweep"], "programs per SM": df["programs_per_sm"].map("{:g}".format),
                         "tiles": df["longest_first"].map({True: "longest first", False: "in position order"}),
                         "splits": df["splits"].astype(int), "mixed step, GPU": df["gpu_ms"].map("{:.3f} ms".format),
                         "change": df["change"].map(bd.pct)})


def attention_bound_table(m: dict) -> pd.DataFrame:
    """Set X's counter table: per case (decode at 1k and both chunks), call and kernel (the
    mask-building kernels of cuDNN's bottom-right causal path left out), ncu's time and the counters
    the section reads, formatted for the page."""
    c = m["counters"]
    c = c[~c["kernel"].str.startswith("native::") & c["case"].isin(["decode 1024", "first chunk", "chunk after 2 chunks"])]
    return pd.DataFrame({
        "case": c["case"], "call": c["call"].str.replace("sdpa ", "SDPA "),
        "kernel": c["kernel"].str.replace("cudnn_generated_fort_native_", "cudnn ").str.replace(r"_knob.*", "", regex=True)
                             .str.removeprefix("pytorch_flash::"),
        "µs": c["us"].map(lambda x: f"{x:.1f}"), "DRAM, % of peak": c["dram_pct"].map(lambda x: f"{x:.0f}"),
        "tensor pipe, %": c["tensor_pct"].map(lambda x: f"{x:.0f}"),
        "warp slots used, % (at most)": [f"{a:.0f} ({b:.0f})" for a, b in zip(c["occupancy_pct"], c["theoretical_pct"])],
        "registers": c["registers"].map(lambda x: f"{x:.0f}"), "programs": c["grid"].map(lambda x: f"{x:.0f}"),
        "issue / cycle": c["issue_per_cycle"].map(lambda x: f"{x:.2f}"),
        "largest stall (cycles / instruction)": [f"{s} ({v:.1f})" for s, v in zip(c["top_stall"], c["top_stall_cycles"])]})


def prefill_texts(m: dict) -> dict[str, str]:
    """Set R's section (roofline.measured_for_prefill), prefix "rf": the isolated sweep's two
    shapes; the A/B lease's mixed and decode steps and the mixed step's attention kernels per
    arm, the falls and changes; the serving loop on the new code; the GPU tests, the gates and
    the peer bracket at its commit."""
    if "lease" not in m:
        return {}
    lease = m["lease"]
    dec, mixed = lease.loc[("second stream", "decode")], lease.loc[("second stream", "mixed")]
    t = {"rf_rounds": f"{int(mixed['n'])}", "rf_mixed_base": f"{mixed['base_gpu_ms']:.2f} ms",
         "rf_mixed_new": f"{mixed['new_gpu_ms']:.2f} ms", "rf_mixed_change": _change(mixed),
         "rf_mixed_fall": f"{(mixed['base_gpu_ms'] - mixed['new_gpu_ms']) * 1e3:.0f} µs",
         "rf_dec_base": f"{dec['base_gpu_ms']:.2f} ms", "rf_dec_new": f"{dec['new_gpu_ms']:.2f} ms",
         "rf_dec_change": _change(dec)}
    if "sweep" in m:
        for case, key in (("setup mixed step", "fresh"), ("chunk after 2 chunks", "long")):
            r = m["sweep"].loc[case]
            t |= {f"rf_sweep_{key}_64": f"{r['part7_us']:.1f} µs", f"rf_sweep_{key}_128": f"{r['part10_us']:.1f} µs",
                  f"rf_sweep_{key}_fall": f"{1 - r['part10_us'] / r['part7_us']:.0%}"}
    for name, key in (("packed_attention_kernel", "packed"), ("splitkv_decode_kernel", "splitkv"),
                      ("splitkv_reduce_kernel", "reduce")):
        if "kernels" in m and name in m["kernels"].index:
            r = m["kernels"].loc[name]
            t |= {f"rf_{key}_base": f"{r['base_us']:.0f} µs", f"rf_{key}_new": f"{r['new_us']:.0f} µs",
                  f"rf_{key}_fall": f"{1 - r['new_us'] / r['base_us']:.0%}"}
    if "serial_kernels" in m:
        serial, k = m["serial_lease"].loc[("one-kernel gate_up", "mixed")], m["serial_kernels"]
        packed = k.loc["packed_attention_kernel"]
        t |= {"rf_serial_packed_base": f"{packed['base_us']:.0f} µs", "rf_serial_packed_new": f"{packed['new_us']:.0f} µs",
              "rf_serial_packed_fall": f"{1 - packed['new_us'] / packed['base_us']:.0%}",
              "rf_serial_mixed_fall": f"{(serial['base_gpu_ms'] - serial['new_gpu_ms']) * 1e3:.0f} µs",
              "rf_serial_change": _change(serial), "rf_serial_rounds": f"{int(serial['n'])}"}
    if "loop" in m:
        ld, lm = m["loop"]["steps"].loc["decode"], m["loop"]["steps"].loc["mixed"]
        t |= {"rf_loop_dec": f"{ld['parallel_interval_ms']:.2f} ms", "rf_loop_mixed": f"{lm['parallel_interval_ms']:.2f} ms",
              "rf_loop_mixed_gpu": f"{lm['parallel_gpu_ms']:.2f} ms",
              "rf_loop_mixed_serial": f"{lm['serial_interval_ms']:.2f} ms", "rf_loop_rounds": f"{int(lm['n'])}"}
    if "gpu_tests" in m:
        g = m["gpu_tests"]
        t["rf_tests"] = f"{g['passed']} passed, {g['failed']} failed, {g['skipped']} skipped"
    if "gates" in m:
        t["rf_gates"] = f"{_passed(m['gates'])}, over {m['gates']['timestamp'].nunique()} configurations"
    if "peer" in m:
        ps = m["peer_steps"]
        t |= {"rf_peer": _times_peer(m["peer"]), "rf_peer_wall": f"{ps['wall_s']:.2f} s",
              "rf_peer_mixed_n": f"{ps['n_mixed_steps']:.0f}", "rf_peer_mixed_s": f"{ps['total_mixed_step_s']:.2f} s",
              "rf_peer_decode_n": f"{ps['n_decode_steps']:.0f}", "rf_peer_decode_s": f"{ps['total_decode_step_s']:.2f} s"}
    return t


def partials_texts(m: dict, merge: dict) -> dict[str, str]:
    """The glued texts of sets L and M's section (roofline.measured_for_set_l and _m): both
    split-K A/B leases, the sweep per projection, the kept tree's logit check and gates, the
    in-kernel merge's lease and its decode kernel's time."""
    t = _lease_texts(m, (("first", "l_first"), ("kept", "l_kept")))
    if "sweep" in m:
        for gemm, r in m["sweep"].iterrows():
            t |= {f"l_{gemm}_cublas": f"{r['cublas_us']:.1f} µs", f"l_{gemm}_best": f"{r['best_us']:.1f} µs",
                  f"l_{gemm}_frac": f"{r['best_frac']:.0%}", f"l_{gemm}_cublas_frac": f"{r['cublas_frac']:.0%}",
                  f"l_{gemm}_shape": r["best_shape"], f"l_{gemm}_mb": f"{r['weight_mb']:.1f} MB"}
        t |= {"l_shapes": f"{m['sweep']['shapes'].sum()}", "l_sweep_err": f"{m['sweep']['max_err'].max():.4f}",
              "l_down_first": f"{m['sweep'].loc['down', 'first_us']:.1f} µs"}
    if "kernels" in m:  # what the GEMMs saved a step, and what summing the partials cost their readers
        k = m["kernels"]
        gemms, readers = ~k.index.isin(["add_rms_norm_kernel", "rotary_to_cache_kernel"]), \
            ["add_rms_norm_kernel", "rotary_to_cache_kernel"]
        t |= {"l_gemms_saved": f"{(k.loc[gemms, 'base_us'] - k.loc[gemms, 'new_us']).sum():.0f} µs",
              "l_readers_cost": f"{(k.loc[readers, 'new_us'] - k.loc[readers, 'base_us']).sum():.0f} µs"}
    if "kept_step_check" in m:
        c = m["kept_step_check"]
        t["l_check"] = (f"max |d| {c['max_abs_diff']:.4f}, argmax {int(c['argmax_agree_outside_ties'])} of "
                        f"{int(c['rows_outside_ties'])} outside ties")
    if "kept_gates" in m and len(m["kept_gates"]):
        t["l_kept_gates"] = _passed(m["kept_gates"])
    t |= _lease_texts(merge, (("merge", "m"),))
    if "kernels" in merge:
        k = merge["kernels"]
        t |= {"m_decode_before": f"{k.loc['splitkv_decode_kernel', 'base_us']:.0f} µs",
              "m_decode_after": f"{k.loc['splitkv_decode_kernel', 'new_us']:.0f} µs",
              "m_reduce": f"{k.loc['splitkv_reduce_kernel', 'base_us']:.0f} µs"}
    return t


def down_texts(m: dict) -> dict[str, str]:
    """The glued texts of set K's section (roofline.measured_for_set_k): both A/B leases, the
    two sweeps (cuBLAS, first shape, best shape), the kept tree's logit check
    and gates."""
    t = _lease_texts(m, (("first", "d_first"), ("kept", "d_kept")))
    if "sweeps" in m:
        for i, r in enumerate(m["sweeps"].itertuples(), 1):
            t |= {f"d_sweep{i}_cublas": f"{r.cublas_us:.1f} µs ({r.cublas_frac:.0%} of the copy rate)",
                  f"d_sweep{i}_first": f"{r.first_us:.1f} µs", f"d_sweep{i}_best": f"{r.best_us:.1f} µs",
                  f"d_sweep{i}_best_frac": f"{r.best_frac:.0%}", f"d_sweep{i}_shape": r.best_shape,
                  f"d_sweep{i}_shapes": f"{r.shapes}"}
        t["d_sweep_err"] = f"{m['sweeps']['max_err'].max():.4f}"
    if "kept_step_check" in m:
        c = m["kept_step_check"]
        t["d_check"] = (f"max |d| {c['max_abs_diff']:.4f}, argmax {int(c['argmax_agree_outside_ties'])} of "
                        f"{int(c['rows_outside_ties'])} outside ties")
    if "before_step_check" in m:
        t["d_check_before"] = f"{m['before_step_check']['max_abs_diff']:g}"
    if "kept_gates" in m and len(m["kept_gates"]):
        t["d_kept_gates"] = _passed(m["kept_gates"])
    return t


def rotary_texts(m: dict) -> dict[str, str]:
    """The glued texts of set J's section (roofline.measured_for_set_j): each A/B lease's decode
    and mixed steps, the kernel counts, the two forms' logit checks, the kept change's gates."""
    t = _lease_texts(m, (("select", "j_sel"), ("after_loop", "j_aft"), ("kept", "j_kept")))
    for key, name in (("select_check", "j_sel_check"), ("after_loop_check", "j_aft_check")):
        if key in m:
            t[name] = f"{m[key]['max_abs_diff']:.3g}"
    if "kept_gates" in m and len(m["kept_gates"]):
        t["j_kept_gates"] = _passed(m["kept_gates"])
    return t


def flush_pdl_texts(m: dict) -> dict[str, str]:
    """The glued texts of sets H and I's section (roofline.measured_for_sets_h_i): the two
    flushes' copy and attention times, ncu's write-back, the launch-shape, PDL and kept A/Bs."""
    t = {}
    if "sweep" in m:
        at = m["sweep"].set_index(["context", "l2_flush"])
        contexts = sorted({c for c, _ in at.index})
        for context in contexts:
            k = context // 1024
            for flush in ("zero", "read"):
                r = at.loc[(context, flush)]
                t |= {f"h_copy_{flush}_{k}k": f"{r['copy_us']:.1f} µs", f"h_best_{flush}_{k}k": f"{r['best_us']:.1f} µs",
                      f"h_frac_{flush}_{k}k": f"{r['best_fraction']:.0%}"}
        t["h_default_read_1k"] = f"{at.loc[(1024, 'read'), 'default_us']:.1f} µs"
        cost = [1 - at.loc[(c, "read"), "best_us"] / at.loc[(c, "zero"), "best_us"] for c in contexts]
        one = at.loc[(1024, "read")]
        t |= {"h_flush_cost": f"{min(cost):.0%} to {max(cost):.0%}", "h_shapes": f"{one['shapes']}",
              "h_stream_1k": f"{one['stream_us']:.1f} µs", "h_fixed_1k": f"{one['best_us'] - one['stream_us']:.1f} µs"}
        latest = m["sweep_latest"].set_index(["context", "l2_flush"])
        t["i_best_read_1k"] = f"{latest.loc[(1024, 'read'), 'best_us']:.1f} µs"
        t |= {f"i_frac_read_{c // 1024}k": f"{latest.loc[(c, 'read'), 'best_fraction']:.0%}" for c in contexts}
    if "probe" in m:
        med = m["probe"].groupby(["l2_flush", "kernel"])[["write_mb", "read_mb", "us"]].median()
        dec, red = "splitkv_decode_kernel", "splitkv_reduce_kernel"
        t |= {"h_write_zero": f"{med.loc[('zero', dec), 'write_mb']:.1f} MB",
              "h_write_read": f"{med.loc[('read', dec), 'write_mb']:.2f} MB",
              "h_read_mb": f"{med.loc[('read', dec), 'read_mb']:.1f} MB",
              "h_decode_us_zero": f"{med.loc[('zero', dec), 'us']:.1f} µs",
              "h_decode_us_read": f"{med.loc[('read', dec), 'us']:.1f} µs"}
        if ("read", red) in med.index:
            t["h_reduce_us"] = f"{med.loc[('read', red), 'us']:.1f} µs"
    t |= _lease_texts(m, (("shape", "s"), ("pdl", "p"), ("kept", "q")))
    if "pdl" in m and ("cuBLAS gate_up", "decode") in m["pdl"].index:
        t["p_cublas_change"] = _change(m["pdl"].loc[("cuBLAS gate_up", "decode")])
    if "kept_gates" in m and len(m["kept_gates"]):
        t["q_gates"] = _passed(m["kept_gates"])
    return t


def norm_gate_up_texts(m: dict) -> dict[str, str]:
    """The glued texts of set G's section (roofline.measured_for_set_g): the fold's A/B census,
    its three sweeps, the norm's and the rotary kernel's times, its checks, and the A/B of the
    change kept."""
    t = _lease_texts(m, (("fold", "n"), ("kept", "r")))
    if "sweeps" in m:
        sw = m["sweeps"]
        first = sw.iloc[0]
        t |= {"n_three": f"{first['three_us']:.1f} µs", "n_default": f"{first['default_us']:.1f} µs",
              "n_best": f"{first['best_us']:.1f} µs"}
        for i, r in enumerate(sw.iloc[1:].itertuples(), start=2):
            t[f"n_best_{i}"] = f"{r.best_us:.1f} µs"
    if "norm_us" in m:
        t["n_norm_us"] = f"{m['norm_us']:.1f} µs"
    if "rotary_us" in m and {"base", "new"} <= set(m["rotary_us"]):
        t |= {"n_rotary_before": f"{m['rotary_us']['base']:.0f} µs", "n_rotary": f"{m['rotary_us']['new']:.0f} µs"}
    if "step_check" in m:
        sc = m["step_check"]
        t["n_check"] = (f"{sc['max_abs_diff']:.3f}, argmax {int(sc['argmax_agree_outside_ties'])} of "
                        f"{int(sc['rows_outside_ties'])} outside ties")
    for key, name in (("gates", "n_gates"), ("kept_gates", "r_gates")):
        if key in m and len(m[key]):
            t[name] = _passed(m[key])
    return t


def _lease_texts(m: dict, leases) -> dict[str, str]:
    """`_ab_texts` of each (key, prefix) of `leases` whose A/B lease `m` holds."""
    return {k: v for key, prefix in leases if key in m for k, v in _ab_texts(m[key], prefix).items()}


def _ab_texts(lease: pd.DataFrame, prefix: str) -> dict[str, str]:
    """One A/B census lease's (roofline.census_ab, indexed by role and step) glued texts for the
    engine's configuration: its decode step before and after (GPU and wall time), the change
    with its interval, the mixed step's change, kernels per step before and after and per
    layer after."""
    from .roofline import SHAPE_AB_ROLE

    dec, mixed = lease.loc[(SHAPE_AB_ROLE, "decode")], lease.loc[(SHAPE_AB_ROLE, "mixed")]
    return {f"{prefix}_dec_before": f"{dec['base_gpu_ms']:.2f} ms", f"{prefix}_dec": f"{dec['new_gpu_ms']:.2f} ms",
            f"{prefix}_change": _change(dec), f"{prefix}_mixed_change": _change(mixed),
            f"{prefix}_kernels_before": f"{dec['base_kernels']:.0f}", f"{prefix}_kernels": f"{dec['new_kernels']:.0f}",
            f"{prefix}_per_layer": f"{dec['new_per_layer']:.1f}",
            f"{prefix}_wall_before": f"{dec['base_wall_ms']:.2f} ms", f"{prefix}_wall": f"{dec['new_wall_ms']:.2f} ms"}


def _step_change_texts(prefix: str, lease: pd.DataFrame) -> dict[str, str]:
    """A census A/B's mixed and decode steps (configuration 6): "<prefix>_mixed_base", "_new"
    and "_change", and the same for "_dec"."""
    t = {}
    for step, short in (("mixed", "mixed"), ("decode", "dec")):
        r = lease.loc[("second stream", step)]
        t |= {f"{prefix}_{short}_base": f"{r['base_gpu_ms']:.2f} ms", f"{prefix}_{short}_new": f"{r['new_gpu_ms']:.2f} ms",
              f"{prefix}_{short}_change": _change(r)}
    return t


def _change(r) -> str:
    """A paired ratio as a change with its interval and pairs, to one decimal (the decode
    step's last kernels move it by about a percent)."""
    return f"{r['ratio'] - 1:+.1%} [{r['lo'] - 1:+.1%}, {r['hi'] - 1:+.1%}] ({int(r['n'])} pairs)"


def _times_peer(peer: pd.DataFrame) -> str:
    """Our runs' range of times the peer's throughput (roofline.peer_comparison's table)."""
    ours = peer[peer["engine"] != "transformers"]["times_peer"]
    lo, hi = f"{ours.min():.1f}×", f"{ours.max():.1f}×"
    return lo if lo == hi else f"{lo} to {hi}"


def _passed(gates: pd.DataFrame) -> str:
    return f"{int(gates['passed'].astype(bool).sum())} of {len(gates)}"


def whole_graphs(data=bd.DATA) -> tuple[dict[str, Grade], dict[str, str]]:
    """The whole-graph chapter's grades (set E but E4) and glued texts: its own, from
    roofline.measured_for_set_e, and the part-10 texts it cites (the earlier lease's census and
    seeds, the weight read, the mixed step's FLOP floor) and those of its appendix on the decode
    step's last kernels (`last_kernels`)."""
    from . import roofline as rf

    _, part10_texts = part10(data)
    m = rf.measured_for_set_e(data)
    grades = {k: g for k, g in gr.whole_graph_grades(by_key(), m).items() if k != "E4"}
    cited = ("p10_mixed_gpu", "capa_part10o", "cap_part10o", "weights_ms", "mix_flops")
    return grades, ({k: part10_texts[k] for k in cited if k in part10_texts} | whole_graph_texts(m)
                    | last_kernels(data)[1])


def whole_graph_texts(m: dict) -> dict[str, str]:
    """The glued texts of the whole-graph chapter, from roofline.measured_for_set_e."""
    from . import answer, roofline as rf

    t = {}
    if "census" in m:
        c = m["census"]
        for key, cfg in (("pw", rf.PART10), ("w", rf.WHOLE)):
            row = c.loc[(cfg, "mixed")]
            t |= {f"{key}_mix_gpu": f"{row['gpu_ms_median']:.2f} ms", f"{key}_mix_wall": f"{row['wall_ms_median']:.2f} ms",
                  f"{key}_mix_kernels": f"{row['kernels_per_step']:,.0f}",
                  f"{key}_mix_kernel_ms": f"{row['kernel_us_per_step'] / 1e3:.2f} ms"}
        piecewise = c.loc[(rf.PART10, "mixed")]
        t["pw_idle"] = f"{1 - piecewise['kernel_us_per_step'] / 1e3 / piecewise['gpu_ms_median']:.0%}"
        last = m["census_last"]
        for key, cfg in (("pw", rf.PART10), ("w", rf.WHOLE)):
            row = last.loc[(cfg, "mixed")]
            t[f"{key}_mix_again"] = f"{row['gpu_ms_median']:.2f} ms of GPU time and {row['wall_ms_median']:.2f} ms wall"
    if "whole_runs" in m:
        served = m["whole_runs"]
        t["w_spread"] = f"{(served.max() - served.min()) / served.median():.1%}"
    for key in ("whole_vs_piecewise", "fused_vs_chunked", "seeds"):
        if key in m:
            r = m[key]
            t |= {f"cap_{key}": f"{answer.interval(r['ratio'], r['lo'], r['hi'])} ({int(r['n'])} "
                                f"{'draws' if key == 'seeds' else 'pairs'})",
                  f"capa_{key}": f"{r['a']:.1f} requests/s", f"capb_{key}": f"{r['b']:.1f} requests/s"}
    if "closed" in m:
        closed = m["closed"]
        t |= {"closed_w_lo": f"{closed['ratio'].min() - 1:+.0%}", "closed_w_hi": f"{closed['ratio'].max() - 1:+.0%}",
              "closed_w_resolved": f"{int(closed['resolved'].sum())} of {len(closed)}"}
    if "peer" in m:
        t["peer_w"] = _times_peer(m["peer"])
    if "steps" in m:
        st = m["steps"]
        for key, whole in (("pw", False), ("w", True)):
            if (whole, "fused") in st.index and (whole, "chunked") in st.index:
                f, c = st.loc[(whole, "fused"), "mixed_gpu_ms"], st.loc[(whole, "chunked"), "mixed_gpu_ms"]
                t |= {f"{key}_st_mixf": f"{f:.2f} ms", f"{key}_st_mixc": f"{c:.2f} ms", f"{key}_st_save": f"{c - f:+.2f} ms"}
    if "gates" in m:
        t["gates_w"] = _passed(m["gates"])
    return t


def page_predictions(page: str, data=bd.DATA) -> str:
    """The opening of an appendix page that grades set D's and E's predictions (closed, peer,
    sensitivity): each as written, with its grade from the campaign's rows, or pointed at the
    open-predictions appendix while its rows are missing."""
    from . import roofline as rf

    preds = for_chapter(page)
    keys = {p.key for p in preds}
    grades = gr.overlap_grades(by_key(), rf.measured_for_set_d(data)) | gr.whole_graph_grades(
        by_key(), rf.measured_for_set_e(data))
    grades = {k: g for k, g in grades.items() if k in keys}
    return chapter_opening(preds, grades)


# Part 10's targets on the scorecard, by figure: (the target as asked, the bound, "max" where the
# figure may be at most the bound, "min" at least). The capacity and peer targets read the
# campaign's paired runs, not set AT's lease.
SCORECARD_TARGETS = {"decode_gpu_ms": ("≤ 1.5 ms", 1.5, "max"), "kernels_per_layer": ("≤ 10", 10.0, "max"),
                     "loop_decode_ms": ("≤ 2.0 ms", 2.0, "max"), "mixed_gpu_ms": ("≤ 4.0 ms", 4.0, "max"),
                     "loop_mixed_ms": ("≤ 4.5 ms", 4.5, "max"), "attention_1k": ("≥ 60%", 0.6, "min"),
                     "attention_2k": ("≥ 60%", 0.6, "min"), "attention_4k": ("≥ 60%", 0.6, "min")}


def scorecard(data=bd.DATA) -> tuple[dict[str, Grade], dict[str, str], pd.DataFrame]:
    """The intro's scorecard: sets AT's and AU's grades (grading.scorecard_grades, final_grades),
    the glued texts (prefix "sc") and the table of part 10's targets (scorecard_table). Empty
    without set AT's rows."""
    from . import answer, roofline as rf

    m = rf.measured_for_scorecard(data)
    if "figures" not in m:
        return {}, {}, pd.DataFrame()
    final = rf.measured_for_final(data)
    extra = {"floors": rf.placed(data).set_index(["config", "step"]).loc[rf.PART10],
             "closed": rf.closed_floor(data), "whole": rf.measured_for_set_e(data),
             "peer": m["peer"], "final": final.get("pairs")}
    table = scorecard_table(m, extra)
    f = m["figures"]
    apart = (f["again"] / f["published"] - 1).abs()
    missed = table[table["target"] == "missed"]
    texts = {"sc_commit": m["commit"], "sc_processes": f"{m['processes']}", "sc_rounds": f"{m['loop_rounds']}",
             "sc_widest": f"{apart.max():.1%}", "sc_widest_what": f.loc[apart.idxmax(), "what"],
             "sc_met": f"{len(table) - len(missed)}", "sc_targets": f"{len(table)}",
             "sc_decode_floor": f"{extra['closed']['decode_floor_s'] * 1e3:.2f} ms",
             "sc_decode": f"{f.loc['decode_gpu_ms', 'again']:.2f} ms"}
    if "pairs" in final and "seeds" in final:
        pairs, seeds = final["pairs"], final["seeds"]
        texts |= {"sc_final_commit": final["commit"], "sc_final_fused": f"{pairs['a_median']:.1f} requests/s",
                  "sc_final_chunked": f"{pairs['b_median']:.1f}",
                  "sc_final_gain": f"{answer.interval(pairs['ratio'], pairs['lo'], pairs['hi'])} ({int(pairs['n'])} pairs)",
                  "sc_final_seeds": f"{answer.interval(seeds['ratio'], seeds['lo'], seeds['hi'])}"}
    return gr.scorecard_grades(by_key(), m) | gr.final_grades(by_key(), final), texts, table


def scorecard_table(m: dict, extra: dict) -> pd.DataFrame:
    """Part 10's targets, one row each: the target as asked, the figure the book published (and
    the set that measured it), the same figure measured again on set AT's lease (roofline.
    measured_for_scorecard; "—" where that lease did not measure it), the floor where one is
    measured, and whether the newest figure meets the target. `extra`: roofline.placed's part-10
    rows ("floors"), closed_floor ("closed"), measured_for_set_e ("whole": capacity offered 80/s),
    measured_for_prefill's peer bracket ("peer") and set AU's final pairs ("final": the capacity
    of the engine the series ends on, measured again in its own configuration; None without rows)."""
    from .roofline import PEER_TARGET

    f, floors, closed = m["figures"], extra["floors"], extra["closed"]
    shown = {"kernels_per_layer": lambda v: f"{v:.1f}", "attention_1k": "{:.0%}".format,
             "attention_2k": "{:.0%}".format, "attention_4k": "{:.0%}".format}
    floor = {"decode_gpu_ms": (f"{floors.loc['decode', 'bytes_ms']:.2f} ms reading every byte at the copy rate; "
                               f"{closed['decode_floor_s'] * 1e3:.2f} ms with each kernel at its own read's pace"),
             "mixed_gpu_ms": f"{floors.loc['mixed', 'flops_ms']:.2f} ms of FLOPs at the large-GEMM rate",
             "attention_1k": f"a copy of the same bytes: {m['copy_1k']:.0%}"}
    rows = []
    for key, (asked, bound, kind) in SCORECARD_TARGETS.items():
        show = shown.get(key, lambda v: f"{v:.2f} ms")
        again = f.loc[key, "again"]
        rows.append({"figure": f.loc[key, "what"], "asked": asked,
                     "published": f"{show(f.loc[key, 'published'])} (set {f.loc[key, 'source']})",
                     "again": show(again), "floor": floor.get(key, "—"),
                     "target": "met" if (again <= bound if kind == "max" else again >= bound) else "missed"})
    capacity, final = extra["whole"].get("fused_vs_chunked"), extra.get("final")
    if capacity is not None:
        newest = capacity["a"] if final is None else final["a_median"]
        rows.append({"figure": "capacity, 400 arrivals offered 80/s", "asked": "≥ 40 requests/s",
                     "published": f"{capacity['a']:.1f} requests/s (set E)",
                     "again": "—" if final is None else f"{final['a_median']:.1f} requests/s (set AU)", "floor": "—",
                     "target": "met" if newest >= 40 else "missed"})
    peer = extra["peer"]
    if peer is not None and "floor_s" in closed:
        times = peer[peer["engine"] != "transformers"]["times_peer"]
        rows.append({"figure": "128 mixed prompts × 128 tokens, against transformers", "asked": f"≥ {PEER_TARGET:g}×",
                     "published": f"{times.min():.1f}× (set R)", "again": "—",
                     "floor": f"{closed['peer_s'] / closed['floor_s']:.1f}× with our pass at its floor",
                     "target": "met" if times.min() >= PEER_TARGET else "missed"})
    return pd.DataFrame(rows)
