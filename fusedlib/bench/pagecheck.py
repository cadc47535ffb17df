"""Defects in the built book, found in its HTML the way a reader would meet them.

Two checks:
- `text_defects`: the rendered text of a page's article (code listings excluded) must hold no
  `nan`/`None` value, no placeholder ("not measured", "rows yet"), no literal backtick or
  unparsed MyST role (`{glue:text}`), no traceback or error output;
- `overflows`: in a real browser (headless Chromium), no table or figure is wider than the
  content column. A table wider than the column gets a scroll bar, so the reader sees it
  clipped; an image wider than the column runs into the margin.

`python -m fusedlib.bench.pagecheck _build/html [--screenshots DIR]` runs both over every page
(`make check-pages`). Without a Chromium on the machine, the browser check reports that it
could not run and exits non-zero: it is never counted as passed.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bs4 import BeautifulSoup

# Whole-value placeholders: a table cell or glued value that is exactly one of these.
EMPTY_VALUES = {"nan", "NaN", "None", "null", "n/a", "NA", "<NA>", "NaT"}
# Words that mean the page shows an unfinished measurement.
PLACEHOLDERS = ("not measured", "rows yet", "No rows")
ERRORS = ("Traceback (most recent call last)", "Error:", "output traceback", "output stderr")
UNPARSED = re.compile(r"\{(glue|doc|ref|numref|eq)(:[a-z]+)?\}|`")
# A missing value printed into prose or a table; "None of the runs" and "filled with NaN" are prose.
NAN_WORD = re.compile(r"(?<![\w.])(nan|None)(?![\w])(?! of\b)")


def article_text(html: str) -> tuple[str, list[str]]:
    """(the article's rendered text without code listings, its separate text pieces: table
    cells, glued values and list items, where a lone placeholder value shows)."""
    soup = BeautifulSoup(html, "html.parser")
    article = soup.find("article") or soup.body or soup
    classes = lambda el: " ".join(el.get("class") or [])  # noqa: E731
    for el in article.find_all(["pre", "script", "style"]):
        el.decompose()
    for el in article.find_all(class_=re.compile(r"\bcell_input\b")):
        el.decompose()
    # Output errors keep their class name as the evidence.
    errors = [classes(el) for el in article.find_all(class_=re.compile(r"output (traceback|stderr)"))]
    pieces = [el.get_text(" ", strip=True) for el in article.find_all(["td", "th", "li"])]
    pieces += [el.get_text(" ", strip=True) for el in article.find_all("span", class_="pasted-text")]
    return article.get_text(" ", strip=False) + " ".join(errors), pieces


# Process words a chapter's prose must not use: the chapters speak of the engine and the machine;
# campaigns, sessions and code versions belong in the "Method and provenance" appendix. The
# predictions, quoted as written, are records and may name them.
PROCESS = re.compile(r"\b(campaigns?|sessions?|commits?|git)\b", re.I)


def chapter_prose(html: str) -> str:
    """A chapter's rendered prose: its article text without code listings and without the
    predictions quoted as written (the admonition with class `predictions`)."""
    soup = BeautifulSoup(html, "html.parser")
    article = soup.find("article") or soup.body or soup
    for el in article.find_all(["pre", "script", "style"]):
        el.decompose()
    for el in article.find_all(class_=re.compile(r"\b(cell_input|predictions)\b")):
        el.decompose()
    return article.get_text(" ", strip=True)


def words(text: str) -> int:
    """Rendered words: runs of letters or digits (a number such as 16.4 counts once)."""
    return len(re.findall(r"[\w][\w.,%×+\-–/]*", text))


def chapter_words(html: str) -> tuple[int, int]:
    """(every rendered word of the article, the words of its own prose: `chapter_prose`)."""
    return words(article_text(html)[0]), words(chapter_prose(html))


def process_words(html: str) -> list[str]:
    """Process language in a chapter's own prose, each with a little context."""
    prose = chapter_prose(html)
    return [prose[max(m.start() - 40, 0):m.end() + 40] for m in PROCESS.finditer(prose)]


def text_defects(html: str) -> list[str]:
    """Every defect of a rendered page's text, each with a little context."""
    text, pieces = article_text(html)
    found = []

    def context(m):
        return " ".join(text[max(0, m.start() - 50):m.end() + 30].split())

    for piece in pieces:
        if piece in EMPTY_VALUES:
            found.append(f"empty value {piece!r} in a table cell, list item or glued value")
    for m in NAN_WORD.finditer(text):
        found.append(f"{m.group(1)!r}: ...{context(m)}...")
    for word in PLACEHOLDERS + ERRORS:
        for m in re.finditer(re.escape(word), text):
            found.append(f"{word!r}: ...{context(m)}...")
    for m in UNPARSED.finditer(text):
        found.append(f"unparsed markup {m.group(0)!r}: ...{context(m)}...")
    return found


