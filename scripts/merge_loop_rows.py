"""Fold the loop rounds of `scripts/device_loop.sh` into data/roofline/loop:
`python scripts/merge_loop_rows.py OUT [SET]`, SET another result set of the same layout (a
later lease's rounds, kept apart from the ones a prediction set was graded on).

The script leaves OUT/loop/<round>/roofline/loop.jsonl, one process per round, its configurations
in the order that round ran them. Every row gains its `round` and `order` (the round's
configurations, in order) and is appended to data/roofline/loop unless it is there already, so
merging twice adds each row once.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from fusedlib.bench.rows import append_rows, read_rows


def merge(out: Path, data: Path = Path("data/roofline"), into: str = "loop") -> int:
    have = {json.dumps(r, sort_keys=True) for r in read_rows(data / into)}
    new = []
    for run in sorted((out / "loop").glob("*/roofline/loop.jsonl"), key=lambda p: int(p.parent.parent.name)):
        rows = read_rows(run.with_suffix(""))
        order = ",".join(dict.fromkeys(r["config"] for r in rows))
        new += [row for r in rows if json.dumps(row := {**r, "round": int(run.parent.parent.name), "order": order},
                                                sort_keys=True) not in have]
    if new:
        append_rows(data / into, new)
    return len(new)


if __name__ == "__main__":
    into = sys.argv[2] if len(sys.argv) > 2 else "loop"
    print(f"{merge(Path(sys.argv[1]), into=into)} rows added to data/roofline/{into}")
