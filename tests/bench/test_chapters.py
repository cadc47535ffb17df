"""fusedlib.bench.chapters: each chapter's grades and glued texts, from the committed rows."""
from __future__ import annotations

import pytest

from fusedlib.bench import chapters, grading, predictions


@pytest.fixture(scope="module")
def rows():
    return grading.load_rows()


@pytest.mark.parametrize("part", [chapters.part7, chapters.part8, chapters.part9])
def test_every_chapter_grades_only_its_own_predictions_and_glues_clean_text(rows, part):
    grades, texts = part(rows)
    chapter = {chapters.part7: 7, chapters.part8: 8, chapters.part9: 9}[part]
    assert {p.key for p in predictions.for_chapter(chapter)} == set(grades)
    for key, text in texts.items():
        assert isinstance(text, str) and text and "nan" not in text.split() and "`" not in text, (key, text)


def test_cheaper_says_which_way():
    assert chapters.cheaper(0.314) == "31.4% cheaper" and chapters.cheaper(-0.192) == "19.2% dearer"


def test_the_decomposition_adds_up_to_the_step(rows):
    terms, step = chapters.decomposition(rows)
    assert sum(terms.values()) == pytest.approx(step) and min(terms.values()) > 0


def test_appendix_pages_open_with_the_set_d_predictions_they_grade(tmp_path):
    """On the committed rows the closed and seeds pages grade D5 and D7; without the campaign's
    rows each prediction points at the open-predictions appendix instead."""
    from fusedlib.bench import chapters

    closed = chapters.page_predictions("closed")
    assert "**D5**" in closed and "*Graded " in closed
    assert "**D7**" in chapters.page_predictions("sensitivity")
    empty = chapters.page_predictions("closed", tmp_path)
    assert "*Open*" in empty and "*Graded" not in empty