# Run in the page after layout: every table, figure and output wider than the article column.
OVERFLOW_JS = r"""
window.addEventListener('load', () => {
  const article = document.querySelector('article') || document.body;
  const right = article.getBoundingClientRect().right;
  const out = [];
  const name = el => el.tagName.toLowerCase() + (el.alt ? ' ' + el.alt.split('/').pop() : '') +
      ' "' + (el.innerText || '').trim().slice(0, 40).replace(/\s+/g, ' ') + '"';
  article.querySelectorAll('table').forEach(t => {
    const box = t.parentElement;
    if (t.scrollWidth > box.clientWidth + 1 || t.getBoundingClientRect().right > right + 1)
      out.push({what: name(t), width: t.scrollWidth, room: box.clientWidth});
  });
  article.querySelectorAll('img, figure, div.cell_output').forEach(el => {
    const r = el.getBoundingClientRect();
    if (r.right > right + 1 || el.scrollWidth > el.clientWidth + 1)
      out.push({what: name(el), width: Math.max(r.width, el.scrollWidth), room: article.clientWidth});
  });
  document.body.setAttribute('data-overflow', JSON.stringify(out));
});
"""


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def overflows(page: Path, browser: str, screenshot: Path | None = None, width: int = 1280) -> list[dict]:
    """Tables and figures of one built page wider than its content column, measured by
    `browser` at a `width`-pixel window; optionally a screenshot of the page as well. The page
    is copied beside itself with the measuring script added, so its styles and images load."""
    html = page.read_text()
    probe = page.with_name(f".pagecheck-{page.name}")
    probe.write_text(html.replace("</body>", f"<script>{OVERFLOW_JS}</script></body>", 1))
    try:
        with tempfile.TemporaryDirectory() as profile:
            base = [browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                    f"--window-size={width},1400", "--virtual-time-budget=3000"]
            dom = subprocess.run(base + ["--dump-dom", probe.as_uri()], capture_output=True, text=True,
                                 timeout=120).stdout
            if screenshot is not None:
                subprocess.run(base + [f"--screenshot={screenshot}", page.as_uri()], capture_output=True,
                               timeout=120)
    finally:
        probe.unlink()
    m = re.search(r'data-overflow="([^"]*)"', dom)
    if not m:
        raise RuntimeError(f"{page}: the browser returned no measurement (is {browser} working?)")
    return json.loads(BeautifulSoup(f'<p x="{m.group(1)}"></p>', "html.parser").p["x"])


def pages(html_dir: Path) -> list[Path]:
    """The book's content pages (search, index redirects and generated indexes left out)."""
    skip = {"search.html", "genindex.html"}
    return sorted(p for p in Path(html_dir).rglob("*.html")
                  if p.name not in skip and not p.name.startswith(".") and "_static" not in p.parts
                  and "<article" in p.read_text())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("html_dir", type=Path, help="the built book, e.g. _build/html")
    ap.add_argument("--screenshots", type=Path, help="write one PNG per page here")
    args = ap.parse_args(argv)
    args.html_dir = args.html_dir.resolve()  # chromium opens pages by file:// URI, which must be absolute
    if not (args.html_dir / "index.html").exists():
        print(f"{args.html_dir}: no built book here (run `make book` first)", file=sys.stderr)
        return 2
    browser = chromium()
    if args.screenshots:
        args.screenshots.mkdir(parents=True, exist_ok=True)
    bad = 0
    for page in pages(args.html_dir):
        rel = page.relative_to(args.html_dir)
        problems = text_defects(page.read_text())
        if browser:
            shot = args.screenshots / (str(rel).replace("/", "_")[:-5] + ".png") if args.screenshots else None
            problems += [f"{o['what']} is {o['width']:.0f} px wide in a {o['room']:.0f} px column"
                         for o in overflows(page, browser, shot)]
        for p in problems:
            print(f"{rel}: {p}")
        bad += len(problems)
    if not browser:
        print("no chromium on this machine: the overflow check did not run "
              "(apt-get install -y --no-install-recommends chromium)", file=sys.stderr)
        return 3
    print(f"{bad} defect(s) in {len(pages(args.html_dir))} pages")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
