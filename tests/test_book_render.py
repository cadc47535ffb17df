"""Every page runs on synthetic rows and on none: figures and tables where rows exist, "no rows
yet" where they do not, never an error (tests/book_pages.py runs the pages' code cells)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from fusedlib.bench import figures as F, stats as S
from fusedlib.bench.figures.data import REPO
from tests import book_pages as B
from tests.bench import synthetic_rows

CHAPTERS = ("part07", "part08", "part09", "part10", "part11", "part12")
# The rows fixtures (every page's code run once, ~8 s each) live for the session: the
# longest-first order interleaves modules, which would rebuild a module-scoped one.


@pytest.fixture(scope="session")
def full(tmp_path_factory):
    return B.run_pages(B.toc_pages(), synthetic_rows.write(tmp_path_factory.mktemp("rows")))


# What a CPU run (the smoke profile) leaves out of its rows: CUDA events' times and the census's
# byte and FLOP counts.
GPU_ONLY = ("gpu_ms", "gpu_ms_min", "gpu_ms_max", "bytes", "flops", "decode_step_gpu_s_p50",
            "mixed_step_gpu_s_p50", "step_gpu_ms_p50", "window_gpu_s", "peak_mem_1k_bytes", "peak_mem_end_bytes")


@pytest.fixture(scope="session")
def cpu(tmp_path_factory):
    """The synthetic rows as `make run-all PROFILE=smoke` writes them on a CPU."""
    folder = synthetic_rows.write(tmp_path_factory.mktemp("cpu"))
    for path in folder.glob("*.jsonl"):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            row.update(device_name="cpu", profile="smoke", **{k: None for k in GPU_ONLY if k in row})
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return B.run_pages(B.toc_pages(), folder)


@pytest.fixture(scope="session")
def empty(tmp_path_factory):
    return B.run_pages(B.toc_pages(), tmp_path_factory.mktemp("none"))


@pytest.mark.slow(10)
def test_pages_run_and_show_their_figures_on_rows(full):
    assert not {p: r["error"] for p, r in full.items() if r["error"]}
    for page in ("intro", *CHAPTERS):
        assert full[page]["images"] >= 1, page
        assert not any("No rows yet" in m for m in full[page]["markdown"]), page


@pytest.mark.slow(7)
def test_pages_run_on_a_cpu_runs_rows(cpu):
    assert not {p: r["error"] for p, r in cpu.items() if r["error"]}
    for page in CHAPTERS:  # the intro's only figure sets steps against floors, which a CPU's rows lack
        assert cpu[page]["images"] >= 1, page
    assert cpu["part07"]["glued"]["p07_bottleneck"] == "unknown: these rows carry no GPU time"


@pytest.mark.slow(5)
def test_pages_run_without_rows_and_say_so(empty):
    assert not {p: r["error"] for p, r in empty.items() if r["error"]}
    for page in CHAPTERS:
        assert empty[page]["images"] == 0, page
        assert any(m.startswith("No rows yet") for m in empty[page]["markdown"]), page
    assert empty["part07"]["glued"]["p07_fusion_gain"] == S.NO_ROWS


def test_each_page_glues_exactly_its_modules_values(full):
    owners = F.owners()
    for page, r in full.items():
        assert set(r["glued"]) == {n for n, p in owners.items() if p == page}, page


def test_a_cpu_build_says_so_atop_every_page_and_prints_no_meaningless_figure(cpu, full):
    for page, r in cpu.items():
        assert r["markdown"] and "no GPU time" in r["markdown"][0], page
        text = "\n".join([*r["markdown"], *map(str, r["glued"].values())])
        bad = re.findall(r"(?<![\w.])(?:nan|inf)(?![\w.])|(?<![\d.,])0 TFLOP/s|\d{4,}%", text)
        assert not bad, (page, bad)
    assert cpu["part11"]["glued"]["p11_ceiling_share"] == "(no GPU time in these rows)"
    assert not any(m.startswith("**Built from") for r in full.values() for m in r["markdown"])


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_make_book_refuses_a_missing_rows_folder_and_names_where_another_is_built(tmp_path):
    missing = tmp_path / "no-such-rows"
    done = subprocess.run(["make", "book", f"DATA={missing}"], cwd=REPO, capture_output=True, text=True)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [f"Makefile:{done.stderr.split(':')[1]}: *** DATA={missing}: no such rows "
                                                "folder.  Stop."]
    dry = subprocess.run(["make", "-n", "book", f"DATA={tmp_path}", "STAMP="], cwd=REPO, capture_output=True, text=True)
    assert f"--path-output _build/{tmp_path.name}" in dry.stdout
    assert f"_build/{tmp_path.name}/_build/html/index.html" in dry.stdout
