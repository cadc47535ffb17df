"""Model presets and engine settings (`EngineConfig` refuses bad values by name)."""
from __future__ import annotations

import numbers
from dataclasses import dataclass, replace

from .attention import BACKENDS


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rope_theta: float
    rms_norm_eps: float
    max_position_embeddings: int
    tie_word_embeddings: bool = True

    @classmethod
    def from_hf_dict(cls, d: dict) -> "ModelConfig":
        # transformers 5.x moved rope_theta into rope_parameters; hub checkpoints keep it top-level.
        theta = d.get("rope_theta") or (d.get("rope_parameters") or {}).get("rope_theta", 10000.0)
        heads = d["num_attention_heads"]
        return cls(d["vocab_size"], d["hidden_size"], d["intermediate_size"], d["num_hidden_layers"], heads,
                   d.get("num_key_value_heads", heads), d.get("head_dim") or d["hidden_size"] // heads,
                   float(theta), d.get("rms_norm_eps", 1e-6), d.get("max_position_embeddings", 32768),
                   d.get("tie_word_embeddings", False))


PRESETS: dict[str, ModelConfig] = {
    # Qwen/Qwen2.5-1.5B's config.json: 1,543,714,304 parameters with tied embeddings.
    "qwen2.5-1.5b": ModelConfig(vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_layers=28,
                                num_heads=12, num_kv_heads=2, head_dim=128, rope_theta=1_000_000.0,
                                rms_norm_eps=1e-6, max_position_embeddings=32768, tie_word_embeddings=True),
    # The same architecture with grouped KV heads, small enough that CPU tests run in seconds. The
    # head is untied: with random weights a tied head makes each position's own input embedding
    # its largest logit, so greedy output would repeat the last prompt token forever.
    "tiny": ModelConfig(vocab_size=512, hidden_size=64, intermediate_size=128, num_layers=2, num_heads=4,
                        num_kv_heads=2, head_dim=16, rope_theta=10000.0, rms_norm_eps=1e-6,
                        max_position_embeddings=8192, tie_word_embeddings=False),
}

ENGINE_KINDS = ("fused", "chunked")


# What an unset (None) setting takes on a CUDA model: part 10's path. On CPU: the eager torch reference.
CUDA_DEFAULTS = dict(attention="triton-hopper", cuda_graphs=True, whole_graphs=True, fused_ops=True, overlap=True)
CPU_DEFAULTS = dict(attention="torch", cuda_graphs=False, whole_graphs=False, fused_ops=False, overlap=False)


