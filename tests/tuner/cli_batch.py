"""Run many ``note-tune`` commands through the real console entry point (:func:`tuner.cli.app.main`) in
ONE interpreter, and report each one's exit status, output and what it changed on disk.

    python -m tests.tuner.cli_batch cases.json results.json
    python -m tests.tuner.cli_batch --serve FD      (one case at a time, see :func:`serve`)

``cases.json`` is a list of ``{"args": [...], "cwd": dir, "watch": dir, "run_dir": dir, "env": {name:
value or null}}``.  Why a child process and not the test process itself: running the app ~200 times
inside a pytest worker left pytest's own capture file closed part-way through the full suite (every
later test of that worker then errored); a child of its own keeps the corpus fast (one start-up)
without touching the test process.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import traceback
from contextlib import redirect_stderr, redirect_stdout
from typing import Any


def snapshot(root: str) -> dict[str, str]:
    """Every file (its SHA-256) and folder under ``root``."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            found[os.path.relpath(os.path.join(folder, name), root)] = "dir"
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return found


def run_cli(args: list[str]) -> tuple[Any, str, str]:
    """``note-tune <args>`` in this process: (exit status, stdout, stderr); an exception that would
    escape the console script is ``"raised"`` with its traceback on stderr."""
    from hydra.core.global_hydra import GlobalHydra

    from tuner.cli.app import main

    GlobalHydra.instance().clear()  # as in a fresh process: Hydra initialises it once per run
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    sys.argv = ["note-tune", *args]
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main()
                code: Any = 0
            except SystemExit as exc:
                code = 0 if exc.code is None else exc.code
            except BaseException:  # noqa: BLE001 - the console script would print a traceback
                code = "raised"
                traceback.print_exc(file=err)
    finally:
        sys.argv = saved
    return code, out.getvalue(), err.getvalue()


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    saved_env = {name: os.environ.get(name) for name in case.get("env", {})}
    for name, value in case.get("env", {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    os.chdir(case["cwd"])
    try:
        before = snapshot(case["watch"])
        code, out, err = run_cli(case["args"])
        return {"code": code, "out": out, "err": err, "unchanged": snapshot(case["watch"]) == before,
                "run_dir_left": bool(case.get("run_dir")) and os.path.exists(case["run_dir"])}
    finally:
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def serve(fd: int) -> None:
    """Answer cases one at a time: a JSON case per line on stdin, its JSON result per line on file
    descriptor ``fd`` (not stdout, which the app and its child processes write to).  A property-based
    test (tests/tuner/cli/test_fuzz.py) draws each case after seeing the last result, so it cannot
    hand over a batch."""
    with os.fdopen(fd, "w", buffering=1) as answers:
        for line in sys.stdin:
            answers.write(json.dumps(run_case(json.loads(line))) + "\n")


def main() -> None:
    if sys.argv[1] == "--serve":
        serve(int(sys.argv[2]))
        return
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    results = [run_case(case) for case in cases]
    with open(sys.argv[2], "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
