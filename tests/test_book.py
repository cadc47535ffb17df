"""The book builds with warnings as errors, and every page shows its figures and tables.

One build (Sphinx, into a temporary folder), and the notebooks' rows through the pages:
1. the build from the committed `data/` (what `make book` publishes): no page shows a
   defect; a page whose experiment has rows must show its figures and tables; one whose
   folder is still empty must say so;
2. the path `make run-all` takes, notebooks -> rows -> pages: the experiment notebooks are
   executed with papermill (smoke profile, small sizes) into a temporary `out_dir`, and then
   every page of the book runs its code cells on those rows (tests/book_pages.py: the cells
   the build executes, in one IPython shell rather than a kernel per page): every page must
   run clean, paste every value its prose refers to, and every experiment page must display
   all its figures and tables. So notebooks -> rows -> pages is checked end to end whatever
   `data/` holds today. What the build adds after the cells have run (MyST to HTML, glue,
   figures as images) is checked by build 1; a second build from these rows would only
   repeat it, at the cost of a kernel and a Sphinx pass per page.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import papermill
import pytest

REPO = Path(__file__).resolve().parent.parent
from fusedlib.bench import analysis as bookdata, pagecheck
from fusedlib.bench.rows import read_rows
from fusedlib.bench.spec import RESULT_SETS

JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"

# page -> (data folder it reads, figures, tables) when its rows are there
PAGES = {
    "book/kernels": ("kernels", 1, 2),
    "book/gates": ("gates", 0, 1),
    "book/step_trace": ("step_trace", 3, 1),
    "book/closed": ("closed", 1, 1),
    # the earlier sweep and the small pool; the paired sweep's two figures read data/paired/,
    # which the notebooks do not write
    "book/arrivals": ("arrivals", 2, 2),
    "book/sensitivity": ("sensitivity", 1, 1),
    "book/peer": ("peer", 1, 1),
    "book/beyond": ("beyond", 2, 2),
}
# One chapter per part of the series, in order; each within its word budget.
CHAPTERS = ["book/writeup", "book/splitkv", "book/graphs", "book/roofline", "book/whole"]
CHAPTER_WORDS, ALL_CHAPTER_WORDS = 1500, 6000
MAX_CELL_LINES = 40

# Small sizes: the notebooks' code and rows are what is checked, not their numbers.
SMOKE_PARAMETERS = {
    "01_kernels": {"splitkv_sweep": False},
    "04_closed": {"runs": [["mixed", 8], ["mixed", 16], ["p256", 8]], "warmups": 0, "repeats": 2},
    "05_arrivals": {"rates": [100, 400], "n_requests": 16, "small_pool_rates": [100], "capacity_runs": 2},
    "06_sensitivity": {"seeds": [0, 1], "long_shares": [0.0, 0.4], "n_requests": 16},
    "07_peer": {"batch_size": 16, "rates": [400.0], "n_requests": 16},
    # Torch attention: the split-KV step trace takes minutes on the Triton interpreter; the
    # engine with split-KV attention is tested on a small batch in tests/test_model.py.
    "08_beyond": {"engines": ["fused"], "variants": [["torch", False, False]],
                  "profile_variants": [["torch", False, False]], "profiled_steps": 10},
}


def build(out: Path, data: Path | None = None) -> Path:
    env = {**os.environ}
    if data is not None:
        env["FUSEDLIB_DATA"] = str(data)
    proc = subprocess.run([str(JUPYTER_BOOK), "build", str(REPO), "--path-output", str(out), "--all",
                           "-W", "-n", "--keep-going"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]
    return out / "_build" / "html"


def article(html: Path, page: str) -> str:
    text = (html / f"{page}.html").read_text()
    m = re.search(r"<article.*?</article>", text, re.S)
    assert m, f"{page}: no article"
    return m.group(0)


def check_clean(body: str, page: str) -> None:
    for bad in ("Traceback", "output stderr", "output traceback", "Error:"):
        assert bad not in body, f"{page}: {bad!r} in the rendered page"


def has_rows(folder: Path) -> bool:
    return any(len(p.read_text().strip().splitlines()) > (1 if p.suffix == ".csv" else 0)
               for p in list(folder.glob("*.jsonl")) + list(folder.glob("*.csv")))


def missing_parts(folder: Path) -> int:
    """Parts of a page (one figure and one table each) whose rows a folder with rows can still
    lack: the arrivals page's small-pool control needs rows with pool_gib set."""
    if folder.name != "arrivals":
        return 0
    import pandas as pd

    frames = [pd.read_csv(p) for p in folder.glob("*.csv")]
    rows = pd.concat(frames) if frames else pd.DataFrame()
    return 0 if "pool_gib" in rows and rows["pool_gib"].notna().any() else 1


