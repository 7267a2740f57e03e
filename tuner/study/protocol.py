"""The AutoRL protocol's test stage: the study's answer scored on seeds nothing was chosen on.

Seeds have three jobs, kept apart (Eimer et al. 2023; ARLBench): *tuning seeds* train the trials
(``tuner.seeds.tuning``, default ``seed, seed + 1, ...`` for ``n_seeds``), *held-out seeds* retrain
the top configs to choose among them (:mod:`tuner.study.reevaluate`; choosing on them makes them part
of tuning), and *test seeds* (``tuner.seeds.test``) only score what was chosen.  When the study ends,
the incumbent (the held-out winner, else the best tuning trial) and the config the study started
from (trial 0: the defaults or the env's preset) are retrained on the test seeds; their test means,
the incumbent's tuning score and the gap between them are the study's reported result.  Nothing
is chosen on a test seed, so the test mean is an unbiased estimate of the answer's score.

Scores live in the study (user attrs ``test`` and ``test:<trial>``); runs go to
``<study_dir>/test/<trial>/seed_<seed>/``; a re-run reuses every (config, seed) already scored.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import optuna
from omegaconf import OmegaConf
from optuna.trial import FrozenTrial

from ..common.errors import ConfigError
from .attrs import seed_list
from .outputs import SOURCES
from .reevaluate import (
    MAX_COUNT,
    ReevalSettings,
    Trust,
    _config,
    _Entry,
    _Runner,
    pick_seeds,
    start_trial,
    tuning_seeds,
)
from .supervisor import is_start

__all__ = ["SeedSettings", "check_seeds", "pick_test_seeds", "no_test_stage", "run_test", "incumbent", "format_test",
           "TEST_SEED_BASE", "TEST_PREFIX"]

#: first candidate test seed (held-out seeds start at 10000, tuning seeds at the config's seed)
TEST_SEED_BASE = 20_000
TEST_PREFIX = "test:"


@dataclass
class SeedSettings:
    """``tuner.seeds``: the seeds trials tune on and the seeds the answer is tested on."""

    tuning: Any = None  # a list of seeds every trial trains on (None: seed, seed + 1, ... for n_seeds)
    test: Any = 3       # a count (seeds 20000, 20001, ... not used before) or a list; 0: no test stage


def _listed(value: Any) -> list[Any] | None:
    if isinstance(value, (list, tuple)) or OmegaConf.is_list(value):
        return list(value)
    return None


def check_seeds(s: SeedSettings, n_seeds: int) -> None:
    """One-line :class:`ConfigError` for bad ``tuner.seeds`` values (they are checked again against
    the seeds actually used when the stage runs)."""
    from ..config.schema import SEED_LIMIT

    def seed_list(value: list[Any], key: str) -> None:
        ok = value and len(value) <= MAX_COUNT and all(isinstance(v, int) and not isinstance(v, bool)
                                                       and 0 <= v < SEED_LIMIT for v in value)
        if not ok or len(set(value)) != len(value):
            raise ConfigError(f"tuner.seeds.{key}: must be distinct seeds from 0 to {SEED_LIMIT - 1}, at most "
                              f"{MAX_COUNT} of them, got {value}")

    tuning = _listed(s.tuning)
    if s.tuning is not None:
        if tuning is None:
            raise ConfigError(f"tuner.seeds.tuning: must be a list of seeds or null, got {s.tuning!r}")
        seed_list(tuning, "tuning")
        if n_seeds not in (1, len(tuning)):
            raise ConfigError(f"tuner.seeds.tuning: {len(tuning)} seeds, but tuner.n_seeds={n_seeds}; "
                              f"give one of them")
    test = _listed(s.test)
    if test is not None:
        seed_list(test, "test")
        clash = sorted(set(test) & set(tuning or []))
        if clash:
            raise ConfigError(f"tuner.seeds.test: seed {clash[0]} is a tuning seed; test seeds must differ")
    elif not (isinstance(s.test, int) and not isinstance(s.test, bool) and 0 <= s.test <= MAX_COUNT):
        raise ConfigError(f"tuner.seeds.test: must be a count from 0 to {MAX_COUNT} or a list of seeds, "
                          f"got {s.test!r}")


def pick_test_seeds(setting: Any, used: set[int]) -> list[int]:
    """``setting`` seeds from :data:`TEST_SEED_BASE` on, skipping every seed ``used`` for tuning or
    choosing; or the given list, which must not contain one."""
    return pick_seeds(setting, used, TEST_SEED_BASE, "tuner.seeds.test: seed {seed} was used to tune or choose "
                                                     "the answer; test seeds must differ")


def incumbent(study: optuna.Study, heldout: dict[str, Any] | None) -> tuple[FrozenTrial, str] | None:
    """The study's answer and where it was chosen: the held-out winner, else the best tuning trial."""
    if heldout is not None and heldout.get("winner") is not None:
        return study.trials[heldout["winner"]], "heldout"
    try:
        return study.best_trial, "tuning"
    except ValueError:  # no complete trial
        return None


