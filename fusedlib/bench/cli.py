"""The command line: `python -m fusedlib.bench <experiment> [options]`, a thin loop over
`fusedlib.bench.runs`. Its options are spec.OPTIONS (each declared there once). Comma lists
sweep: every combination of the listed engines, rates, batch sizes, workloads, seeds and
long-prompt shares is one run. Rows are appended to --out as each run finishes; a run whose
options are all already there is skipped, so rerunning a killed command resumes it. The
profile follows the machine (full on a CUDA GPU, smoke on a CPU); smoke rows go to
data-smoke/, never over the published data/.

    python -m fusedlib.bench arrivals --rates 100,200 --n-requests 40
    python -m fusedlib.bench closed --engine fused,chunked --batch-size 8 --workload mixed,p256
    python -m fusedlib.bench step-trace --engine chunked,fused
    python -m fusedlib.bench arrivals --profile full --engine fused --rates 2,3 --pool-gib 0.5   # on a GPU
"""
from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

from .spec import OPTIONS, RESULT_SETS, RunSpec, SpecError, default_profile

# Command-line experiment names -> row names (peer with --rates is the open-loop peer).
EXPERIMENTS = {"gate": "gates", "kernel-gate": "kernel_gate", "layout-bench": "layout_bench",
               "splitkv-sweep": "splitkv_sweep", "closed": "closed", "arrivals": "arrivals",
               "step-trace": "step_trace", "step-profile": "step_profile", "sensitivity": "sensitivity",
               "peer": "peer"}
# Flags whose name is not the option's (a sweep of several values reads as a plural).
FLAGS = {"rate": "--rates", "long_share": "--long-shares"}
# What a sweep covers when its flag is not given (the options' own defaults otherwise).
SWEEP_DEFAULTS = {"engine": ["fused", "chunked"], "batch_size": [8, 32], "long_share": [0.0, 0.2, 0.4]}
# What a flag means here beyond the option itself.
NOTES = {"seed": "; sensitivity takes them all as its draws (default 0,1,2)",
         "repeats": "; arrivals: runs of each rate and engine, the engines alternating (default 1)",
         "rate": "; peer: run it open loop at these rates"}


def flag(option: str) -> str:
    return FLAGS.get(option, "--" + option.replace("_", "-"))


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage block: the message names the option
        self.exit(2, f"{self.prog}: error: {message}\n")


def _value(option: str):
    """The converter for one value of an option: its type, or an error saying what it allows."""
    opt = OPTIONS[option]
    kind, _, allowed = opt.allowed

    def convert(text: str):
        if opt.none_ok and text.lower() == "none":
            return None
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}") from None
    return convert


def comma_list(option: str):
    """The parser of a comma list of an option's values (a sweep)."""
    one = _value(option)

    def parse(text: str) -> list:
        values = [one(x.strip()) for x in text.split(",") if x.strip()]
        if not values:
            raise argparse.ArgumentTypeError(f"must be a comma list of {OPTIONS[option].allowed[2]}")
        return values
    return parse


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m fusedlib.bench", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", choices=EXPERIMENTS, help=(
        "gate: engine correctness gates; kernel-gate: Triton kernels vs torch; layout-bench: decode attention "
        "as rows vs packed vs split-KV; splitkv-sweep: split-KV launch shapes; closed: whole batch at t=0, "
        "wall time; arrivals: Poisson open loop, served rate and latencies; step-trace: per-step timing on "
        "the disturbance workload (and the fusion accounting once both engines are traced); step-profile: "
        "that workload under torch.profiler, kernels and host ops per step; sensitivity: capacity across "
        "draws and long-prompt shares; peer: transformers' continuous batching on the closed-run requests "
        "(with --rates: open loop, the arrivals requests)"))
    for name, opt in OPTIONS.items():
        if name == "repeat":  # arrivals' run number: --repeats runs 0..n-1
            continue
        if opt.default is False:
            p.add_argument(flag(name), dest=name, action="store_true", default=None, help=opt.help)
            continue
        if opt.allowed[0] is bool:  # default the profile's: --<name> or --no-<name>
            p.add_argument(flag(name), dest=name, action=argparse.BooleanOptionalAction, default=None, help=opt.help)
            continue
        default = SWEEP_DEFAULTS.get(name, opt.default)
        shown = f" (default: {','.join(map(str, default))})" if name in SWEEP_DEFAULTS else (
            f" (default: {default})" if default is not None and "default:" not in opt.help else "")
        p.add_argument(flag(name), dest=name, type=comma_list(name) if opt.sweep else _value(name), default=None,
                       metavar=name.upper() + ("S" if opt.sweep else ""),
                       help=opt.help + (", comma separated" if opt.sweep else "") + shown + NOTES.get(name, ""))
    p.add_argument("--out", default=None, help=(
        "result path stem; rows go to <out>.jsonl and <out>.csv (default: <rows folder>/<experiment>/runs, "
        "the rows folder being $FUSEDLIB_DATA, else data/ for full and data-smoke/ for smoke)"))
    return p


