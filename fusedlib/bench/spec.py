"""What a measured run is: the two profiles and one run's options.

A run's configuration is one of the series' parts, `fusedlib.config.PARTS` (part 11 is part
10 at a Hopper GPU's size; the scale sweep overrides its max_batch and chunk_tokens), and
`RunSpec.settings()` is the EngineConfig it runs. `PROFILES` fix what "the model" and "the
workload" mean:
  full   Qwen2.5-1.5B's architecture with random weights, fp16 on CUDA, each configuration
         exactly as named, the series' workload (prompts of 16..4096 tokens, 64..256 new)
  smoke  the tiny preset, fp32 on CPU, every configuration as the eager torch reference
         (`EngineConfig.eager`: no graphs, no Triton outside the attention notebook), small
         lengths: every experiment finishes in seconds; its numbers check plumbing, not speed.

`RunSpec.build(experiment, profile, **options)` is the one place an option is checked: a
bad value raises `SpecError` naming the option and what it allows. A spec's `key()` is what
identifies its run in a row (resume compares it whole). This module imports no torch.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

from . import workloads
from ..attention import BACKENDS
from ..config import ENGINE_KINDS as ENGINES, PARTS, EngineConfig

SCHEMA_VERSION = 7
SERIES = ("part7", "part8", "part9", "part10")  # the parts measured at the reference's size
KERNEL_KINDS = ("prompt", "decode", "gemm")  # the kernels experiment's runs (bench/kernels.py)


@dataclass(frozen=True)
class Profile:
    model: str
    device: str
    dtype: str
    lengths: tuple[int, ...]  # the mixed draw's prompt lengths
    budget: tuple[int, int]  # its max_new_tokens range, inclusive
    peer_new_tokens: int  # the closed workload's fixed budget


PROFILES = {
    "full": Profile("qwen2.5-1.5b", "cuda", "float16", workloads.MIXED_LENGTHS, workloads.MIXED_BUDGET, 128),
    "smoke": Profile("tiny", "cpu", "float32", (4, 8, 16, 32, 64), (4, 16), 8),
}


class SpecError(ValueError):
    """A bad option value; `option` names it, the message says what it allows."""

    def __init__(self, option: str, message: str):
        super().__init__(f"{option}: {message}")
        self.option, self.message = option, message


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# option -> (check, what it allows)
CHECKS = {
    "config": (lambda v: v in PARTS, "one of " + ", ".join(PARTS)),
    "engine": (lambda v: v in ENGINES, "one of " + ", ".join(ENGINES)),
    "attention": (lambda v: v in BACKENDS, "one of " + ", ".join(BACKENDS)),
    "max_batch": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "chunk_tokens": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "n_requests": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "rate": (lambda v: _number(v) and v > 0, "a number > 0"),
    "seed": (lambda v: _int(v) and v >= 0, "an integer >= 0"),
    "round": (lambda v: _int(v) and v >= 0, "an integer >= 0"),
    "kernel": (lambda v: v in KERNEL_KINDS, "one of " + ", ".join(KERNEL_KINDS)),
}
_OPEN_LOOP = ("config", "engine", "max_batch", "chunk_tokens", "rate", "n_requests", "seed", "round")
# experiment -> the options that identify one of its runs
EXPERIMENTS = {
    "gates": ("config", "max_batch", "chunk_tokens"),
    # a census with an offered rate is a saturated run's (census.steady_census)
    "census": ("config", "engine", "max_batch", "chunk_tokens", "rate", "n_requests", "seed"),
    "attention": ("attention",),
    "capacity": _OPEN_LOOP,
    # the peer's engine may also be "transformers" (its own continuous batching)
    "peer": ("config", "engine", "max_batch", "chunk_tokens", "n_requests", "round"),
    "scale": _OPEN_LOOP,
    "kernels": ("kernel",),
    "soak": ("config", "engine", "max_batch", "chunk_tokens", "rate", "n_requests", "seed"),
}


@dataclass(frozen=True)
class RunSpec:
    experiment: str
    profile: str
    config: str | None = None
    engine: str | None = None
    attention: str | None = None
    max_batch: int | None = None
    chunk_tokens: int | None = None
    rate: float | None = None
    n_requests: int | None = None
    seed: int | None = None
    round: int | None = None
    kernel: str | None = None

    @classmethod
    def build(cls, experiment: str, profile: str, **options) -> RunSpec:
        """Check every value; refuse options the experiment does not take. Raises SpecError."""
        if experiment not in EXPERIMENTS:
            raise SpecError("experiment", f"must be one of {', '.join(EXPERIMENTS)}, got {experiment!r}")
        if profile not in PROFILES:
            raise SpecError("profile", f"must be one of {', '.join(PROFILES)}, got {profile!r}")
        for name, value in options.items():
            if name not in CHECKS:
                raise SpecError(name, "is not an option")
            if value is None:
                continue
            if name not in EXPERIMENTS[experiment]:
                raise SpecError(name, f"does not apply to {experiment}")
            check, allowed = CHECKS[name]
            if not (check(value) or (experiment, name, value) == ("peer", "engine", "transformers")):
                raise SpecError(name, f"must be {allowed}, got {value!r}")
        if options.get("rate") is not None:
            options["rate"] = float(options["rate"])
        spec = cls(experiment, profile, **options)
        if experiment in ("capacity", "scale", "peer", "soak") and spec.config:  # sizes as run, in the key
            s = spec.settings()
            spec = replace(spec, max_batch=s.max_batch, chunk_tokens=s.chunk_tokens)
        return spec

    def key(self) -> dict:
        """The options that identify this run in its rows (every row of the run carries them)."""
        # An option left None names nothing: a step census's rows carry their own step's chunk_tokens.
        return {name: getattr(self, name) for name in EXPERIMENTS[self.experiment] if getattr(self, name) is not None}

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> RunSpec:
        return cls.build(**{f.name: d.get(f.name) for f in fields(cls)})

    @property
    def profile_spec(self) -> Profile:
        return PROFILES[self.profile]

    def settings(self) -> EngineConfig:
        """The engine settings of this run, resolved for its profile's device: its part at its
        sizes and engine; under a CPU profile the eager torch reference at those sizes (what a
        CPU runs in seconds)."""
        given = {"max_batch": self.max_batch, "chunk_tokens": self.chunk_tokens,
                 "kind": self.engine if self.engine in ENGINES else None}
        settings = replace(PARTS[self.config], **{k: v for k, v in given.items() if v is not None})
        device = self.profile_spec.device
        return (settings.eager() if device == "cpu" else settings).for_device(device)
