"""The campaign scripts' data path: per-GPU rows and GPU test logs fold into data/ once."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fusedlib.bench.rows import append_rows, read_rows

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
import merge_campaign_rows  # noqa: E402
import merge_census_ab  # noqa: E402
import merge_loop_rows  # noqa: E402
import merge_paired_rows  # noqa: E402
import merge_scorecard_rows  # noqa: E402


def test_merge_is_idempotent_and_copies_gpu_test_logs(tmp_path):
    root, data = tmp_path / "campaign", tmp_path / "data"
    rows = [{"experiment": "arrivals", "engine": e, "rate": 4.0, "n_requests": 8, "timestamp": "t0"}
            for e in ("fused", "chunked")]
    append_rows(root / "gpu0" / "arrivals" / "runs", rows)
    append_rows(root / "gpu1" / "arrivals" / "runs", [{**rows[0], "rate": 8.0}])
    (root / "gpu_tests").mkdir(parents=True)
    (root / "gpu_tests" / "h200_x.log").write_text("# cmd\n3 passed\nexit status: 0\n")
    merge_campaign_rows.merge(root, data)
    assert len(read_rows(data / "arrivals" / "runs")) == 3
    assert (data / "gpu_tests" / "h200_x.log").read_text().endswith("exit status: 0\n")
    merge_campaign_rows.merge(root, data)  # again: nothing new
    assert len(read_rows(data / "arrivals" / "runs")) == 3


def test_campaign_script_phases_parse():
    proc = subprocess.run(["bash", "-n", str(REPO / "scripts" / "h200_campaign.sh")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = (REPO / "scripts" / "h200_campaign.sh").read_text()
    for phase in ("calibrate)", "sweep)", "s2)", "s3)", "s4)", "s5)", "s6)", "s7)"):  # the phases the README cites
        assert f"  {phase}" in text


def test_paired_merge_adds_each_row_once(tmp_path):
    out, data = tmp_path / "camp", tmp_path / "data"
    old = {"experiment": "arrivals", "engine": "fused", "repeat": 1, "served_rate": 30.0, "timestamp": "t0"}
    append_rows(data / "arrivals", [old])
    append_rows(out / "paired" / "arrivals", [old, {**old, "repeat": 2, "timestamp": "t1"}])  # seeded, then one new
    append_rows(out / "paired" / "peer", [{"experiment": "peer", "engine": "transformers", "timestamp": "t2"}])
    assert merge_paired_rows.merge(out, data) == {"arrivals": 1, "peer": 1}
    assert merge_paired_rows.merge(out, data) == {"arrivals": 0, "peer": 0}
    assert [r["repeat"] for r in read_rows(data / "arrivals")] == [1, 2]
    # a compressed set (rows.compress) on either side merges the same way
    from fusedlib.bench.rows import compress

    compress(data / "arrivals"), compress(out / "paired" / "arrivals")
    append_rows(out / "paired" / "arrivals", [{**old, "repeat": 3, "timestamp": "t3"}])
    assert merge_paired_rows.merge(out, data) == {"arrivals": 1, "peer": 0}
    assert [r["repeat"] for r in read_rows(data / "arrivals")] == [1, 2, 3]


def test_census_ab_merge_labels_each_arm_and_round_once(tmp_path):
    out, data = tmp_path / "out", tmp_path / "data"
    row = {"config": "c", "step": "decode", "gpu_ms_median": 2.0, "timestamp": "t0"}
    append_rows(out / "ab" / "base1" / "roofline" / "census", [row])
    append_rows(out / "ab" / "new1" / "roofline" / "census", [{**row, "gpu_ms_median": 1.9}])
    assert merge_census_ab.merge(out, data) == 2
    assert merge_census_ab.merge(out, data) == 0
    assert sorted((r["arm"], r["round"], r["gpu_ms_median"]) for r in read_rows(data / "census_ab")) == [
        ("base", 1, 2.0), ("new", 1, 1.9)]
    append_rows(out / "ab" / "other" / "roofline" / "census", [row])
    with pytest.raises(ValueError, match="base<N> or new<N>"):
        merge_census_ab.merge(out, data)


def test_census_ab_merge_takes_another_folder_into_another_set(tmp_path):
    out, data = tmp_path / "out", tmp_path / "data"
    row = {"config": "c", "step": "decode", "gpu_ms_median": 2.0, "timestamp": "t0"}
    append_rows(out / "flag_ab" / "base1" / "roofline" / "census", [row])
    append_rows(out / "flag_ab" / "new1" / "roofline" / "census", [{**row, "gpu_ms_median": 2.1}])
    assert merge_census_ab.merge(out, data, into="pdl_ab", folder="flag_ab") == 2
    assert not (data / "census_ab.jsonl").exists() and len(read_rows(data / "pdl_ab")) == 2


def test_closed_ab_merge_folds_the_closed_passes_alone(tmp_path):
    out, data = tmp_path / "out", tmp_path / "data"
    row = {"stat": "median", "wall_s": 2.5, "timestamp": "t0"}
    append_rows(out / "closed_ab" / "base1" / "roofline" / "closed", [row])
    append_rows(out / "closed_ab" / "new1" / "roofline" / "closed", [{**row, "wall_s": 2.4}])
    append_rows(out / "closed_ab" / "new1" / "roofline" / "census", [row])  # not a closed pass: left out
    assert merge_census_ab.merge(out, data, into="closed_ab", folder="closed_ab") == 2
    assert merge_census_ab.merge(out, data, into="closed_ab", folder="closed_ab") == 0
    assert sorted((r["arm"], r["wall_s"]) for r in read_rows(data / "closed_ab")) == [("base", 2.5), ("new", 2.4)]
    assert not (data / "closed_ab_kernels.jsonl").exists()


def test_merge_loop_rows_marks_each_round_and_its_order_once(tmp_path):
    out, data = tmp_path / "out", tmp_path / "data"
    for round_, configs in ((1, ("a", "b")), (2, ("b", "a"))):
        append_rows(out / "loop" / str(round_) / "roofline" / "loop",
                    [{"config": c, "step": s, "timestamp": f"t{round_}"} for c in configs for s in ("decode", "mixed")])
    assert merge_loop_rows.merge(out, data) == 8
    assert merge_loop_rows.merge(out, data) == 0
    got = read_rows(data / "loop")
    assert {(r["round"], r["order"]) for r in got} == {(1, "a,b"), (2, "b,a")}
    assert merge_loop_rows.merge(out, data, into="loop_later") == 8  # another set: the same rows again
    assert len(read_rows(data / "loop")) == 8


@pytest.mark.parametrize("script", ["device_census_ab.sh", "device_attention.sh", "device_loop.sh", "device_probe.sh",
                                    "device_closed_ab.sh", "device_scorecard.sh"])
def test_device_scripts_parse(script):
    proc = subprocess.run(["bash", "-n", str(REPO / "scripts" / script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_merge_scorecard_rows_marks_each_census_round_once(tmp_path):
    out, data = tmp_path / "out", tmp_path / "data"
    for round_ in (1, 2):
        append_rows(out / "census" / str(round_) / "roofline" / "census",
                    [{"config": "c", "step": s, "timestamp": f"t{round_}"} for s in ("decode", "mixed")])
        append_rows(out / "census" / str(round_) / "roofline" / "census_kernels",
                    [{"config": "c", "step": "decode", "kernel": "k", "timestamp": f"t{round_}"}])
    append_rows(out / "census" / "1" / "roofline" / "attention_engine", [{"context": 1024, "what": "copy"}])
    append_rows(out / "loop" / "1" / "roofline" / "loop", [{"config": "c", "step": "decode", "timestamp": "t1"}])
    assert merge_scorecard_rows.merge(out, data) == 4 + 2 + 1 + 1
    assert merge_scorecard_rows.merge(out, data) == 0
    assert {r["round"] for r in read_rows(data / "scorecard_census")} == {1, 2}
    assert read_rows(data / "scorecard_attention")[0]["round"] == 1
    assert read_rows(data / "scorecard_loop")[0]["order"] == "c"


def test_device_scorecard_starts_no_round_without_the_time_it_needs(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "LIMIT": "30", "FUSEDLIB_GIT_COMMIT": "abc1234"}
    proc = subprocess.run(["bash", str(REPO / "scripts" / "device_scorecard.sh"), str(out)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    log = (out / "log.txt").read_text()
    assert log.count("round skipped") == 1 and log.count("stage skipped") == 1  # the census's, the loop's
    assert (out / "rows.tgz").stat().st_size > 0 and not (out / "census").exists()


def test_device_loop_starts_no_stage_without_the_time_it_needs(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "LIMIT": "30", "FUSEDLIB_GIT_COMMIT": "abc1234"}  # under every stage's minimum
    proc = subprocess.run(["bash", str(REPO / "scripts" / "device_loop.sh"), str(out)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    log = (out / "log.txt").read_text()
    assert log.count("stage skipped") == 3 and not (out / "loop").exists()


def test_device_closed_ab_starts_no_round_without_the_time_it_needs(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "LIMIT": "60", "FUSEDLIB_GIT_COMMIT": "abc1234", "BASE_COMMIT": "def5678"}
    proc = subprocess.run(["bash", str(REPO / "scripts" / "device_closed_ab.sh"), str(out)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "round 1 not started" in (out / "log.txt").read_text()
    assert (out / "rowsclosed_ab.tgz").stat().st_size > 0 and not any((out / "closed_ab").iterdir())


def test_device_campaign_skips_a_phase_without_time_and_still_packs_the_rows(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "LIMIT": "30"}  # under the 45 s a phase needs to start
    proc = subprocess.run(["bash", str(REPO / "scripts" / "device_campaign.sh"), str(out), "knees"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "campaign knees: not started" in (out / "campaign.log").read_text()
    assert (out / "camp.tgz").stat().st_size > 0 and (tmp_path / ".camp" / "paired").is_dir()


def _make_dry_run(target: str, **variables) -> list[str]:
    """The commands `make <target>` runs, with the venv taken as installed."""
    args = [f"{k}={v}" for k, v in {"BIN": Path(sys.executable).parent, **variables}.items()]
    proc = subprocess.run(["make", "-n", "-o", ".venv/.fusedlib-installed", target, *args], cwd=REPO,
                          capture_output=True, text=True, check=True)
    return proc.stdout.splitlines()


def test_make_book_prints_no_parser_configuration(tmp_path):
    # The book target's build command, on a one-page book: Sphinx's progress log would print
    # myst's whole MdParserConfig(...) and myst-nb's NbParserConfig(...).
    (command,) = [line for line in _make_dry_run("book") if "jupyter-book build" in line]
    (tmp_path / "_config.yml").write_text("title: t\nonly_build_toc_files: true\nexecute:\n  execute_notebooks: 'off'\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: index\n")
    (tmp_path / "index.md").write_text("# A page\n\nText.\n")
    proc = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (tmp_path / "_build" / "html" / "index.html").exists()
    assert "ParserConfig(" not in proc.stdout + proc.stderr


def test_make_lab_allows_root_only_as_root():
    (command,) = [line for line in _make_dry_run("lab") if "jupyter lab" in line]
    assert ("--allow-root" in command) == (os.getuid() == 0)
