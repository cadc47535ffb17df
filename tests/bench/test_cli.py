import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fusedlib.bench.rows import load, read_rows
from fusedlib.bench.cli import EXPERIMENTS, main, parser
from fusedlib.bench.spec import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]


def _cli(*args, cwd=REPO, **kw):
    """`python -m fusedlib.bench ARGS` as its own process: the entry point itself."""
    return subprocess.run([sys.executable, "-m", "fusedlib.bench", *args], cwd=cwd, capture_output=True,
                          text=True, **kw)


def _main(capfd, *args) -> tuple[int, str, str]:
    """The same command line in this process (no interpreter start per call): (exit status,
    stdout, stderr), file-descriptor level, so output from native code counts too."""
    capfd.readouterr()
    try:
        status = main(list(args))
    except SystemExit as e:  # argparse's errors
        status = e.code
    out, err = capfd.readouterr()
    return status, out, err


def test_help_documents_every_option_and_experiment():
    p = parser()
    for action in p._actions:
        assert action.help, action.dest
    text = p.format_help()
    for name in EXPERIMENTS:
        assert name in text
    for option in ("--engine", "--rates", "--n-requests", "--batch-size", "--workload", "--seed",
                   "--pool-gib", "--profile", "--attention", "--out", "--chunk-tokens", "--max-batch",
                   "--cuda-graphs", "--graph-chunks"):
        assert option in text