def no_test_stage(seeds: SeedSettings) -> bool:
    """``tuner.seeds.test`` is 0: no test stage (here and in :mod:`tuner.study.pbt_test`)."""
    return _listed(seeds.test) is None and int(seeds.test) == 0


def run_test(study: optuna.Study, study_dir: str, seeds: SeedSettings, reeval: ReevalSettings,
             heldout: dict[str, Any] | None, n_jobs: int = 1, job_timeout: float | None = None,
             memory_mb: int | None = None, log: Any = print, trust: Trust = Trust()) -> dict[str, Any] | None:
    """Retrain the incumbent and the starting config on the test seeds (``reeval``'s episodes and
    model); store and return the summary (``None``: no test stage, or nothing to test)."""
    if no_test_stage(seeds):
        return None
    chosen = incumbent(study, heldout)
    if chosen is None:
        return None
    answer, source = chosen
    entries = [_Entry(answer, cfg) for cfg in [_config(answer, trust)] if cfg is not None]
    start = start_trial(study)
    if entries and start is not None and start.number != answer.number and start.params != answer.params:
        entries += [_Entry(start, cfg) for cfg in [_config(start, trust)] if cfg is not None]
    if not entries:
        return None
    used = tuning_seeds(study, trust) | set(seed_list(study.user_attrs.get("heldout_seeds")) or [])
    used |= {int(s) for s in (heldout or {}).get("tie_seeds") or []}
    test = pick_test_seeds(seeds.test, used)
    started = time.monotonic()
    deadline = started + reeval.timeout if reeval.timeout else None
    run = _Runner(study, study_dir, reeval, n_jobs, deadline, job_timeout, memory_mb, log,
                  prefix=TEST_PREFIX, folder="test", label="test")
    what = "the answer" + (" and the starting config" if len(entries) > 1 else "")
    try:
        run(entries, test, f"test stage: {what} on {len(test)} test seeds {test}")
    except KeyboardInterrupt as exc:  # keep what was scored; the caller writes the outputs
        exc.test = _store(study, _summary(study, entries, test, reeval, source, heldout,
                                          time.monotonic() - started, interrupted=True))
        raise
    summary = _store(study, _summary(study, entries, test, reeval, source, heldout, time.monotonic() - started))
    _note(study, heldout, summary)
    return summary


def _note(study: optuna.Study, heldout: dict[str, Any] | None, summary: dict[str, Any]) -> None:
    """The study's note in optuna-dashboard: the test stage (the answer's scores), then the held-out table."""
    try:
        from optuna_dashboard import save_note
    except ImportError:  # the dashboard is optional: the attributes hold everything
        return
    from .reevaluate import format_reevaluation

    text = "## Test stage (the answer)\n\n```\n" + format_test(summary) + "\n```\n"
    if heldout is not None:
        text += "\n## Held-out re-evaluation\n\n```\n" + format_reevaluation(heldout) + "\n```\n"
    save_note(study, text)


def _scored(e: _Entry, seeds: list[int]) -> dict[str, Any]:
    values = [e.scores[s] for s in seeds if s in e.scores]
    return {"trial": e.trial.number, "params": e.trial.params, "tuning_value": e.trial.value,
            "scores": {str(s): e.scores[s] for s in seeds if s in e.scores},
            "errors": {str(s): m for s, m in e.errors.items()},
            "mean": float(np.mean(values)) if values else None, "std": float(np.std(values)) if values else None,
            "complete": len(values) == len(seeds)}


