"""Helpers shared by the finders: optimizers that cross process boundaries, weight digests,
studies for the Python API."""

from __future__ import annotations

import os
import time
from typing import Any, Sequence

import optuna

from ..storage import describe, make_storage
from ..train import weights_digest  # noqa: F401 - re-exported for the finders

__all__ = ["optimizer_spec", "build_optimizers", "weights_digest", "describe_optimizer",
           "python_api_study", "as_list", "wandb_options"]

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


def build_optimizers(agent: Any, specs: Sequence[dict[str, Any]]) -> list[Any]:
    """Optimizers from :func:`optimizer_spec` descriptions: one over all of the agent's parameter
    groups, or one per group (in the order of its update spec)."""
    groups = agent.update_spec().groups
    flat = agent.backend.flatten
    if len(specs) == 1:
        return [agent.backend.rebuild_optimizer(specs[0], [v for g in groups for v in flat(g.params)])]
    if len(specs) != len(groups):
        raise ValueError(f"{len(specs)} optimizers for {len(groups)} parameter groups {[g.name for g in groups]}")
    return [agent.backend.rebuild_optimizer(spec, flat(g.params)) for spec, g in zip(specs, groups)]


def describe_optimizer(spec: dict[str, Any]) -> str:
    name = spec["cls"].partition(":")[2]
    lr = spec.get("kwargs", spec.get("config", {})).get("lr", spec.get("config", {}).get("learning_rate"))
    return f"{name}(lr={lr:g})" if isinstance(lr, (int, float)) else name


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
