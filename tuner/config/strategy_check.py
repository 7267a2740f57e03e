"""Config checks of the ``strategy`` group: torch DDP replicas and tf.distribute strategies need
the right backend, evenly split batches, a communication backend and (for clusters) ``TF_CONFIG``.
What each strategy needs is a fact of its class (:mod:`tuner.config.strategies`), not of its name."""

from __future__ import annotations

import json
import os
from typing import Any

from note_rl.backends import backend_info

from ..common.errors import ConfigError
from .strategies import strategy_of

__all__ = ["check_strategy"]


def check_strategy(cfg: Any) -> None:
    """One-line errors for a strategy the backend lacks, a batch the replicas cannot split evenly, an
    unknown communication backend, or a cluster strategy without its TF_CONFIG jobs."""
    s = strategy_of(cfg.strategy)
    if s.backend is None:  # single, pool_network: every backend
        return
    if cfg.backend.name != s.backend:
        # the backend's own words for the strategy, and the ones the chosen backend has instead
        what = dict(backend_info(s.backend).strategies).get(s.kind, type(s).__name__)
        own = ", ".join(name for name, _ in backend_info(cfg.backend.name).strategies)
        raise ConfigError(f"strategy={s.name}: {what} needs backend={s.backend}, not backend={cfg.backend.name} "
                          f"(backend={cfg.backend.name}'s: {own})")
    if s.replicated:
        _check_replicas(cfg)
    if s.cluster_jobs is not None:
        _check_cluster(cfg, s.cluster_jobs)


def _check_replicas(cfg: Any) -> None:
    s = cfg.strategy
    if s.comm not in (None, "gloo", "nccl"):
        raise ConfigError(f"strategy.comm={s.comm}: choose gloo, nccl (GPUs) or null (nccl for agents on a GPU, else gloo)")
    batch = cfg.agent.get("batch") if hasattr(cfg.agent, "get") else getattr(cfg.agent, "batch", None)
    if batch is not None and batch % s.replicas:
        raise ConfigError(f"strategy.replicas={s.replicas}: agent.batch={batch} does not split evenly over the "
                          f"replicas; make it a multiple of {s.replicas}")


def _check_cluster(cfg: Any, needed: tuple[str, ...]) -> None:
    """multi_worker, parameter_server: single runs, one per machine, the cluster in TF_CONFIG."""
    name = cfg.strategy.name
    if cfg.tuner.name != "none":
        raise ConfigError(f"strategy={name}: a cluster strategy trains single runs (every machine runs the same "
                          f"command with its TF_CONFIG), not tuner={cfg.tuner.name}")
    try:
        cluster = json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster") or {}
    except (ValueError, AttributeError):
        raise ConfigError(f"strategy={name}: TF_CONFIG is not valid JSON") from None
    missing = [job for job in needed if not cluster.get(job)]
    if missing:
        raise ConfigError(f"strategy={name}: TF_CONFIG names no {' and no '.join(missing)} job; set it on every "
                          'machine, e.g. TF_CONFIG=\'{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
                          '"task": {"type": "worker", "index": 0}}\'')
