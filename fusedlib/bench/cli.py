"""The command line: `python -m fusedlib <experiment> [options]`, a thin loop over
`fusedlib.experiments` (and the gates / kernel bench). Comma lists sweep: every
combination of the listed engines, rates, batch sizes, workloads and seeds is one run.
Rows are appended to --out as each run finishes; a run whose parameters are already
there is skipped, so rerunning a killed command resumes it.

    python -m fusedlib arrivals --profile smoke --rates 100,200 --n-requests 100
    python -m fusedlib closed --engine fused,chunked --batch-size 8,32 --workload mixed,p256
    python -m fusedlib arrivals --engine fused --rates 2,3 --pool-gib 0.5
"""
from __future__ import annotations

import argparse
import itertools
import os
from pathlib import Path

import torch
from tqdm import tqdm

from . import rows as results, runs as experiments

EXPERIMENTS = ("gate", "kernel-gate", "layout-bench", "splitkv-sweep", "closed", "arrivals",
               "step-trace", "step-profile", "sensitivity", "peer")


def _list(cast):
    def parse(text: str) -> list:
        return [cast(x) for x in text.split(",") if x.strip()]
    return parse


def _share(text: str):
    return None if text.lower() == "none" else float(text)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fusedlib", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", choices=EXPERIMENTS, help=(
        "gate: engine correctness gates; kernel-gate: Triton kernels vs torch; layout-bench: "
        "decode attention as rows vs packed vs split-KV; splitkv-sweep: split-KV launch shapes; closed: whole batch at t=0, wall time; arrivals: "
        "Poisson open loop, served rate and latencies; step-trace: per-step timing on the "
        "disturbance workload (and the fusion accounting once both engines are traced); "
        "step-profile: that workload under torch.profiler, kernels and host ops per step; "
        "sensitivity: capacity across draws and long-prompt shares; peer: transformers' "
        "continuous batching on the closed-run requests"))
    p.add_argument("--profile", choices=sorted(experiments.PROFILES), default="full", help=(
        "full: Qwen2.5-1.5B fp16 on CUDA, Triton attention, the writeup's lengths; smoke: the "
        "tiny model on CPU with scaled-down lengths, seconds per run (default: full)"))
    p.add_argument("--engine", type=_list(str), default=["fused", "chunked"],
                   help="engines, comma separated (default: fused,chunked)")
    p.add_argument("--rates", type=_list(float), default=None,
                   help="arrivals: Poisson rates in requests/s (default: the profile's sweep, "
                        "full 4,5,6,7,8,10,20,40, smoke 50,100,200,400); sensitivity: its first value is the rate; "
                        "peer: run it open loop at these rates (the arrivals requests) instead of closed batches")
    p.add_argument("--n-requests", type=int, default=400,
                   help="arrivals, sensitivity: requests per run (default: 400)")
    p.add_argument("--batch-size", type=_list(int), default=[8, 32],
                   help="closed, peer: requests per closed batch (default: 8,32)")
    p.add_argument("--workload", type=_list(str), default=["mixed"],
                   help="closed, peer: mixed and/or p256 (the uniform control) (default: mixed)")
    p.add_argument("--seed", type=_list(int), default=None,
                   help="workload and arrival seeds, one run each; sensitivity takes them all "
                        "as its draws (default: 0; sensitivity 0,1,2)")
    p.add_argument("--long-shares", type=_list(_share), default=[0.0, 0.2, 0.4],
                   help="sensitivity: shares of longest-length prompts; 'none' = the plain "
                        "mixed draw (default: 0,0.2,0.4)")
    p.add_argument("--pool-gib", type=float, default=None,
                   help="arrivals: cap the KV pool at this many GiB, the small-pool control "
                        "(default: the engine's default pool)")
    p.add_argument("--max-batch", type=int, default=32, help="batch rows (default: 32)")
    p.add_argument("--chunk-tokens", type=int, default=None,
                   help="prompt positions per step (default: the profile's, full 512, smoke 32)")
    p.add_argument("--warmups", type=int, default=2, help="closed, peer: discarded runs (default: 2)")
    p.add_argument("--repeats", type=int, default=None,
                   help="closed, peer: recorded runs (default: 5); arrivals: runs of each rate and engine, "
                        "alternating the engines (default: 1)")
    p.add_argument("--attention", choices=("torch", "triton", "triton-splitkv"), default=None,
                   help="attention backend (default: the profile's, full triton, smoke torch)")
    p.add_argument("--cuda-graphs", action="store_true",
                   help="closed, arrivals, step-trace, step-profile: replay decode-only forwards from CUDA graphs")
    p.add_argument("--graph-chunks", action="store_true",
                   help="with --cuda-graphs: also replay forwards with prompt chunks piecewise (attention eager)")
    p.add_argument("--model", default=None,
                   help="preset name, checkpoint folder or hub id (default: the profile's, "
                        "full qwen2.5-1.5b with random weights, smoke tiny)")
    p.add_argument("--out", default=None,
                   help="result path stem; rows go to <out>.jsonl and <out>.csv (default: "
                        "data/<experiment>/runs for full, runs/smoke/<experiment>/runs for smoke)")
    return p


