"""Settings of an Optuna study (``tuner=optuna``) and the sampler / pruner they select."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import optuna
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ..common.errors import ConfigError
from ..config import schema as _resolvers  # noqa: F401 - registers ${name_part:...} (study_name's default)
from ..config.search import Param
from .gpus import check_gpus_per_trial
from .optimisers import THRESHOLD, WILCOXON, build_pruner, build_sampler, check_optimisers, target_of
from .protocol import SeedSettings, check_seeds
from .reevaluate import ReevalSettings, check_reeval
from .study_schema import PRUNERS, SAMPLERS, StudyFiles, StudySearch, TrialLimits, check_fields, run_budget_problem

__all__ = ["TunerSettings", "tuner_settings", "runs_per_trial", "make_sampler", "make_pruner", "SAMPLERS", "PRUNERS"]

LAUNCHERS = ("local", "submitit_local", "submitit_slurm", "ray")


@dataclass
class TunerSettings(StudySearch, TrialLimits, StudyFiles):
    """``tuner=optuna``: the shared study settings (:mod:`tuner.study.study_schema`: study_name, storage,
    resume, study_dir, n_jobs, trial_timeout, trial_memory_mb, sampler ... enqueue) and the driver's own."""

    name: str = "optuna"
    # pruner=wilcoxon: prune a trial whose seeds so far are worse than the best trial's same seeds at this
    # one-sided p-value (Optuna's WilcoxonPruner; each seed's final score is an instance, or with
    # seed_order=interleaved each seed's every evaluation)
    wilcoxon_p: float = 0.1
    max_total_trials: Optional[int] = None
    timeout: Optional[float] = None
    # a search space whose dearest trial is estimated at more than this times its cheapest is refused
    max_cost_ratio: float = 100.0
    # held-out re-evaluation of the top configs when the study ends (tuner.reevaluate)
    reevaluate: ReevalSettings = field(default_factory=ReevalSettings)
    # the AutoRL protocol's seeds: what trials tune on, what the answer is tested on (tuner/study/protocol.py)
    seeds: SeedSettings = field(default_factory=SeedSettings)
    # GPUs each trial gets (a fraction shares one GPU: 0.25 puts four trials on it); null: no placement
    gpus_per_trial: Optional[float] = None
    # study drivers this command runs (itself + workers - 1 more, on one storage: tuner/study/workers.py)
    workers: int = 1
    worker_launcher: str = "local"
    # the launcher's own settings: submitit's executor parameters (slurm_partition, timeout_min, ...),
    # Ray's address / num_cpus / num_gpus per worker
    worker_resources: dict[str, Any] = field(default_factory=dict)
    # set by the command on the drivers it starts (1, 2, ...): they run trials only; 0: the command itself
    worker: int = 0


