"""What a measured run is: the series' configurations, the two profiles, one run's options.

`CONFIGS` names each part of the series as engine settings (part 11 is part 10 at the
H200's size; the scale sweep overrides its max_batch and chunk_tokens). `PROFILES` fix what
"the model" and "the workload" mean:
  full   Qwen2.5-1.5B's architecture with random weights, fp16 on CUDA, each configuration
         exactly as named, the series' workload (prompts of 16..4096 tokens, 64..256 new)
  smoke  the tiny preset, fp32 on CPU, every configuration as the eager torch reference
         (no GPU: no graphs, no Triton outside the attention notebook) and small lengths,
         so every experiment finishes in seconds; its numbers check plumbing, not speed.

`RunSpec.build(experiment, profile, **options)` is the one place an option is checked: a
bad value raises `SpecError` naming the option and what it allows. A spec's `key()` is what
identifies its run in a row (resume compares it whole). This module imports no torch.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

from . import workloads
from ..attention import BACKENDS

SCHEMA_VERSION = 7
ENGINES = ("fused", "chunked")
SERIES = ("part7", "part8", "part9", "part10")  # the parts measured at the reference's size


@dataclass(frozen=True)
class Config:
    """One part of the series as engine settings (`fused_ops` is the model's switch)."""
    attention: str
    cuda_graphs: bool  # decode-only forwards replay from CUDA graphs
    whole_graphs: bool  # forwards carrying prompt chunks replay too, one graph each
    fused_ops: bool  # fused small ops and the decode-sized Triton GEMMs
    overlap: bool  # the host plans step n+1 while the GPU runs step n
    max_batch: int = 32
    chunk_tokens: int = 512


_PART10 = Config("triton-parallel", cuda_graphs=True, whole_graphs=True, fused_ops=True, overlap=True)
CONFIGS = {
    "part7": Config("triton", cuda_graphs=False, whole_graphs=False, fused_ops=False, overlap=False),
    "part8": Config("triton-splitkv", cuda_graphs=False, whole_graphs=False, fused_ops=False, overlap=False),
    "part9": Config("triton-splitkv", cuda_graphs=True, whole_graphs=False, fused_ops=False, overlap=False),
    "part10": _PART10,
    "part11": replace(_PART10, max_batch=256, chunk_tokens=8192),
}


@dataclass(frozen=True)
class Profile:
    model: str
    device: str
    dtype: str
    lengths: tuple[int, ...]  # the mixed draw's prompt lengths
    budget: tuple[int, int]  # its max_new_tokens range, inclusive
    peer_new_tokens: int  # the closed workload's fixed budget

    def settings(self, config: str, max_batch: int | None = None, chunk_tokens: int | None = None) -> Config:
        """The engine settings a configuration runs with under this profile."""
        c = CONFIGS[config]
        c = replace(c, max_batch=max_batch or c.max_batch, chunk_tokens=chunk_tokens or c.chunk_tokens)
        if self.device == "cpu":  # the eager torch reference: what a CPU runs in seconds
            c = replace(c, attention="torch", cuda_graphs=False, whole_graphs=False, fused_ops=False, overlap=False)
        return c


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
    "config": (lambda v: v in CONFIGS, "one of " + ", ".join(CONFIGS)),
    "engine": (lambda v: v in ENGINES, "one of " + ", ".join(ENGINES)),
    "attention": (lambda v: v in BACKENDS, "one of " + ", ".join(BACKENDS)),
    "max_batch": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "chunk_tokens": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "n_requests": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "rate": (lambda v: _number(v) and v > 0, "a number > 0"),
    "seed": (lambda v: _int(v) and v >= 0, "an integer >= 0"),
    "round": (lambda v: _int(v) and v >= 0, "an integer >= 0"),
}
_OPEN_LOOP = ("config", "engine", "max_batch", "chunk_tokens", "rate", "n_requests", "seed", "round")
# experiment -> the options that identify one of its runs
EXPERIMENTS = {
    "gates": ("config", "max_batch", "chunk_tokens"),
    "census": ("config", "engine"),
    "attention": ("attention",),
    "capacity": _OPEN_LOOP,
    # the peer's engine may also be "transformers" (its own continuous batching)
    "peer": ("config", "engine", "max_batch", "chunk_tokens", "n_requests", "round"),
    "scale": _OPEN_LOOP,
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
        if experiment in ("capacity", "scale", "peer") and options.get("config"):  # sizes as run, in the key
            c = CONFIGS[options["config"]]
            options["max_batch"] = options.get("max_batch") or c.max_batch
            options["chunk_tokens"] = options.get("chunk_tokens") or c.chunk_tokens
        return cls(experiment, profile, **options)

    def key(self) -> dict:
        """The options that identify this run in its rows (every row of the run carries them)."""
        return {name: getattr(self, name) for name in EXPERIMENTS[self.experiment]}

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> RunSpec:
        return cls.build(**{f.name: d.get(f.name) for f in fields(cls)})

    @property
    def profile_spec(self) -> Profile:
        return PROFILES[self.profile]

    def settings(self) -> Config:
        """The engine settings this run's configuration takes under its profile."""
        return self.profile_spec.settings(self.config, self.max_batch, self.chunk_tokens)


__all__ = ["CONFIGS", "Config", "ENGINES", "EXPERIMENTS", "PROFILES", "Profile", "RunSpec", "SCHEMA_VERSION",
           "SERIES", "SpecError"]
