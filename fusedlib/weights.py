"""A Qwen2Model from a preset (seeded random weights: timing does not depend on their values)
or a Hugging Face checkpoint (its q/k/v concatenated and gate/up interleaved into the fused projections)."""
from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from .config import PRESETS, ModelConfig
from .model import Qwen2Model, RotaryEmbedding
from .ops import interleave_gate_up


def load_model(name_or_path: str, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32,
               seed: int = 0) -> Qwen2Model:
    if name_or_path in PRESETS:
        model = random_model(PRESETS[name_or_path], device=device, dtype=dtype, seed=seed)
    else:
        path = _resolve_checkpoint(name_or_path)
        cfg = ModelConfig.from_hf_dict(json.loads((path / "config.json").read_text()))
        # Build on the meta device (no init cost for 1.5B parameters), then take the weights.
        with torch.device("meta"):
            model = Qwen2Model(cfg)
        model.to_empty(device=device)
        model.rotary = RotaryEmbedding(cfg.head_dim, cfg.max_position_embeddings, cfg.rope_theta).to(device)
        model.load_state_dict(from_hf_state_dict(_read_safetensors(path), cfg), strict=True)
        model.to(dtype)
    return model.eval()


def random_model(cfg: ModelConfig, device="cpu", dtype=torch.float32, seed: int = 0,
                 init_std: float = 0.02) -> Qwen2Model:
    """normal(0, init_std) matrices and biases (transformers' initializer_range), norms of ones."""
    model = Qwen2Model(cfg).to(device=device)
    gen = torch.Generator(device=device).manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.fill_(1.0)
            else:
                p.normal_(0.0, init_std, generator=gen)
    return model.to(dtype)


def _resolve_checkpoint(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.is_dir():
        if not (path / "config.json").exists():
            raise ValueError(f"{path} has no config.json: not a Hugging Face checkpoint folder")
        return path
    if path.exists() or name_or_path.startswith((".", "/")) or name_or_path.count("/") != 1:
        raise ValueError(f"unknown model {name_or_path!r}: not a preset {sorted(PRESETS)}, "
                         "a checkpoint folder, or a hub id like 'Qwen/Qwen2.5-1.5B'")
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(name_or_path, allow_patterns=["config.json", "*.safetensors",
                                                                "*.safetensors.index.json"]))


def _read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise ValueError(f"{path} holds no .safetensors files")
    return {name: tensor for f in files for name, tensor in load_file(str(f)).items()}


def from_hf_state_dict(hf: dict[str, torch.Tensor], cfg: ModelConfig) -> dict[str, torch.Tensor]:
    """Map transformers' Qwen2ForCausalLM names onto ours (fusing q/k/v, and gate/up interleaved)."""
    sd = {"embed_tokens.weight": hf["model.embed_tokens.weight"], "norm.weight": hf["model.norm.weight"]}
    if not cfg.tie_word_embeddings:
        sd["lm_head.weight"] = hf["lm_head.weight"]
    for i in range(cfg.num_layers):
        src, dst = f"model.layers.{i}.", f"layers.{i}."
        for kind in ("weight", "bias"):
            sd[dst + f"self_attn.qkv_proj.{kind}"] = torch.cat(
                [hf[src + f"self_attn.{p}_proj.{kind}"] for p in ("q", "k", "v")], dim=0)
        gate_up = [hf[src + f"mlp.{p}_proj.weight"] for p in ("gate", "up")]
        sd[dst + "mlp.gate_up_proj.weight"] = interleave_gate_up(*gate_up)
        for name in ("self_attn.o_proj", "mlp.down_proj", "input_layernorm", "post_attention_layernorm"):
            sd[dst + f"{name}.weight"] = hf[src + f"{name}.weight"]  # the same name, less "model."
    return sd
