"""One run specification: what a measured run is, declared once.

`RunSpec` holds every option an experiment takes. Each option is declared once, in
`OPTIONS`, with its default, its allowed values and its help text; the command line
(`cli.py`) builds its flags from that table, the Modal functions (`remote.py`) and the
notebooks build a spec with `RunSpec.build(...)`, and `RunSpec.build` is the one place a
value is checked. A bad value raises `SpecError`, naming the option and what it allows.

Profiles fix what "the model" and "the workload" mean:
  full   Qwen2.5-1.5B architecture, fp16 on CUDA, Triton attention, the writeup's lengths
  smoke  the tiny preset, fp32 on CPU, torch attention, lengths and budgets scaled down so
         every experiment finishes in seconds; smoke numbers check plumbing, not speed.
Without a profile, a spec takes the machine's: full where CUDA is available, else smoke.

Options whose default is "the profile's" (model, attention, chunk_tokens, n_requests,
rate) are None until `resolved()` fills them from the profile; a row records the resolved
values, every option of its experiment, and `schema_version`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable

from . import workloads
from ..attention import BACKENDS
from ..config import PRESETS

# 1: rows from before the run specification (an option missing from a row was unset).
# 2: every option of the experiment in every row.
# 3: adds fused_ops (rows before it ran the reference ops), warmup and comparison (ABBA campaigns).
# 4: adds overlap (rows before it waited for each step's tokens before planning the next); closed
#    and sensitivity take repeat, warmup and comparison (ABBA campaigns), so the passes inside one
#    closed run, numbered `repeat` in closed and peer rows before, are numbered `pass`.
# 5: adds whole_graphs (rows before it graphed forwards with prompt chunks piecewise or not at all).
# 6: adds gate_up_silu (rows before it ran the gate_up GEMM on cuBLAS and SiLU*up as its own kernel).
SCHEMA_VERSION = 6


class SpecError(ValueError):
    """A bad option value; `option` names it (with underscores), the message says what it allows."""

    def __init__(self, option: str, message: str):
        super().__init__(f"{option}: {message}")
        self.option, self.message = option, message


@dataclass(frozen=True)
class Profile:
    model: str
    device: str
    dtype: str
    attention: str
    chunk_tokens: int
    lengths: tuple[int, ...]  # mixed prompt lengths
    budget: tuple[int, int]  # mixed max_new_tokens range, inclusive
    p256_length: int  # the uniform control's prompt length
    p256_budget: int
    rates: tuple[float, ...]  # the arrival sweep, requests/s
    capacity_rate: float  # above both engines' capacity: where sensitivity measures it
    n_requests: int  # an open-loop run's requests
    small_pool_gib: float  # the small-pool control's KV pool
    fused_ops: bool  # the fused small-op kernels (Triton: on the CPU they would run interpreted)


PROFILES = {
    "full": Profile(model="qwen2.5-1.5b", device="cuda", dtype="float16", attention="triton",
                    chunk_tokens=512, lengths=workloads.MIXED_LENGTHS, budget=workloads.MIXED_BUDGET,
                    p256_length=256, p256_budget=workloads.P256_BUDGET,
                    # the 400-request grid of the H200 campaigns: from under both engines' eager
                    # capacity to well past it (the arrivals page shows where each saturates)
                    rates=(4, 5, 6, 7, 8, 10, 20, 40), capacity_rate=40, n_requests=400,
                    # the reference's 0.5 GiB holds ~4.5 of its longest prompts' KV (28 KiB/token)
                    small_pool_gib=0.5, fused_ops=True),
    # Lengths 4..64 against a 32-token chunk keep the full profile's shape (long prompts
    # take several chunks, short ones share one); the tiny model serves a few hundred
    # requests/s on one CPU thread, hence the rates. Its small pool holds as many longest
    # prompts as the full profile's does.
    "smoke": Profile(model="tiny", device="cpu", dtype="float32", attention="torch",
                     chunk_tokens=32, lengths=(4, 8, 16, 32, 64), budget=(4, 16),
                     p256_length=16, p256_budget=8,
                     rates=(50, 100, 200, 400), capacity_rate=400, n_requests=60, small_pool_gib=2e-4,
                     fused_ops=False),
}

ENGINES = ("fused", "chunked")
# mixed_fixed: the mixed prompt lengths, each with the uniform control's fixed budget (full: 128
# new tokens), part 10's closed target against transformers
WORKLOADS = ("mixed", "p256", "mixed_fixed")

# Experiments by the name their rows carry, and the options each takes (besides profile).
_ENGINE_SETUP = ("engine", "model", "attention", "max_batch", "chunk_tokens", "cuda_graphs", "graph_chunks",
                 "whole_graphs", "fused_ops", "gate_up_silu", "overlap")
# What places a run in an ABBA campaign (campaign.py): its number, whether it is a warm-up, its comparison.
_PAIRED = ("repeat", "warmup", "comparison")
EXPERIMENTS: dict[str, tuple[str, ...]] = {
    "gates": ("model", "attention", "cuda_graphs", "graph_chunks", "whole_graphs", "fused_ops", "gate_up_silu",
              "overlap"),
    "kernel_gate": (),
    "layout_bench": (),
    "splitkv_sweep": (),
    "closed": _ENGINE_SETUP + ("workload", "batch_size", "seed", "warmups", "repeats") + _PAIRED,
    "arrivals": _ENGINE_SETUP + ("rate", "n_requests", "seed", "pool_gib") + _PAIRED,
    "step_trace": _ENGINE_SETUP + ("seed", "warmups"),
    "step_profile": _ENGINE_SETUP + ("seed", "warmups", "profiled_steps", "top_ops"),
    "sensitivity": _ENGINE_SETUP + ("rate", "n_requests", "seed", "long_share") + _PAIRED,
    # transformers' continuous batching: its own attention, no graphs of ours
    "peer": ("model", "max_batch", "chunk_tokens", "workload", "batch_size", "seed", "warmups", "repeats"),
    "peer_arrivals": ("model", "max_batch", "chunk_tokens", "rate", "n_requests", "seed", "warmups"),
}
# Options an experiment takes only from a schema version on: a row from before reads the option's
# value_before even where it has a column of that name (closed rows numbered their passes `repeat`).
TAKEN_FROM = {("closed", "repeat"): 4}
# Where each experiment's rows go, under a rows folder (rows.data_dir): "<folder>/<stem>".
RESULT_SETS = {"gates": "gates/runs", "kernel_gate": "kernels/kernel_gate", "layout_bench": "kernels/layout_bench",
               "splitkv_sweep": "kernels/splitkv_sweep", "closed": "closed/runs", "arrivals": "arrivals/runs",
               "step_trace": "step_trace/runs", "step_profile": "step_profile/runs",
               "sensitivity": "sensitivity/runs", "peer": "peer/runs", "peer_arrivals": "peer/arrivals"}


# ------------------------------------------------------------------------------ options
def _int(low: int):
    return int, (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low), f"an integer >= {low}"


def _number(check: Callable[[float], bool], text: str):
    return float, (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                   and check(v)), text


def _choice(names):
    return str, (lambda v: v in names), "one of " + ", ".join(names)


def _model_name():
    # Whether a path is a folder is checked on the machine that runs it (check_model_path).
    return str, (lambda v: isinstance(v, str) and bool(v.strip())), \
        f"a preset ({', '.join(sorted(PRESETS))}), a checkpoint folder or a hub id like Qwen/Qwen2.5-1.5B"


_BOOL = (bool, lambda v: isinstance(v, bool), "true or false")


@dataclass(frozen=True)
class Option:
    name: str
    default: Any  # None: the profile's (or, for the profile, the machine's)
    allowed: tuple[type, Callable[[Any], bool], str]  # (the type, its check, what it allows)
    help: str
    sweep: bool = False  # the command line takes a comma list: one run per value
    none_ok: bool = False  # None is a value of its own (not "the profile's")
    before: Any = None  # what a row stored before the option existed ran with (None: the default)

    @property
    def value_before(self) -> Any:
        return self.default if self.before is None else self.before


OPTIONS = {o.name: o for o in [
    Option("profile", None, _choice(tuple(PROFILES)),
           "full: Qwen2.5-1.5B fp16 on CUDA, Triton attention, the writeup's lengths; smoke: the tiny "
           "model on CPU with scaled-down lengths, seconds per run (default: full on a CUDA machine, "
           "else smoke)"),
    Option("engine", "fused", _choice(ENGINES), "fused (one forward per step) or chunked (two)", sweep=True),
    Option("model", None, _model_name(),
           "preset name, checkpoint folder or hub id (default: the profile's, full qwen2.5-1.5b with "
           "random weights, smoke tiny)"),
    Option("attention", None, _choice(BACKENDS),
           "attention backend (default: the profile's, full triton, smoke torch; gates: the torch "
           "reference and the profile's)"),
    Option("max_batch", 32, _int(1), "batch rows"),
    Option("chunk_tokens", None, _int(1), "prompt positions per step (default: the profile's, full 512, smoke 32)"),
    Option("cuda_graphs", False, _BOOL, "replay decode-only forwards from CUDA graphs (needs a GPU)"),
    Option("graph_chunks", False, _BOOL,
           "with cuda_graphs: also replay forwards with prompt chunks piecewise (attention eager)"),
    Option("whole_graphs", False, _BOOL,
           "with cuda_graphs, instead of graph_chunks: replay forwards with prompt chunks as one "
           "graph each, attention inside (EngineConfig.whole_graphs)", before=False),
    Option("fused_ops", None, _BOOL,
           "the fused small-op kernels (add+RMSNorm, rotary+cache write, SiLU*mul) or the reference "
           "PyTorch ops of parts 7-9 (default: the profile's, full fused, smoke reference)", before=False),
    Option("gate_up_silu", False, _BOOL,
           "on the fused_ops path (nothing without it): the gate_up GEMM of batches of at most 64 rows "
           "as one Triton launch with SiLU*up in its epilogue, from 2ce474e on the down GEMM as one "
           "split-K launch with its reduce inside, and from 58410f1 on the qkv, o_proj and down GEMMs as "
           "split-K partials their readers sum (Qwen2Model.gate_up_silu)", before=False),
    Option("overlap", False, _BOOL,
           "plan, pack and launch step n+1 before reading step n's tokens back, so host work runs "
           "while the GPU works (EngineConfig.overlap)", before=False),
    Option("workload", "mixed", _choice(WORKLOADS),
           "the mixed draw, p256 (the uniform control), or mixed_fixed (the mixed prompts, each with "
           "the control's fixed budget)", sweep=True),
    Option("batch_size", 32, _int(1), "requests per closed batch", sweep=True),
    Option("seed", 0, _int(0), "workload and arrival seed", sweep=True),
    Option("warmups", None, _int(0),
           "discarded passes before the measured ones (default: closed 2, peer 2, peer open loop 2, "
           "step-trace and step-profile 1); closed and peer record theirs as stat=warmup rows"),
    Option("repeats", None, _int(1), "measured passes, their median a row of its own (default: closed 5, peer 3)"),
    Option("rate", None, _number(lambda v: v > 0, "a number > 0"),
           "Poisson arrival rate, requests/s (arrivals: the profile's sweep, full 4..40, smoke 50..400; "
           "sensitivity: the profile's capacity rate, full 40, smoke 400)", sweep=True),
    Option("n_requests", None, _int(1), "open-loop requests per run (default: the profile's, full 400, smoke 60)"),
    Option("pool_gib", None, _number(lambda v: v > 0, "a number > 0"), "cap the KV pool at this many GiB (default: the engine's default pool)",
           none_ok=True),
    Option("repeat", 0, _int(0),
           "arrivals, closed, sensitivity: which run of the same configuration this is (0: the first)"),
    Option("warmup", False, _BOOL,
           "arrivals, closed, sensitivity: a warm-up run, recorded but left out of every comparison"),
    Option("comparison", None, (str, lambda v: isinstance(v, str) and v.strip() != "", "a non-empty name"),
           "arrivals, closed, sensitivity: the ABBA comparison a run belongs to, so each comparison's "
           "pairs are its own runs, interleaved in time (none: a run of no comparison)", none_ok=True),
    Option("long_share", None, _number(lambda v: 0 <= v <= 1, "a number in [0, 1], or none for the plain mixed draw"),
           "sensitivity: the share of longest-length prompts in the draw (none: the plain mixed draw)",
           sweep=True, none_ok=True),
    Option("profiled_steps", 120, _int(1), "step-profile: steps run under the profiler (the admission waves)"),
    Option("top_ops", 12, _int(1), "step-profile: host ops listed per step kind and quarter"),
]}
# Defaults that differ by experiment (None elsewhere: the experiment does not take the option).
# The peer takes 2 warm-ups: on the H200 its first pass after one warm-up still took 2.4x the next.
_BY_EXPERIMENT = {"warmups": {"closed": 2, "peer": 2, "peer_arrivals": 2, "step_trace": 1, "step_profile": 1},
                  "repeats": {"closed": 5, "peer": 3}}


def default_profile() -> str:
    """The machine's profile: full where CUDA is available, smoke otherwise."""
    import torch

    return "full" if torch.cuda.is_available() else "smoke"


