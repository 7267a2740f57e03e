"""Helpers shared by the finders' drivers: optimizers and agents that cross process boundaries
(rebuilt in the candidate's process by :mod:`tuner.run.finder_child`), studies for the Python API."""

from __future__ import annotations

import os
import time
from typing import Any

import optuna

from ..study.storage import describe, make_storage

__all__ = ["optimizer_spec", "python_api_study", "as_list", "wandb_options", "strategy_spec", "dumps_agent"]

# conf/logger/wandb.yaml, for Python-API finders (which have no Hydra config); p=0: trials are quiet
WANDB_DEFAULTS: dict[str, Any] = {"name": "wandb", "p": 0, "project": "note-rl-tuner", "entity": None,
                                  "mode": "offline", "log_every": 1, "tags": [], "dir": None, "log_model": True,
                                  "log_gif": False, "gif_max_steps": 500, "init_timeout": 90.0}


def as_list(obj: Any) -> list[Any]:
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def wandb_options(wandb: Any) -> dict[str, Any] | None:
    """The ``logger`` options of a Python-API finder's ``wandb=`` argument: ``None``/``False`` (no
    wandb run, the default), ``True`` (offline runs, project ``note-rl-tuner``) or a dict of
    ``conf/logger/wandb.yaml`` keys, e.g. ``dict(project="lr-tests", mode="offline")``."""
    if wandb is None or wandb is False:
        return None
    if wandb is True:
        return dict(WANDB_DEFAULTS)
    if not isinstance(wandb, dict):
        raise TypeError(f"wandb= takes None, True or a dict of logger options, got {type(wandb).__name__}")
    unknown = sorted(set(wandb) - set(WANDB_DEFAULTS))
    if unknown:
        raise ValueError(f"wandb=: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(WANDB_DEFAULTS))}")
    return {**WANDB_DEFAULTS, **wandb, "name": "wandb"}


def optimizer_spec(agent: Any, opt: Any) -> dict[str, Any]:
    """A picklable description that rebuilds ``opt`` (same class and hyperparameters, fresh state)."""
    return agent.backend.optimizer_recipe(opt)


def strategy_spec(agent: Any, strategy: Any, finder: str) -> dict[str, Any] | None:
    """What a candidate's fresh process needs to rebuild ``strategy`` (the seeds' ``find(...,
    strategy=strategy)``): a ``MirroredStrategy``'s devices.  The candidate then unpickles the agent
    inside the new strategy's scope and trains it with ``distributed_training``."""
    if strategy is None:
        return None
    kind = type(strategy).__name__
    from note_rl.backends import backend_info

    backend = getattr(agent, "backend_name", "")
    if "mirrored" not in dict(backend_info(backend).strategies):
        raise ValueError(f"{finder}.find(strategy={kind}): strategy= is for Keras agents (tf.distribute); a "
                         f"backend={backend} agent trains data-parallel with distributed_training")
    if kind != "MirroredStrategy":
        raise ValueError(f"{finder}.find(strategy={kind}): a finder trains each candidate in one fresh process, "
                         "so it takes a MirroredStrategy (the devices of one machine); train across machines "
                         "with distributed_training")
    # the backend that makes the strategy again in the candidate's process (run.finder_child.make_strategy)
    return {"kind": "mirrored", "backend": backend, "devices": [str(d) for d in strategy.extended.worker_devices]}


def dumps_agent(agent: Any, distributed: bool) -> bytes:
    """``pickle.dumps(agent)``; ``distributed``: the agent was built in a strategy's scope, whose
    variables cannot be pickled (they hold weak references to the strategy), so its backend sends each
    as its value, made again inside the candidate's strategy scope, where a new variable is a
    distributed one again (:meth:`~note_rl.backends.Backend.dumps_distributed`)."""
    import pickle

    if not distributed:
        return pickle.dumps(agent)
    return agent.backend.dumps_distributed(agent)


def python_api_study(kind: str, storage: str | None, study_name: str | None, study_dir: str | None,
                     direction: str) -> tuple[optuna.Study, str, str]:
    """The study a Python-API finder records into: ``studies/<study_name>`` with a journal file by
    default (the same storages as ``tuner=optuna``, so optuna-dashboard shows it)."""
    name = study_name or f"{kind}_{time.strftime('%Y%m%d-%H%M%S')}"
    folder = os.path.abspath(study_dir or os.path.join("studies", name))
    os.makedirs(folder, exist_ok=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=name, storage=make_storage(storage, folder), load_if_exists=True,
                                direction=direction, sampler=optuna.samplers.RandomSampler(),
                                pruner=optuna.pruners.NopPruner())
    study.set_user_attr("finder", kind)
    return study, folder, describe(storage, folder)