def _summary(study: optuna.Study, entries: list[_Entry], seeds: list[int], reeval: ReevalSettings, source: str,
             heldout: dict[str, Any] | None, wall: float, interrupted: bool = False) -> dict[str, Any]:
    answer = _scored(entries[0], seeds)
    answer["source"] = source
    held = next((c for c in (heldout or {}).get("configs", []) if c["trial"] == answer["trial"]), None)
    answer["heldout_mean"] = held["mean"] if held else None
    answer["gap"] = (answer["tuning_value"] - answer["mean"]
                     if answer["mean"] is not None and answer["tuning_value"] is not None else None)
    start = _scored(entries[1], seeds) if len(entries) > 1 else None
    answer_is_start = is_start(entries[0].trial)
    return {"seeds": seeds, "episodes": reeval.episodes, "model": reeval.model, "wall_time_s": wall,
            "interrupted": interrupted, "answer": answer, "start": start, "start_is_answer": answer_is_start,
            "verdict": _verdict(study, answer, start, answer_is_start)}


def _verdict(study: optuna.Study, answer: dict[str, Any], start: dict[str, Any] | None, is_start: bool) -> str:
    """One sentence comparing the answer's test mean with the starting config's."""
    if answer["mean"] is None:
        return "the answer has no test score"
    if start is None:
        return "the answer is the starting config" if is_start else "no starting config to compare with"
    if start["mean"] is None:
        return "the starting config has no test score"
    sign = 1.0 if study.direction == optuna.study.StudyDirection.MAXIMIZE else -1.0
    diff = sign * (answer["mean"] - start["mean"])
    if math.isclose(diff, 0.0, abs_tol=1e-12):
        return f"the answer ties the starting config (trial {start['trial']}) on the test seeds"
    if diff > 0:
        return f"the answer beats the starting config (trial {start['trial']}) by {abs(diff):.4g} on the test seeds"
    return (f"WORSE: the answer scores {abs(diff):.4g} below the starting config (trial {start['trial']}) "
            f"on the test seeds")


def _store(study: optuna.Study, summary: dict[str, Any]) -> dict[str, Any]:
    """Per-config test scores (reused by a re-run) and the summary, as study user attributes."""
    for c in (summary["answer"], summary["start"]):
        if c is not None:
            study.set_user_attr(f"{TEST_PREFIX}{c['trial']:04d}", {
                "scores": c["scores"], "episodes": summary["episodes"], "model": summary["model"],
                "mean": c["mean"], "std": c["std"]})
    study.set_user_attr("test", {k: v for k, v in summary.items() if k not in ("answer", "start")}
                        | {"answer_trial": summary["answer"]["trial"], "answer_mean": summary["answer"]["mean"],
                           "start_trial": (summary["start"] or {}).get("trial"),
                           "start_mean": (summary["start"] or {}).get("mean")})
    return summary


def format_test(summary: dict[str, Any]) -> str:
    """Plain-text lines of a test-stage summary."""
    def fmt(v: Any) -> str:
        return "-" if v is None else f"{v:.4g}"

    a, s = summary["answer"], summary["start"]
    lines = [f"test stage: seeds {summary['seeds']}, {summary['episodes']} deterministic episodes per run, "
             f"{summary['wall_time_s']:.1f} s" + (" (interrupted: incomplete)" if summary.get("interrupted") else ""),
             f"  answer: trial {a['trial']} ({SOURCES.get(a['source'], a['source'])}): "
             f"test mean {fmt(a['mean'])} +- {fmt(a['std'])}; tuning score {fmt(a['tuning_value'])}"
             + (f", held-out mean {fmt(a['heldout_mean'])}" if a.get("heldout_mean") is not None else "")
             + f"; gap (tuning - test) {fmt(a['gap'])}"]
    if s is not None:
        lines.append(f"  starting config: trial {s['trial']}: test mean {fmt(s['mean'])} +- {fmt(s['std'])}")
    lines.append(f"  {summary['verdict']}")
    return "\n".join(lines)
