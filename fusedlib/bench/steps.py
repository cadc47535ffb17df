"""Step traces by engine configuration, and what the hardware allows a step.

A *configuration* is the attention kernel plus the graph flags (eager, decode graphs, every
forward graphed). The step-trace rows of the first runs (data/step_trace) and of the graph and
split-KV runs (data/beyond) are one table here, the newest trace of each configuration and
engine. The *floor* of a step is the time its bytes take at the copy bandwidth measured on the
same GPU: the model's weights once, plus the KV its decode tokens read. Nothing that reads
those bytes can be faster, so a step's multiple of its floor says how far from the hardware
it runs.
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from . import analysis as bd
from .paired import compare_pairs

FULL_ROWS = 32  # the decode batch: a pure decode step with every row busy
# (attention, cuda_graphs, graph_chunks, label), in the order the chapters introduce them.
CONFIGS = [("torch", False, False, "eager, torch attention"),  # the CPU smoke runs' baseline
           ("triton", False, False, "eager, per-row"), ("triton-splitkv", False, False, "eager, split-KV"),
           ("triton", True, False, "decode graphs, per-row"), ("triton-splitkv", True, False, "decode graphs, split-KV"),
           ("triton-splitkv", True, True, "every forward graphed, split-KV")]
FLAGS = ["engine", "attention", "cuda_graphs", "graph_chunks"]


def combined_traces(base: pd.DataFrame, variants: pd.DataFrame) -> pd.DataFrame:
    """The step-trace rows of both folders as one table with explicit graph flags (rows from
    before a flag existed ran without it), the newest trace of each configuration and engine."""
    variants = variants[variants["experiment"] == "step_trace"] if len(variants) else variants
    frames = [d for d in (base, variants) if len(d)]
    if not frames:
        return pd.DataFrame(columns=FLAGS + ["record"])
    t = pd.concat(frames, ignore_index=True)
    for flag in ("cuda_graphs", "graph_chunks"):
        t[flag] = t[flag].astype("boolean").fillna(False).astype(bool) if flag in t else False
    return bd.latest(t, FLAGS)


def label_of(attention: str, graphs: bool, chunks: bool) -> str:
    for a, g, c, label in CONFIGS:
        if (a, g, c) == (attention, bool(graphs), bool(chunks)):
            return label
    raise ValueError(f"no configuration named for attention={attention!r}, cuda_graphs={graphs}, graph_chunks={chunks}")


def summary(traces: pd.DataFrame, full_rows: int = FULL_ROWS) -> pd.DataFrame:
    """One row per named configuration (CONFIGS) and engine: the median full-batch pure decode step
    (every one of the trace's `max_batch` rows busy; `full_rows` for rows without it), the median
    over every pure decode step, the median mixed step and (chunked) its two forwards, the
    trace's summed step time and its code version. Times in seconds."""
    out = []
    steps = traces[traces["record"] == "step"] if len(traces) else traces
    named = {(a, g, c) for a, g, c, _ in CONFIGS}
    for (engine, attention, graphs, chunks), s in steps.groupby(FLAGS):
        if (attention, bool(graphs), bool(chunks)) not in named:  # e.g. torch attention: no chapter shows it
            continue
        full = int(s["max_batch"].iloc[0]) if "max_batch" in s and s["max_batch"].notna().any() else full_rows
        dec = s[s["kind"] == "decode"]
        mixed = s[s["kind"] == "mixed"]
        fw = [f for f in mixed.get("forward_durations_s", pd.Series(dtype=object)) if isinstance(f, list)]
        two = np.array([f for f in fw if len(f) == 2]) if fw else np.empty((0, 2))
        out.append({"configuration": label_of(attention, graphs, chunks), "engine": engine,
                    "decode_full_s": dec.loc[dec["n_decode"] == full, "duration_s"].median(),
                    "n_full": int((dec["n_decode"] == full).sum()), "decode_all_s": dec["duration_s"].median(),
                    "mixed_s": mixed["duration_s"].median(),
                    "first_forward_s": float(np.median(two[:, 0])) if len(two) else np.nan,
                    "second_forward_s": float(np.median(two[:, 1])) if len(two) else np.nan,
                    "step_time_s": s["duration_s"].sum(), "commit": str(s["git_commit"].iloc[0])})
    order = {label: i for i, (*_, label) in enumerate(CONFIGS)}
    df = pd.DataFrame(out)
    return df.sort_values(["configuration", "engine"], key=lambda c: c.map(order) if c.name == "configuration" else c
                          ).reset_index(drop=True) if len(df) else df


def lookup(table: pd.DataFrame, configuration: str, engine: str, column: str) -> float:
    """One value of `summary`; NaN when that configuration has no trace of that engine."""
    hit = table[(table["configuration"] == configuration) & (table["engine"] == engine)] if len(table) else table
    return float(hit[column].iloc[0]) if len(hit) else np.nan


# Bytes per element of the dtypes rows name (others are asked of torch).
ELEMENT_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}


