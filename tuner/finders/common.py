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
    return {"kind": "mirrored", "devices": [str(d) for d in strategy.extended.worker_devices]}


def dumps_agent(agent: Any, distributed: bool) -> bytes:
    """``pickle.dumps(agent)``; ``distributed``: the agent was built in a strategy's scope, whose
    variables cannot be pickled (they hold weak references to the strategy), so each goes as its
    value and is made again by :func:`plain_variable` (inside the candidate's strategy scope, where
    a new variable is a distributed one again)."""
    import io
    import pickle

    if not distributed:
        return pickle.dumps(agent)
    import numpy as np
    import tensorflow as tf

    class _Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, tf.distribute.DistributedValues) and hasattr(obj, "read_value"):
                return plain_variable, (np.asarray(obj.read_value()), bool(obj.trainable), obj.name.split(":")[0])
            return NotImplemented

    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(agent)
    return buffer.getvalue()


def plain_variable(value: Any, trainable: bool, name: str) -> Any:
    """A ``tf.Variable`` of ``value`` (see :func:`dumps_agent`)."""
    import tensorflow as tf

    return tf.Variable(value, trainable=trainable, name=name)


def make_strategy(spec: dict[str, Any] | None) -> Any:
    """The strategy of :func:`strategy_spec`, rebuilt first thing in a candidate's process (CPU devices
    beyond the first are logical ones, which must be made before TensorFlow starts)."""
    if spec is None:
        return None
    import tensorflow as tf

    cpus = [int(d.rsplit(":", 1)[1]) for d in spec["devices"] if "device:CPU:" in d]
    if cpus and max(cpus) > 0:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * (max(cpus) + 1))
    return tf.distribute.MirroredStrategy(spec["devices"])


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
