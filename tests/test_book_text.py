"""The book's text as a reader gets it: word caps, no process words or commit hashes, every
chapter in the series' shape, every glued value defined once and every reference resolving.

Word counts come from the built HTML when a build newer than every page and the analysis
exists (`_build/html/book/*.html`, counted as the project's before-stop check counts them: the
text inside <main>, tags removed, whitespace tokens). Otherwise the pages' code cells run in one
IPython shell (tests/book_pages.py) on the committed rows, or on synthetic rows when data/ holds
none, and the prose with its glued values and outputs is counted the same way. That source count
tracks the HTML's within about 3%, running low, so it is held to the caps with a 3% margin.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from fusedlib.bench import figures as F, predictions as R
from fusedlib.bench.figures.data import EXPERIMENTS, REPO
from tests import book_pages as B
from tests.bench import synthetic_rows

CHAPTERS = ("part07", "part08", "part09", "part10", "part11", "part12")
SECTIONS = ("Question", "Hardware ballpark", "Predictions", "Method", "Results", "What it means", "Caveats",
            "Reproducing")
CAPS = {"intro": 900, "predictions": 6000} | {c: 1800 for c in CHAPTERS}
TOTAL = 18000
SOURCE_MARGIN = 1.03
# The project's own check (its before-stop hook) looks for these in the built pages.
PROCESS = {"session": r"\bsessions?\b", "lease": r"\bleases?\b", "campaign N": r"\bcampaign \d",
           "set X": r"\bset [A-Z]{1,2}\d*\b", "sitting": r"\bsittings?\b", "not measured": r"not measured",
           "Traceback": r"Traceback", "nan cell": r"(?<![\w.])nan(?![\w.])",
           "stretches": r"stretches of runs", "budget": r"the budget allowed", "rows here": r"with rows here",
           "graded live": r"graded live", "census configuration": r"(?i)census configuration \d",
           "a tag": r"series-through-part10", "target card": r"target card"}
HASH = r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"
HTML = REPO / "_build" / "html" / "book"


def _html_text(page: str) -> str:
    raw = (HTML / f"{page}.html").read_text(errors="ignore")
    i = raw.find("<main")
    raw = raw[i:] if i >= 0 else raw
    return re.sub(r"<script.*?</script>|<style.*?</style>|<[^>]+>", " ", raw, flags=re.S)


def _fresh_html(pages: list[str]) -> bool:
    if not all((HTML / f"{p}.html").exists() for p in pages):
        return False
    sources = [B.BOOK / f"{p}.md" for p in pages] + list((REPO / "fusedlib" / "bench").rglob("*.py"))
    return min((HTML / f"{p}.html").stat().st_mtime for p in pages) > max(s.stat().st_mtime for s in sources)


@pytest.fixture(scope="module")
def pages() -> list[str]:
    return B.toc_pages()


@pytest.fixture(scope="module")
def reader(pages, tmp_path_factory) -> tuple[str, dict[str, str], dict[str, int]]:
    """(how counted, page -> text a reader sees, page -> word count)."""
    if _fresh_html(pages):
        texts = {p: _html_text(p) for p in pages}
        return "built HTML", texts, {p: len(t.split()) for p, t in texts.items()}
    data = REPO / "data"
    rows = data if all((data / f"{n}.jsonl").exists() for n in EXPERIMENTS) else \
        synthetic_rows.write(tmp_path_factory.mktemp("rows"))
    texts = B.rendered(rows)
    counts = {p: round((B.words(t) + B.chrome(p, pages)) * SOURCE_MARGIN) for p, t in texts.items()}
    return f"page source on {'data/' if rows == data else 'synthetic rows'}", texts, counts


def test_the_toc_builds_exactly_the_pages_in_book(pages):
    assert sorted(pages) == sorted(p.stem for p in B.BOOK.glob("*.md"))
    assert pages[0] == "intro" and set(CHAPTERS) <= set(pages)


@pytest.mark.slow(9)
def test_word_caps_per_page_and_in_total(reader):
    how, _, counts = reader
    over = {p: (n, CAPS[p]) for p, n in counts.items() if p in CAPS and n > CAPS[p]}
    assert not over, f"pages over their caps, counted on the {how}: {over}"
    assert sum(counts.values()) <= TOTAL, f"{sum(counts.values())} words in all, counted on the {how}: {counts}"


def test_no_process_words_and_hashes_only_on_provenance(reader):
    how, texts, _ = reader
    found = {}
    for page, text in texts.items():
        hits = [k for k, pat in PROCESS.items() if re.search(pat, text)]
        if page != "provenance" and re.search(HASH, text):
            hits.append("commit hash: " + re.search(HASH, text).group(0))
        if hits:
            found[page] = hits
    assert not found, f"on the {how}: {found}"


def test_prediction_codes_appear_only_in_the_appendix(reader):
    _, texts, _ = reader
    # "L2" is both a prediction's id and the GPU's level-2 cache: the cache is no code.
    ids = [e["id"] for e in R.load() if e["id"] != "L2"]
    for page, text in texts.items():
        if page == "predictions":
            continue
        shown = [i for i in ids if re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", text)]
        assert not shown, f"{page} shows prediction codes {shown}"


def test_every_chapter_has_the_series_sections_in_order():
    for page in CHAPTERS:
        heads = re.findall(r"^## (.+)$", B.prose(page), re.M)
        assert tuple(heads) == SECTIONS, f"{page}: {heads}"
        repro = B.prose(page).split("## Reproducing", 1)[1]
        assert "make run-all EXPERIMENTS=" in repro and "notebooks/" in repro, page


def test_every_glue_reference_resolves_to_one_definition(pages):
    owners = F.owners()
    for page in pages:
        calls = re.findall(r"glue\.page\((\w+)\)", B.code(page))
        assert calls in ([], [page]), f"{page} glues {calls}: a page glues its own module's values, once"
        assert "glue(" not in B.code(page), f"{page} glues outside glue.page"
        for doc, name in B.GLUE.findall(B.prose(page)):
            assert name in owners, f"{page}: no value named {name}"
            owner = owners[name]
            assert owner == (doc or page), f"{page}: {name} is glued by {owner}.md, referenced as {doc or page}"
    glued_pages = {p for p in pages if f"glue.page({p})" in B.code(p)}
    assert set(owners.values()) <= glued_pages, "a page module has values its page does not glue"


def test_prose_types_no_measured_figures():
    """Numbers with units or percentages in prose are measurements: they must be glued. The one
    exception is the provenance page's transcription of the earlier record, which no rows here
    can recompute."""
    typed = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?(?:%(?! interval)|ms\b|µs\b|GB\b|TB/s|TFLOP|requests/s|req/s|×)")
    hits = {}
    for page in B.toc_pages():
        text = re.sub(r"^```.*?^```", "", B.prose(page), flags=re.S | re.M)
        if page == "provenance":
            text = text.split("## The earlier record")[0]
        if typed.findall(text):
            hits[page] = typed.findall(text)
    assert not hits, f"figures typed by hand: {hits}"


def test_every_deciding_prediction_is_in_the_record():
    ids = {e["id"] for e in R.load()}
    missing = {c: [i for i in v if i not in ids] for c, v in R.DECIDING.items() if set(v) - ids}
    assert not missing, f"chapters quote predictions the record lacks: {missing}"
