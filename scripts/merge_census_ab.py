"""Fold an interleaved census A/B into data/roofline/census_ab: `python scripts/merge_census_ab.py OUT
[SET [FOLDER]]`, SET another result set of the same layout (attention_ab: the split-KV launch shape's
A/Bs), FOLDER the one under OUT holding the arms (default ab; flag_ab for device_census_ab.sh's FLAG_AB).

SET closed_ab folds `scripts/device_closed_ab.sh OUT`'s closed passes (folder closed_ab) into
data/roofline/closed_ab. `scripts/device_census_ab.sh OUT` leaves OUT/ab/<arm><round>/roofline/census.jsonl (and
census_kernels.jsonl, the kernel names), one process per arm and round ("base" the code
before a change, "new" after it). Every row gains its `arm` and `round`, and is appended to
data/roofline/census_ab (census_ab_kernels) unless it is there already, so merging twice adds
each row once. The analysis pairs the arms of one round on one machine
boot (fusedlib.bench.roofline.census_ab).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from fusedlib.bench.rows import append_rows, read_rows


def merge(out: Path, data: Path = Path("data/roofline"), into: str = "census_ab", folder: str = "ab") -> int:
    """Rows added to `into` (the kernel-name rows go to `into`_kernels alike; into "closed_ab",
    scripts/device_closed_ab.sh's closed passes, has no kernel rows)."""
    added = 0
    sections = ((("closed", data / into),) if into == "closed_ab" else
                (("census", data / into), ("census_kernels", data / f"{into}_kernels")))
    for section, stem in sections:
        have = {json.dumps(r, sort_keys=True) for r in read_rows(stem)}
        new = []
        for run in sorted((out / folder).glob(f"*/roofline/{section}.jsonl")):
            match = re.fullmatch(r"(base|new)(\d+)", run.parent.parent.name)
            if match is None:
                raise ValueError(f"{run}: the folder above roofline/ must be base<N> or new<N>")
            new += [row for r in read_rows(run.with_suffix(""))
                    if json.dumps(row := {**r, "arm": match[1], "round": int(match[2])}, sort_keys=True) not in have]
        if new:
            append_rows(stem, new)
        if section in ("census", "closed"):
            added = len(new)
    return added


if __name__ == "__main__":
    into = sys.argv[2] if len(sys.argv) > 2 else "census_ab"
    folder = sys.argv[3] if len(sys.argv) > 3 else "ab"
    print(f"{merge(Path(sys.argv[1]), into=into, folder=folder)} rows added to data/roofline/{into}")
