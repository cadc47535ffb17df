"""Every page runs on synthetic rows and on none: figures and tables where rows exist, "no rows
yet" where they do not, never an error (tests/book_pages.py runs the pages' code cells)."""
from __future__ import annotations

import pytest

from fusedlib.bench import analysis as A
from tests import book_pages as B
from tests.bench import synthetic_rows

CHAPTERS = ("part07", "part08", "part09", "part10", "part11")


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    return B.run_pages(B.toc_pages(), synthetic_rows.write(tmp_path_factory.mktemp("rows")))


@pytest.fixture(scope="module")
def empty(tmp_path_factory):
    return B.run_pages(B.toc_pages(), tmp_path_factory.mktemp("none"))


def test_pages_run_and_show_their_figures_on_rows(full):
    assert not {p: r["error"] for p, r in full.items() if r["error"]}
    for page in ("intro", *CHAPTERS):
        assert full[page]["images"] >= 1, page
        assert not any("No rows yet" in m for m in full[page]["markdown"]), page


def test_pages_run_without_rows_and_say_so(empty):
    assert not {p: r["error"] for p, r in empty.items() if r["error"]}
    for page in CHAPTERS:
        assert empty[page]["images"] == 0, page
        assert any(m.startswith("No rows yet") for m in empty[page]["markdown"]), page
    assert empty["part07"]["glued"]["p07_fusion_gain"] == A.NO_ROWS


def test_each_page_glues_exactly_the_values_registered_to_it(full):
    for page, r in full.items():
        assert set(r["glued"]) == {n for n, p in A.PAGE_OF.items() if p == page}, page
