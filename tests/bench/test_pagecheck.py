"""The page checker finds what a reader would see as a defect, and nothing in code listings."""
from __future__ import annotations

import pytest

from fusedlib.bench import pagecheck


def page(body: str) -> str:
    return f"<html><body><nav>None</nav><article>{body}</article></body></html>"


CLEAN = page("<p>None of the 5 runs differ; blocks are filled with NaN when freed; 4.21 ms.</p>"
             "<div class='cell_input'><pre>x = None if y else np.nan  # `code`</pre></div>"
             "<table><tr><td>12.0</td><td>—</td></tr></table>")


def test_clean_page_has_no_defects():
    assert pagecheck.text_defects(CLEAN) == []


@pytest.mark.parametrize("body,what", [
    ("<table><tr><td>nan</td></tr></table>", "'nan'"),
    ("<p>the step took <span class='pasted-text'>None</span></p>", "'None'"),
    ("<p>graded not measured</p>", "'not measured'"),
    ("<p>No step-profile rows yet: run it</p>", "'rows yet'"),
    ("<p>see `data/gpu_tests/h200.log`</p>", "unparsed markup '`'"),
    ("<p>took {glue:text}`decode_ms`</p>", "unparsed markup '{glue:text}'"),
    ("<div class='output traceback'>ImportError</div>", "'output traceback'"),
    ("<p>Traceback (most recent call last)</p>", "Traceback"),
])
def test_each_defect_is_found(body, what):
    found = pagecheck.text_defects(page(body))
    assert any(what in f for f in found), found


@pytest.mark.skipif(pagecheck.chromium() is None, reason="the browser half of the check needs chromium")
def test_browser_finds_a_table_wider_than_the_column(tmp_path):
    cells = "".join(f"<td>column{i}_wide_value</td>" for i in range(40))
    (tmp_path / "wide.html").write_text(
        "<html><body><article style='width:400px'><div style='overflow:auto'>"
        f"<table><tr>{cells}</tr></table></div><p>x</p></article></body></html>")
    (tmp_path / "narrow.html").write_text(
        "<html><body><article style='width:400px'><table><tr><td>1</td><td>2</td></tr></table>"
        "</article></body></html>")
    browser = pagecheck.chromium()
    wide = pagecheck.overflows(tmp_path / "wide.html", browser)
    assert len(wide) == 1 and wide[0]["what"].startswith("table") and wide[0]["width"] > 400
    assert pagecheck.overflows(tmp_path / "narrow.html", browser) == []


def test_chapter_words_count_the_prose_apart_from_the_quoted_predictions():
    html = page("<div class='admonition note predictions'><p>A1 was written on a campaign day.</p></div>"
                "<p>The step takes 16.4 ms, 22× the floor.</p><div class='cell_input'><pre>x = 1</pre></div>")
    total, prose = pagecheck.chapter_words(html)
    assert prose == 8 and total == 15
    assert pagecheck.process_words(html) == []  # the quoted prediction may name its campaign


def test_process_words_found_in_chapter_prose():
    assert pagecheck.process_words(page("<p>The third campaign ran it at commit abc.</p>"))