def parameters(cfg) -> int:
    """Parameters of fusedlib.model.Qwen2Model with this config, counted from the config (so a
    page needs no torch): the embedding, per layer the fused QKV projection with its bias, the
    output projection, the fused gate/up and the down projection and two norms, the final norm,
    and the head when it is not tied. tests/bench/test_steps.py checks it against the model."""
    q, kv = cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim
    layer = (cfg.hidden_size * (q + 2 * kv) + (q + 2 * kv) + q * cfg.hidden_size
             + 3 * cfg.hidden_size * cfg.intermediate_size + 2 * cfg.hidden_size)
    head = 0 if cfg.tie_word_embeddings else cfg.vocab_size * cfg.hidden_size
    return cfg.vocab_size * cfg.hidden_size + cfg.num_layers * layer + cfg.hidden_size + head


@functools.lru_cache(maxsize=None)
def model_bytes(model: str = "qwen2.5-1.5b", dtype: str = "float16") -> tuple[int, int, int]:
    """(parameters, weight bytes, KV bytes per cached position across the model) of a preset."""
    from ..config import PRESETS

    if model not in PRESETS:
        raise ValueError(f"unknown model {model!r}; presets: {sorted(PRESETS)}")
    cfg = PRESETS[model]
    elem = ELEMENT_BYTES.get(dtype)
    if elem is None:
        import torch

        elem = torch.tensor([], dtype=getattr(torch, dtype)).element_size()
    n_params = parameters(cfg)
    return n_params, n_params * elem, bd.kv_bytes_per_position(cfg, elem)


def copy_bandwidth(traces: pd.DataFrame, layout: pd.DataFrame) -> tuple[float, str]:
    """(bytes/s, where from): the step trace's own measurement when it recorded one, else the
    layout bench's (a separate run on the same GPU)."""
    s = traces[traces["record"] == "summary"] if len(traces) else traces
    if "copy_bandwidth_Bps" in s and s["copy_bandwidth_Bps"].notna().any():
        return float(s["copy_bandwidth_Bps"].median()), "measured by the step trace in the same run"
    if len(layout) and "copy_bandwidth_gbs" in layout and layout["copy_bandwidth_gbs"].notna().any():
        return float(layout["copy_bandwidth_gbs"].median()) * 1e9, "measured by the layout bench on the same GPU"
    raise ValueError("no copy bandwidth in the step trace or the layout bench rows")


def decode_kv_positions(trace: pd.DataFrame, engine: str) -> pd.DataFrame:
    """One engine's steps with the KV positions its decodes read (`kv_positions`): as the trace
    recorded them when it did, else reconstructed from the token times (analysis.kv_per_step)."""
    steps = bd.kv_per_step(trace, engine)
    if "decode_kv_tokens" in steps and steps["decode_kv_tokens"].notna().all():
        steps = steps.assign(kv_positions=steps["decode_kv_tokens"].astype(float))
    return steps


def decode_floor(steps: pd.DataFrame, weight_bytes: float, kv_pos_bytes: float, bandwidth_Bps: float,
                 full_rows: int = FULL_ROWS) -> dict[str, float]:
    """For the full-batch pure decode steps of one engine's `decode_kv_positions`: the median
    KV positions read, the floor (weights + that KV at the bandwidth), the median step and
    its multiple of the floor. Seconds."""
    d = steps[(steps["kind"] == "decode") & (steps["n_decode"] == full_rows)]
    if not len(d):
        raise ValueError(f"no pure decode steps with {full_rows} rows")
    kv = float(d["kv_positions"].median())
    floor = (weight_bytes + kv * kv_pos_bytes) / bandwidth_Bps
    step = float(d["duration_s"].median())
    return {"kv_positions": kv, "floor_s": floor, "weights_s": weight_bytes / bandwidth_Bps, "step_s": step,
            "multiple": step / floor}


