"""Our weights in transformers' Qwen2ForCausalLM: the gates compare our engines with its
greedy generation, and the peer runs its continuous batching on the very same weights.
Needs the `bench` extra (transformers)."""
from __future__ import annotations

import torch

from ..config import ModelConfig
from ..model import Qwen2Model
from ..ops import split_gate_up


def transformers_classes(*names: str) -> tuple:
    """transformers' classes by name. Importing transformers imports tqdm.auto, which in a
    notebook's kernel without ipywidgets warns that it falls back to text progress bars
    (TqdmWarning: IProgress not found); text bars are what we want, so that one is muted."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        import transformers
    return tuple(getattr(transformers, name) for name in names)


def to_hf_config(cfg: ModelConfig) -> dict:
    """The config.json a transformers Qwen2 model needs to be this model."""
    return {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": cfg.num_layers,
        "num_attention_heads": cfg.num_heads,
        "num_key_value_heads": cfg.num_kv_heads,
        "head_dim": cfg.head_dim,
        "rope_theta": cfg.rope_theta,
        "rms_norm_eps": cfg.rms_norm_eps,
        "max_position_embeddings": cfg.max_position_embeddings,
        "tie_word_embeddings": cfg.tie_word_embeddings,
        "hidden_act": "silu",
        "use_sliding_window": False,
    }


def to_hf_state_dict(model: Qwen2Model) -> dict[str, torch.Tensor]:
    """The inverse mapping: our weights under transformers' names (for the reference gate
    and the transformers peer, which must run the very same weights)."""
    cfg = model.config
    ours = model.state_dict()
    hf = {"model.embed_tokens.weight": ours["embed_tokens.weight"], "model.norm.weight": ours["norm.weight"]}
    hf["lm_head.weight"] = ours["embed_tokens.weight"] if cfg.tie_word_embeddings else ours["lm_head.weight"]
    q, kv = cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim
    for i in range(cfg.num_layers):
        src, dst = f"layers.{i}.", f"model.layers.{i}."
        for kind in ("weight", "bias"):
            qkv = ours[src + f"self_attn.qkv_proj.{kind}"]
            for name, part in zip("qkv", qkv.split([q, kv, kv], dim=0)):
                hf[dst + f"self_attn.{name}_proj.{kind}"] = part
        gate, up = split_gate_up(ours[src + "mlp.gate_up_proj.weight"], dim=0)
        hf[dst + "mlp.gate_proj.weight"], hf[dst + "mlp.up_proj.weight"] = gate.flatten(0, 1), up.flatten(0, 1)
        for same in ("self_attn.o_proj", "mlp.down_proj", "input_layernorm", "post_attention_layernorm"):
            hf[dst + same + ".weight"] = ours[src + same + ".weight"]
    return hf


def to_transformers(model: Qwen2Model):
    """A transformers Qwen2ForCausalLM holding exactly our weights, same device and dtype."""
    Qwen2Config, Qwen2ForCausalLM = transformers_classes("Qwen2Config", "Qwen2ForCausalLM")
    hf_model = Qwen2ForCausalLM(Qwen2Config(**to_hf_config(model.config)))
    hf_model.load_state_dict(to_hf_state_dict(model), strict=False)
    return hf_model.to(device=model.device, dtype=model.dtype).eval()
