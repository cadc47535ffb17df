"""`make run-all`: execute the experiment notebooks, skipping those already complete.

    python -m fusedlib.bench.runall [--profile P] [--backend B] [--gpu G] [--out-dir D]
                                    [--rounds R] [--configs "C ..."] [--time-limit S]
                                    (--experiments "E ..." | NOTEBOOK.py ...)

`--experiments` names them (notebooks/NN_<experiment>.py). A bad value, a profile or backend
this machine cannot run, or a package an experiment needs stops it before any notebook, in one
line (exit status 2). Each notebook's parameters cell, with the options given replaced, gives
its plan (plans.plan); the device seconds of the runs to go are printed first
(plans.estimate_seconds). A notebook whose planned runs all have rows for this code version
and profile (runner.missing) is skipped, the reason printed; the others run, with papermill
where papermill and jupytext import, else as a plain script (`run_script`: its code cells,
parameters replaced), each in a process of its own. The time limit is for the whole call: a
notebook gets what is left, none starts with less than MIN_START_S. The header names the
device used; the last line, the notebooks with runs still to go. Exit status 1 if any
notebook failed (the others still run).
"""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from . import plans, rows
from .cli import OneLineParser, seconds
from .runner import check_setup, current, has_cuda, missing, modal_token, where
from .spec import PROFILES

MIN_START_S = 60  # under a time limit, no notebook starts with less left (its process and model take some)
CELL = re.compile(r"^# %%(.*)$", re.M)


def cells(text: str) -> list[tuple[str, str]]:
    """(header, source) of each cell of a jupytext percent file, the front matter left out."""
    marks = list(CELL.finditer(text))
    return [(m.group(1), text[m.end() + 1:(marks[i + 1].start() if i + 1 < len(marks) else len(text))])
            for i, m in enumerate(marks)]


def parameters(path: Path) -> dict:
    """The values the notebook's parameters cell assigns."""
    source = next(src for head, src in cells(path.read_text()) if "parameters" in head)
    namespace: dict = {}
    exec(compile(source, f"{path.name}:parameters", "exec"), namespace)
    return {k: v for k, v in namespace.items() if not k.startswith("__")}


def run_script(path: Path, injected: dict) -> None:
    """Run a notebook as a script: its code cells in order in one namespace, the parameters
    cell followed by `injected`; a cell ending in an expression prints its value."""
    namespace: dict = {"__name__": "__main__"}
    for head, source in cells(path.read_text()):
        if "[markdown]" in head:
            continue
        tree = ast.parse(source)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, path.name, "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), path.name, "eval"), namespace)
            if value is not None:
                print(value.to_string() if hasattr(value, "to_string") else value, flush=True)
        if "parameters" in head:
            namespace.update(injected)


def have_papermill() -> bool:
    try:
        import jupytext  # noqa: F401
        import papermill  # noqa: F401
    except ImportError:
        return False
    return True


