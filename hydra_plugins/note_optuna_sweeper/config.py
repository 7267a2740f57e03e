"""Config schema of the sweeper, registered as ``hydra/sweeper=optuna``.

The study settings it shares with ``tuner=optuna`` and the finders (``study_name``, ``storage``,
``resume``, ``n_jobs``, ``trial_timeout``, ``trial_memory_mb``, ``sampler`` ... ``enqueue``) are the
fields of :mod:`tuner.study.study_schema`, with their defaults, checks and docs; this class adds the
sweeper's own keys.
"""


from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore

# light: dataclasses and the checks only (Hydra imports this module at start-up)
from tuner.study.study_schema import StudyPlace, StudySearch, TrialLimits, redefault, setting


@dataclass
class NoteOptunaSweeperConf(StudySearch, TrialLimits, StudyPlace):
    """Settings under ``hydra.sweeper``.

    Unlike the published hydra-optuna-sweeper: trials prune on intermediate rewards, a finished
    trial frees its slot at once (no blocking batches), and each trial runs in a fresh process.
    """

    _target_: str = "hydra_plugins.note_optuna_sweeper.sweeper.NoteOptunaSweeper"
    # Hydra must not build the sampler node's _target_ itself: the sweeper maps it to its own sampler
    _recursive_: bool = False
    # a name (hydra.sweeper.sampler=random: tpe, random, cmaes, gp, grid, qmc) or, as in the published
    # plugin, a node: hydra.sweeper.sampler._target_=optuna.samplers.RandomSampler hydra.sweeper.sampler.seed=0
    # (the chosen name is checked as tuner.sampler is: NoteOptunaSweeper._check_settings)
    sampler: Any = setting(doc="a sampler name, or a {_target_: ..., seed: ...} node: the published plugin's six "
                               "classes map to the names, any other Optuna sampler (or a subclass of your own) is built "
                               "as tuner.sampler builds it",
                           factory=lambda: {"_target_": "optuna.samplers.TPESampler", "seed": None})
    # null: <agent>_<env id>, as tuner=optuna names its studies
    study_name: Optional[str] = redefault(StudyPlace, "study_name", None)
    # true: launch n_jobs trials, then wait for all of them (the published plugin's batches; for comparison)
    blocking: bool = False
    # search space as in hydra-optuna-sweeper: {key: sweep expression}; command-line sweeps add to it
    params: dict[str, Any] = field(default_factory=dict)
    # the trials' logger when the command line selects none (`logger=...` wins): wandb, offline by
    # default, as in tuner=optuna studies; null keeps the job config's own default (console)
    logger: Optional[str] = "wandb"


ConfigStore.instance().store(group="hydra/sweeper", name="optuna", node=NoteOptunaSweeperConf, provider="note_rl")
