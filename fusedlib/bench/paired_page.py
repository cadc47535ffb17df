"""What the appendix pages (closed, arrivals, sensitivity) share about the paired runs
(fusedlib.bench.campaign): each comparison as a ratio with its interval, the configuration
both sides ran in, in words, and a comparison's runs as a table. The pages call these."""
from __future__ import annotations

import pandas as pd

from . import analysis as bd, campaign
from .paired import Comparison
from .spec import RunSpec, stored_options

def results(phase: str, data=None) -> list[campaign.Result]:
    """The phase's comparisons with the book's rows (`<data>/paired/`)."""
    return campaign.results(phase, bd.DATA if data is None else data)


def ratio_text(c: Comparison) -> str:
    """A/B with its 95% interval, three decimals so a small resolved change still shows:
    "1.054× [1.030, 1.150]"."""
    return f"{c.ratio:.3f}× [{c.lo:.3f}, {c.hi:.3f}]"


def verdict(c: Comparison) -> str:
    return "resolved" if c.resolved else "not resolved"


def comparison_text(c: Comparison) -> str:
    """"1.054× [1.030, 1.150], n = 5 pairs, resolved"."""
    return f"{ratio_text(c)}, n = {c.n} pair{'s' * (c.n != 1)}, {verdict(c)}"


def differing(item) -> list[str]:
    """The options in which a comparison's two sides differ (at least one: campaign's tests)."""
    a, b = item.a.resolved().options(), item.b.resolved().options()
    return [k for k in a if a[k] != b[k]]


def side_names(item) -> tuple[str, str]:
    """A's and B's names in words: ("fused", "chunked"), ("with overlap", "without overlap")."""
    (option, *_) = differing(item)
    a, b = getattr(item.a.resolved(), option), getattr(item.b.resolved(), option)
    if isinstance(a, bool):
        word = option.replace("_", " ")
        return (f"with {word}", f"without {word}") if a else (f"without {word}", f"with {word}")
    return str(a), str(b)


def sides(item) -> str:
    """What A / B compares, in words: "fused / chunked", "with overlap / without overlap"."""
    return " / ".join(side_names(item))


def configuration(spec: RunSpec, leave_out=()) -> str:
    """The engine's setup in words, e.g. "triton-balanced attention, every forward in CUDA
    graphs, fused small ops, host work overlapped with the GPU"; `leave_out`: options not to name
    (the one a comparison varies)."""
    s = spec.resolved()
    words = []
    if "attention" not in leave_out:
        words.append(f"{s.attention} attention")
    if not {"cuda_graphs", "graph_chunks", "whole_graphs"} & set(leave_out):
        words.append("every forward one CUDA graph" if s.whole_graphs else
                     "every forward in CUDA graphs" if s.graph_chunks else
                     "decode forwards in CUDA graphs" if s.cuda_graphs else "eager (no CUDA graphs)")
    if "fused_ops" not in leave_out:
        words.append("fused small ops" if s.fused_ops else "unfused small ops")
    if "overlap" not in leave_out:
        words.append("host work overlapped with the GPU" if s.overlap else "no overlap of host and GPU")
    return ", ".join(words)


def row_spec(row: dict) -> RunSpec:
    """The spec a stored row ran (a table's row: its empty cells are options the row lacked)."""
    given = {k: v for k, v in row.items() if not (v is None or (isinstance(v, float) and v != v))}
    return RunSpec.build(**stored_options(given))


def row_configurations(df: pd.DataFrame) -> str:
    """The configurations a table of stored rows ran in, in words, each once."""
    return "; ".join(sorted({configuration(row_spec(r)) for r in df.to_dict("records")}))


def item_configuration(item) -> str:
    """What both sides of a comparison share, in words (the engine named when it is shared)."""
    varied = differing(item)
    shared = configuration(item.a, leave_out=varied)
    return shared if "engine" in varied else f"{item.a.engine} engine, {shared}"


def gpu(result: campaign.Result) -> str:
    """The GPU a comparison's runs ran on; an error if they name more than one."""
    names = {r.get("gpu", "unknown GPU") for r in result.runs.values()}
    if len(names) != 1:
        raise ValueError(f"{result.item.name}: runs on {sorted(names) or 'no GPU'}; expected one GPU")
    return names.pop()


def runs_frame(result: campaign.Result) -> pd.DataFrame:
    """Every stored run of a comparison, one row each, in the order they ran: its row's columns,
    with `side` ("A" or "B"), `pair` (1..n; 0 for the recorded warm-ups) and `complete` (both
    runs of its pair are there)."""
    complete = {s for pair in result.pairs() for s in pair}
    out = []
    for spec, row in result.runs.items():
        out.append({**row, "side": "AB"[_side(result.item, spec)], "pair": _pair_index(result.item, spec),
                    "complete": spec in complete})
    df = pd.DataFrame(out)
    return df.sort_values("timestamp").reset_index(drop=True) if len(df) else df


def _side(item, spec: RunSpec) -> int:
    """0 for A's runs, 1 for B's: the options A and B differ in decide."""
    varied = differing(item)
    s = spec.resolved()
    return 0 if all(getattr(s, k) == getattr(item.a.resolved(), k) for k in varied) else 1


def _pair_index(item, spec: RunSpec) -> int:
    if spec.warmup:
        return 0
    for i, pair in enumerate(item.pair_specs(), 1):
        if spec in pair:
            return i
    raise ValueError(f"{item.name}: {spec} is in no pair of the plan")


PEER_OPEN_COLUMNS = {"rate": "offered (req/s)", "n_requests": "requests", "served_rate": "served (req/s)",
                     "queue_wait_median_s": "queue wait, median (s)", "ttft_median_s": "TTFT, median (s)",
                     "itl_median_s": "token gap, median (s)", "e2e_median_s": "latency, median (s)",
                     "warm-ups (s)": "warm-up batches (s)"}


def peer_open_runs(data=None) -> pd.DataFrame:
    """The campaign's open-loop peer runs (`<data>/paired/peer_arrivals`), one row per offered
    rate, highest first, with the wall times of its recorded warm-up batches as text."""
    from . import rows

    df = pd.DataFrame(rows.read_rows((bd.DATA if data is None else data) / "paired/peer_arrivals"))
    if df.empty:
        return df
    df["warm-ups (s)"] = [", ".join(f"{w:.0f}" for w in ws) for ws in df["warmup_wall_s"]]
    return df.sort_values("rate", ascending=False).reset_index(drop=True)


def peer_open_text(df: pd.DataFrame) -> str:
    """What the open-loop peer rows say: whether requests waited in its queue, and what each
    then took per token and end to end."""
    waits = ", ".join(f"{w:.2f} s at {r:g}/s" for r, w in zip(df["rate"], df["queue_wait_median_s"]))
    gaps = ", ".join(f"{g * 1e3:.0f} ms" for g in df["itl_median_s"])
    return (f"The median request waited {waits} before transformers admitted it, so at these rates its queue "
            f"stayed short; once admitted, the median gap between a request's tokens was {gaps}, and that gap, "
            f"not the queue, sets the latency. The served rate counts every request over the span from the "
            f"first arrival to the last token, so below capacity it reads under the offered rate by the last "
            f"requests' latency.")
