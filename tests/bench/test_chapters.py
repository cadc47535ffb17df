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


def test_part9_capacity_texts_name_each_comparisons_lease_and_the_decode_graphs_verdict(tmp_path):
    """The eager and every-forward-graphed pairs on one lease, decode graphs on another (by
    boot_id): the texts say which, and decode graphs' unresolved gain says so with its interval."""
    from fusedlib.bench import rows as rowsio

    def pairs(comparison, boot, fused, chunked, n_requests=200, first=0):
        return [{"engine": e, "attention": "triton", "comparison": comparison, "repeat": first + i,
                 "warmup": first + i == 0, "served_rate": v, "n_requests": n_requests, "rate": 40.0,
                 "git_commit": "abc", "boot_id": boot, "timestamp": f"2026-12-01T0{first}:0{i}:00+00:00"}
                for i, (f, c) in enumerate(zip(fused, chunked)) for e, v in (("fused", f), ("chunked", c))]

    def texts():
        return chapters.graphed_capacity_texts({"fused": 2.5, "chunked": 2.5}, data=tmp_path)

    arrivals = tmp_path / "paired/arrivals"
    rowsio.append_rows(arrivals, pairs("part 7: fused vs chunked", "aaaa", [9.0] * 4, [6.0] * 4)
                       + pairs("part 9: fused vs chunked", "aaaa", [22.0] * 4, [17.0] * 4, n_requests=400))
    assert texts()["graphed_lease"] == "one machine lease" and "dg_gain" not in texts()  # no decode-graphs rows
    rowsio.append_rows(arrivals, pairs("decode graphs: fused vs chunked", "bbbb", [9.0, 8.0, 11.0, 10.0], [10.0] * 4))
    t = texts()
    assert (t["dg_lease"], t["dg_pairs"], t["dg_arrivals"]) == ("another machine lease", "3", "200")
    assert t["dg_gain"] == "+0% [-20%, +10%]" and t["dg_resolved"].startswith("not resolved")
    rowsio.append_rows(arrivals, pairs("decode graphs: fused vs chunked", "aaaa", [15.0] * 3, [10.0] * 3, first=4))
    t = texts()
    assert t["dg_lease"] == "partly another machine lease" and t["dg_pairs"] == "6"


def test_part10_grades_its_own_predictions_and_each_capacity_text_reads_its_own_comparison():
    from fusedlib.bench import roofline

    grades, texts = chapters.part10()
    assert {p.key for p in chapters.part10_predictions()} == set(grades)
    cap = roofline.capacity_comparisons(chapters.bd.DATA).set_index("comparison")
    assert texts["capb_p10vp9"] == f"{cap.loc['fused: part 10 vs part 9', 'b_median']:.1f} requests/s"
    assert not any("whole" in key for key in texts)  # the whole-graph chapter's
    # part 10's decode step (6667216): cuBLAS's four nvjet GEMMs a layer, the lm_head and the
    # split-K reduce, 1.22 of its 2.12 ms; no cuBLAS kernel in a configuration without rows
    assert (texts["p10_decode_gemms"], texts["p10_decode_gpu"]) == ("1.22 ms", "2.12 ms")
    assert roofline.cublas_gemm_ms(chapters.bd.DATA, "no such configuration", "decode") == 0
    _, whole = chapters.whole_graphs()
    assert whole["capa_whole_vs_piecewise"] == f"{cap.loc['part 10: whole vs piecewise graphs', 'a_median']:.1f} requests/s"
    for key, text in texts.items():
        assert isinstance(text, str) and text and "nan" not in text.split() and "`" not in text, (key, text)


def test_the_whole_graph_chapter_grades_set_e_but_the_peers_and_cites_part_10():
    grades, texts = chapters.whole_graphs()
    assert set(grades) == {p.key for p in chapters.whole_graph_predictions()} - {"E4"} == {"E1", "E2", "E3", "E5"}
    assert not {p.key for p in chapters.part10_predictions()} & {p.key for p in chapters.whole_graph_predictions()}
    _, part10 = chapters.part10()
    assert texts["p10_mixed_gpu"] == part10["p10_mixed_gpu"] and texts["w_mix_gpu"].endswith(" ms")
    for key, text in texts.items():
        assert isinstance(text, str) and text and "nan" not in text.split() and "`" not in text, (key, text)
