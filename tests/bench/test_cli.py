import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from fusedlib.bench import rows as results
from fusedlib.__main__ import EXPERIMENTS, parser

REPO = Path(__file__).resolve().parent.parent


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "fusedlib.bench", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120, **kw)


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


def test_smoke_arrivals_runs_in_seconds(tmp_path):
    out = tmp_path / "arrivals"
    start = time.perf_counter()
    proc = _cli("arrivals", "--profile", "smoke", "--engine", "fused,chunked", "--rates", "400",
                "--n-requests", "20", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert time.perf_counter() - start < 60
    df = results.load(out)
    assert sorted(df["engine"]) == ["chunked", "fused"]
    assert (df["n_completed"] == 20).all() and (df["rate"] == 400.0).all()
    assert "2 new rows" in proc.stdout


def test_killed_campaign_leaves_valid_rows_and_resumes(tmp_path):
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
    kept = results.load(out)
    assert 2 <= len(kept) < len(rates)  # killed midway
    assert all(json.loads(line) for line in jsonl.read_text().splitlines())
    assert sum(1 for _ in open(f"{out}.csv")) in (len(kept), len(kept) + 1)  # header; CSV may lag a row

    proc = _cli(*args)
    assert proc.returncode == 0, proc.stderr
    assert f"{len(rates) - len(kept)} new rows" in proc.stdout
    df = results.load(out)
    assert sorted(df["rate"]) == rates
    assert sum(1 for _ in open(f"{out}.csv")) == len(rates) + 1


def test_cuda_graphs_flag_is_refused_where_it_does_not_apply_and_on_cpu(tmp_path):
    proc = _cli("sensitivity", "--profile", "smoke", "--cuda-graphs", "--out", str(tmp_path / "s"))
    assert proc.returncode != 0 and "--cuda-graphs and --graph-chunks apply to" in proc.stderr
    # Graph capture needs a GPU: on this CPU-only machine the engine says so, and no row is written.
    proc = _cli("arrivals", "--profile", "smoke", "--engine", "fused", "--rates", "400", "--n-requests", "4",
                "--attention", "triton", "--cuda-graphs", "--out", str(tmp_path / "a"))
    assert proc.returncode != 0 and "cuda_graphs needs a CUDA model" in proc.stderr
    assert not results.read_rows(tmp_path / "a")


def test_rows_record_whether_cuda_graphs_ran(tmp_path):
    out = tmp_path / "arrivals"
    proc = _cli("arrivals", "--profile", "smoke", "--engine", "fused", "--rates", "400", "--n-requests", "4",
                "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = results.read_rows(out)
    assert [r["cuda_graphs"] for r in rows] == [False]
    assert "graph_chunks" not in rows[0]  # only rows that used it carry it, so older rows keep their keys


def test_arrivals_repeats_alternate_engines_and_resume(tmp_path):
    out = tmp_path / "arrivals"
    args = ("arrivals", "--profile", "smoke", "--engine", "fused,chunked", "--rates", "400", "--n-requests", "6",
            "--repeats", "2", "--out", str(out))
    proc = _cli(*args)
    assert proc.returncode == 0, proc.stderr
    rows = results.read_rows(out)
    # Engines alternate run by run; the first run of a configuration carries no repeat field, so it is
    # the same row a run without --repeats writes.
    assert [(r["engine"], r.get("repeat")) for r in rows] == [("fused", None), ("chunked", None),
                                                              ("fused", 1), ("chunked", 1)]
    assert len({r["n_output_tokens"] for r in rows}) == 1  # the same requests every time
    assert _cli(*args).returncode == 0 and len(results.read_rows(out)) == 4  # all four already there
