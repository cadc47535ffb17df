import json

import pytest
import torch
from safetensors.torch import save_file

from fusedlib.bench.hf import to_hf_config, transformers_classes
from fusedlib.config import PRESETS, ModelConfig
from fusedlib.engine import Engine
from fusedlib.weights import load_model


def _tiny_hf(tmp_path, tie: bool, shards: int, rope_style: str):
    # transformers on first use, not at collection: each xdist worker collects every file
    Qwen2Config, Qwen2ForCausalLM = transformers_classes("Qwen2Config", "Qwen2ForCausalLM")
    cfg = PRESETS["tiny"]
    d = to_hf_config(cfg) | {"tie_word_embeddings": tie}
    torch.manual_seed(0)
    hf = Qwen2ForCausalLM(Qwen2Config(**d)).eval()
    sd = {k: v.contiguous() for k, v in hf.state_dict().items()}
    if tie:
        sd.pop("lm_head.weight", None)
    names = sorted(sd)
    for i in range(shards):  # split the tensors over several files, as big checkpoints are
        save_file({k: sd[k] for k in names[i::shards]}, str(tmp_path / f"model-{i:05d}.safetensors"))
    if rope_style == "nested":  # transformers 5.x writes rope_parameters, hub files carry rope_theta
        d["rope_parameters"] = {"rope_type": "default", "rope_theta": d.pop("rope_theta")}
    (tmp_path / "config.json").write_text(json.dumps(d))
    return hf


@pytest.mark.parametrize("tie,shards,rope_style", [(True, 1, "top"), (False, 3, "nested")])
def test_load_hf_checkpoint_matches_transformers(tmp_path, tie, shards, rope_style):
    hf = _tiny_hf(tmp_path, tie, shards, rope_style)
    model = load_model(str(tmp_path))
    assert model.config.tie_word_embeddings == tie
    assert model.config.rope_theta == PRESETS["tiny"].rope_theta
    prompt = [3, 14, 15, 92, 65, 35]
    with torch.inference_mode():
        expected = hf.generate(torch.tensor([prompt]), max_new_tokens=6, min_new_tokens=6,
                               do_sample=False)[0, len(prompt):].tolist()
    assert Engine(model, kind="fused").generate([prompt], 6) == [expected]


def test_config_reads_both_rope_locations():
    base = to_hf_config(PRESETS["qwen2.5-1.5b"])
    nested = {k: v for k, v in base.items() if k != "rope_theta"} | {"rope_parameters": {"rope_theta": 1e6}}
    assert ModelConfig.from_hf_dict(base) == ModelConfig.from_hf_dict(nested) == PRESETS["qwen2.5-1.5b"]


def test_qwen25_preset_parameter_count():
    with torch.device("meta"):
        from fusedlib.model import Qwen2Model

        model = Qwen2Model(PRESETS["qwen2.5-1.5b"])
    assert sum(p.numel() for p in model.parameters()) == 1_543_714_304


def test_unknown_model_name_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown model"):
        load_model("no-such-preset")
    with pytest.raises(ValueError, match="config.json"):
        load_model(str(tmp_path))


def test_tiny_preset_does_not_just_repeat_the_last_prompt_token():
    """With a tied head and small random weights, each position's own embedding wins the
    argmax and greedy output repeats the last prompt token (199 of 200 prompts did); a CPU
    agreement test on such output checks almost nothing."""
    model = load_model("tiny")
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(0, model.config.vocab_size, (int(n),), generator=g).tolist()
               for n in torch.randint(1, 40, (50,), generator=g)]
    outputs = Engine(model, kind="fused", chunk_tokens=64, warmup=False).generate(prompts, 6)
    repeats = sum(all(t == p[-1] for t in out) for p, out in zip(prompts, outputs))
    assert repeats <= 5, f"{repeats} of 50 outputs repeat their last prompt token"
    assert len({tuple(out) for out in outputs}) >= 45
    assert sum(len(set(out)) >= 4 for out in outputs) >= 40  # not stuck in a short cycle


def test_rotary_table_takes_the_model_dtype_with_a_cast_per_use_values():
    """The cos/sin table is kept in the model's dtype, so a forward gathers its rows and casts
    nothing; its rows are exactly what casting the fp32 rows per use gives."""
    from fusedlib.model import RotaryEmbedding

    model = load_model("tiny", dtype=torch.float16)
    cfg = model.config
    fp32 = RotaryEmbedding(cfg.head_dim, cfg.max_position_embeddings, cfg.rope_theta).cos_sin
    assert model.rotary.cos_sin.dtype == torch.float16
    assert torch.equal(model.rotary.cos_sin, fp32.to(torch.float16))
    positions = torch.tensor([0, 7, cfg.max_position_embeddings - 1])
    cos, sin = model.rotary(positions, torch.float16)
    assert torch.equal(cos[:, 0], fp32[positions, 0].half()) and torch.equal(sin[:, 0], fp32[positions, 1].half())
