"""Run book pages' code cells on a rows folder, as the book build's kernels run them, and
report what each page displayed: `python -m tests.book_pages ROWS OUT PAGE...` (PAGE as in
_toc.yml, e.g. book/closed) writes one JSON object to the file OUT: page -> {images, tables,
markdown (each Markdown output's text), glued (the names pasted with glue), stderr, error}.

One IPython shell with matplotlib's inline backend runs every page, each in a fresh
namespace with book/ as its working directory (as the build runs them): one interpreter
start instead of one kernel per page. `FUSEDLIB_DATA` is set to ROWS before fusedlib.bench
is imported, which is where the pages read it.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The rule under a Markdown pipe table's header, as DataFrame.to_markdown writes it.
TABLE_RULE = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$", re.M)


def run_pages(pages: list[str]) -> dict[str, dict]:
    import jupytext
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    class Shell(InteractiveShell):
        def enable_gui(self, gui=None):  # the inline backend opens no window
            pass

    shell = Shell.instance(colors="nocolor")  # plain tracebacks in the report
    shell.enable_matplotlib("inline")
    os.chdir(REPO / "book")
    report = {}
    for page in pages:
        shell.reset(new_session=False)
        got = {"images": 0, "tables": 0, "markdown": [], "glued": [], "stderr": "", "error": None}
        for cell in jupytext.read(REPO / f"{page}.md").cells:
            if cell.cell_type != "code":
                continue
            with capture_output() as captured:
                result = shell.run_cell(cell.source, store_history=False)
            got["stderr"] += captured.stderr
            for output in captured.outputs:
                got["images"] += "image/png" in output.data
                text = output.data.get("text/markdown", "")
                got["markdown"].append(text)
                got["tables"] += len(TABLE_RULE.findall(text))
                if "scrapbook" in output.metadata:  # myst_nb.glue
                    got["glued"].append(output.metadata["scrapbook"]["name"])
            if not result.success:  # the build stops a page at its first failing cell too
                got["error"] = f"cell {cell.source[:300]!r} failed:\n{captured.stdout[-4000:]}"
                break
        report[page] = got
    return report


if __name__ == "__main__":
    os.environ["FUSEDLIB_DATA"] = str(Path(sys.argv[1]).resolve())
    Path(sys.argv[2]).write_text(json.dumps(run_pages(sys.argv[3:])))