@dataclass(frozen=True)
class EngineConfig:
    """How an Engine serves; a setting left None takes the model's device's default (`for_device`)."""
    kind: str = "fused"  # "fused": one forward per step; "chunked": chunks and decodes apart
    max_batch: int = 32  # requests running at once (decode rows per step)
    chunk_tokens: int = 512  # prompt positions per step, across requests
    pool_gib: float | None = None  # KV pool size; neither this nor num_blocks: see KVPool
    num_blocks: int | None = None
    kv_block_size: int = 16  # tokens per KV block (a power of two): vLLM's default
    attention: str | None = None
    cuda_graphs: bool | None = None  # decode-only forwards replay from CUDA graphs (part 9)
    whole_graphs: bool | None = None  # so do forwards with prompt chunks (part 10)
    fused_ops: bool | None = None  # fused small ops and the decode-sized Triton GEMMs (part 10; model.py)
    warmup: bool = True  # run every step shape once at construction, so no measured step compiles
    # Launch step n + 1 before reading step n's sampled tokens back: the host plans and packs
    # while the GPU runs, and decode rows read their input tokens on the device.
    overlap: bool | None = None

    def __post_init__(self):
        if self.kind not in ENGINE_KINDS:
            raise ValueError(f"unknown engine kind {self.kind!r}; kind must be one of {ENGINE_KINDS}")
        if self.attention is not None and self.attention not in BACKENDS:
            raise ValueError(f"unknown attention backend {self.attention!r}; attention must be one of {BACKENDS}")
        for name in ("max_batch", "chunk_tokens", "kv_block_size"):
            check_count(name, getattr(self, name))
        if self.kv_block_size & (self.kv_block_size - 1):
            raise ValueError(f"kv_block_size must be a power of two, got {self.kv_block_size!r}")
        if self.num_blocks is not None:
            check_count("num_blocks", self.num_blocks)
        if self.pool_gib is not None and (isinstance(self.pool_gib, bool) or not isinstance(self.pool_gib, numbers.Real)
                                          or not self.pool_gib > 0):
            raise ValueError(f"pool_gib must be a number > 0 (GiB), got {self.pool_gib!r}")
        if self.num_blocks is not None and self.pool_gib is not None:
            raise ValueError("give the pool size as num_blocks or pool_gib, not both")
        for name in [*(n for n in CUDA_DEFAULTS if n != "attention"), "warmup"]:  # the on/off switches
            if not isinstance(getattr(self, name), bool) and not (getattr(self, name) is None and name in CUDA_DEFAULTS):
                allowed = "True, False or None (the device's default)" if name in CUDA_DEFAULTS else "True or False"
                raise ValueError(f"{name} must be {allowed}, got {getattr(self, name)!r}")
        if self.whole_graphs and self.cuda_graphs is False:
            raise ValueError("whole_graphs=True needs CUDA graphs, off here (set False, or unset on a CPU or torch backend)")

    def for_device(self, device_type: str) -> "EngineConfig":
        """Every None setting resolved for `device_type` ("cuda" or "cpu")."""
        # Graphs stay off under the torch backend: it reads lengths back mid-forward.
        base = CUDA_DEFAULTS if device_type == "cuda" else CPU_DEFAULTS
        chosen = {name: base[name] if getattr(self, name) is None else getattr(self, name) for name in base}
        if self.cuda_graphs is None:
            chosen["cuda_graphs"] &= chosen["attention"] != "torch"
        if self.whole_graphs is None:
            chosen["whole_graphs"] &= chosen["cuda_graphs"]
        return replace(self, **chosen)

    def eager(self) -> "EngineConfig":
        """These sizes on the eager torch reference, every switch at its CPU value."""
        # What a CPU runs in seconds: the smoke profile runs every part this way.
        return replace(self, **CPU_DEFAULTS)


def check_count(name: str, value) -> None:
    """ValueError naming `name` unless `value` is an integer >= 1 (a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


# The series' parts (the book's chapters 7-12), each as the settings it measures. Every switch
# is named, so a part is the same on any device and under any future default.
_PART7 = EngineConfig(attention="triton", cuda_graphs=False, whole_graphs=False, fused_ops=False, overlap=False)
_PART10 = EngineConfig(attention="triton-parallel", cuda_graphs=True, whole_graphs=True, fused_ops=True, overlap=True)
PARTS: dict[str, EngineConfig] = {
    "part7": _PART7,  # one forward per step, Triton attention
    "part8": replace(_PART7, attention="triton-splitkv"),  # split-KV decode
    "part9": replace(_PART7, attention="triton-splitkv", cuda_graphs=True),  # decode forwards from CUDA graphs
    "part10": _PART10,  # fused ops and GEMMs, whole-step graphs, the host one step ahead
    "part11": replace(_PART10, max_batch=256, chunk_tokens=8192),  # part 10 at a Hopper GPU's size
    # Part 11's best setting with part 12's launch shapes for Hopper (attention/__init__.py), and
    # 128-token KV blocks: its prompt kernel's 128-key steps then each read one whole block, 1.09x
    # as fast as over 16-token blocks on an H100 at every prompt case (fresh 2k-8k prompts, a 2k
    # chunk after a 2k prefix, a packed mixed chunk). Parts 7-11 keep 16: their rows were measured so.
    "part12": replace(_PART10, attention="triton-hopper", max_batch=256, chunk_tokens=2048, kv_block_size=128),
}