def specs_from_args(a: argparse.Namespace) -> tuple[str, list[RunSpec]]:
    """(experiment's row name, the specs of every run the command asks for). Raises SpecError."""
    experiment = EXPERIMENTS[a.experiment]
    if experiment == "peer" and a.rate is not None:
        experiment = "peer_arrivals"
    profile = a.profile or default_profile()
    given = {name: getattr(a, name) for name in OPTIONS if getattr(a, name, None) is not None}
    given["profile"] = profile
    if experiment in ("peer", "peer_arrivals"):
        given.pop("engine", None)  # transformers serves them
    sweeps = {name: given.pop(name) for name in list(given) if OPTIONS[name].sweep}
    for name, default in SWEEP_DEFAULTS.items():
        if name not in sweeps and _takes(experiment, name):
            sweeps[name] = default
    if experiment == "sensitivity":
        sweeps.setdefault("seed", [0, 1, 2])  # its draws
        if len(sweeps.get("rate", [])) > 1:
            raise SpecError("rate", "sensitivity takes one rate (above capacity)")
    if experiment == "arrivals":
        from .spec import PROFILES

        sweeps.setdefault("rate", list(PROFILES[profile].rates))
        runs_each = given.pop("repeats", 1)  # runs of each rate and engine
        sweeps["repeat"] = list(range(runs_each))
    # The order runs take. Arrivals: rate-major, so both engines of a rate finish together (a
    # sweep cut short keeps complete pairs); within a rate the engines alternate run by run,
    # so a slow stretch of the machine lands on both. Others: engine-major (sensitivity's
    # draws of one engine share it).
    order = (["rate", "seed", "repeat", "engine"] if experiment == "arrivals" else
             ["engine", "rate", "workload", "batch_size", "seed", "long_share"])
    names = sorted(sweeps, key=order.index)
    specs = [RunSpec.build(experiment, **given, **dict(zip(names, values)))
             for values in itertools.product(*(sweeps[n] for n in names))]
    return experiment, specs


def _takes(experiment: str, option: str) -> bool:
    from .spec import EXPERIMENTS as TAKES

    return option in TAKES[experiment]


def _label(spec: RunSpec, swept: list[str]) -> str:
    return " ".join(f"{n.replace('_', ' ')} {getattr(spec, n)}" for n in swept) or spec.experiment


def _headline(rows: list[dict]) -> str:
    last = rows[-1]
    for name, fmt in (("served_rate", "served {:.2f} req/s"), ("wall_s", "wall {:.3f} s")):
        if last.get(name) is not None:
            return fmt.format(last[name])
    return f"{len(rows)} rows"


def main(argv=None) -> int:
    from . import use_interpreter_without_gpu

    a = parser().parse_args(argv)
    use_interpreter_without_gpu()  # before the first Triton kernel is imported (in runs)
    from . import rows, runs

    try:
        experiment, specs = specs_from_args(a)
        specs = [runs.check_here(s) for s in specs]  # every run checked before the first row
    except SpecError as e:
        name = "--experiment" if e.option == "experiment" else flag(e.option)
        sys.stderr.write(f"python -m fusedlib.bench: error: {name} {e.message}\n")
        return 2
    out = a.out or str(rows.data_dir(specs[0].profile) / RESULT_SETS[experiment])
    swept = [n for n in ("engine", "rate", "workload", "batch_size", "seed", "long_share", "repeat")
             if len({getattr(s, n) for s in specs}) > 1]
    new_rows = []
    if experiment == "sensitivity":
        new_rows = runs.run(specs, out)
    else:
        for spec in specs:
            got = runs.run(spec, out)
            print(f"{_label(spec, swept)}: " + (_headline(got) if got else f"already in {out}, skipped"), flush=True)
            new_rows += got
    print(f"{len(new_rows)} new rows -> {Path(out)}.jsonl")
    if experiment == "step_trace":
        _print_accounting(out, specs[0])
    return 0


def _print_accounting(out: str, spec: RunSpec) -> None:
    """Once both engines' traces of these settings are in `out`, print the writeup's
    fusion arithmetic."""
    import pandas as pd

    from . import metrics, rows
    from .spec import stored_options

    wanted = {k: v for k, v in spec.options().items() if k != "engine"}
    same = [r for r in rows.read_rows(out)
            if {k: v for k, v in (stored_options(r) or {}).items() if k != "engine"} == wanted]
    df = pd.DataFrame(same)
    if df.empty or not {"chunked", "fused"} <= set(df["engine"]):
        return
    fusion = metrics.accounting(df[df["engine"] == "chunked"], df[df["engine"] == "fused"])[-1]
    print(f"fusion accounting: {fusion['loaded_steps']} loaded steps x "
          f"{fusion['saved_per_loaded_step_s'] * 1e3:.2f} ms saved = {fusion['saved_total_s']:.3f} s, "
          f"{fusion['share_of_run']:.1%} of the chunked run's {fusion['run_time_chunked_s']:.3f} s")
