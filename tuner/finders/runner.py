"""Run a finder's candidates as trials of one Optuna study, each in a fresh process."""

from __future__ import annotations

import os
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from ..launcher import TrialProcess, context_for
from ..supervisor import Supervisor
from ..wandb_logger import JOB_TYPES, trial_meta

__all__ = ["Candidate", "CandidateMismatch", "run_candidates", "failure"]


class CandidateMismatch(ValueError):
    """The study already holds trials of other candidates (Optuna cannot widen a categorical
    parameter of an existing study); raised before any trial is created, so nothing is lost."""


class Candidate:
    """One training to run: its trial parameters and the child's spec (without run_dir / trial)."""

    def __init__(self, params: dict[str, Any], spec: dict[str, Any], backend: str) -> None:
        self.params = params
        self.spec = spec
        self.backend = backend


def run_candidates(study: optuna.Study, study_dir: str, candidates: list[Candidate], n_jobs: int = 1,
                   trial_timeout: float | None = None, user_attrs: dict[str, Any] | None = None) -> list[FrozenTrial]:
    """Each candidate becomes one trial with exactly its ``params`` (enqueued), run at most
    ``n_jobs`` at a time; returns the finished trials in candidate order."""
    dists = _distributions(study, candidates)
    sup = Supervisor(study, trial_timeout, quiet=True)
    pending = list(candidates)
    job_type = study.user_attrs.get("finder")  # lr_finder, opt_finder, parallel_finder: the wandb job_type
    job_type = job_type if job_type in JOB_TYPES else "trial"
    numbers: list[int] = []
    while pending or len(sup):
        while pending and len(sup) < max(1, n_jobs):
            cand = pending.pop(0)
            study.enqueue_trial(cand.params, skip_if_exists=False)
            trial = study.ask(dists)
            for key, value in (user_attrs or {}).items():
                trial.set_user_attr(key, value)
            run_dir = os.path.join(study_dir, "trials", f"{trial.number:04d}")
            trial.set_user_attr("run_dir", run_dir)
            spec = dict(cand.spec, trial=trial.number, run_dir=run_dir,
                        log_path=os.path.join(run_dir, "trial.log"),
                        wandb=trial_meta(study.study_name, trial.number, cand.params, job_type))
            sup.launch(trial, TrialProcess(spec, context_for(cand.backend), n_jobs=n_jobs))
            numbers.append(trial.number)
        sup.wait()
    by_number = {t.number: t for t in study.get_trials(deepcopy=False)}
    return [by_number[n] for n in numbers]


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
