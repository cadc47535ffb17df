"""Rows on disk: one JSONL file per experiment, `<out_dir>/<experiment>.jsonl`.

Every row starts with the same header (`header`): the schema version, the experiment, the
profile, `code_version` (12 hex digits of a sha256 over fusedlib/**/*.py and
notebooks/*.py, so committing rows leaves it unchanged), the git commit (or
$FUSEDLIB_GIT_COMMIT; None outside a checkout), the device, the time, and the run's
identifying options (`RunSpec.key()`: config, engine, round, ...). A run's rows are appended
in one write, flushed and fsynced, so an interrupted experiment keeps every finished run;
a torn last line (killed mid-write) is cut off at the next append and skipped on reading.
This module imports no torch.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import tempfile
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from .spec import SCHEMA_VERSION, RunSpec

CHECKOUT = Path(__file__).resolve().parents[2]  # the source checkout this package sits in


# The book's readers of rows, as paths (or folders) under the checkout.
BOOK_SIDE = ("fusedlib/bench/figures/", "fusedlib/bench/stats.py", "fusedlib/bench/text.py",
             "fusedlib/bench/plots.py", "fusedlib/bench/predictions.py")


@lru_cache(maxsize=1)
def code_version(root: Path = CHECKOUT) -> str:
    """12 hex digits over the sources that make rows: the engine's, the harness's measuring
    modules and the notebooks. The book's readers of rows (`BOOK_SIDE`) are left out,
    so mending a page's arithmetic does not make measured rows look stale."""
    h = hashlib.sha256()
    for path in sorted([*root.glob("fusedlib/**/*.py"), *root.glob("notebooks/*.py")]):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(BOOK_SIDE):
            continue
        h.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


@lru_cache(maxsize=1)
def git_commit(root: Path = CHECKOUT) -> str | None:
    """The checkout's commit, "+modified" where the sources that make rows differ from it (a
    copy of the working tree whose history stayed behind names an older commit: the code
    version, not the commit, then says what ran)."""
    if os.environ.get("FUSEDLIB_GIT_COMMIT"):
        return os.environ["FUSEDLIB_GIT_COMMIT"]
    git = lambda *args: subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,  # noqa: E731
                                       check=True).stdout.strip()
    try:
        head = git("rev-parse", "--short=12", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", "fusedlib", "notebooks")
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{head}+modified" if head and changed else head or None


def data_dir(profile: str) -> Path:
    """Where rows go unless a caller names a place: $FUSEDLIB_DATA when set, else data/ for the
    full profile and data-smoke/ (scratch, git-ignored) for smoke, in the source checkout."""
    if os.environ.get("FUSEDLIB_DATA"):
        return Path(os.environ["FUSEDLIB_DATA"])
    return CHECKOUT / ("data" if profile == "full" else "data-smoke")


def rows_path(out, experiment: str) -> Path:
    """`out` as the experiment's rows file: a `.jsonl` path as given, else a folder (existing
    or not, with or without a trailing slash) holding `<experiment>.jsonl`."""
    out = str(out)
    return Path(out) if out.endswith(".jsonl") else Path(out) / f"{experiment}.jsonl"


def check_writable(path: Path) -> Path:
    """Create the folder of `path` and prove a file can be written there; OSError (naming the
    place) if not. Called before the first run, so a bad place costs no run."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and not os.access(path, os.W_OK):
            raise PermissionError(f"{path} is not writable")
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as e:
        raise OSError(f"cannot write rows to {path}: {e.strerror or e}") from None
    return path


def header(spec: RunSpec, device_name: str | None) -> dict:
    """The fields every row of `spec`'s run starts with."""
    base = {"schema_version": SCHEMA_VERSION, "experiment": spec.experiment, "profile": spec.profile,
            "code_version": code_version(), "commit": git_commit(), "device_name": device_name,
            "time_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "config": None, "engine": None, "round": None}
    return {**base, **spec.key()}


def _jsonable(value):
    if hasattr(value, "item"):  # numpy / torch scalars
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot store {type(value).__name__} in a row")


def _clean(row: dict) -> dict:
    """Through JSON and back, NaN as null."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v
            for k, v in json.loads(json.dumps(row, default=_jsonable)).items()}


def append(path: Path, rows: list[dict]) -> None:
    """Append rows to a JSONL file in one durable write (cutting a torn last line first)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size:
        data = path.read_bytes()
        if not data.endswith(b"\n"):
            with open(path, "r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)
    with open(path, "a") as f:
        f.write("".join(json.dumps(_clean(r)) + "\n" for r in rows))
        f.flush()
        os.fsync(f.fileno())


def read(path) -> list[dict]:
    """Every row of a JSONL file ([] when absent); a torn line is skipped."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def current(rows: list[dict], profile: str) -> list[dict]:
    """The rows of this code version and `profile`."""
    cv = code_version()
    return [r for r in rows if r.get("code_version") == cv and r.get("profile") == profile]


def has_run(rows: list[dict], spec: RunSpec) -> bool:
    """Whether `rows` (already `current`) hold a row of exactly this run."""
    key = spec.key()
    return any(r.get("experiment") == spec.experiment and all(r.get(k) == v for k, v in key.items()) for r in rows)