# ------------------------------------------------------------------------------ the spec
@dataclass(frozen=True)
class RunSpec:
    """Build with `RunSpec.build` (defaults and checks come from OPTIONS); None where an
    option's default is the profile's, until `resolved()`."""
    experiment: str
    profile: str
    engine: str
    model: str | None
    attention: str | None
    max_batch: int
    chunk_tokens: int | None
    cuda_graphs: bool
    graph_chunks: bool
    whole_graphs: bool
    fused_ops: bool
    gate_up_silu: bool
    overlap: bool
    workload: str
    batch_size: int
    seed: int
    warmups: int | None
    repeats: int | None
    rate: float | None
    n_requests: int | None
    pool_gib: float | None
    repeat: int
    warmup: bool
    comparison: str | None
    long_share: float | None
    profiled_steps: int
    top_ops: int

    @classmethod
    def build(cls, experiment: str, **options) -> RunSpec:
        """The one constructor: checks every value and refuses options the experiment does
        not take (a value left at its default is fine). Raises SpecError."""
        if experiment not in EXPERIMENTS:
            raise SpecError("experiment", f"must be one of {', '.join(EXPERIMENTS)}, got {experiment!r}")
        unknown = set(options) - set(OPTIONS)
        if unknown:
            raise SpecError(sorted(unknown)[0], "is not an option")
        if options.get("profile") is None:
            options["profile"] = default_profile()
        takes = set(EXPERIMENTS[experiment]) | {"profile"}
        for name, value in options.items():
            opt = OPTIONS[name]
            if value is None and (opt.default is None or opt.none_ok):
                continue  # None: the profile's, or a value of its own
            _, check, allowed = opt.allowed
            if not check(value):
                raise SpecError(name, f"must be {allowed}, got {value!r}")
            if name not in takes and value != opt.default:
                raise SpecError(name, f"does not apply to {experiment}")
        spec = cls(experiment=experiment, **{name: options.get(name, opt.default) for name, opt in OPTIONS.items()})
        for name in ("graph_chunks", "whole_graphs"):
            if getattr(spec, name) and not spec.cuda_graphs:
                raise SpecError(name, "needs cuda_graphs")
        if spec.graph_chunks and spec.whole_graphs:
            raise SpecError("whole_graphs", "and graph_chunks exclude each other (whole or piecewise)")
        if spec.rate is None and experiment in ("arrivals", "peer_arrivals"):
            raise SpecError("rate", f"{experiment} needs a rate")
        return spec

    @property
    def profile_spec(self) -> Profile:
        return PROFILES[self.profile]

    def but(self, **changes) -> RunSpec:
        """This spec with some options changed, checked again."""
        return RunSpec.build(**{**self.given(), **changes})

    def given(self) -> dict:
        """The experiment and the options as set (None where the profile's is meant)."""
        return {k: v for k, v in asdict(self).items() if k in EXPERIMENTS[self.experiment] or k in ("experiment", "profile")}

    def resolved(self) -> RunSpec:
        """Every "the profile's" option filled in from the profile."""
        p = self.profile_spec
        fill = {"model": p.model, "chunk_tokens": p.chunk_tokens, "n_requests": p.n_requests, "fused_ops": p.fused_ops,
                **{name: by.get(self.experiment) for name, by in _BY_EXPERIMENT.items()}}
        if self.experiment != "gates":  # gates default to the torch reference and the profile's
            fill["attention"] = p.attention
        if self.experiment == "sensitivity":
            fill["rate"] = p.capacity_rate
        return replace(self, **{k: v for k, v in fill.items() if getattr(self, k) is None})

    def options(self) -> dict:
        """What identifies the run in a row: the experiment, the profile, and every option
        the experiment takes (resolve first). Resume compares these, whole."""
        out = {"experiment": self.experiment, "profile": self.profile}
        out.update({k: getattr(self, k) for k in EXPERIMENTS[self.experiment]})
        if self.experiment in ("peer", "peer_arrivals"):
            out.update(engine="transformers", attention="transformers")
        return out

    def row_fields(self) -> dict:
        """The columns every row of this run starts with (resolve first)."""
        p = self.profile_spec
        return {"schema_version": SCHEMA_VERSION, **self.options(), "device": p.device, "dtype": p.dtype}


