"""Fold `scripts/device_scorecard.sh OUT`'s rows into data/roofline: `python scripts/merge_scorecard_rows.py OUT`.

The script leaves OUT/census/<round>/roofline/{census,census_kernels,attention_engine}.jsonl, one
process per round, and OUT/loop/<round>/roofline/loop.jsonl. Every census and attention row gains
its `round` and is appended to data/roofline/scorecard_census, scorecard_census_kernels and
scorecard_attention; the loop rounds go to data/roofline/scorecard_loop (merge_loop_rows.py).
A row already there is not added again, so merging twice adds each row once.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from fusedlib.bench.rows import append_rows, read_rows

sys.path.insert(0, str(Path(__file__).resolve().parent))
import merge_loop_rows  # noqa: E402

SECTIONS = {"census": "scorecard_census", "census_kernels": "scorecard_census_kernels",
            "attention_engine": "scorecard_attention"}


def merge(out: Path, data: Path = Path("data/roofline")) -> int:
    added = 0
    for section, into in SECTIONS.items():
        have = {json.dumps(r, sort_keys=True) for r in read_rows(data / into)}
        new = []
        for run in sorted((out / "census").glob(f"*/roofline/{section}.jsonl"), key=lambda p: int(p.parent.parent.name)):
            new += [row for r in read_rows(run.with_suffix(""))
                    if json.dumps(row := {**r, "round": int(run.parent.parent.name)}, sort_keys=True) not in have]
        if new:
            append_rows(data / into, new)
        added += len(new)
    return added + merge_loop_rows.merge(out, data, "scorecard_loop")


if __name__ == "__main__":
    print(f"{merge(Path(sys.argv[1]))} rows added to data/roofline/scorecard_*")
