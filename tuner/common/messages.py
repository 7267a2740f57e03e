"""What crosses the boundary between a driver and a trial process, one type per kind of message.

The driver starts a trial with a :class:`TrialSpec`.  The trial sends :class:`Report` after every
``report_every`` episodes and waits for a :class:`Decision`; it ends with one :class:`Result` or one
:class:`Failure`.  Plain dataclasses of plain values: they pickle across ``spawn`` and
``forkserver`` processes, and importing this module costs nothing (a trial never imports Optuna).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["TrialSpec", "Report", "Decision", "Result", "Failure", "seed_configs"]


@dataclass
class TrialSpec:
    """Everything a trial process needs.

    :param trial: the Optuna trial number (``None`` for a plain multirun job)
    :param backend: the backend the trial trains with (decides how its process starts)
    :param run_dir: where the trial writes ``result.json``, its log and its checkpoints
    :param configs: the resolved config of each training run (one per seed, see :func:`seed_configs`)
    :param report_every: episodes between two intermediate reports
    :param aggregation: how the seeds' scores combine into the objective (``mean``, ``median``, ``min``,
        ``lcb``, the mean less one standard error, or ``q<percent>``, a lower quantile such as ``q25``: the
        last three risk-averse)
    :param instances: each seed's final score is an *instance* reported as step ``i`` (seed index) for
        Optuna's ``WilcoxonPruner``, which may stop the trial between seeds; no per-episode reports
        (with ``interleaved``: every evaluation of every seed is one, at step ``i * 10000 + round``)
    :param interleaved: train the seeds in turns, each in a process of its own, and report their scores
        combined after each round (:mod:`tuner.run.seed_turns`); with a trial and two seeds or more
    :param memory_mb: MiB the trial may allocate beyond its start-up size (``None``: no cap)
    :param log_path: file that receives the trial's stdout and stderr (``None``: inherited)
    :param wandb: the wandb identity of the trial's runs (study, trial number, params)
    :param finder: a finder's recorder settings (LR range test, or per-episode recording)
    :param pickled: a Python-API finder's payload: the pickled agent, its optimizers' recipes,
        ``train()`` options, episodes and logger options
    :param threads: framework threads when the config does not set ``backend.threads``
    :param driver_pid: the driver's pid; the trial ends its process group when the driver is gone
    :param prefix: with ``log_path`` unset, a label each line of the process's output starts with
        (parallel multirun jobs share one terminal)
    :param gpus: the trial's ``CUDA_VISIBLE_DEVICES`` (``tuner.gpus_per_trial``; ``None``: the driver's own)
    :param gpu_fraction: the share of its GPU's memory the trial may use (a fraction of a GPU per trial)
    :param graceful: a plain run (Hydra multirun job) that, sent SIGTERM by its driver, stops at its
        next env step and saves its model and a ``result.json`` marked interrupted
    """

    trial: int | None
    backend: str
    run_dir: str
    configs: list[dict[str, Any]] = field(default_factory=list)
    report_every: int = 5
    aggregation: str = "mean"
    memory_mb: int | None = None
    log_path: str | None = None
    wandb: dict[str, Any] | None = None
    finder: dict[str, Any] | None = None
    pickled: dict[str, Any] | None = None
    threads: int | None = None
    driver_pid: int | None = None
    graceful: bool = False
    instances: bool = False
    interleaved: bool = False
    gpus: str | None = None
    gpu_fraction: float | None = None
    prefix: str | None = None  # "[job 3] ": each line the process (and its workers) prints starts with it


@dataclass(frozen=True)
class Report:
    """An intermediate value of the objective at ``step`` (trial -> driver)."""

    step: int
    value: float


@dataclass(frozen=True)
class Decision:
    """The answer to a :class:`Report`: stop (pruned) or go on (driver -> trial)."""

    prune: bool


@dataclass(frozen=True)
class Result:
    """The trial finished: ``complete`` with its objective ``value``, or ``pruned``; ``attrs`` are
    stored as the trial's user attributes."""

    status: str
    value: float | None
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Failure:
    """The trial raised: one line for the trial's ``fail_reason`` and the full traceback."""

    message: str
    traceback: str = ""


def seed_configs(cfg: dict[str, Any], n_seeds: int) -> list[dict[str, Any]]:
    """``n_seeds`` copies of a resolved config with seeds ``seed, seed + 1, ...``."""
    return [dict(cfg, seed=int(cfg["seed"]) + i) for i in range(max(1, int(n_seeds)))]
