import csv
import json
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd

from pathlib import Path

from fusedlib.bench import telemetry
from fusedlib.bench.rows import append_rows, data_dir, load, read_rows


def _csv_rows(stem):
    with open(f"{stem}.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_rows_land_in_both_files_and_load_back(tmp_path):
    stem = tmp_path / "runs"
    append_rows(stem, [{"engine": "fused", "rate": 2, "served": np.float64(1.5)}])
    append_rows(stem, [{"engine": "chunked", "rate": 2, "served": 1.25}])
    df = load(stem)
    assert list(df["engine"]) == ["fused", "chunked"] and list(df["served"]) == [1.5, 1.25]
    assert [r["engine"] for r in _csv_rows(stem)] == ["fused", "chunked"]


def test_new_columns_rewrite_the_csv_from_the_jsonl(tmp_path):
    stem = tmp_path / "runs.rate0.5"  # dots in a stem are kept
    append_rows(stem, [{"a": 1}])
    append_rows(stem, [{"a": 2, "b": "x"}, {"a": 3}])
    rows = _csv_rows(stem)
    assert list(rows[0]) == ["a", "b"]
    assert [(r["a"], r["b"]) for r in rows] == [("1", ""), ("2", "x"), ("3", "")]
    assert (tmp_path / "runs.rate0.5.jsonl").exists()


def test_nan_is_stored_as_null(tmp_path):
    append_rows(tmp_path / "r", [{"x": float("nan")}])
    assert json.loads((tmp_path / "r.jsonl").read_text()) == {"x": None}


def test_rows_survive_a_kill_midway_and_resume_skips_them(tmp_path):
    stem = tmp_path / "campaign"
    child = textwrap.dedent(f"""
        import os
        from fusedlib.bench.rows import append_rows
        for rate in [1, 2, 3, 4, 5]:
            if rate == 4:
                with open({str(stem)!r} + ".jsonl", "a") as f:
                    f.write('{{"engine": "fused", "ra')  # killed in the middle of a write
                    f.flush()
                os._exit(1)
            append_rows({str(stem)!r}, [{{"engine": "fused", "rate": rate}}])
    """)
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert list(load(stem)["rate"]) == [1, 2, 3]
    assert len(_csv_rows(stem)) == 3

    done = {(r["engine"], r["rate"]) for r in read_rows(stem)}
    assert done == {("fused", 1), ("fused", 2), ("fused", 3)}
    todo = [r for r in [1, 2, 3, 4, 5] if ("fused", r) not in done]
    append_rows(stem, [{"engine": "fused", "rate": r} for r in todo])
    assert list(load(stem)["rate"]) == [1, 2, 3, 4, 5]
    assert [int(r["rate"]) for r in _csv_rows(stem)] == [1, 2, 3, 4, 5]


def test_csv_that_fell_behind_is_rebuilt(tmp_path):
    stem = tmp_path / "r"
    append_rows(stem, [{"a": 1}, {"a": 2}])
    with open(f"{stem}.jsonl", "a") as f:  # killed between the JSONL and the CSV write
        f.write(json.dumps({"a": 3}) + "\n")
    append_rows(stem, [{"a": 4}])
    assert [int(r["a"]) for r in _csv_rows(stem)] == [1, 2, 3, 4]


def test_missing_result_set_is_empty(tmp_path):
    assert load(tmp_path / "nothing").empty
    assert read_rows(tmp_path / "nothing") == []


def test_provenance_fields():
    p = telemetry.provenance()
    assert set(p) == {"gpu", "torch", "triton", "transformers", "git_commit", "hostname", "boot_id", "timestamp"}
    assert p["boot_id"] is None or len(p["boot_id"]) >= 8  # Linux: a uuid, one per boot
    assert p["gpu"] == "cpu" or p["gpu"]
    assert pd.Timestamp(p["timestamp"]).tzinfo is not None
    assert p["git_commit"] == "unknown" or len(p["git_commit"].split("+")[0]) >= 7


def test_data_dir_is_the_env_var_else_the_checkouts_folder_by_profile(monkeypatch, tmp_path):
    monkeypatch.delenv("FUSEDLIB_DATA", raising=False)
    checkout = Path(telemetry.__file__).resolve().parents[2]
    assert data_dir("full") == checkout / "data"
    assert data_dir("smoke") == checkout / "data-smoke"
    monkeypatch.setenv("FUSEDLIB_DATA", str(tmp_path))
    assert data_dir("full") == data_dir("smoke") == tmp_path


def test_a_compressed_set_reads_and_appends_like_a_text_one(tmp_path):
    from fusedlib.bench import rows as rs

    stem = tmp_path / "step_trace"
    first = [{"step": i, "gpu_s": 0.001 * i, "forward_gpu_s": [0.001 * i]} for i in range(3)]
    rs.append_rows(stem, first)
    path = rs.compress(stem)
    assert path.name == "step_trace.jsonl.gz" and sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    assert rs.read_rows(stem) == first
    rs.append_rows(stem, [{"step": 3, "gpu_s": float("nan")}])
    assert rs.read_rows(stem) == first + [{"step": 3, "gpu_s": None}]  # cleaned as a text append is
    assert not (tmp_path / "step_trace.jsonl").exists() and not (tmp_path / "step_trace.csv").exists()
    before = path.read_bytes()
    rs.compress(stem)  # already compressed: untouched
    other = tmp_path / "again"
    rs.append_rows(other, rs.read_rows(stem))
    assert rs.compress(other).read_bytes() == before  # equal rows, equal bytes (no timestamp inside)
