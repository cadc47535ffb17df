"""Every page runs on synthetic rows and on none: figures and tables where rows exist, "no rows
yet" where they do not, never an error (tests/book_pages.py runs the pages' code cells)."""
from __future__ import annotations

import json

import pytest

from fusedlib.bench import figures as F, stats as S
from tests import book_pages as B
from tests.bench import synthetic_rows

CHAPTERS = ("part07", "part08", "part09", "part10", "part11")


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    return B.run_pages(B.toc_pages(), synthetic_rows.write(tmp_path_factory.mktemp("rows")))


# What a CPU run (the smoke profile) leaves out of its rows: CUDA events' times and the census's
# byte and FLOP counts.
GPU_ONLY = ("gpu_ms", "gpu_ms_min", "gpu_ms_max", "bytes", "flops", "decode_step_gpu_s_p50",
            "mixed_step_gpu_s_p50", "step_gpu_ms_p50")


@pytest.fixture(scope="module")
def cpu(tmp_path_factory):
    """The synthetic rows as `make run-all PROFILE=smoke` writes them on a CPU."""
    folder = synthetic_rows.write(tmp_path_factory.mktemp("cpu"))
    for path in folder.glob("*.jsonl"):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            row.update(device_name="cpu", profile="smoke", **{k: None for k in GPU_ONLY if k in row})
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return B.run_pages(B.toc_pages(), folder)


@pytest.fixture(scope="module")
def empty(tmp_path_factory):
    return B.run_pages(B.toc_pages(), tmp_path_factory.mktemp("none"))


def test_pages_run_and_show_their_figures_on_rows(full):
    assert not {p: r["error"] for p, r in full.items() if r["error"]}
    for page in ("intro", *CHAPTERS):
        assert full[page]["images"] >= 1, page
        assert not any("No rows yet" in m for m in full[page]["markdown"]), page


def test_pages_run_on_a_cpu_runs_rows(cpu):
    assert not {p: r["error"] for p, r in cpu.items() if r["error"]}
    for page in ("intro", *CHAPTERS):
        assert cpu[page]["images"] >= 1, page
    assert cpu["part07"]["glued"]["p07_bottleneck"] == "unknown: these rows carry no GPU time"


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
