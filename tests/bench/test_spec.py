"""The run specification: one constructor that checks every option, and what identifies a run."""
from dataclasses import replace

import pytest

from fusedlib.bench.spec import EXPERIMENTS, RunSpec, SpecError
from fusedlib.config import CPU_DEFAULTS, PARTS


@pytest.mark.parametrize("experiment,options,option", [
    ("capacity", dict(config="part13"), "config"), ("capacity", dict(engine="foo"), "engine"),
    ("capacity", dict(rate=0), "rate"), ("capacity", dict(rate=float("nan")), "rate"), ("capacity", dict(rate="4"), "rate"),
    ("capacity", dict(max_batch=2.5), "max_batch"), ("capacity", dict(max_batch=True), "max_batch"),
    ("capacity", dict(seed=-1), "seed"), ("capacity", dict(round=-1), "round"), ("capacity", dict(nonsense=1), "nonsense"),
    ("attention", dict(attention="flash"), "attention"), ("census", dict(round=1), "round"),
    ("kernels", dict(kernel="flash"), "kernel"), ("soak", dict(round=1), "round"),
    ("peer", dict(engine="vllm"), "engine"),
])
def test_bad_values_name_the_option(experiment, options, option):
    with pytest.raises(SpecError) as e:
        RunSpec.build(experiment, "smoke", **options)
    assert e.value.option == option and option in str(e.value)


def test_unknown_experiment_and_profile_are_refused():
    with pytest.raises(SpecError, match="experiment"):
        RunSpec.build("closed", "smoke")
    with pytest.raises(SpecError, match="profile"):
        RunSpec.build("capacity", "huge")


def test_the_key_is_the_experiments_options_with_the_sizes_as_run():
    spec = RunSpec.build("capacity", "full", config="part10", engine="fused", rate=80, n_requests=10, seed=1, round=1)
    assert spec.key() == {"config": "part10", "engine": "fused", "max_batch": 32, "chunk_tokens": 512, "rate": 80.0,
                          "n_requests": 10, "seed": 1, "round": 1}
    assert set(spec.key()) == set(EXPERIMENTS["capacity"])
    assert RunSpec.from_dict(spec.as_dict()) == spec
    assert RunSpec.build("peer", "smoke", config="part10", engine="transformers").engine == "transformers"


def test_configurations_are_the_series_parts_and_smoke_runs_them_eager():
    assert (PARTS["part7"].attention, PARTS["part8"].attention, PARTS["part10"].attention) == \
        ("triton", "triton-splitkv", "triton-parallel")
    assert PARTS["part9"].cuda_graphs and not PARTS["part9"].whole_graphs
    assert (PARTS["part11"].max_batch, PARTS["part11"].chunk_tokens) == (256, 8192)
    full = RunSpec.build("capacity", "full", config="part10", engine="chunked", rate=1, n_requests=1, seed=0, round=0)
    assert full.settings() == replace(PARTS["part10"], kind="chunked")
    smoke = RunSpec.build("scale", "smoke", config="part10", engine="fused", max_batch=4, chunk_tokens=16, rate=1,
                          n_requests=1, seed=0, round=0).settings()
    assert (smoke.attention, smoke.cuda_graphs, smoke.fused_ops, smoke.overlap, smoke.max_batch) == \
        ("torch", False, False, False, 4)
    assert all(getattr(smoke, name) == value for name, value in CPU_DEFAULTS.items())
