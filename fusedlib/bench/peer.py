"""The peer: transformers' own continuous batching, on our weights, measured like our engines.

`closed` serves the closed workload of `runs.closed` with transformers' continuous-batching
manager (the one behind `generate_batch`), our weights copied into a Qwen2ForCausalLM by
`to_transformers`. The gates use the same adapter to compare both engines with transformers'
greedy generation.
"""
from __future__ import annotations

import time

import torch

from . import workloads
from .spec import RunSpec
from .telemetry import machine, sync
from ..config import ModelConfig
from ..model import Qwen2Model


def _transformers(*names: str) -> tuple:
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
        hf[dst + "self_attn.o_proj.weight"] = ours[src + "self_attn.o_proj.weight"]
        gate, up = ours[src + "mlp.gate_up_proj.weight"].chunk(2, dim=0)
        hf[dst + "mlp.gate_proj.weight"], hf[dst + "mlp.up_proj.weight"] = gate, up
        hf[dst + "mlp.down_proj.weight"] = ours[src + "mlp.down_proj.weight"]
        hf[dst + "input_layernorm.weight"] = ours[src + "input_layernorm.weight"]
        hf[dst + "post_attention_layernorm.weight"] = ours[src + "post_attention_layernorm.weight"]
    return hf


def to_transformers(model: Qwen2Model):
    """A transformers Qwen2ForCausalLM holding exactly our weights, same device and dtype."""
    Qwen2Config, Qwen2ForCausalLM = _transformers("Qwen2Config", "Qwen2ForCausalLM")
    hf_model = Qwen2ForCausalLM(Qwen2Config(**to_hf_config(model.config)))
    hf_model.load_state_dict(to_hf_state_dict(model), strict=False)
    return hf_model.to(device=model.device, dtype=model.dtype).eval()


def closed(spec: RunSpec) -> list[dict]:
    """transformers' own continuous batching (the manager behind `generate_batch`) on the
    closed workload of `runs.closed`, with our weights copied into a Qwen2ForCausalLM. The
    manager is driven directly because `generate_batch` takes one max_new_tokens for all
    requests. Settings mirror our engine where transformers has them: at most `max_batch`
    requests and `chunk_tokens + max_batch` tokens per forward, a cache that holds the whole
    batch, EOS disabled, greedy. One discarded warm-up pass (its first pass ran 2.4x slower
    than the next on the H200), then one timed pass."""
    from .runs import closed_fields, mixed_draw

    draw = mixed_draw(spec, spec.n_requests, 0, spec.profile_spec.peer_new_tokens)
    n_out, device, walls = sum(r.max_new_tokens for r in draw), spec.profile_spec.device, []
    with _transformers_batching(spec, draw) as manager:
        for _ in range(2):
            sync(device)
            t0 = time.perf_counter()
            outputs = _collect(manager, [manager.add_request(r.prompt, max_new_tokens=r.max_new_tokens,
                                                             eos_token_id=-1) for r in draw])
            sync(device)
            walls.append(time.perf_counter() - t0)
            if sum(len(o.generated_tokens) for o in outputs.values()) != n_out:
                raise RuntimeError("transformers generated a different number of tokens than requested")
    return [{**machine(), "attention": "transformers", "max_batch": spec.max_batch,
             "chunk_tokens": spec.chunk_tokens, **closed_fields(walls[-1], n_out, spec), "warmup_wall_s": walls[0]}]


def _transformers_batching(spec: RunSpec, specs: workloads.Workload):
    """transformers' continuous-batching manager over our weights (copied into a
    Qwen2ForCausalLM), set up as our engine where it has the setting: at most `max_batch`
    requests and `chunk_tokens + max_batch` tokens per forward, greedy, EOS disabled, and a
    cache sized to hold every request in `specs` at once. A context manager."""
    GenerationConfig, ContinuousBatchingConfig = _transformers("GenerationConfig", "ContinuousBatchingConfig")

    from .runs import model_for

    hf = to_transformers(model_for(spec))
    cb = ContinuousBatchingConfig(max_requests_per_batch=spec.max_batch,
                                  max_batch_tokens=spec.chunk_tokens + spec.max_batch)
    # Left unsized, the cache takes 90% of free device memory, or of host RAM on CPU.
    # The cache's tokens per block: `page_size` in recent transformers, `block_size` before it (5.17,
    # the H200 machine's: the peer's closed b64 run there failed on `page_size`).
    per_block = getattr(cb, "page_size", None) or cb.block_size
    cb.num_blocks = sum(-(-(len(r.prompt) + r.max_new_tokens) // per_block) for r in specs)
    gen = GenerationConfig(do_sample=False, eos_token_id=-1, max_new_tokens=max(r.max_new_tokens for r in specs))
    return hf.continuous_batching_context_manager(generation_config=gen, continuous_batching_config=cb,
                                                  block=True, timeout=30)


def _collect(manager, ids: list[str]) -> dict:
    done, timeout_s = {}, 600
    while len(done) < len(ids):
        result = manager.get_result(timeout=timeout_s)
        if result is None:
            raise RuntimeError(f"transformers' batching manager stopped with {len(ids) - len(done)} requests left")
        if result.is_finished():
            done[result.request_id] = result
    return done