def code_cells(page: Path) -> list[tuple[int, int]]:
    """(first line, number of lines) of each code cell of a MyST page."""
    cells, start = [], None
    for i, line in enumerate(page.read_text().splitlines(), 1):
        if start is None and line.startswith("```{code-cell}"):
            start = i
        elif start is not None and line.startswith("```") and not line.startswith("```{"):
            body = [x for x in page.read_text().splitlines()[start:i - 1] if not x.startswith(":tags:")]
            cells.append((start, len(body)))
            start = None
    return cells


def test_no_page_cell_is_longer_than_the_limit():
    """Pages call library code (fusedlib.bench) and plot; a long cell is analysis that belongs
    in the library, where it is tested."""
    long = {f"{p.name}:{line}": n for p in sorted((REPO / "book").glob("*.md")) for line, n in code_cells(p)
            if n > MAX_CELL_LINES}
    assert not long, long


def test_code_cells_are_found(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# t\n```{code-cell} ipython3\n:tags: [remove-cell]\nx = 1\ny = '```{note}'\n```\ntext\n")
    assert code_cells(page) == [(2, 2)]


def test_notebooks_have_papermill_parameters():
    for path in sorted((REPO / "notebooks").glob("*.py")):
        nb = jupytext.read(path)
        params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(params) == 1, path.name
        for name in ("backend", "gpu", "profile", "out_dir"):
            assert re.search(rf"^{name} = ", params[0].source, re.M), (path.name, name)
        assert nb.metadata["kernelspec"]["name"] == "python3"


@pytest.fixture(scope="session")
def smoke_rows(tmp_path_factory) -> Path:
    """Execute every experiment notebook (papermill, smoke profile) into a fresh out_dir, once
    per test run: under xdist the two tests that read the rows may run on different workers
    (pytest 9 ignores the xdist_group mark: xdist 3.8 sets item._nodeid, which pytest 9 no
    longer reads), so the workers share one execution in the run's base temporary folder, the
    second waiting on a lock until the first has written the rows."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the folder all of this run's workers share
    tmp, out_dir = root / "run_all", root / "run_all" / "rows"
    with open(root / "run_all.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (tmp / "done").exists():
            shutil.rmtree(tmp, ignore_errors=True)  # what a failed attempt left
            tmp.mkdir()
            _execute_notebooks(tmp, out_dir)
            (tmp / "done").touch()
    return out_dir


def _execute_notebooks(tmp: Path, out_dir: Path) -> None:
    for path in sorted((REPO / "notebooks").glob("*.py")):
        source = tmp / f"{path.stem}.ipynb"
        jupytext.write(jupytext.read(path), source)
        parameters = {"backend": "local", "profile": "smoke", "out_dir": str(out_dir),
                      **SMOKE_PARAMETERS.get(path.stem, {})}
        papermill.execute_notebook(str(source), str(tmp / f"{path.stem}.out.ipynb"), parameters=parameters,
                                   kernel_name="python3", cwd=str(REPO / "notebooks"), progress_bar=False)


@pytest.mark.slow(100)
@pytest.mark.xdist_group("notebooks")
def test_notebooks_write_rows_for_every_page(smoke_rows):
    for folder, _, _ in PAGES.values():
        assert has_rows(smoke_rows / folder), folder
    # The kernel notebook's rows (the GPU bench's code, here at the tiny shape on the
    # interpreter, so a broken row builder shows up here and not on the GPU): every Triton path
    # agrees with the torch reference, and the layout bench timed each decode kernel.
    gate = read_rows(smoke_rows / RESULT_SETS["kernel_gate"])
    assert gate and all(r["passed"] for r in gate), [r for r in gate if not r["passed"]]
    assert all(r["gpu"] == "cpu" and r["git_commit"] for r in gate)
    layout = read_rows(smoke_rows / RESULT_SETS["layout_bench"])
    assert {r["kernel"] for r in layout} == {"rows", "packed", "splitkv", "balanced"}
    assert all(r["median_ms"] > 0 and r["gpu"] == "cpu" for r in layout)


@pytest.fixture(scope="module")
def smoke_pages(smoke_rows, tmp_path_factory) -> dict[str, dict]:
    """What every page of the book displays when its cells run on the notebooks' rows."""
    toc = re.findall(r"(?:root|file): (book/\w+)", (REPO / "_toc.yml").read_text())
    report = tmp_path_factory.mktemp("pages") / "pages.json"
    proc = subprocess.run([sys.executable, "-m", "tests.book_pages", str(smoke_rows), str(report), *toc],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-6000:]
    shown = json.loads(report.read_text())
    assert list(shown) == toc and len(toc) >= len(PAGES) + len(CHAPTERS)
    return shown


# Third in line: xdist deals the first tests out alternately, two to each worker, so this one
# follows the notebooks on their worker and finds the rows ready (elsewhere it would wait).
@pytest.mark.slow(80)
@pytest.mark.xdist_group("notebooks")
def test_every_page_runs_on_notebook_rows_and_shows_every_figure_and_table(smoke_pages):
    for page, shown in smoke_pages.items():
        assert shown["error"] is None, (page, shown["error"])
        assert not shown["stderr"], (page, shown["stderr"][-3000:])  # the build fails on stderr output
        prose = (REPO / f"{page}.md").read_text()
        missing = set(re.findall(r"\{glue:text\}`([^`]+)`", prose)) - set(shown["glued"])
        assert not missing, (page, missing)
    # the smoke rows hold no triton-attention traces, so the writeup shows no table, but with
    # rows for every experiment its predictions get graded
    assert any("HELD" in text or "MISSED" in text for text in smoke_pages["book/writeup"]["markdown"])
    for page, (_, figures, tables) in PAGES.items():
        shown = smoke_pages[page]
        assert not any(bookdata.NO_ROWS in text for text in shown["markdown"]), page
        assert shown["images"] >= figures, (page, shown["images"])
        assert shown["tables"] >= tables, (page, shown["tables"])


def check_writeup(html: Path) -> None:
    """The writeup renders its prediction grades and tables, its numbers pasted by glue."""
    body = article(html, "book/writeup")
    check_clean(body, "book/writeup")
    assert body.count("<table") >= 1
    assert "pasted-text" in body  # myst-nb glue put computed values into the prose
    assert "HELD" in body or "MISSED" in body, "no prediction verdicts on the writeup"


def check_chapters(html: Path) -> None:
    """Each chapter opens with its graded predictions, keeps to its word budget, and speaks of
    the engine and the machine, not of how the rows were made."""
    counts = {}
    for page in CHAPTERS:
        text = (html / f"{page}.html").read_text()
        total, prose = pagecheck.chapter_words(text)
        counts[page] = total
        assert total <= CHAPTER_WORDS, (page, total, prose)
        assert not pagecheck.process_words(text), (page, pagecheck.process_words(text))
        assert "predictions" in article(html, page).split("<h2", 1)[0], f"{page}: does not open with its predictions"
    assert sum(counts.values()) <= ALL_CHAPTER_WORDS, counts


@pytest.mark.slow(90)
def test_book_from_committed_data(tmp_path):
    html = build(tmp_path)
    assert (html / "index.html").exists()
    text = re.sub(r"<[^>]+>", "", article(html, "book/intro"))
    assert "make book" in text and "make test" in text
    # The intro answers first: a figure and the reference's figures beside ours.
    intro = article(html, "book/intro")
    assert intro.count("<img") >= 1 and intro.count("<table") >= 1 and "A10 (reference)" in intro
    # What a reader would see as a defect, on every page (pagecheck; its browser half is `make check-pages`).
    defects = {p.name: pagecheck.text_defects(p.read_text()) for p in pagecheck.pages(html)}
    assert not any(defects.values()), {k: v for k, v in defects.items() if v}
    check_writeup(html)
    check_chapters(html)
    for page, (folder, figures, tables) in PAGES.items():
        body = article(html, page)
        check_clean(body, page)
        if has_rows(REPO / "data" / folder):
            lacking = missing_parts(REPO / "data" / folder)
            assert body.count("<img") >= figures - lacking, (page, body.count("<img"))
            assert body.count("<table") >= tables - lacking, (page, body.count("<table"))
            if lacking:
                assert bookdata.NO_ROWS in body, page  # the part without rows says so
        else:
            assert bookdata.NO_ROWS in body, page
