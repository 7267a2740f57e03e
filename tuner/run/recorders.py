"""Callbacks that run inside a finder's training process: per-episode records and the LR range test."""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from note_rl.callbacks import Callback
from note_rl.core.run_context import current
from note_rl.update import optimizer_list


__all__ = ["EpisodeRecorder", "LRRangeTest", "windowed_normalize"]

# (step, value) -> True if the run should stop
Report = Callable[[int, float], bool]


def windowed_normalize(rewards: list[float], window_size: int) -> np.ndarray:
    """``z_i = (r_i - mean(w_i)) / (std(w_i) + 1e-8)`` with ``w_i`` the last ``window_size``
    rewards up to and including episode ``i`` (fewer at the start)."""
    r = np.asarray(rewards, dtype=np.float64)
    return np.array([_z(r[max(0, i - window_size + 1): i + 1]) for i in range(len(r))])


def _z(window: np.ndarray) -> float:
    return float((window[-1] - window.mean()) / (window.std() + 1e-8))


class EpisodeRecorder(Callback):
    """Per-episode reward and loss, timestamps, and an intermediate report after every episode.

    :param metrics: ``"reward"`` or ``"loss"`` - what is reported
    :param report: relay to the driver (``None``: record only)
    """

    def __init__(self, metrics: str = "reward", report: Report | None = None) -> None:
        if metrics not in ("reward", "loss"):
            raise ValueError(f"metrics must be 'reward' or 'loss', got {metrics!r}")
        self.metrics = metrics
        self.report = report
        self.rewards: list[float] = []
        self.losses: list[float | None] = []
        self.updates = 0  # gradient steps so far
        self.episode_updates: list[int] = []  # gradient steps made by the end of each episode
        self.started = self.ended = 0.0

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self.started = time.time()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self.ended = time.time()

    def on_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.updates += 1

    def on_episode_end(self, episode: int, logs: dict[str, Any] | None = None) -> None:
        logs = logs or {}
        self.episode_updates.append(self.updates)
        self.rewards.append(float(logs["reward"]))
        self.losses.append(None if logs.get("loss") is None else float(logs["loss"]))
        value = self.report_value()
        if self.report is not None and value is not None and self.report(episode, value):
            self.model.stop_training = True

    def report_value(self) -> float | None:
        return self.rewards[-1] if self.metrics == "reward" else self.losses[-1]

    def mean(self) -> float | None:
        """Mean reward (or mean loss over the episodes that trained) - the OptFinder metric."""
        values = self.rewards if self.metrics == "reward" else [v for v in self.losses if v is not None]
        return float(np.mean(values)) if values else None

    def arrays(self) -> dict[str, np.ndarray]:
        return {"rewards": np.asarray(self.rewards, dtype=np.float64),
                "losses": np.asarray([np.nan if v is None else v for v in self.losses], dtype=np.float64),
                "episode_updates": np.asarray(self.episode_updates, dtype=np.int64),
                "times": np.asarray([self.started, self.ended])}


