"""The run specification: one constructor that checks every option, resolves the
profile's defaults, and names what identifies a run in a row."""
import pytest

from fusedlib.bench.spec import EXPERIMENTS, OPTIONS, SCHEMA_VERSION, RunSpec, SpecError, stored_options


def test_every_option_is_declared_once_with_help_and_a_range():
    for name, opt in OPTIONS.items():
        kind, check, allowed = opt.allowed
        assert opt.help and allowed, name
        if opt.default is not None:
            assert check(opt.default), name  # a default is an allowed value
    taken = {o for opts in EXPERIMENTS.values() for o in opts}
    assert taken <= set(OPTIONS)


@pytest.mark.parametrize("options,option", [
    (dict(max_batch=2.5), "max_batch"), (dict(max_batch=True), "max_batch"), (dict(chunk_tokens="512"), "chunk_tokens"),
    (dict(batch_size=0), "batch_size"), (dict(engine="foo"), "engine"), (dict(seed=-1), "seed"),
    (dict(warmups=-1), "warmups"), (dict(repeats=0), "repeats"), (dict(attention="flash"), "attention"),
    (dict(profile="huge"), "profile"), (dict(graph_chunks=True), "graph_chunks"), (dict(rate=4.0), "rate"),
    (dict(nonsense=1), "nonsense"),
])
def test_bad_values_name_the_option(options, option):
    with pytest.raises(SpecError) as e:
        RunSpec.build("closed", **{"profile": "smoke", **options})
    assert e.value.option == option


@pytest.mark.parametrize("rate", [0, -5, float("nan"), float("inf"), "4"])
def test_rates_must_be_positive_numbers(rate):
    with pytest.raises(SpecError, match="rate: must be a number > 0"):
        RunSpec.build("arrivals", profile="smoke", rate=rate)


def test_resolved_fills_the_profiles_defaults_and_keeps_given_values():
    spec = RunSpec.build("arrivals", profile="smoke", rate=50.0).resolved()
    assert (spec.model, spec.attention, spec.chunk_tokens, spec.n_requests) == ("tiny", "torch", 32, 60)
    spec = RunSpec.build("arrivals", profile="smoke", rate=50.0, chunk_tokens=8, attention="triton").resolved()
    assert (spec.chunk_tokens, spec.attention) == (8, "triton")
    assert RunSpec.build("sensitivity", profile="smoke").resolved().rate == 400
    closed = RunSpec.build("closed", profile="smoke").resolved()
    assert (closed.warmups, closed.repeats) == (2, 5)
    peer = RunSpec.build("peer", profile="smoke").resolved()
    assert (peer.warmups, peer.repeats) == (2, 3)


def test_rows_carry_every_option_of_the_experiment_and_the_schema_version():
    spec = RunSpec.build("arrivals", profile="smoke", rate=50.0).resolved()
    fields = spec.row_fields()
    assert fields["schema_version"] == SCHEMA_VERSION
    assert set(EXPERIMENTS["arrivals"]) <= set(fields)
    assert (fields["graph_chunks"], fields["repeat"], fields["pool_gib"]) == (False, 0, None)
    assert stored_options(fields) == spec.options()


def test_but_checks_again():
    spec = RunSpec.build("closed", profile="smoke")
    assert spec.but(batch_size=8).batch_size == 8
    with pytest.raises(SpecError):
        spec.but(batch_size=0)


def test_an_option_the_experiment_does_not_take_is_refused_unless_left_at_its_default():
    with pytest.raises(SpecError, match="does not apply to gates"):
        RunSpec.build("gates", profile="smoke", max_batch=4)
    assert RunSpec.build("gates", profile="smoke", max_batch=32).experiment == "gates"


def test_engine_imports_and_generates_without_the_harness_dependencies():
    # The engine's runtime needs torch, triton and safetensors only: with pandas, matplotlib,
    # modal and transformers unimportable, `import fusedlib` and a generate still work.
    import subprocess
    import sys
    from pathlib import Path

    code = """
import sys
BLOCKED = ("pandas", "matplotlib", "modal", "transformers")
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked")
sys.meta_path.insert(0, Blocker())
import fusedlib
from fusedlib import Engine, load_model
engine = Engine(load_model("tiny"), kind="fused", max_batch=4, chunk_tokens=16, attention="torch")
out = engine.generate([[1, 2, 3], [4, 5, 6, 7]], max_new_tokens=3)
assert [len(o) for o in out] == [3, 3], out
assert not [m for m in sys.modules if m.split(".")[0] in BLOCKED + ("fusedlib.bench",)]
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_overlap_is_an_engine_option_and_rows_from_before_it_ran_without():
    for experiment in ("closed", "arrivals", "step_trace", "step_profile", "sensitivity", "gates"):
        assert RunSpec.build(experiment, profile="smoke", overlap=True, rate=50.0 if "arr" in experiment else None
                             ).resolved().options()["overlap"] is True
    with pytest.raises(SpecError, match="overlap: does not apply to peer"):
        RunSpec.build("peer", profile="smoke", overlap=True)
    with pytest.raises(SpecError, match="overlap: must be true or false"):
        RunSpec.build("closed", profile="smoke", overlap=1)
    # A schema-3 row has no overlap column: it waited for every step's tokens.
    spec = RunSpec.build("arrivals", profile="smoke", rate=50.0).resolved()
    old = {k: v for k, v in spec.row_fields().items() if k != "overlap"} | {"schema_version": 3}
    assert stored_options(old) == spec.options() and stored_options(old)["overlap"] is False
    assert stored_options(old) != spec.but(overlap=True).resolved().options()
