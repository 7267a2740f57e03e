"""Config schema of the sweeper, registered as ``hydra/sweeper=optuna``."""


from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore


@dataclass
class NoteOptunaSweeperConf:
    """Settings under ``hydra.sweeper``.

    Unlike the published hydra-optuna-sweeper: trials prune on intermediate rewards, a finished
    trial frees its slot at once (no blocking batches), and each trial runs in a fresh process.
    """

    _target_: str = "hydra_plugins.note_optuna_sweeper.sweeper.NoteOptunaSweeper"
    # Hydra must not build the sampler node's _target_ itself: the sweeper maps it to its own sampler
    _recursive_: bool = False
    # a name (hydra.sweeper.sampler=random: tpe, random, cmaes, gp, grid, qmc) or, as in the published
    # plugin, a node: hydra.sweeper.sampler._target_=optuna.samplers.RandomSampler hydra.sweeper.sampler.seed=0
    sampler: Any = field(default_factory=lambda: {"_target_": "optuna.samplers.TPESampler", "seed": None})
    sampler_seed: Optional[int] = None
    n_startup_trials: int = 5
    pruner: str = "median"        # median, percentile, successive_halving, hyperband, threshold, none
    n_warmup_steps: int = 2
    percentile: float = 25.0
    threshold_lower: Optional[float] = None
    direction: str = "maximize"
    storage: Optional[str] = None  # null: a journal file in the sweep dir
    study_name: Optional[str] = None  # null: <agent>_<env id>, as tuner=optuna names its studies
    resume: str = "auto"           # force: continue a study made with another agent, env, budget or space
    n_trials: int = 20             # finished (complete + pruned) trials of the study
    n_jobs: int = 1                # trial processes at once
    max_failures: Optional[int] = None
    report_every: int = 5          # episodes between intermediate reports
    trial_timeout: Optional[float] = None
    trial_memory_mb: Optional[int] = None  # MiB a trial may allocate beyond its start-up size
    n_seeds: int = 1               # seeds per trial (seed, seed + 1, ...), aggregated below
    aggregation: str = "mean"      # mean, median, min
    preload: bool = True
    # true: launch n_jobs trials, then wait for all of them (the published plugin's batches; for comparison)
    blocking: bool = False
    # search space as in hydra-optuna-sweeper: {key: sweep expression}; command-line sweeps add to it
    params: dict[str, Any] = field(default_factory=dict)
    # known-good parameter sets to try first ([{optimizer.lr: 1e-3}], Optuna's enqueue_trial), and the
    # sweep's own values of the searched keys as trial 0 of a new study (as tuner=optuna does)
    enqueue: Optional[list[dict[str, Any]]] = None
    enqueue_defaults: bool = True
    # the trials' logger when the command line selects none (`logger=...` wins): wandb, offline by
    # default, as in tuner=optuna studies; null keeps the job config's own default (console)
    logger: Optional[str] = "wandb"


ConfigStore.instance().store(group="hydra/sweeper", name="optuna", node=NoteOptunaSweeperConf, provider="note_rl")