class LRRangeTest(EpisodeRecorder):
    """Exponential learning-rate range test (Smith 2017, https://arxiv.org/abs/1506.01186).

    The learning rate of every optimizer starts at ``start_lr`` and is multiplied by
    ``factor = (end_lr / start_lr) ** (1 / N)`` after each update (``per="update"``) or after each
    episode during which the agent made a gradient step (``per="episode"``: episodes before learning
    starts, or between two of an off-policy agent's training rounds, keep the lr, so the whole range
    is spent on a policy that trains), so it reaches ``end_lr`` after ``N`` steps, where the test stops.  Episode
    rewards are normalised over a sliding window of ``window_size`` episodes; the normalised reward
    (or, with ``metrics="loss"``, the episode's loss) is reported as the intermediate value of step
    ``k``, the lr's exponent (``lr = start_lr * factor**k``) when the episode ended.  The episode's
    point (``lr``, ``normalized_reward``, ``loss``) is also put into the episode logs as
    ``logs["lr_finder"]``, where the wandb callback (later in the callback list) logs it against lr.
    """

    def __init__(self, start_lr: float, end_lr: float, N: int, window_size: int = 7, per: str = "update",
                 metrics: str = "reward", report: Report | None = None) -> None:
        super().__init__(metrics, report)
        if not (0 < start_lr < end_lr) or N < 1 or window_size < 1 or per not in ("update", "episode"):
            raise ValueError("LR range test needs 0 < start_lr < end_lr, N >= 1, window_size >= 1, "
                             f"per in (update, episode); got {start_lr}, {end_lr}, {N}, {window_size}, {per!r}")
        self.start_lr, self.end_lr, self.N = float(start_lr), float(end_lr), int(N)
        self.window_size, self.per = int(window_size), per
        self.factor = (self.end_lr / self.start_lr) ** (1.0 / self.N)
        self.k = 0
        self.lrs: list[float] = []           # the lr of each step (update or episode), then the final one
        self.step_losses: list[float] = []   # per update
        self.episode_lrs: list[float] = []   # the lr in force when each episode ended
        self.normalized: list[float] = []
        self.reported_steps: set[int] = set()

    @property
    def lr(self) -> float:
        # a power, not a running product: after N steps the lr is end_lr to rounding error
        return self.start_lr * self.factor ** self.k

    def _apply(self) -> None:
        for opt in optimizer_list(self.model.optimizer):
            self.model.backend.set_hparam(opt, "lr", self.lr)

    def _advance(self) -> None:
        self.lrs.append(self.lr)
        self.k += 1
        if self.k >= self.N:
            self.lrs.append(self.lr)  # end_lr: the range is covered
            self.model.stop_training = True
        self._apply()

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        super().on_train_begin(logs)
        run = current(self.model)
        if run is not None:
            # the range test sets the lr, and the rest stays put: a linear_decay schedule would overwrite
            # the lr before each round and shrink PPO's clip range to 0 over the test, which hides the
            # collapse at large learning rates that the test looks for
            for name in list(run.owner):
                run.claim(name, "lr_finder")
        self._apply()

    def on_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        super().on_batch_end(batch, logs)
        if self.per == "update" and self.k < self.N:
            self.step_losses.append(float((logs or {})["loss"]))
            self._advance()

    def on_episode_end(self, episode: int, logs: dict[str, Any] | None = None) -> None:
        trained = self.updates > (self.episode_updates[-1] if self.episode_updates else 0)
        self.episode_updates.append(self.updates)
        self.episode_lrs.append(self.lr)
        self.rewards.append(float((logs or {})["reward"]))
        self.losses.append(None if (logs or {}).get("loss") is None else float(logs["loss"]))
        self.normalized.append(_z(np.asarray(self.rewards[-self.window_size:], dtype=np.float64)))
        if logs is not None:  # the episode's point for loggers later in the callback list (wandb);
            # every optimizer follows the schedule: `lr/i` as the wandb logger names the others
            lr, n = self.episode_lrs[-1], len(optimizer_list(self.model.optimizer))
            logs["lr_finder"] = {"lr": lr, **{f"lr/{i}": lr for i in range(1, n)},
                                 "normalized_reward": self.normalized[-1],
                                 **({} if self.losses[-1] is None else {"loss": self.losses[-1]})}
        value = self.normalized[-1] if self.metrics == "reward" else self.losses[-1]
        # the intermediate value's step is the lr's exponent k (lr = start_lr * factor**k), so the
        # dashboard draws the curve against the (log) learning rate; only the first episode that
        # ends at a given k is reported (Optuna keeps one value per step)
        if self.report is not None and value is not None and self.k not in self.reported_steps:
            self.reported_steps.add(self.k)
            if self.report(self.k, value):
                self.model.stop_training = True
        if self.per == "episode" and trained and self.k < self.N:
            self._advance()

    def arrays(self) -> dict[str, np.ndarray]:
        out = super().arrays()
        out.update(lrs=np.asarray(self.lrs), step_losses=np.asarray(self.step_losses),
                   episode_lrs=np.asarray(self.episode_lrs), normalized=np.asarray(self.normalized),
                   factor=np.asarray(self.factor))
        return out
