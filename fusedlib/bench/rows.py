"""Raw result rows on disk: append as each run finishes, survive a kill, resume.

A result set is a path stem: `<stem>.jsonl` is the source of truth (one JSON object per
line), `<stem>.csv` is the same rows for spreadsheets and diffs. Every row is written,
flushed and fsynced before the next, so a campaign killed midway leaves every finished
row readable. A torn last JSONL line (killed mid-write) is cut off on the next append
and ignored when reading. When new rows bring new columns, or the CSV fell behind the
JSONL, the CSV is rewritten from the JSONL.

A result set too large to keep as text in git (the paired campaign's per-step traces) is
stored compressed instead, `<stem>.jsonl.gz` with no CSV: read the same way, and an append
rewrites the whole file (atomically, with a fixed gzip timestamp so equal rows give equal
bytes). `compress` turns a set into that form.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
from pathlib import Path

import pandas as pd

# The source checkout this package sits in, if it sits in one (an installed copy does not).
_CHECKOUT = Path(__file__).resolve().parents[2]


def data_dir(profile: str) -> Path:
    """Where an experiment's rows go unless a caller names a place: the folder in
    $FUSEDLIB_DATA when set; else `data/` for the full profile (the published rows) and
    `data-smoke/` for smoke (scratch, never over the published rows), in the source checkout
    this package runs from, or in the working directory when it runs from an installed copy."""
    if os.environ.get("FUSEDLIB_DATA"):
        return Path(os.environ["FUSEDLIB_DATA"])
    root = _CHECKOUT if (_CHECKOUT / "pyproject.toml").exists() else Path.cwd()
    return root / ("data" if profile == "full" else "data-smoke")


def _jsonable(value):
    if hasattr(value, "item"):  # numpy / torch scalars
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot store {type(value).__name__} in a result row")


def _clean(row: dict) -> dict:
    """Round-trip through JSON so CSV and JSONL hold the same values; NaN becomes null."""
    def fix(v):
        return None if isinstance(v, float) and math.isnan(v) else v
    return {k: fix(v) for k, v in json.loads(json.dumps(row, default=_jsonable)).items()}


def _csv_cell(v):
    return json.dumps(v) if isinstance(v, (list, dict)) else v


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    rows = []
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    for line in text.splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a torn last line from a killed writer
            continue
    return rows


def _cut_torn_tail(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        with open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)
            f.flush()
            os.fsync(f.fileno())


def _columns(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(k for r in rows for k in r))


def _csv_state(path: Path) -> tuple[list[str], int]:
    """(header, number of data rows) of an existing CSV; ([], -1) when absent or unreadable."""
    if not path.exists():
        return [], -1
    try:
        records = list(csv.reader(io.StringIO(path.read_text(), newline="")))
    except csv.Error:
        return [], -1
    return (records[0], len(records) - 1) if records else ([], -1)


def _write_synced(path: Path, text: str, mode: str) -> None:
    with open(path, mode, newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _csv_text(columns: list[str], rows: list[dict], header: bool) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    if header:
        writer.writeheader()
    for r in rows:
        writer.writerow({k: _csv_cell(v) for k, v in r.items()})
    return buf.getvalue()


def _rewrite_csv(csv_path: Path, rows: list[dict]) -> None:
    tmp = Path(f"{csv_path}.tmp")
    _write_synced(tmp, _csv_text(_columns(rows), rows, header=True), "w")
    os.replace(tmp, csv_path)


def _paths(path_stem) -> tuple[Path, Path]:
    """(<stem>.jsonl, or <stem>.jsonl.gz where the set is stored compressed; <stem>.csv); a stem
    may hold dots ("rate0.5"), so no with_suffix."""
    compressed = Path(f"{path_stem}.jsonl.gz")
    return compressed if compressed.exists() else Path(f"{path_stem}.jsonl"), Path(f"{path_stem}.csv")


def _write_compressed(path: Path, rows: list[dict]) -> None:
    tmp = Path(f"{path}.tmp")
    with open(tmp, "wb") as f:
        f.write(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode(), mtime=0))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def compress(path_stem) -> Path:
    """Store a result set as `<stem>.jsonl.gz` (same rows, same order) and remove its text
    files; the compressed file's path."""
    jsonl, csv_path = _paths(path_stem)
    target = Path(f"{path_stem}.jsonl.gz")
    if jsonl != target:
        _write_compressed(target, _read_jsonl(jsonl))
        jsonl.unlink()
        csv_path.unlink(missing_ok=True)
    return target


def append_rows(path_stem, rows: list[dict]) -> None:
    """Append rows to `<stem>.jsonl` and `<stem>.csv`, each durable before the next (to a
    compressed set: all of them in one rewrite)."""
    jsonl, csv_path = _paths(path_stem)
    if jsonl.suffix == ".gz":
        _write_compressed(jsonl, _read_jsonl(jsonl) + [_clean(r) for r in rows])
        return
    jsonl.parent.mkdir(parents=True, exist_ok=True)
    _cut_torn_tail(jsonl)
    n_before = len(_read_jsonl(jsonl))
    header, n_csv = _csv_state(csv_path)
    in_sync = n_csv == n_before
    for row in map(_clean, rows):
        _write_synced(jsonl, json.dumps(row) + "\n", "a")
        n_before += 1
        if in_sync and set(row) <= set(header):
            _write_synced(csv_path, _csv_text(header, [row], header=False), "a")
        else:
            all_rows = _read_jsonl(jsonl)
            _rewrite_csv(csv_path, all_rows)
            header, in_sync = _columns(all_rows), True


def read_rows(path_stem) -> list[dict]:
    """All rows of a result set as written (from the JSONL); [] if there are none."""
    return _read_jsonl(_paths(path_stem)[0])


def load(path_stem) -> pd.DataFrame:
    """All rows of a result set as a frame; an empty frame if there are none."""
    return pd.DataFrame(read_rows(path_stem))