def execute(path: Path, injected: dict, executed: Path) -> int:
    """Run one notebook in a process of its own; its exit status."""
    if have_papermill():
        import jupytext

        executed.joinpath("src").mkdir(parents=True, exist_ok=True)
        source = executed / "src" / f"{path.stem}.ipynb"
        jupytext.write(jupytext.read(path), source)
        cmd = [sys.executable, "-m", "papermill", "--log-output", "--no-progress-bar", "-k", "python3",
               "--cwd", str(path.parent), str(source), str(executed / f"{path.stem}.ipynb")]
        cmd += ["-y", json.dumps(injected)]  # JSON is YAML
    else:
        cmd = [sys.executable, "-m", "fusedlib.bench.runall", "--script", str(path), json.dumps(injected)]
    # the notebooks import this checkout's fusedlib, whatever is installed
    path_var = os.pathsep.join(p for p in (str(rows.CHECKOUT), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(cmd, cwd=path.parent, env={**os.environ, "PYTHONPATH": path_var}).returncode


def _notebooks(experiments: str) -> list[Path]:
    """The notebooks of space-separated experiment names; ValueError naming an unknown one."""
    by_name = {p.stem.split("_", 1)[1]: p for p in sorted((rows.CHECKOUT / "notebooks").glob("[0-9]*_*.py"))}
    unknown = [e for e in experiments.split() if e not in by_name]
    if unknown or not experiments.split():
        raise ValueError(f"unknown experiment {unknown[0] if unknown else experiments!r}; experiments are "
                         f"{', '.join(by_name)}")
    return [by_name[e] for e in experiments.split()]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--script"]:
        run_script(Path(argv[1]), json.loads(argv[2]))
        return 0
    p = OneLineParser(prog="python -m fusedlib.bench.runall")
    p.add_argument("notebooks", nargs="*", type=Path)
    p.add_argument("--experiments", help="experiment names, space-separated (instead of notebook paths)")
    p.add_argument("--profile", choices=list(PROFILES))
    p.add_argument("--backend", choices=("local", "modal"))
    p.add_argument("--gpu", default="H100")
    p.add_argument("--out-dir", default="")
    p.add_argument("--rounds", type=int, help="paired rounds (default: each plan's, by profile and configuration)")
    p.add_argument("--configs", default="", help="configurations, space-separated, for the notebooks that take them "
                                                 "(default: each notebook's)")
    p.add_argument("--time-limit", type=seconds, default=0, help="seconds for the whole call (0: none)")
    p.add_argument("--executed", type=Path, default=Path("_build/executed"))
    a = p.parse_args(argv)
    start = time.monotonic()
    backend = a.backend or ("modal" if modal_token() else "local")  # modal where a Modal token is configured
    try:
        notebooks = a.notebooks or _notebooks(a.experiments or "")
        if a.notebooks and a.experiments:
            raise ValueError("give notebooks or --experiments, not both")
        profile = a.profile or ("smoke" if backend == "local" and not has_cuda() else "full")
        check_setup([path.stem.split("_", 1)[1] for path in notebooks], profile, backend)
        out_dir = Path(a.out_dir or rows.data_dir(profile)).resolve()
        rows.check_writable(out_dir / ".write-check.jsonl")
        given = dict(backend=backend, gpu=a.gpu, profile=profile, out_dir=str(out_dir), rounds=a.rounds,
                     configs=a.configs.split() or None)
        statuses = {path: _status(path, given) for path in notebooks}  # every plan checked before any run
    except (ValueError, OSError) as e:  # SpecError is a ValueError
        p.exit(2, f"{p.prog}: error: {e}\n")
    print(f"run-all: device {where(backend, a.gpu)}, profile {profile}, backend {backend}, out_dir {out_dir}, "
          f"rounds {a.rounds or 'by plan'}, time limit {a.time_limit or 'none'}, "
          f"{'papermill' if have_papermill() else 'notebooks as scripts'}", flush=True)
    if out_dir.name != "data" and not (out_dir / ".gitignore").exists():
        (out_dir / ".gitignore").write_text("*\n")  # rows anywhere but data/ are scratch
    print_estimates(notebooks, given)
    failed = []
    for path in notebooks:
        declared, planned, todo, errors = statuses[path]
        if not todo:
            print(f"skip {path.stem}: all {len(planned)} planned runs have rows (code version {rows.code_version()}, "
                  f"profile {profile})" + (f", {errors} of them errors" if errors else ""), flush=True)
            continue
        left = a.time_limit - (time.monotonic() - start) if a.time_limit else 0
        if a.time_limit and left < MIN_START_S:
            print(f"stop before {path.stem}: {max(left, 0):.0f} s of the time limit left", flush=True)
            break
        print(f"== {path.stem}: {len(todo)} of {len(planned)} planned runs to go", flush=True)
        injected = {k: v for k, v in {**given, "time_limit_s": left}.items() if k in declared and v is not None}
        if execute(path.resolve(), injected, a.executed.resolve()) != 0:
            failed.append(path.stem)
    to_go = [f"{p.stem} ({len(t)} of {len(pl)} runs)" for p in notebooks for _, pl, t, _ in [_status(p, given)] if t]
    print(f"run-all: rows in {out_dir}; " + (f"to go: {', '.join(to_go)}" if to_go else "every notebook complete")
          + (f"; failed: {', '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


def print_estimates(notebooks: list[Path], given: dict) -> None:
    """Each notebook's runs to go and their device seconds (plans.estimate_seconds over the plan
    `plans.foreseen` sees; some experiments have no estimate), then the sum."""
    total = 0.0
    for path in notebooks:
        experiment, params, have = _plan_inputs(path, given)
        todo = missing(plans.foreseen(experiment, given["profile"], params, rows=have), given["out_dir"])
        try:
            seconds = plans.estimate_seconds(todo)
        except ValueError:
            print(f"estimate {path.stem}: {len(todo)} runs to go, no time estimate", flush=True)
            continue
        total += seconds
        print(f"estimate {path.stem}: {len(todo)} runs to go, about {seconds:.0f} s", flush=True)
    print(f"estimate: about {total:.0f} s ({total / 60:.1f} min) of device time in all", flush=True)


def _plan_inputs(path: Path, given: dict) -> tuple[str, dict, list]:
    """(the notebook's experiment, its plan's parameters, that experiment's current rows)."""
    declared = parameters(path)
    params = {**declared, **{k: v for k, v in given.items() if k in declared and v is not None}}
    experiment = path.stem.split("_", 1)[1]
    return experiment, params, current(given["out_dir"], experiment, given["profile"])


def _status(path: Path, given: dict) -> tuple[dict, list, list, int]:
    """(the parameters the notebook declares, its planned runs, those without rows, error rows)."""
    experiment, params, have = _plan_inputs(path, given)
    planned = plans.plan(experiment, given["profile"], params, rows=have)
    return parameters(path), planned, missing(planned, given["out_dir"]), sum("error" in r for r in have)


if __name__ == "__main__":
    sys.exit(main())
