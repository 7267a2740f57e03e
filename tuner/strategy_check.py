"""Config checks of the ``strategy`` group: torch DDP replicas and tf.distribute strategies need
the right backend, evenly split batches, a communication backend and (for clusters) ``TF_CONFIG``."""

from __future__ import annotations

import json
import os
from typing import Any

from .schema import ConfigError

__all__ = ["check_strategy"]


def check_strategy(cfg: Any) -> None:
    """One-line errors for a strategy the backend lacks, a batch the replicas cannot split evenly, an
    unknown communication backend, or a cluster strategy without its TF_CONFIG jobs."""
    s = cfg.strategy
    if s.name in ("mirrored", "multi_worker", "parameter_server"):
        _check_tf_strategy(cfg)
        return
    if s.name != "ddp":
        return
    if cfg.backend.name != "torch":
        raise ConfigError(f"strategy=ddp: data-parallel replicas run on torch.distributed and need backend=torch, "
                          f"not backend={cfg.backend.name}")
    if s.comm not in (None, "gloo", "nccl"):
        raise ConfigError(f"strategy.comm={s.comm}: choose gloo, nccl (GPUs) or null (nccl for agents on a GPU, else gloo)")
    batch = cfg.agent.get("batch") if hasattr(cfg.agent, "get") else getattr(cfg.agent, "batch", None)
    if batch is not None and batch % s.replicas:
        raise ConfigError(f"strategy.replicas={s.replicas}: agent.batch={batch} does not split evenly over the "
                          f"replicas; make it a multiple of {s.replicas}")


def _check_tf_strategy(cfg: Any) -> None:
    """strategy=mirrored | multi_worker | parameter_server: tf.distribute strategies (backend=tf);
    the cluster ones run single runs, one per machine, with the cluster in TF_CONFIG."""
    name = cfg.strategy.name
    if cfg.backend.name != "tf":
        raise ConfigError(f"strategy={name}: a tf.distribute strategy needs backend=tf, not "
                          f"backend={cfg.backend.name} (torch's data parallelism is strategy=ddp)")
    if name == "mirrored":
        return
    if cfg.tuner.name != "none":
        raise ConfigError(f"strategy={name}: a cluster strategy trains single runs (every machine runs the same "
                          f"command with its TF_CONFIG), not tuner={cfg.tuner.name}")
    try:
        cluster = json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster") or {}
    except (ValueError, AttributeError):
        raise ConfigError(f"strategy={name}: TF_CONFIG is not valid JSON") from None
    needed = ("worker",) if name == "multi_worker" else ("worker", "ps")
    missing = [job for job in needed if not cluster.get(job)]
    if missing:
        raise ConfigError(f"strategy={name}: TF_CONFIG names no {' and no '.join(missing)} job; set it on every "
                          'machine, e.g. TF_CONFIG=\'{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
                          '"task": {"type": "worker", "index": 0}}\'')
