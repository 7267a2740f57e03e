"""Settings of an Optuna study (``tuner=optuna``) and the sampler / pruner they select."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import optuna
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ..common.errors import ConfigError
from ..config.search import Param
from .identity import RESUME_MODES
from .optimisers import THRESHOLD, WILCOXON, build_pruner, build_sampler, check_optimisers, target_of
from .protocol import SeedSettings, check_seeds
from .reevaluate import ReevalSettings, check_reeval
from .gpus import check_gpus_per_trial
from .storage import check_storage

__all__ = ["TunerSettings", "tuner_settings", "make_sampler", "make_pruner"]

LAUNCHERS = ("local", "submitit_local", "submitit_slurm", "ray")


@dataclass
class TunerSettings:
    name: str = "optuna"
    study_name: str = "study"
    study_dir: str = "studies/study"
    storage: Optional[str] = None
    # a name (tpe, random, cmaes, gp, grid, qmc) or a {_target_: optuna.samplers.<Class>, ...} node
    # (tuner/study/optimisers.py); the same for the pruner
    sampler: Any = "tpe"
    sampler_seed: Optional[int] = None
    n_startup_trials: int = 5
    pruner: Any = "median"
    n_warmup_steps: int = 2
    percentile: float = 25.0
    threshold_lower: Optional[float] = None
    # pruner=wilcoxon: prune a trial whose seeds so far are worse than the best trial's same seeds at this
    # one-sided p-value (Optuna's WilcoxonPruner; each seed's final score is an instance)
    wilcoxon_p: float = 0.1
    direction: str = "maximize"
    n_trials: int = 20
    max_total_trials: Optional[int] = None
    max_failures: Optional[int] = None
    timeout: Optional[float] = None
    n_jobs: int = 1
    n_seeds: int = 1
    aggregation: str = "mean"
    trial_timeout: Optional[float] = None
    trial_memory_mb: Optional[int] = None
    report_every: int = 5
    preload: bool = True
    # trial 0 of a new study plays the config's own values of the searched parameters
    enqueue_defaults: bool = True
    # known-good parameter sets to try first ({"optimizer.lr": 1e-3, ...}), as Optuna's enqueue_trial
    enqueue: Optional[list[dict[str, Any]]] = None
    # a search space whose dearest trial is estimated at more than this times its cheapest is refused
    max_cost_ratio: float = 100.0
    # held-out re-evaluation of the top configs when the study ends (tuner.reevaluate)
    reevaluate: ReevalSettings = field(default_factory=ReevalSettings)
    # the AutoRL protocol's seeds: what trials tune on, what the answer is tested on (tuner/study/protocol.py)
    seeds: SeedSettings = field(default_factory=SeedSettings)
    # an existing study whose definition (agent, env, backend, budget, objective, search space: see
    # tuner/study/identity.py) differs from the command's: auto refuses it, force continues it with the new one
    resume: str = "auto"
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
    check_optimisers(s)  # each a name or a _target_ node that builds
    wilcoxon = target_of("pruner", s.pruner) == WILCOXON
    # the checks of tuner.wilcoxon_p / tuner.threshold_lower apply where the pruner is a name: a node of
    # the user's own carries its own p_threshold / lower
    by_name = isinstance(s.pruner, str)
    checks = [
        (s.direction in ("maximize", "minimize"), f"tuner.direction: {s.direction!r} must be maximize or minimize"),
        (_aggregation_ok(s.aggregation),
         f"tuner.aggregation: {s.aggregation!r} must be mean, median, min or a lower quantile q<percent> (q25)"),
        (not wilcoxon or _n_seeds(s) >= 2,
         f"tuner.pruner: wilcoxon compares a trial with the best one seed by seed; it needs tuner.n_seeds >= 2 "
         f"(or tuner.seeds.tuning with two seeds or more), got {_n_seeds(s)}"),
        (0.0 < s.wilcoxon_p < 1.0, f"tuner.wilcoxon_p: must be in (0, 1), got {s.wilcoxon_p}"),
        (not wilcoxon or not by_name or not 0.0 < s.wilcoxon_p < 1.0 or _n_seeds(s) >= wilcoxon_seeds(s.wilcoxon_p),
         f"tuner.pruner: wilcoxon can never prune with {_n_seeds(s)} seeds at tuner.wilcoxon_p={s.wilcoxon_p:g} "
         f"(the smallest one-sided p-value of n paired seeds is 1/2**n, {0.5 ** _n_seeds(s):g} here); use "
         f"tuner.n_seeds >= {wilcoxon_seeds(s.wilcoxon_p)} or a larger tuner.wilcoxon_p"),
        (s.resume in RESUME_MODES, f"tuner.resume: {s.resume!r} must be {' or '.join(RESUME_MODES)}"),
        (s.n_trials > 0, f"tuner.n_trials: must be > 0, got {s.n_trials}"),
        (s.n_jobs > 0, f"tuner.n_jobs: must be > 0, got {s.n_jobs}"),
        (check_gpus_per_trial(s.gpus_per_trial) is None, str(check_gpus_per_trial(s.gpus_per_trial))),
        # RLIMIT_AS counts virtual memory, and CUDA reserves far more address space than any cap would allow
        (s.gpus_per_trial is None or s.trial_memory_mb is None,
         "tuner.trial_memory_mb: caps a trial's address space, which CUDA's own reservation exceeds; leave it "
         "unset with tuner.gpus_per_trial (a fraction caps GPU memory instead)"),
        (s.workers > 0, f"tuner.workers: must be > 0, got {s.workers}"),
        (s.worker >= 0, f"tuner.worker: must be >= 0, got {s.worker}"),
        (s.worker_launcher in LAUNCHERS,
         f"tuner.worker_launcher: {s.worker_launcher!r} is not one of {', '.join(LAUNCHERS)}"),
        (0 < s.n_seeds <= 1000, f"tuner.n_seeds: must be from 1 to 1000, got {s.n_seeds}"),
        (s.report_every > 0, f"tuner.report_every: must be > 0, got {s.report_every}"),
        (s.max_total_trials is None or s.max_total_trials > 0, "tuner.max_total_trials: must be > 0"),
        (s.trial_timeout is None or s.trial_timeout > 0, "tuner.trial_timeout: must be > 0"),
        (s.trial_memory_mb is None or s.trial_memory_mb > 0, "tuner.trial_memory_mb: must be > 0"),
        (target_of("pruner", s.pruner) != THRESHOLD or not by_name or s.threshold_lower is not None,
         "tuner.threshold_lower: the threshold pruner needs a lower bound"),
        (bool(s.study_name), "tuner.study_name: must not be empty"),
        # the study dir is derived from the name: it must stay inside studies/
        (not any(c in s.study_name for c in "/\\\0") and not s.study_name.startswith("."),
         f"tuner.study_name: {s.study_name!r} must be a plain name (no '/', '\\' or leading '.')"),
        (s.max_cost_ratio >= 1, f"tuner.max_cost_ratio: must be >= 1, got {s.max_cost_ratio}"),
        (0.0 <= s.percentile <= 100.0, f"tuner.percentile: must be in [0, 100], got {s.percentile}"),
        (s.n_warmup_steps >= 0, f"tuner.n_warmup_steps: must be >= 0, got {s.n_warmup_steps}"),
        (s.n_startup_trials >= 0, f"tuner.n_startup_trials: must be >= 0, got {s.n_startup_trials}"),
        (s.timeout is None or (math.isfinite(s.timeout) and s.timeout > 0), f"tuner.timeout: must be > 0 seconds, got {s.timeout}"),
        (s.max_failures is None or s.max_failures >= 0, f"tuner.max_failures: must be >= 0, got {s.max_failures}"),
        (s.sampler_seed is None or s.sampler_seed >= 0, f"tuner.sampler_seed: must be >= 0, got {s.sampler_seed}"),
        (s.threshold_lower is None or math.isfinite(s.threshold_lower),
         f"tuner.threshold_lower: must be a finite number, got {s.threshold_lower}"),
        (math.isfinite(s.max_cost_ratio), f"tuner.max_cost_ratio: must be finite, got {s.max_cost_ratio}"),
    ]
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)
    check_reeval(s.reevaluate)
    check_seeds(s.seeds, s.n_seeds)
    check_storage(s.storage)  # before the driver creates the study dir or connects anywhere
    return s


def _aggregation_ok(how: str) -> bool:
    """``mean``, ``median``, ``min`` or ``q<percent>`` with a percent from 0 to 50 (a *lower* quantile)."""
    if how in ("mean", "median", "min"):
        return True
    try:
        return how.startswith("q") and 0.0 <= float(how[1:]) <= 50.0 and math.isfinite(float(how[1:]))
    except ValueError:
        return False


def wilcoxon_seeds(p: float) -> int:
    """The fewest paired seeds at which the Wilcoxon pruner can stop a trial at p-value ``p``: a trial
    worse than the best one on all n seeds has the smallest exact one-sided p-value, 1 / 2**n, and Optuna
    prunes when the p-value is below ``p`` (0.1: 4 seeds; seen in a benchmark study of 2 seeds per trial
    that pruned nothing).  A ``p`` outside (0, 1) (refused on its own) gives 1 rather than looping."""
    if not 0.0 < p < 1.0:
        return 1
    n = 1
    while 0.5 ** n >= p:
        n += 1
    return n


def _n_seeds(s: TunerSettings) -> int:
    tuning = s.seeds.tuning
    return len(tuning) if tuning else s.n_seeds


def make_sampler(s: TunerSettings, space: list[Param]) -> optuna.samplers.BaseSampler:
    """The study's sampler: ``tuner.sampler``'s ``_target_`` node (a name resolves to one), built."""
    return build_sampler(s, space)


def make_pruner(s: TunerSettings) -> optuna.pruners.BasePruner:
    """The study's pruner: ``tuner.pruner``'s ``_target_`` node (a name resolves to one), built."""
    return build_pruner(s)