def stored_options(row: dict) -> dict | None:
    """The options a stored row was run with, as `RunSpec.options()` gives them, reading a
    row from before an option (it lacks the option, or predates TAKEN_FROM) with the value
    runs had then.
    None for a row of no known experiment."""
    experiment = row.get("experiment")
    if experiment not in EXPERIMENTS:
        return None
    out = {"experiment": experiment, "profile": row.get("profile")}
    version = row.get("schema_version") or 1
    for name in EXPERIMENTS[experiment]:
        taken = name in row and version >= TAKEN_FROM.get((experiment, name), 0)
        out[name] = row[name] if taken else OPTIONS[name].value_before
    if experiment in ("peer", "peer_arrivals"):
        out.update(engine=row.get("engine"), attention=row.get("attention"))
    return out


def check_model_path(model: str) -> None:
    """A model must be a preset, a folder on this machine or something shaped like a hub id
    (whether the hub has it is found on download)."""
    if model in PRESETS or Path(model).expanduser().is_dir():
        return
    if model.startswith((".", "/", "~")) or model.count("/") != 1:
        raise SpecError("model", f"must be {OPTIONS['model'].allowed[2]}, got {model!r} (no such folder here)")


__all__ = ["RunSpec", "SpecError", "Option", "OPTIONS", "EXPERIMENTS", "PROFILES", "Profile",
           "SCHEMA_VERSION", "RESULT_SETS", "stored_options", "default_profile", "check_model_path"]
