"""What every page's figures read: the rows folder as DataFrames, the model's shape and the card's
datasheet. numpy, pandas, the torch-free fusedlib.config and bench.metrics only.

The rows folder is the argument, else env FUSEDLIB_DATA, else the repository's data/. A rows
file is read by `rows.read` (a torn last line skipped); full-profile rows win over smoke rows
when a file holds both, and a run recorded twice keeps its newer row. A file holding an
open-loop row without a steady rate (capacity) is refused; one that keeps its request times has
its steady fields computed again by `metrics.steady_from_times`, so rows measured under an
earlier window read by today's.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

import pandas as pd

from ...config import PRESETS
from .. import metrics, rows

REPO = Path(__file__).resolve().parents[3]
STATIC = REPO / "data"  # frozen inputs (reference figures, predictions, not-kept table): always the repo's
# The book's experiments: the files a page reads. A missing file renders "no rows yet".
EXPERIMENTS = ("gates", "census", "attention", "capacity", "peer", "scale", "soak", "kernels")
PARTS = ("part7", "part8", "part9", "part10")  # the parts measured at the reference's size
LABEL = {"part7": "7: one forward per step", "part8": "8: split-KV decode", "part9": "9: CUDA graphs",
         "part10": "10: fused ops, whole graphs", "part11": "11: batch 256, budgets to 8k",
         "part12": "12: Hopper-shaped kernels"}


def rows_dir(d: str | Path | None = None) -> Path:
    """The rows folder: `d`, else env FUSEDLIB_DATA, else the repository's data/."""
    return Path(d or os.environ.get("FUSEDLIB_DATA") or REPO / "data").resolve()


def _signature(folder: Path) -> tuple:
    """The state of a rows folder: a figure computed on it stays valid while this is unchanged."""
    if not folder.exists():
        return ()
    return tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(folder.glob("*.jsonl")))


def _identity(df: pd.DataFrame) -> list[str]:
    """The columns that name one run: rows sharing them are one run recorded twice (a re-run
    after an interruption); the newer one is kept."""
    skip = {"schema_version", "code_version", "commit", "time_utc", "device_name"}
    measured = {"served_rate", "steady_rate", "ttft_p50_s", "ttft_p99_s", "itl_p50_s", "itl_p99_s", "e2e_p50_s",
                "goodput_rate", "n_steps", "gpu_ms", "gpu_ms_min", "gpu_ms_max", "wall_ms", "host_ms",
                "n_kernels", "gpu_us", "copy_us", "fraction_of_copy", "wall_s", "output_tok_s",
                "passed", "detail", "copy_bw_Bps", "gemm_tflops", "host_share", "bytes", "flops",
                "kv_bytes", "weight_bytes", "host_ms_per_step_p50", "step_gpu_ms_p50",
                "max_logit_gap", "transformers_version"}
    return [c for c in df.columns if c not in skip and c not in measured and not c.endswith(("_s", "_ms"))]


@functools.lru_cache(maxsize=64)
def _load(path: Path, signature: tuple) -> pd.DataFrame:
    read = rows.read(path)
    # Capacity is the steady rate; an open-loop row without one (its served_rate a drain rate) is
    # not read as a capacity of another kind.
    drain = sorted({str(r.get("config")) for r in read if "served_rate" in r and "steady_rate" not in r})
    if drain:
        raise ValueError(f"{path}: open-loop rows of {', '.join(drain)} carry no steady_rate (the capacity); "
                         "measure them again")
    df = pd.DataFrame([{**r, **metrics.steady_from_times(r["request_times"], int(r["max_batch"]))}
                       if isinstance(r.get("request_times"), dict) and "max_batch" in r else r for r in read])
    if len(df) and "profile" in df and (df["profile"] == "full").any():
        df = df[df["profile"] == "full"]
    if len(df) and "time_utc" in df:
        df = df.sort_values("time_utc", kind="stable")
        ident = _identity(df)
        if ident:
            df = df[~df[ident].astype(str).duplicated(keep="last")]
    return df.reset_index(drop=True)


def load(experiment: str, d: str | Path | None = None) -> pd.DataFrame:
    """The rows of `<rows folder>/<experiment>.jsonl` as a DataFrame (empty if the file is missing)."""
    path = rows_dir(d) / f"{experiment}.jsonl"
    if not path.exists():
        return pd.DataFrame()
    stat = path.stat()
    return _load(path, (stat.st_mtime_ns, stat.st_size)).copy()


def newest(experiment: str, d: str | Path | None = None, config: str | None = None) -> pd.DataFrame:
    """The rows a page's figures read from `experiment`: per config, those of the newest code
    version that measured it (the code version of its latest row); `config`'s alone where given."""
    # A config measured again by newer code reads only its new rows; one not measured again keeps
    # its earlier rows. The one rule for every open-loop and peer figure.
    df = load(experiment, d)
    if len(df) and {"config", "code_version", "time_utc"} <= set(df.columns):
        latest = df.sort_values("time_utc", kind="stable").groupby("config")["code_version"].last()
        df = df[df["code_version"] == df["config"].map(latest)].reset_index(drop=True)
    return df[df["config"] == config] if config and len(df) else df


def per_rows(figure):
    """Compute `figure(*args, folder)` -> (table, values) once per state of the rows folder; the
    page modules' figures, which other pages' figures import and call again."""
    store: dict = {}

    @functools.wraps(figure)
    def computed(*args, d: str | Path | None = None):
        folder = rows_dir(d)
        key = (args, str(folder), _signature(folder))
        if key not in store:
            store[key] = figure(*args, folder)
        table, values = store[key]
        return table.copy(), dict(values)
    return computed