def test_smoke_arrivals_both_engines(tmp_path):
    out = tmp_path / "arrivals"
    proc = _cli("arrivals", "--profile", "smoke", "--engine", "fused,chunked", "--rates", "400",
                "--n-requests", "20", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    df = load(out)
    assert sorted(df["engine"]) == ["chunked", "fused"]
    assert (df["n_completed"] == 20).all() and (df["rate"] == 400.0).all()
    assert "2 new rows" in proc.stdout


@pytest.mark.slow(8)
def test_killed_campaign_leaves_valid_rows_and_resumes(tmp_path, capfd):
    out = tmp_path / "campaign"
    rates = [50.0 + i for i in range(10)]  # 12 requests at ~50/s: ~0.25 s a run
    args = ["arrivals", "--profile", "smoke", "--engine", "fused", "--rates", ",".join(map(str, rates)),
            "--n-requests", "12", "--out", str(out)]
    child = subprocess.Popen([sys.executable, "-m", "fusedlib.bench", *args], cwd=REPO,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    jsonl = Path(f"{out}.jsonl")
    deadline = time.time() + 90
    while time.time() < deadline and child.poll() is None:
        if jsonl.exists() and jsonl.read_text().count("\n") >= 2:
            break
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    kept = load(out)
    assert 2 <= len(kept) < len(rates)  # killed midway
    assert all(json.loads(line) for line in jsonl.read_text().splitlines())
    assert sum(1 for _ in open(f"{out}.csv")) in (len(kept), len(kept) + 1)  # header; CSV may lag a row

    status, printed, err = _main(capfd, *args)  # the rerun: in this process
    assert status == 0, err
    assert f"{len(rates) - len(kept)} new rows" in printed
    df = load(out)
    assert sorted(df["rate"]) == rates
    assert sum(1 for _ in open(f"{out}.csv")) == len(rates) + 1


def test_cuda_graphs_flag_is_refused_where_it_does_not_apply_and_on_cpu(tmp_path, capfd):
    status, _, err = _main(capfd, "kernel-gate", "--profile", "smoke", "--cuda-graphs", "--out", str(tmp_path / "s"))
    assert status == 2 and err.strip().endswith("--cuda-graphs does not apply to kernel_gate")
    # Graph capture needs a GPU: on this CPU-only machine the spec says so, and no row is written.
    status, _, err = _main(capfd, "arrivals", "--profile", "smoke", "--engine", "fused", "--rates", "400",
                           "--n-requests", "4", "--attention", "triton", "--cuda-graphs", "--out", str(tmp_path / "a"))
    assert status == 2 and "--cuda-graphs needs a CUDA GPU" in err
    assert not read_rows(tmp_path / "a")


def test_rows_record_whether_cuda_graphs_ran(tmp_path, capfd):
    out = tmp_path / "arrivals"
    status, _, err = _main(capfd, "arrivals", "--profile", "smoke", "--engine", "fused", "--rates", "400",
                           "--n-requests", "4", "--out", str(out))
    assert status == 0, err
    (row,) = read_rows(out)
    # Every option, set or not, and the schema version.
    assert (row["cuda_graphs"], row["graph_chunks"], row["repeat"], row["pool_gib"]) == (False, False, 0, None)
    assert row["schema_version"] == SCHEMA_VERSION and row["fused_ops"] is False  # smoke: reference ops


def test_arrivals_repeats_alternate_engines_and_resume(tmp_path, capfd):
    out = tmp_path / "arrivals"
    args = ("arrivals", "--profile", "smoke", "--engine", "fused,chunked", "--rates", "400", "--n-requests", "6",
            "--repeats", "2", "--out", str(out))
    status, _, err = _main(capfd, *args)
    assert status == 0, err
    rows = read_rows(out)
    # Engines alternate run by run.
    assert [(r["engine"], r["repeat"]) for r in rows] == [("fused", 0), ("chunked", 0), ("fused", 1), ("chunked", 1)]
    assert len({r["n_output_tokens"] for r in rows}) == 1  # the same requests every time
    assert _main(capfd, *args)[0] == 0 and len(read_rows(out)) == 4  # all four already there


BAD_VALUES = [  # (arguments, the one line's ending): each used to write rows, or end in a traceback
    (["arrivals", "--n-requests", "0"], "--n-requests must be an integer >= 1, got 0"),
    (["arrivals", "--n-requests", "-3"], "--n-requests must be an integer >= 1, got -3"),
    (["closed", "--batch-size", "0"], "--batch-size must be an integer >= 1, got 0"),
    (["closed", "--chunk-tokens", "0"], "--chunk-tokens must be an integer >= 1, got 0"),
    (["closed", "--engine", "foo"], "--engine must be one of fused, chunked, got 'foo'"),
    (["arrivals", "--rates", "-5"], "--rates must be a number > 0, got -5.0"),
    (["arrivals", "--rates", "0"], "--rates must be a number > 0, got 0.0"),
    (["arrivals", "--model", "/nonexistent"], "got '/nonexistent' (no such folder here)"),
    (["closed", "--max-batch", "0"], "--max-batch must be an integer >= 1, got 0"),
    (["closed", "--workload", "foo"], "--workload must be one of mixed, p256, mixed_fixed, got 'foo'"),
    (["arrivals", "--pool-gib", "-1"], "--pool-gib must be a number > 0, got -1.0"),
    (["arrivals", "--rates", "abc"], "argument --rates: must be a number > 0, got 'abc'"),
    (["step-trace", "--profile", "full"], "--profile full needs a CUDA GPU; use smoke on a CPU"),
]


@pytest.mark.parametrize("args,message", BAD_VALUES, ids=[" ".join(a) for a, _ in BAD_VALUES])
def test_bad_value_is_one_line_exit_2_and_no_row(tmp_path, capfd, args, message):
    out = tmp_path / "rows"
    status, _, err = _main(capfd, *args, "--out", str(out))
    assert status == 2
    assert err.endswith(message + "\n") and err.count("\n") == 1, err
    assert not Path(f"{out}.jsonl").exists()


def test_bad_value_from_the_shell_is_the_one_line_alone(tmp_path):
    # A fresh process: nothing imported on the way (the engine, Triton) adds a line of its own.
    args, message = BAD_VALUES[2]
    proc = _cli(*args, "--out", str(tmp_path / "rows"))
    assert proc.returncode == 2 and proc.stderr == f"python -m fusedlib.bench: error: {message}\n", proc.stderr


def test_default_profile_follows_the_machine_and_smoke_rows_go_to_data_smoke(tmp_path, capfd, monkeypatch):
    # On this CPU machine: the smoke profile, rows in the rows folder's data-smoke/.
    monkeypatch.setenv("FUSEDLIB_DATA", str(tmp_path / "data-smoke"))
    status, _, err = _main(capfd, "arrivals", "--engine", "fused", "--rates", "400", "--n-requests", "4")
    assert status == 0, err
    (row,) = read_rows(tmp_path / "data-smoke" / "arrivals" / "runs")
    assert (row["profile"], row["model"], row["n_requests"]) == ("smoke", "tiny", 4)


@pytest.mark.slow(10)
def test_help_examples_run_as_typed_on_a_cpu(tmp_path, capfd, monkeypatch):
    # The examples that do not say "on a GPU", with rows sent to a scratch folder.
    from fusedlib.bench import cli

    examples = [line.strip().split()[3:] for line in cli.__doc__.splitlines()
                if line.strip().startswith("python -m fusedlib.bench") and "on a GPU" not in line]
    assert len(examples) >= 3
    monkeypatch.setenv("FUSEDLIB_DATA", str(tmp_path))
    for args in examples:
        status, out, err = _main(capfd, *args)
        assert status == 0, (args, err[-2000:])
        assert "new rows" in out


def test_step_profile_prints_no_profiler_noise(tmp_path):
    # Its own process: the profiler prints its notices at its first start in a process.
    proc = _cli("step-profile", "--engine", "chunked", "--profiled-steps", "3", "--out", str(tmp_path / "p"))
    assert proc.returncode == 0, proc.stderr
    assert "USDT" not in proc.stdout + proc.stderr and "profiler_start" not in proc.stderr


def test_overlap_flag_reaches_every_run_it_asks_for():
    from fusedlib.bench.cli import specs_from_args

    _, specs = specs_from_args(parser().parse_args(["arrivals", "--profile", "smoke", "--rates", "50,100",
                                                    "--overlap"]))
    assert len(specs) == 4 and all(s.overlap for s in specs)
    _, specs = specs_from_args(parser().parse_args(["arrivals", "--profile", "smoke", "--rates", "50"]))
    assert not any(s.overlap for s in specs)
