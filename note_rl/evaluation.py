"""Evaluation episodes: the agent's greedy policy (no exploration; the mean action of a stochastic
policy) on a separate copy of its env, with its own seeds.

Training returns include exploration and come from whatever states training reached; an
evaluation plays ``episodes`` fresh episodes whose resets are seeded ``seed, seed + 1, ...``, the
same seeds at every evaluation, so two evaluations (of two checkpoints, or two trials) differ only
by the policy.  :class:`EvalCallback` runs one every ``every`` env steps during training and once at
the end, like SB3's ``EvalCallback``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .callbacks import Callback
from .core.envs import EnvFactory

__all__ = ["evaluate", "EvalCallback", "EVAL_SEED"]

#: first reset seed of evaluation episodes, far from the training seeds (0, 1, ... in studies)
EVAL_SEED = 1_000_000


def evaluate(agent: Any, episodes: int = 5, seed: int = EVAL_SEED, env: Any = None,
             max_steps: int | None = None) -> list[float]:
    """Returns of ``episodes`` greedy episodes reset with seeds ``seed, seed + 1, ...`` on ``env``
    (default: a fresh copy of the agent's env, so training's env state is left alone).  A
    multi-agent agent (``MARL``) plays its team greedily (``team_return``)."""
    if int(episodes) < 1:
        raise ValueError(f"evaluate(episodes={episodes!r}): must be >= 1")
    if getattr(agent, "MARL", False):
        team = getattr(agent, "team_return", None)
        if team is None:
            raise ValueError("evaluate(): a MARL agent needs a team_return(episodes, seed) method")
        return [float(team(1, seed=seed + e)) for e in range(int(episodes))]
    if env is None:
        source = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
        env = EnvFactory(source)()
    limit = max_steps or _episode_limit(env)
    return [float(agent.run_agent(limit, seed=seed + e, env=env)[1]) for e in range(int(episodes))]


def _episode_limit(env: Any) -> int:
    spec = getattr(env, "spec", None)
    limit = getattr(spec, "max_episode_steps", None)
    return int(limit) if limit else 100_000


class EvalCallback(Callback):
    """Evaluate every ``every`` env steps (checked when an episode ends) and once when training
    ends; ``history`` holds one record per evaluation: ``{"step", "mean", "std", "returns"}``.

    :param every: env steps between evaluations (``None``: only at the end)
    :param episodes: episodes per evaluation
    :param seed: seed of the first evaluation episode
    :param on_evaluation: called with each record (the tuner reports it to the pruner)
    :param best_model_path: where to save the weights (``save_param``) whenever an evaluation's
        mean is at least the best so far (of equal means the latest weights, which trained longer:
        CartPole's DQN reaches the maximum, 500, at several evaluations)
    """

    def __init__(self, every: int | None = None, episodes: int = 5, seed: int = EVAL_SEED,
                 on_evaluation: Callable[[dict[str, Any]], None] | None = None,
                 best_model_path: str | None = None) -> None:
        if every is not None and int(every) < 1:
            raise ValueError(f"EvalCallback(every={every!r}): must be >= 1 or None")
        if int(episodes) < 1:
            raise ValueError(f"EvalCallback(episodes={episodes!r}): must be >= 1")
        self.every, self.episodes, self.seed = every and int(every), int(episodes), int(seed)
        self.on_evaluation = on_evaluation
        self.best_model_path = best_model_path
        self.best: float | None = None
        self.final = True  # evaluate when training ends (the tuner turns it off for a pruned run)
        self.history: list[dict[str, Any]] = []
        self._env: Any = None
        self._next: int | None = None

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        if self.every:
            self._next = (self.model.step_counter // self.every + 1) * self.every

    def on_episode_end(self, episode: int, logs: dict[str, Any] | None = None) -> None:
        if self._next is not None and self.model.step_counter >= self._next:
            self._next = (self.model.step_counter // self.every + 1) * self.every
            self.run()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if self.final and (not self.history or self.history[-1]["step"] != self.model.step_counter):
            self.run()  # the final policy is evaluated

    def run(self) -> dict[str, Any]:
        """Evaluate now; returns (and records) the result."""
        agent = self.model
        if self._env is None and not getattr(agent, "MARL", False):
            source = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
            self._env = EnvFactory(source)()
        returns = evaluate(agent, self.episodes, self.seed, env=self._env)
        record = {"step": int(agent.step_counter), "mean": float(np.mean(returns)),
                  "std": float(np.std(returns)), "returns": returns}
        self.history.append(record)
        if self.best is None or record["mean"] >= self.best:
            self.best = record["mean"]
            if self.best_model_path:
                agent.save_param(self.best_model_path)
        if self.on_evaluation is not None:
            self.on_evaluation(record)
        return record
