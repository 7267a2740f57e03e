"""Arguments of one ``train()`` call, validated once."""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["TrainSettings", "check_window_size", "offpolicy_only_conflict", "vec_env_conflict"]


@dataclass
class TrainSettings:
    """Options of ``train()`` besides the optimizer and the episode count.

    :param train_loss: Keras ``Mean`` metric updated with every loss (Keras contract; optional)
    :param pool_network: collect experience in ``processes`` worker processes
    :param processes: number of workers (default: CPU count)
    :param num_store: collection rounds per pool phase
    :param window_size: items dropped from a full buffer before an insert: an int, a float in
        (0, 1] (that fraction of a full segment, rounded up), or a callable returning either
    :param clearing_freq: every this many inserts drop ``window_size_`` items
    :param window_size_: see ``clearing_freq``
    :param window_size_ppo, window_size_pr: items dropped after each ``update_param()`` with PR
    :param jit_compile: ``tf.function(jit_compile=True)`` (Keras) / ``torch.compile`` (PyTorch; a string
        names torch.compile's mode, e.g. ``"reduce-overhead"`` for CUDA graphs)
    :param random: pool mode: place each worker's data in a segment drawn by inverse length
    :param save_data: include the replay buffer in full checkpoints
    :param callbacks: extra callbacks for this call (added to ``agent.callbacks``)
    :param p: number of progress prints over the run (Note_rl rule); ``0`` is silent
    :param steps: stop after this many environment steps (in addition to ``episodes``)
    :param parallel_store_and_training: pool mode: train on the previous phase's data while
        workers collect the next phase
    :param start_method: ``spawn`` or ``forkserver`` for pool workers
    :param processes_her: draw HER mini-batches (and their relabelled rewards) in this many
        sampler processes reading the buffer through shared memory (Note_rl V1025)
    :param processes_pr: draw prioritized mini-batches in this many sampler processes
    :param shuffle: uniform replay draws mini-batches without replacement from a shuffled pass over
        the stored items, a new pass when one is used up (Note_rl 001); default: with replacement
    :param parallel_training_and_save: periodic checkpoints are written by a separate process
        while training goes on (Note_rl HEAD); the next save waits for the previous one
    """

    train_loss: Any = None
    pool_network: bool = False
    processes: int | None = None
    num_store: int = 1
    window_size: int | float | Callable[..., int] | None = None
    clearing_freq: int | None = None
    window_size_: int | None = None
    window_size_ppo: int | None = None
    window_size_pr: int | None = None
    jit_compile: bool | str = True
    random: bool = False
    save_data: bool = True
    callbacks: list[Any] | None = None
    p: int | None = None
    steps: int | None = None
    parallel_store_and_training: bool = True
    start_method: str = "spawn"
    processes_her: int | None = None
    processes_pr: int | None = None
    shuffle: bool = False
    parallel_training_and_save: bool = False

    def __post_init__(self) -> None:
        if self.pool_network and self.processes is None:
            self.processes = os.cpu_count() or 1
        for name in ("processes", "num_store", "clearing_freq", "steps", "processes_her", "processes_pr"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ValueError(f"train({name}={value!r}): must be a positive integer")
        if self.start_method not in ("spawn", "forkserver"):
            raise ValueError(f"train(start_method={self.start_method!r}): use 'spawn' or 'forkserver'")
        check_window_size(self.window_size, "train(window_size=...)")
        if self.p is not None and (not isinstance(self.p, int) or self.p < 0):
            raise ValueError(f"train(p={self.p!r}): must be a non-negative integer")


def offpolicy_only_conflict(flag: str, values: dict[str, Any], pool_network: bool = False,
                            rollout: bool = False) -> str | None:
    """Why the off-policy, single-process feature ``flag`` (``HER`` or ``MARL``) cannot run with
    the settings in ``values`` (``PR``, ``PPO``, ``num_steps``) and ``train()`` options; ``None``
    when it can.  Each feature's docstring says why it excludes these."""
    if values.get("PR"):
        return f"{flag}=True cannot be combined with PR=True (prioritized replay)"
    if values.get("PPO") or rollout:
        return f"{flag}=True cannot be combined with PPO (on-policy training)"
    if values.get("num_steps"):
        return f"{flag}=True cannot be combined with num_steps (n-step returns)"
    if pool_network:
        return f"{flag}=True cannot be combined with pool_network=True (single-process collection only)"
    return None


def vec_env_conflict(n_envs: int, marl: bool = False, her: bool = False, pool_network: bool = False) -> str | None:
    """Why ``n_envs`` env copies in one process cannot run an off-policy agent with these features
    (``None`` when they can): a team, HER's episode staging and pool workers each step their own
    single env.  On-policy rollout agents take ``n_envs`` themselves and are not asked."""
    if (n_envs or 1) <= 1 or not (marl or her or pool_network):
        return None
    what = "MARL=True" if marl else "HER=True" if her else "pool_network=True"
    return f"n_envs={n_envs} (vectorised envs) cannot be combined with {what}; use n_envs=1"


def check_window_size(value: Any, where: str) -> None:
    """A window size is ``None``, a non-negative int, a float fraction in (0, 1] or a callable."""
    if value is None or callable(value):
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{where}: {value!r} is not an int, a fraction in (0, 1] or a callable")
    if not isinstance(value, numbers.Integral) and not 0.0 < value <= 1.0:
        raise ValueError(f"{where}: a float window is a fraction of the buffer, in (0, 1]; got {value!r}")
    if value < 0:
        raise ValueError(f"{where}: must be >= 0, got {value!r}")