def tuner_settings(node: Any) -> TunerSettings:
    """Typed, checked :class:`TunerSettings` from the ``tuner`` config node."""
    try:
        if OmegaConf.is_config(node):
            node = OmegaConf.to_container(node, resolve=True)  # resolve in the full config's context
        merged = OmegaConf.merge(OmegaConf.structured(TunerSettings), node)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or "tuner"
        raise ConfigError(f"tuner.{key}: {str(getattr(exc, 'msg', exc)).splitlines()[0]}") from None
    s: TunerSettings = OmegaConf.to_object(merged)  # type: ignore[assignment]
    # the shared keys' own checks first (tuner.sampler, tuner.n_jobs, tuner.storage, ...), then that the
    # sampler and pruner (names or _target_ nodes) build, then how this driver's keys go together
    check_fields(s, "tuner")
    check_optimisers(s)
    wilcoxon = target_of("pruner", s.pruner) == WILCOXON
    # the checks of tuner.wilcoxon_p / tuner.threshold_lower apply where the pruner is a name: a node of
    # the user's own carries its own p_threshold / lower
    by_name = isinstance(s.pruner, str)
    seeds = runs_per_trial(s)
    checks = [
        (not wilcoxon or seeds >= 2,
         f"tuner.pruner: wilcoxon compares a trial with the best one seed by seed; it needs tuner.n_seeds >= 2 "
         f"(or tuner.seeds.tuning with two seeds or more), got {seeds}"),
        (0.0 < s.wilcoxon_p < 1.0, f"tuner.wilcoxon_p: must be in (0, 1), got {s.wilcoxon_p}"),
        # one seed after another, a trial stops only between its seeds, so it is judged on n - 1 of them at
        # the most; in turns, every seed's every evaluation is an instance
        (not wilcoxon or not by_name or not 0.0 < s.wilcoxon_p < 1.0 or s.seed_order == "interleaved"
         or seeds > wilcoxon_seeds(s.wilcoxon_p),
         f"tuner.pruner: wilcoxon can never prune with {seeds} seeds at tuner.wilcoxon_p={s.wilcoxon_p:g} "
         f"(a trial stops only before a seed it has not run, so it is judged on {seeds - 1} at the most, "
         f"whose smallest one-sided p-value is 1/2**{seeds - 1} = {0.5 ** (seeds - 1):g}); use "
         f"tuner.n_seeds >= {wilcoxon_seeds(s.wilcoxon_p) + 1} or a larger tuner.wilcoxon_p"),
        (check_gpus_per_trial(s.gpus_per_trial) is None, str(check_gpus_per_trial(s.gpus_per_trial))),
        # RLIMIT_AS counts virtual memory, and CUDA reserves far more address space than any cap would allow
        (s.gpus_per_trial is None or s.trial_memory_mb is None,
         "tuner.trial_memory_mb: caps a trial's address space, which CUDA's own reservation exceeds; leave it "
         "unset with tuner.gpus_per_trial (a fraction caps GPU memory instead)"),
        (s.workers > 0, f"tuner.workers: must be > 0, got {s.workers}"),
        (s.worker >= 0, f"tuner.worker: must be >= 0, got {s.worker}"),
        (s.worker_launcher in LAUNCHERS,
         f"tuner.worker_launcher: {s.worker_launcher!r} is not one of {', '.join(LAUNCHERS)}"),
        (s.max_total_trials is None or s.max_total_trials > 0, "tuner.max_total_trials: must be > 0"),
        (run_budget_problem(s.max_runs, seeds) is None,
         f"tuner.max_runs: {run_budget_problem(s.max_runs, seeds)}"),
        (target_of("pruner", s.pruner) != THRESHOLD or not by_name or s.threshold_lower is not None,
         "tuner.threshold_lower: the threshold pruner needs a lower bound"),
        (s.max_cost_ratio >= 1, f"tuner.max_cost_ratio: must be >= 1, got {s.max_cost_ratio}"),
        (s.timeout is None or (math.isfinite(s.timeout) and s.timeout > 0), f"tuner.timeout: must be > 0 seconds, got {s.timeout}"),
        (math.isfinite(s.max_cost_ratio), f"tuner.max_cost_ratio: must be finite, got {s.max_cost_ratio}"),
    ]
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)
    check_reeval(s.reevaluate)
    check_seeds(s.seeds, s.n_seeds)
    return s


def wilcoxon_seeds(p: float) -> int:
    """The fewest paired seeds at which the Wilcoxon pruner can stop a trial at p-value ``p``: a trial
    worse than the best one on all n seeds has the smallest exact one-sided p-value, 1 / 2**n, and Optuna
    prunes when the p-value is below ``p`` (0.1: 4 seeds).  A trial stops only before a seed it has not
    run, so a study needs one seed per trial more than this (benchmark studies of 2 and of 4 seeds per
    trial pruned nothing).  A ``p`` outside (0, 1) (refused on its own) gives 1 rather than looping."""
    if not 0.0 < p < 1.0:
        return 1
    n = 1
    while 0.5 ** n >= p:
        n += 1
    return n


def runs_per_trial(s: TunerSettings) -> int:
    """Training runs one trial makes: its tuning seeds (``tuner.seeds.tuning``), else ``tuner.n_seeds``."""
    tuning = s.seeds.tuning
    return len(tuning) if tuning else s.n_seeds


def make_sampler(s: TunerSettings, space: list[Param]) -> optuna.samplers.BaseSampler:
    """The study's sampler: ``tuner.sampler``'s ``_target_`` node (a name resolves to one), built."""
    return build_sampler(s, space)


def make_pruner(s: TunerSettings) -> optuna.pruners.BasePruner:
    """The study's pruner: ``tuner.pruner``'s ``_target_`` node (a name resolves to one), built."""
    return build_pruner(s)
