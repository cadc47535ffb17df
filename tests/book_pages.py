"""The book's pages as a reader gets them, without Sphinx: `python -m tests.book_pages ROWS`
prints each page's word count.

`run_pages` executes each page's code cells in one IPython shell (book/ as the working
directory, FUSEDLIB_DATA set to the rows folder, as the build runs them) and records what each
displayed: the Markdown outputs (tables, notes), the glued names and texts, images, errors.
`page_text` puts a page's prose together with those outputs, each `{glue:text}` role replaced
by its glued text and each `{doc}` role by the linked page's title: the words a reader sees,
counted the way the built HTML counts them to within a few percent (headings' anchors and the
page chrome aside).
"""
from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BOOK = REPO / "book"
CELL = re.compile(r"^```\{code-cell\}.*?^```[ \t]*$", re.S | re.M)
FRONT = re.compile(r"\A---\n.*?\n---\n", re.S)
GLUE = re.compile(r"\{glue(?::text)?\}`(?:([\w./-]+)\.md::)?(\w+)(?::[^`]*)?`")
DOC = re.compile(r"\{doc\}`([^`<]+?)(?:\s*<([^`>]+)>)?`")
DOWNLOAD = re.compile(r"\{download\}`([^`<]+?)\s*(?:<[^`]*>)?`")


def toc_pages() -> list[str]:
    """Page stems in the order _toc.yml lists them (root first)."""
    import yaml

    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        pages += [c["file"] for c in part.get("chapters", [])]
    return [p.split("/")[-1] for p in pages]


def prose(stem: str) -> str:
    """A page's Markdown without its front matter and code cells."""
    text = (BOOK / f"{stem}.md").read_text()
    return CELL.sub("", FRONT.sub("", text))


def code(stem: str) -> str:
    return "\n".join(CELL.findall((BOOK / f"{stem}.md").read_text()))


def title(stem: str) -> str:
    m = re.search(r"^# (.+)$", prose(stem), re.M)
    return m.group(1) if m else stem


def run_pages(pages: list[str], rows: Path) -> dict[str, dict]:
    import jupytext
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    before = os.environ.get("FUSEDLIB_DATA")
    os.environ["FUSEDLIB_DATA"] = str(rows)
    shell = InteractiveShell.instance(colors="nocolor")
    here = os.getcwd()
    os.chdir(BOOK)
    report = {}
    try:
        for page in pages:
            shell.reset(new_session=False)
            got = {"markdown": [], "glued": {}, "images": 0, "error": None}
            for cell in jupytext.read(BOOK / f"{page}.md").cells:
                if cell.cell_type != "code":
                    continue
                with capture_output() as captured:
                    result = shell.run_cell(cell.source, store_history=False)
                for out in captured.outputs:
                    got["images"] += "image/png" in out.data
                    if "scrapbook" in out.metadata:  # myst_nb.glue: the data under a prefixed mime type
                        plain = next((v for k, v in out.data.items() if k.endswith("text/plain")), "")
                        got["glued"][out.metadata["scrapbook"]["name"]] = ast.literal_eval(plain) if plain else ""
                    elif "text/markdown" in out.data:
                        got["markdown"].append(out.data["text/markdown"])
                if not result.success:
                    got["error"] = f"{cell.source[:200]!r}: {captured.stdout[-2000:]}"
                    break
            report[page] = got
    finally:
        os.chdir(here)
        if before is None:
            os.environ.pop("FUSEDLIB_DATA", None)
        else:
            os.environ["FUSEDLIB_DATA"] = before
    return report


def page_text(stem: str, glued: dict[str, str], markdown: list[str]) -> str:
    """What a reader reads on the page: prose with glue and doc roles resolved, then the outputs."""
    text = GLUE.sub(lambda m: f" {glued.get(m.group(2), '?')} ", prose(stem))  # a span: apart from its punctuation
    text = DOC.sub(lambda m: m.group(1) if m.group(2) else title(m.group(1)), text)
    text = DOWNLOAD.sub(lambda m: m.group(1), text)
    return text + "\n" + "\n".join(markdown)


def words(text: str) -> int:
    """Whitespace-separated tokens, as the built HTML's count takes them, less the Markdown-only
    ones (table pipes and rules, heading marks) that the HTML does not show."""
    return len([w for w in text.split() if not re.fullmatch(r"[|#]+|\|?:?-{3,}:?\|?", w)])


def chrome(stem: str, pages: list[str]) -> int:
    """Words the theme adds inside the page's <main>: the source and PDF buttons, the section list
    twice (top and side), each heading's anchor mark, the previous and next pages' titles."""
    heads = re.findall(r"^##+ (.+)$", prose(stem), re.M)
    i = pages.index(stem) if stem in pages else 0
    near = [pages[j] for j in (i - 1, i + 1) if 0 <= j < len(pages)]
    return 2 + 2 * (1 + sum(len(h.split()) for h in heads)) + len(heads) + 1 + sum(
        1 + len(title(p).split()) for p in near)


def rendered(rows: Path) -> dict[str, str]:
    pages = toc_pages()
    report = run_pages(pages, rows)
    glued = {k: v for r in report.values() for k, v in r["glued"].items()}
    errors = {p: r["error"] for p, r in report.items() if r["error"]}
    if errors:
        raise RuntimeError(f"pages failed: {errors}")
    return {p: page_text(p, glued, report[p]["markdown"]) for p in pages}


if __name__ == "__main__":
    texts = rendered(Path(sys.argv[1]).resolve())
    pages = toc_pages()
    counts = {p: words(t) + chrome(p, pages) for p, t in texts.items()}
    for page, n in counts.items():
        print(f"{page:12s} {n:6d}")
    print(f"{'total':12s} {sum(counts.values()):6d}")
