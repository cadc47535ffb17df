"""Merge a campaign's per-GPU rows into data/: `python scripts/merge_campaign_rows.py ROOT`.

`scripts/h200_campaign.sh` leaves ROOT/gpu<N>/<experiment>/<stem>.jsonl; this appends every
row to data/<experiment>/<stem>.{jsonl,csv}, skipping rows already there (same timestamp,
engine and experiment key), so merging twice changes nothing. The GPU-only test logs that
`scripts/gpu_tests.py` left in ROOT/gpu_tests/ are copied to data/gpu_tests/ (never over
an existing one).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from fusedlib.bench.rows import append_rows, read_rows

IDENTITY = ("experiment", "engine", "gate", "attention", "case", "kernel", "record", "step", "rid",
            "stat", "repeat", "rate", "n_requests", "seed", "pool_gib", "workload", "batch_size",
            "long_share", "timestamp")


def _key(row: dict) -> tuple:
    return tuple(json.dumps(row.get(k)) for k in IDENTITY)


def merge(root: Path, data: Path = Path("data")) -> dict[str, int]:
    added: dict[str, int] = {}
    for log in sorted(root.glob("gpu_tests/*.log")):
        dest = data / "gpu_tests" / log.name
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(log.read_text())
            added[str(dest)] = 1
    for src in sorted(root.glob("gpu*/*/*.jsonl")):
        stem = data / src.parent.name / src.stem
        have = {_key(r) for r in read_rows(stem)}
        rows = read_rows(src.with_suffix(""))
        new = [r for r in rows if _key(r) not in have]
        if new:
            stem.parent.mkdir(parents=True, exist_ok=True)
            append_rows(str(stem), new)
        added[str(stem)] = added.get(str(stem), 0) + len(new)
    return added


if __name__ == "__main__":
    for stem, n in merge(Path(sys.argv[1])).items():
        print(f"copied -> {stem}" if stem.endswith(".log") else f"{n:6d} new rows -> {stem}.jsonl")
