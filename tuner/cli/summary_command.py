"""``note-tune summary DIR [DIR ...] [out=DIR] [metric=NAME]``: a table comparing configs across the
job dirs of multirun sweeps, run dirs and study dirs (:mod:`tuner.report.summary`).

``out`` defaults to the first directory given, so the summary lies beside the sweep it describes.
An argument ``out=...`` / ``metric=...`` is an option; every other argument is a directory.
Bad input prints one line naming the path and exits with status 2 (:func:`tuner.cli.subcommands.main`).
"""

from __future__ import annotations

import os
import sys

from .subcommands import ALLOWED, ArgError, _check_out_dir

__all__ = ["summary", "split_args"]


def split_args(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """Directories and ``key=value`` options of ``note-tune summary``."""
    dirs: list[str] = []
    opts: dict[str, str] = {}
    for arg in argv:
        key, sep, value = arg.partition("=")
        if sep and key in ALLOWED["summary"]:
            opts[key] = value
        elif arg.startswith("-"):
            raise ArgError(f"summary: unknown option {arg!r} (expected directories and out=, metric=)")
        else:
            dirs.append(arg)
    if not dirs:
        raise ArgError("summary: give at least one directory (a multirun sweep dir, a run dir or a study dir)")
    return dirs, opts


def summary(argv: list[str]) -> int:
    from ..report.summary import SummaryError, collect, format_table, summarize, write_summary

    dirs, opts = split_args(argv)
    metric = opts.get("metric") or "final_eval_mean_return"
    out = opts.get("out") or dirs[0]
    try:
        samples, warnings = collect(dirs, metric)
    except SummaryError as exc:
        raise ArgError(str(exc)) from None
    _check_out_dir(out)
    groups = summarize(samples)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    print(format_table(groups, metric))
    try:
        paths = write_summary(groups, samples, warnings, metric, out)
    except OSError as exc:  # a read-only or full disk
        raise ArgError(f"out: cannot write the summary ({exc.strerror or exc}: {exc.filename})") from None
    print(f"{len(samples)} samples in {len(groups)} configs -> {', '.join(os.path.relpath(p) for p in paths.values())}")
    return 0
