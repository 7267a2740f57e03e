"""Typed reads of a study's stored attributes.

A study's user attributes come back from its storage (a journal file, a database) that a person or
another program may have edited, so they are data of unknown shape.  The report, the held-out and
test stages and the run budget read them through these functions: a value of the wrong shape reads
as absent (the default), so one odd record loses that record's value, never the report or the stage.
"""

from __future__ import annotations

from typing import Any

__all__ = ["integer", "number", "mapping", "seed_list", "stage_scores", "text", "trial_index"]


def integer(value: Any) -> int | None:
    """``value`` if it is an int (a bool is not), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def number(value: Any) -> float | None:
    """``value`` as a float if it is an int or a float (a bool is not), else None.  NaN passes: a
    stage whose every run failed stores one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def mapping(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty one."""
    return value if isinstance(value, dict) else {}


def text(value: Any, default: str = "") -> str:
    """``value`` if it is a string, else ``default``."""
    return value if isinstance(value, str) else default


def seed_list(value: Any) -> list[int] | None:
    """``value`` if it is a non-empty list of ints, else None (one odd entry voids the record: a
    partial list would undercount the seeds a trial trained)."""
    if isinstance(value, list) and value and all(integer(s) is not None for s in value):
        return list(value)
    return None


def trial_index(value: Any, n_trials: int) -> int | None:
    """``value`` if it numbers one of ``n_trials`` trials (0 to n_trials - 1), else None."""
    index = integer(value)
    return index if index is not None and 0 <= index < n_trials else None


def stage_scores(record: Any, episodes: int, model: str) -> dict[int, float]:
    """The per-seed scores a held-out or test stage stored for one config (``{"episodes", "model",
    "scores": {"<seed>": score}}``) when they were scored as this stage scores (same ``episodes`` and
    ``model``; a record without ``model`` is from before it was kept: ``final``): what a re-run reuses
    instead of training again.  An entry that is not a seed and a number is left out (that seed trains
    again); a record of another shape gives none."""
    record = mapping(record)
    if record.get("episodes") != episodes or record.get("model", "final") != model:
        return {}
    out: dict[int, float] = {}
    for key, value in mapping(record.get("scores")).items():
        score = number(value)
        if isinstance(key, str) and key.lstrip("-").isdigit() and score is not None:
            out[int(key)] = score
    return out
