"""Fold a paired campaign's rows into data/paired: `python scripts/merge_paired_rows.py OUT`.

`python -m fusedlib.bench.campaign OUT ...` (or `scripts/device_campaign.sh`, whose OUT is
`.camp`) leaves OUT/paired/<experiment>.{jsonl,csv}; every row there that data/paired lacks
(compared whole) is appended to it, so merging twice, or merging an OUT seeded from
data/paired, adds each row once.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from fusedlib.bench.rows import append_rows, read_rows


def merge(out: Path, data: Path = Path("data/paired")) -> dict[str, int]:
    added = {}
    for src in sorted((out / "paired").glob("*.jsonl*")):  # text or compressed (rows.compress)
        name = src.name.removesuffix(".gz").removesuffix(".jsonl")
        have = {json.dumps(r, sort_keys=True) for r in read_rows(data / name)}
        new = [r for r in read_rows(src.parent / name) if json.dumps(r, sort_keys=True) not in have]
        if new:
            append_rows(data / name, new)
        added[name] = len(new)
    return added


if __name__ == "__main__":
    for stem, n in merge(Path(sys.argv[1])).items():
        print(f"data/paired/{stem}: {n} rows added")