def profiles_and_devices(d: str | Path | None = None) -> tuple[set[str], set[str]]:
    """The profiles and devices of the rows the pages read (every experiment's file)."""
    profiles, names = set(), set()
    for experiment in EXPERIMENTS:
        df = load(experiment, d)
        profiles |= set(df["profile"].dropna()) if "profile" in df else set()
        names |= set(df["device_name"].dropna()) if "device_name" in df else set()
    return profiles, names


def gpu_time(d: str | Path | None = None) -> bool:
    """Whether the rows carry GPU time: some were measured on a GPU (a CPU run's have none)."""
    return bool(profiles_and_devices(d)[1] - {"cpu"})


def devices(df: pd.DataFrame) -> str:
    """The cards a rows file was measured on, in words."""
    names = sorted(set(df["device_name"].dropna())) if "device_name" in df else []
    return " and ".join(names) if names else "(no rows yet)"


# ---------------------------------------------------------------------------- the model
MODEL = PRESETS["qwen2.5-1.5b"]
DTYPE_BYTES = 2  # the series serves the model in fp16


def _model_sizes(m=MODEL) -> dict:
    h, i, kvd = m.hidden_size, m.intermediate_size, m.num_kv_heads * m.head_dim
    linear = m.num_layers * (h * (2 * h + 2 * kvd) + 3 * h * i)  # q, o, k, v, gate, up, down
    # + the (tied) embedding, two norms and the q/k/v biases per layer, the final norm
    params = linear + m.vocab_size * h + m.num_layers * (2 * h + h + 2 * kvd) + h
    return {
        "linear_flop_per_token": 2.0 * linear,
        "lm_head_flop_per_token": 2.0 * m.vocab_size * h,
        "weight_bytes": params * DTYPE_BYTES,
        "kv_bytes_per_token": m.num_layers * 2 * kvd * DTYPE_BYTES,
        # QK^T and PV: 2 matmuls x 2 FLOP x heads x head_dim per (query, key) pair per layer
        "attn_flop_per_pair": m.num_layers * 4.0 * m.num_heads * m.head_dim,
    }


SIZES = _model_sizes()

# ----------------------------------------------------------------------------- the card
# Datasheet rates (SXM parts, dense fp16 tensor cores without sparsity) of the cards run-all may
# get, keyed by the name torch reports. The ballparks start from the datasheet of the card that
# measured the census rows; the measured copy bandwidth and GEMM rate replace it where rows exist.
DATASHEETS = {
    "NVIDIA H200": {"card": "H200", "bandwidth_Bps": 4.8e12, "fp16_flops": 989e12, "sms": 132},
    "NVIDIA H100 80GB HBM3": {"card": "H100 SXM", "bandwidth_Bps": 3.35e12, "fp16_flops": 989e12, "sms": 132},
    "NVIDIA A10": {"card": "A10", "bandwidth_Bps": 600e9, "fp16_flops": 125e12, "sms": 72},
}


def series_card() -> str:
    """The card the committed rows (the repository's data/) were measured on: the series' card,
    whose datasheet the ballparks use where the rows at hand name no GPU."""
    c = load("census", STATIC)
    names = set(c["device_name"].dropna()) - {"cpu"} if "device_name" in c else set()
    if len(names) != 1:
        raise ValueError(f"data/census.jsonl names {sorted(names) or 'no GPU'}: the series' card is one GPU")
    return names.pop()


def rate_runs(d: str | Path | None = None) -> pd.DataFrame:
    """The copy bandwidth (B/s) and large-GEMM rate (TFLOP/s) of each census run on a GPU the pages
    read (a CPU's say nothing of a card; a run's rows repeat its one measurement)."""
    c = newest("census", d)
    if not len(c) or "copy_bw_Bps" not in c:
        return pd.DataFrame(columns=["copy_bw_Bps", "gemm_tflops"])
    c = c[c["device_name"] != "cpu"] if "device_name" in c else c
    return c[["copy_bw_Bps", "gemm_tflops"]].dropna().drop_duplicates()


def rates(d: str | Path | None = None) -> tuple[float | None, float | None]:
    """The card's copy bandwidth (B/s) and large-GEMM rate (FLOP/s): the medians over its census runs."""
    r = rate_runs(d)
    return (float(r["copy_bw_Bps"].median()), float(r["gemm_tflops"].median()) * 1e12) if len(r) else (None, None)


def datasheet(d: str | Path | None = None) -> dict:
    """The datasheet of the card the census rows were measured on. Without rows, or with the
    smoke profile's rows from a CPU (which has no datasheet worth a ballpark), the series'
    card's (`series_card`), so those pages still render; an unknown GPU is refused."""
    c = load("census", d)
    names = set(c["device_name"].dropna()) - {"cpu"} if "device_name" in c else set()
    if len(names) > 1:
        raise ValueError(f"census rows come from several cards: {sorted(names)}")
    name = names.pop() if names else series_card()
    if name not in DATASHEETS:
        raise ValueError(f"no datasheet for {name!r}: add it to fusedlib.bench.figures.data.DATASHEETS")
    return DATASHEETS[name]


def collect(**figures: tuple[pd.DataFrame, dict]) -> tuple[dict[str, pd.DataFrame], dict]:
    """Figures (a page's, or the pages') as (tables by figure, values by glue name); a name
    computed by two of them is an error."""
    tables, values = {}, {}
    for key, (table, named) in figures.items():
        twice = set(values) & set(named)
        if twice:
            raise RuntimeError(f"{key} glues {sorted(twice)}, which another figure or page glues too")
        tables[key] = table
        values.update(named)
    return tables, values