def default_out(experiment: str, profile: str, stem: str = "runs") -> str:
    name = experiment.replace("-", "_")
    return f"data/{name}/{stem}" if profile == "full" else f"runs/smoke/{name}/{stem}"


def _sweep(runs: list[tuple[str, dict]], fn, out: str) -> list[dict]:
    rows = []
    for label, kwargs in tqdm(runs, desc=fn.__name__, unit="run"):
        got = fn(**kwargs, out=out)
        tqdm.write(f"{label}: " + (_headline(got) if got else f"already in {out}, skipped"))
        rows += got
    return rows


def _headline(rows: list[dict]) -> str:
    last = rows[-1]
    for name, fmt in (("served_rate", "served {:.2f} req/s"), ("wall_s", "wall {:.3f} s")):
        if last.get(name) is not None:
            return fmt.format(last[name])
    return f"{len(rows)} rows"


def main(argv=None) -> None:
    a = parser().parse_args(argv)
    if not torch.cuda.is_available():  # Triton kernels then run on the interpreter; read at
        os.environ.setdefault("TRITON_INTERPRET", "1")  # their first import, below
    # The open-loop peer (peer with --rates) keeps its rows beside the closed ones, in their own file.
    out = a.out or default_out(a.experiment, a.profile, "arrivals" if a.experiment == "peer" and a.rates else "runs")
    seeds = a.seed or ([0, 1, 2] if a.experiment == "sensitivity" else [0])
    common = dict(profile=a.profile, max_batch=a.max_batch, chunk_tokens=a.chunk_tokens,
                  attention=a.attention, model=a.model)
    graphs = {"cuda_graphs": a.cuda_graphs, "graph_chunks": a.graph_chunks}
    if (a.cuda_graphs or a.graph_chunks) and a.experiment not in ("closed", "arrivals", "step-trace", "step-profile"):
        raise SystemExit("--cuda-graphs and --graph-chunks apply to closed, arrivals, step-trace and step-profile, "
                         f"not {a.experiment}")

    if a.experiment == "gate":
        rows = experiments.gates(profile=a.profile, attentions=[a.attention] if a.attention else None,
                                 model=a.model, max_batch=a.max_batch, chunk_tokens=a.chunk_tokens, out=out)
    elif a.experiment in ("kernel-gate", "layout-bench", "splitkv-sweep"):
        from . import kernels as kernel_bench

        job = {"kernel-gate": kernel_bench.kernel_gate, "layout-bench": kernel_bench.decode_layout_bench,
               "splitkv-sweep": kernel_bench.splitkv_sweep}[a.experiment]
        rows = job(profile=a.profile)
        results.append_rows(out, rows)
    elif a.experiment == "closed":
        runs = [(f"{e} {w} batch {b} seed {s}",
                 dict(engine_kind=e, workload=w, batch_size=b, seed=s, warmups=a.warmups,
                      repeats=a.repeats or 5, **common, **graphs))
                for e, w, b, s in itertools.product(a.engine, a.workload, a.batch_size, seeds)]
        rows = _sweep(runs, experiments.closed, out)
    elif a.experiment == "arrivals":
        rates = a.rates or experiments.PROFILES[a.profile].rates
        runs = [(f"{e} rate {r} seed {s}" + (f" repeat {k}" if k else ""),
                 dict(engine_kind=e, rate=r, n_requests=a.n_requests, seed=s, pool_gib=a.pool_gib, repeat=k,
                      **common, **graphs))
                # rate-major, so both engines of a rate finish together: a sweep cut short
                # keeps complete pairs; within a rate the engines alternate run by run, so a
                # slow stretch of the machine lands on both
                for r, s, k, e in itertools.product(rates, seeds, range(a.repeats or 1), a.engine)]
        rows = _sweep(runs, experiments.arrivals, out)
    elif a.experiment == "step-trace":
        runs = [(f"{e} seed {s}", dict(engine_kind=e, seed=s, **common, **graphs))
                for e, s in itertools.product(a.engine, seeds)]
        rows = _sweep(runs, experiments.step_trace, out)
        _print_accounting(out, {**experiments.setup(a.profile, a.model, a.attention, a.chunk_tokens,
                                                    a.max_batch, a.cuda_graphs, a.graph_chunks).fields(),
                                "seed": seeds[0]})
    elif a.experiment == "step-profile":
        runs = [(f"{e} seed {s}", dict(engine_kind=e, seed=s, **common, **graphs))
                for e, s in itertools.product(a.engine, seeds)]
        rows = _sweep(runs, experiments.step_profile, out)
    elif a.experiment == "sensitivity":
        rate = a.rates[0] if a.rates else None
        runs = [(f"{e}", dict(engine_kind=e, seeds=seeds, long_shares=a.long_shares, rate=rate,
                              n_requests=a.n_requests, **common)) for e in a.engine]
        rows = _sweep(runs, experiments.sensitivity, out)
    else:  # peer: transformers has its own attention
        common.pop("attention")
        if a.rates:  # open loop: the arrivals experiment's requests and arrival times
            runs = [(f"transformers rate {r} seed {s}", dict(rate=r, n_requests=a.n_requests, seed=s, warmups=a.warmups, **common))
                    for r, s in itertools.product(a.rates, seeds)]
            rows = _sweep(runs, experiments.peer_arrivals, out)
        else:  # closed batches
            runs = [(f"transformers {w} batch {b} seed {s}",
                     dict(workload=w, batch_size=b, seed=s, warmups=a.warmups, repeats=a.repeats or 5, **common))
                    for w, b, s in itertools.product(a.workload, a.batch_size, seeds)]
            rows = _sweep(runs, experiments.peer_transformers, out)
    print(f"{len(rows)} new rows -> {Path(out)}.jsonl")


def _print_accounting(out: str, settings: dict) -> None:
    """Once both engines' traces of these settings are in `out`, print the writeup's
    fusion arithmetic."""
    df = results.load(out)
    for name, value in settings.items():
        df = df[df[name] == value]
    if not {"chunked", "fused"} <= set(df["engine"]):
        return
    rows = experiments.accounting(df[df["engine"] == "chunked"], df[df["engine"] == "fused"])
    fusion = rows[-1]
    print(f"fusion accounting: {fusion['loaded_steps']} loaded steps x "
          f"{fusion['saved_per_loaded_step_s'] * 1e3:.2f} ms saved = {fusion['saved_total_s']:.3f} s, "
          f"{fusion['share_of_run']:.1%} of the chunked run's {fusion['run_time_chunked_s']:.3f} s")


if __name__ == "__main__":
    main()
