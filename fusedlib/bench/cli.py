"""The command line: `python -m fusedlib.bench <experiment> [options]` runs one experiment's
plan (the runs its notebook makes, plans.py) and appends the rows to
<out>/<experiment>.jsonl. A run whose rows are already there (this code version and
profile) is skipped, so rerunning a killed command resumes it. The profile follows the
machine (full on a CUDA GPU, smoke on a CPU); smoke rows go to data-smoke/, never over the
published data/. A bad value or an unwritable --out stops it before any run, with one line
naming the problem (exit status 2).

    python -m fusedlib.bench capacity --configs part10 --rounds 2
    python -m fusedlib.bench scale --batches 32,256 --chunks 512 --out /tmp/rows/
    python -m fusedlib.bench gates --backend modal --gpu A10
"""
from __future__ import annotations

import argparse
import inspect
import os
import sys
import time

from . import plans, rows
from .spec import PROFILES
from ..config import PARTS

# plan parameter -> (type of one value, a comma list?, help)
PARAMS = {
    "configs": (str, True, f"configurations ({', '.join(PARTS)})"),
    "engines": (str, True, "engines (fused, chunked)"),
    "backends": (str, True, "attention backends (triton, triton-splitkv, triton-parallel, triton-hopper)"),
    "kernels": (str, True, "kernel runs (prompt, decode, gemm)"),
    "rounds": (int, False, "rounds of the paired comparisons (fused and chunked in ABBA order, seed = round; "
                           "peer: each transformers then ours)"),
    "rates": (float, True, "offered rates, requests/s (capacity: for every configuration; the last one is "
                           "the saturating rate of the paired rounds; default: multiples of a capacity estimate)"),
    "n_requests": (int, False, "requests per run"),
    "batches": (int, True, "max_batch values of the scale grid"),
    "chunks": (int, True, "chunk_tokens values of the scale grid"),
    "rate": (float, False, "the scale grid's or the soak's offered rate (past capacity), requests/s "
                           "(default: 2x the setting's capacity estimate)"),
    "sweep_rates": (float, True, "the scale rate sweep's rates at the best setting (default: multiples of its "
                                 "capacity estimate)"),
}


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage block
        self.exit(2, f"{self.prog}: error: {message}\n")


def _values(kind, many: bool):
    def parse(text: str):
        try:
            values = [kind(x.strip()) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {'a comma list of ' if many else ''}{kind.__name__}s, "
                                             f"got {text!r}") from None
        if not values or (len(values) > 1 and not many):
            raise argparse.ArgumentTypeError(f"must be {'a comma list of ' if many else 'one '}{kind.__name__}")
        return values if many else values[0]
    return parse


def seconds(text: str) -> float:
    """A time limit: a number of seconds >= 0 (0: none)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0 (0: no limit), got {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m fusedlib.bench", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", choices=list(plans.PLANS), help=(
        "gates: correctness gates per configuration; census: decode and mixed step cost per configuration and "
        "engine; attention: decode attention beside a copy of its bytes; capacity: open-loop rate sweeps and "
        "paired rounds; peer: transformers' continuous batching beside ours on a closed workload; scale: part "
        "11's max_batch x chunk_tokens grid"))
    p.add_argument("--profile", choices=list(PROFILES), help="full (Qwen2.5-1.5B fp16 on CUDA) or smoke (the "
                   "tiny model on CPU; default: full on a CUDA machine, else smoke)")
    p.add_argument("--out", help="rows folder (rows go to <out>/<experiment>.jsonl) or a .jsonl file (default: "
                                 "$FUSEDLIB_DATA, else data/ for full and data-smoke/ for smoke)")
    p.add_argument("--backend", default="local", choices=("local", "modal"), help="where runs go (default: local)")
    p.add_argument("--gpu", default="H100", help="Modal's GPU type with --backend modal (default: H100, the rows' card)")
    p.add_argument("--time-limit", type=seconds, default=0, help="start no run after this many seconds (0: none)")
    for name, (kind, many, text) in PARAMS.items():
        p.add_argument("--" + name.replace("_", "-"), dest=name, type=_values(kind, many), help=text)
    return p


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    from . import runner

    if a.profile is None:
        a.profile = "full" if runner.has_cuda() else "smoke"
    taken = inspect.signature(plans.PLANS[a.experiment]).parameters
    given = {k: getattr(a, k) for k in PARAMS if getattr(a, k) is not None}
    out = os.path.abspath(a.out) if a.out else str(rows.data_dir(a.profile))  # relative to here, not the checkout
    deadline = time.monotonic() + a.time_limit
    try:
        wrong = [name for name in given if name not in taken]
        if wrong:
            raise ValueError(f"--{wrong[0].replace('_', '-')} does not apply to {a.experiment}")
        rows.check_writable(rows.rows_path(out, a.experiment))
        plans.plan(a.experiment, a.profile, given)  # every value checked before the first run
        runner.check_setup([a.experiment], a.profile, a.backend)
    except (ValueError, OSError) as e:
        sys.stderr.write(f"python -m fusedlib.bench: error: {e}\n")
        return 2
    for _ in range(2 if a.experiment == "scale" else 1):  # scale's second stage is planned from its grid's rows
        existing = rows.current(rows.read(rows.rows_path(out, a.experiment)), a.profile)
        left = max(deadline - time.monotonic(), 1e-9) if a.time_limit else 0
        runner.execute(plans.plan(a.experiment, a.profile, given, rows=existing), out, backend=a.backend, gpu=a.gpu,
                       time_limit_s=left)
    return 0