def step_growth(steps: pd.DataFrame, full_rows: int = FULL_ROWS) -> dict[str, float]:
    """How much longer a full-batch pure decode step is than one with at most a quarter of the
    rows: a cost that does not grow with the rows is per forward, not per token."""
    d = steps[steps["kind"] == "decode"]
    few = d[d["n_decode"] <= max(full_rows // 4, 1)]
    full = d[d["n_decode"] == full_rows]
    if not len(few) or not len(full):
        raise ValueError("need pure decode steps with few rows and with every row busy")
    return {"few_rows": int(few["n_decode"].max()), "few_s": float(few["duration_s"].median()),
            "full_s": float(full["duration_s"].median()),
            "growth": float(full["duration_s"].median() / few["duration_s"].median() - 1)}


def attention_floor_s(layout: pd.DataFrame, kv_pos_bytes_per_layer: float, bandwidth_Bps: float) -> float:
    """The layout bench's cache state read once at the bandwidth: one layer's decode attention
    can be no faster."""
    if not len(layout):
        raise ValueError("no layout bench rows")
    return float(layout["context_sum"].iloc[0]) * kv_pos_bytes_per_layer / bandwidth_Bps


def kernel_ms(layout: pd.DataFrame) -> dict[str, float]:
    """The layout bench's median time per kernel (one layer's decode attention), ms."""
    return {k: float(v) for k, v in layout.groupby("kernel")["median_ms"].median().items()}


def layout_table(layout: pd.DataFrame) -> pd.DataFrame:
    """The layout bench per kernel, in the order it ran: the medians over its rounds (L2
    flushed, back to back, host) and its time over the "rows" kernel's as a `Comparison`
    (`ratio_vs_rows`), each round's two times a pair. Rows from before the bench ran in
    rounds count as one round."""
    df = layout.assign(round=layout["round"].fillna(0) if "round" in layout else 0)
    rows_ms = df[df["kernel"] == "rows"].set_index("round")["median_ms"]
    out = []
    for kernel, k in df.groupby("kernel", sort=False):
        k = k.set_index("round")
        both = k.index.intersection(rows_ms.index)
        out.append({"kernel": kernel, "rounds": len(k), "median_ms": k["median_ms"].median(),
                    **{c: k[c].median() for c in ("median_ms_back_to_back", "host_ms") if c in k},
                    "kv_bytes_floor_ms": k["kv_bytes_floor_ms"].median(),
                    "bandwidth_fraction": k["kv_bytes_floor_ms"].median() / k["median_ms"].median(),
                    "ratio_vs_rows": compare_pairs(k.loc[both, "median_ms"], rows_ms[both])})
    return pd.DataFrame(out)


def readable_summary(table: pd.DataFrame) -> pd.DataFrame:
    """`summary` as a reader's table: times in ms (three significant digits), a dash where a
    configuration has no such time (a fused mixed step has no second forward)."""
    cols = {"decode_full_s": f"decode, {FULL_ROWS} rows (ms)", "decode_all_s": "decode, all (ms)",
            "mixed_s": "mixed (ms)", "first_forward_s": "mixed: 1st forward (ms)",
            "second_forward_s": "mixed: 2nd forward (ms)"}
    out = table[["configuration", "engine"]].copy()
    for c, label in cols.items():
        out[label] = table[c].map(lambda s: "—" if pd.isna(s) else bd.sig3(s * 1e3))
    out["all steps (s)"] = table["step_time_s"].map(bd.sig3)
    return out


def capacity_steps(arrivals: pd.DataFrame, beyond: pd.DataFrame) -> pd.DataFrame:
    """Per capacity configuration and engine: runs, median mixed and decode step (ms, medians
    over the runs' own medians), and the median share of steps that were mixed."""
    out = []
    for name, runs, _ in bd.capacity_by_configuration(arrivals, beyond):
        for e in ("chunked", "fused"):
            r = runs[runs["engine"] == e]
            out.append({"configuration": name, "engine": e, "runs": len(r),
                        "mixed step (ms)": r["median_mixed_step_s"].median() * 1e3,
                        "decode step (ms)": r["median_decode_step_s"].median() * 1e3,
                        "mixed steps": f"{(r['n_mixed_steps'] / r['n_steps']).median():.1%}"})
    return pd.DataFrame(out)


def profile_summary(beyond: pd.DataFrame) -> pd.DataFrame:
    """The step-profile rows per configuration, engine and step kind: steps, median kernels
    and copies per step, median device time and profiled wall time (ms). Empty without rows."""
    prof = beyond[beyond["experiment"] == "step_profile"] if len(beyond) and "experiment" in beyond else beyond.iloc[0:0]
    st = prof[prof["record"] == "step"] if len(prof) else prof
    if not len(st):
        return pd.DataFrame()
    st = st.assign(configuration=[label_of(a, g, c) for a, g, c in zip(
        st["attention"], st["cuda_graphs"].astype("boolean").fillna(False),
        st.get("graph_chunks", pd.Series(False, index=st.index)).astype("boolean").fillna(False))])
    return st.groupby(["configuration", "engine", "kind"]).agg(
        steps=("step", "size"), **{"kernels per step": ("n_kernels", "median"), "copies per step": ("n_copies", "median"),
                                   "device time (ms)": ("device_s", lambda x: x.median() * 1e3),
                                   "profiled wall (ms)": ("profiled_wall_s", lambda x: x.median() * 1e3)}).reset_index()


def graph_test_log(folder) -> str:
    """What the newest GPU test log that ran tests/test_graphs.py reports, and where it is."""
    import re

    logs = [p for p in sorted(folder.glob("*.log")) if "tests/test_graphs.py" in p.read_text().splitlines()[0]]
    if not logs:
        return "no GPU-only graph test log is in the rows, so the piecewise graphs are CPU-tested only"
    passed = re.search(r"(\d+ passed[^\n]*)", logs[-1].read_text())
    return f"\"{passed.group(1) if passed else 'no pass count'}\" ({bd.rel(logs[-1])})"
