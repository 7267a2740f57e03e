"""What a finder's fresh process runs: train one agent (pickled by the Python API, or built from
a config) under a recorder, save the recorded arrays, and summarise them for the driver; and what
rebuilds, in that process, the optimizers and strategy the driver described."""

from __future__ import annotations

import os
import time
import pickle
from typing import Any, Callable, Sequence

import numpy as np

from note_rl.backends import get_backend

from ..logs.results import weights_digest
from ..logs.wandb_logger import WandbCallback
from .recorders import EpisodeRecorder, LRRangeTest

__all__ = ["make_recorder", "run_pickled", "summarise", "build_optimizers", "describe_optimizer", "make_strategy"]


def build_optimizers(agent: Any, specs: Sequence[dict[str, Any]]) -> list[Any]:
    """Optimizers from :func:`~tuner.finders.common.optimizer_spec` descriptions: one over all of the agent's parameter
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


def make_strategy(spec: dict[str, Any] | None) -> Any:
    """The strategy of :func:`tuner.finders.common.strategy_spec`, rebuilt first thing in a candidate's process by its
    backend (CPU devices beyond the first are logical ones, which must be made before TensorFlow starts)."""
    if spec is None:
        return None
    cpus = [int(d.rsplit(":", 1)[1]) for d in spec["devices"] if "device:CPU:" in d]
    logical_cpus = max(cpus) + 1 if cpus and max(cpus) > 0 else None
    return get_backend(spec["backend"]).make_strategy(spec["kind"], devices=spec["devices"], logical_cpus=logical_cpus)


def make_recorder(finder: dict[str, Any], report: Callable[[int, float], bool] | None) -> EpisodeRecorder:
    """The recorder a finder spec asks for (``kind``: ``lr`` or ``episodes``)."""
    if finder["kind"] == "lr":
        return LRRangeTest(finder["start_lr"], finder["end_lr"], finder["N"], finder["window_size"],
                           finder["per"], finder["metrics"], report)
    return EpisodeRecorder(finder["metrics"], report)


def summarise(recorder: EpisodeRecorder, run_dir: str, extra: dict[str, Any]) -> dict[str, Any]:
    """Save ``finder.npz`` in ``run_dir`` and build the result payload."""
    os.makedirs(run_dir, exist_ok=True)
    arrays = recorder.arrays()
    np.savez(os.path.join(run_dir, "finder.npz"), **arrays)
    if isinstance(recorder, LRRangeTest):
        series = recorder.normalized if recorder.metrics == "reward" else recorder.step_losses
        if not series:
            raise RuntimeError(f"the range test recorded no {recorder.metrics} before the lr reached end_lr "
                               f"(N={recorder.N} {recorder.per}s); raise N or use per=episode")
        value = max(series) if recorder.metrics == "reward" else min(series)
    else:
        value = recorder.mean()
    attrs = dict(extra, rewards=recorder.rewards, losses=recorder.losses, gradient_steps=recorder.updates,
                 started_at=recorder.started, ended_at=recorder.ended, metric=recorder.metrics)
    return {"status": "complete", "value": value, "attrs": attrs}


def run_pickled(payload: dict[str, Any], finder: dict[str, Any], run_dir: str,
                report: Callable[[int, float], bool]) -> dict[str, Any]:
    """Train the pickled agent of a Python-API finder in this (fresh) process (``payload``: see
    :func:`tuner.finders.lr.agent_spec`)."""
    from note_rl import NonFiniteLossError

    import contextlib

    strategy = make_strategy(payload.get("strategy"))  # before TensorFlow starts (logical CPUs)
    with strategy.scope() if strategy is not None else contextlib.nullcontext():  # networks built in it
        agent = pickle.loads(payload["agent"])  # noqa: S301 - our own bytes, sent by the parent process
        optimizers = build_optimizers(agent, payload["optimizers"])
    recorder = make_recorder(finder, report)
    digest = weights_digest(agent)
    optimizer = optimizers if len(optimizers) > 1 else optimizers[0]
    callbacks: list[Any] = [recorder]
    if payload.get("logger"):  # wandb= opt-in; after the recorder, which puts the LR point in the logs
        callbacks.append(WandbCallback(_wandb_config(agent, payload, finder), run_dir))
    kwargs = dict(payload["train"], callbacks=callbacks, p=0)
    try:
        if strategy is not None:
            agent.distributed_training(optimizer, strategy, payload["episodes"], **kwargs)
        else:
            agent.fit(optimizer, payload["episodes"], **kwargs)
    except NonFiniteLossError:
        if finder["kind"] != "lr":
            raise
        recorder.ended = recorder.ended or time.time()  # diverged at a high lr: expected
    replicas = strategy.num_replicas_in_sync if strategy is not None else 1
    return summarise(recorder, run_dir, {"initial_weights_sha256": digest, "env_steps": agent.step_counter,
                                         "replicas": replicas})


def _wandb_config(agent: Any, spec: dict[str, Any], finder: dict[str, Any]) -> dict[str, Any]:
    """What :class:`~tuner.logs.wandb_logger.WandbCallback` needs of a config, for a pickled agent (no
    Hydra config): the logger options, names for the run's tags, and what the finder ran."""
    env = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
    env_id = getattr(getattr(env, "spec", None), "id", None) or (type(env).__name__ if env is not None else "none")
    return {"logger": spec["logger"], "agent": {"name": type(agent).__name__}, "backend": {"name": agent.backend_name},
            "env": {"id": env_id}, "objective": {"last_k": 20}, "finder": finder, "episodes": spec["episodes"],
            "optimizers": [describe_optimizer(o) for o in spec["optimizers"]],
            "train": {k: v for k, v in spec["train"].items() if isinstance(v, (int, float, str, bool, type(None)))}}
