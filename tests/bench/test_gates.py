"""The five gates on the tiny fp32 model, and proof that they can fail."""
import pytest

from fusedlib.bench import gates
from tests.helpers import tiny_model


@pytest.mark.parametrize("gate", [gates.gate_fused_vs_chunked, gates.gate_mixed_step, gates.gate_tiny_pool,
                                  gates.gate_poisoning, gates.gate_transformers])
def test_gate_passes_with_torch_attention(gate):
    report = gate(tiny_model(), attention="torch")
    assert report.passed, report.row()


def test_fused_vs_chunked_gate_catches_a_real_disagreement(monkeypatch):
    """Give the fused side other weights: its tokens differ at logit gaps far above the tie
    tolerance, and the gate must report those as untolerated."""
    real_run = gates._run

    def fused_on_other_weights(model, specs, **kw):
        return real_run(tiny_model(1) if kw["kind"] == "fused" else model, specs, **kw)

    monkeypatch.setattr(gates, "_run", fused_on_other_weights)
    report = gates.gate_fused_vs_chunked(tiny_model(0))
    assert not report.passed and report.detail["untolerated"]


def test_poisoning_gate_fails_when_freed_memory_is_read(monkeypatch):
    """Break the decode path so it reads one position past the context: with poisoning on,
    that read lands in NaN-filled (or garbage) memory and the gate must fail."""
    from fusedlib.attention import torch_backend

    original = torch_backend.TorchAttention.decode

    def overread(self, q, k_cache, v_cache, meta, scale, **out):
        meta.context_lens = meta.context_lens + 16
        return original(self, q, k_cache, v_cache, meta, scale, **out)

    monkeypatch.setattr(torch_backend.TorchAttention, "decode", overread)
    assert not gates.gate_poisoning(tiny_model(), attention="torch").passed


@pytest.mark.parametrize("gate", [gates.gate_mixed_step, gates.gate_tiny_pool, gates.gate_poisoning])
def test_block_size_gates_pass_at_128_token_blocks(gate):
    """Part 12's KV blocks reach the gate's engine (the pool gates size their pools in them: two
    and three of the largest requests' blocks, one each here) and the gate passes."""
    report = gate(tiny_model(), attention="torch", kv_block_size=128)
    assert report.passed and report.row()["kv_block_size"] == 128, report.row()
    if gate is not gates.gate_mixed_step:
        assert report.detail["pool_blocks"] == (2 if gate is gates.gate_tiny_pool else 3)
