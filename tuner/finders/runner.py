"""Run a finder's candidates as trials of one Optuna study, each in a fresh process."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from ..common.messages import TrialSpec
from ..logs.wandb_logger import JOB_TYPES, trial_meta
from ..study.runner import DONE, OPEN, RunLimits, TrialRunner
from ..study.storage import StudyLock

__all__ = ["Candidate", "CandidateMismatch", "run_candidates", "failure"]


class CandidateMismatch(ValueError):
    """The study already holds trials of other candidates (Optuna cannot widen a categorical
    parameter of an existing study); raised before any trial is created, so nothing is lost."""


class Candidate:
    """One training to run: its trial parameters and the trial's spec (``trial`` and ``run_dir``
    are filled in when it becomes a trial)."""

    def __init__(self, params: dict[str, Any], spec: TrialSpec) -> None:
        self.params = params
        self.spec = spec


def run_candidates(study: optuna.Study, study_dir: str, candidates: list[Candidate], n_jobs: int = 1,
                   trial_timeout: float | None = None, user_attrs: dict[str, Any] | None = None,
                   lock: Any = None, memory_mb: int | None = None) -> list[FrozenTrial]:
    """Each candidate becomes one trial with exactly its ``params`` (enqueued), run at most
    ``n_jobs`` at a time by the shared :class:`~tuner.study.runner.TrialRunner`; returns the finished
    trials in candidate order.  ``lock`` is the study's lock (default: a file lock in
    ``study_dir``); ``memory_mb`` caps each trial's memory."""
    dists = _distributions(study, candidates)
    pending = list(candidates)
    job_type = study.user_attrs.get("finder")  # lr_finder, opt_finder, parallel_finder: the wandb job_type
    job_type = job_type if job_type in JOB_TYPES else "trial"
    numbers: list[int] = []
    by_number: dict[int, Candidate] = {}

    def ask() -> tuple[str, optuna.Trial | None]:
        if not pending:
            return DONE, None
        cand = pending.pop(0)
        study.enqueue_trial(cand.params, skip_if_exists=False)
        trial = study.ask(dists)
        by_number[trial.number] = cand
        numbers.append(trial.number)
        return OPEN, trial

    def prepare(trial: optuna.Trial) -> TrialSpec:
        cand = by_number[trial.number]
        for key, value in (user_attrs or {}).items():
            trial.set_user_attr(key, value)
        run_dir = os.path.join(study_dir, "trials", f"{trial.number:04d}")
        trial.set_user_attr("run_dir", run_dir)
        return dataclasses.replace(cand.spec, trial=trial.number, run_dir=run_dir, memory_mb=memory_mb,
                                   log_path=os.path.join(run_dir, "trial.log"),
                                   wandb=trial_meta(study.study_name, trial.number, cand.params, job_type))

    lock = lock if lock is not None else StudyLock(None, study_dir, study.study_name)
    runner = TrialRunner(study, lock, RunLimits(n_jobs=max(1, n_jobs), trial_timeout=trial_timeout), quiet=True)
    runner.run(ask, prepare)
    finished = {t.number: t for t in study.get_trials(deepcopy=False)}
    return [finished[n] for n in numbers]


def _distributions(study: optuna.Study, candidates: list[Candidate]) -> dict[str, Any]:
    """One categorical distribution per parameter, shared by every trial of the study.

    Optuna refuses a categorical parameter whose choices differ from the study's earlier trials
    ("does not support dynamic value space").  A re-run whose candidates are among the study's
    earlier ones reuses the earlier choices; new candidates raise :class:`CandidateMismatch`.
    """
    choices: dict[str, list[Any]] = {}
    for cand in candidates:
        for key, value in cand.params.items():
            if value not in choices.setdefault(key, []):
                choices[key].append(value)
    known: dict[str, Any] = {}
    for t in study.get_trials(deepcopy=False):
        known.update({k: d for k, d in t.distributions.items() if k not in known})
    dists = {}
    for key, values in choices.items():
        old = known.get(key)
        if old is None:
            dists[key] = optuna.distributions.CategoricalDistribution(values)
            continue
        earlier = list(getattr(old, "choices", []))
        new = [v for v in values if v not in earlier]
        if new or not isinstance(old, optuna.distributions.CategoricalDistribution):
            raise CandidateMismatch(f"study {study.study_name!r} already holds trials of other candidates "
                                    f"({key}: {', '.join(map(str, earlier))}; new: {', '.join(map(str, new))}); "
                                    "use another study name")
        dists[key] = old
    return dists


def failure(trial: FrozenTrial) -> str | None:
    """The failure reason of a trial that did not complete (``None`` when it completed)."""
    if trial.state == TrialState.COMPLETE:
        return None
    return trial.user_attrs.get("fail_reason", trial.state.name)
