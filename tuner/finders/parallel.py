"""ParallelFinder: several (agent, optimizer) candidates trained at the same time."""

from __future__ import annotations

import os
import threading
import warnings
from typing import Any, Sequence

import numpy as np

from ..run.finder_child import describe_optimizer
from .common import python_api_study, strategy_spec
from .lr import agent_spec
from .runner import Candidate, failure, run_candidates

__all__ = ["ParallelFinder"]


class ParallelFinder:
    """Train ``agents[i]`` with ``optimizers[i]`` for every ``i`` concurrently, one fresh process
    (and one trial) each, at most ``n_jobs`` at once (default: the number of CPU cores).

    After :meth:`find`, ``logs`` holds ``best_reward`` (or ``best_loss``) and ``best_opt`` as the
    Note_rl README documents, plus ``best_index``, ``best_config`` (agent class and optimizer description),
    ``rewards`` / ``losses`` (per candidate, per episode) and ``times`` (start/end of each child).
    """

    def __init__(self, agents: Sequence[Any], optimizers: Sequence[Any]) -> None:
        if len(agents) != len(optimizers):
            raise ValueError(f"ParallelFinder needs one optimizer per agent, got {len(agents)} and {len(optimizers)}")
        self.agents = list(agents)
        self.optimizers = list(optimizers)
        self.logs: dict[str, Any] = {"best_reward": -1e9, "best_loss": 1e9}
        self.study_dir = ""
        # Note_rl's attributes: per-candidate episode rewards / losses (keyed by the agent's index),
        # the episode count of the last find(), and the lock its callbacks take
        self.rewards: dict[int, list[float]] = {}
        self.losses: dict[int, list[float]] = {}
        self.episode: int | None = None
        self.lock = threading.Lock()

    def on_episode_end(self, episode: int, logs: dict[str, Any], agent: Any = None, lock: Any = None) -> None:
        """Note_rl's reward callback: append ``logs['reward']`` to the agent's list; after its
        last episode (``episode + 1 == self.episode``) a better mean reward becomes
        ``logs['best_reward']`` / ``['best_opt']`` of this finder.  ``find()`` collects the same
        data from the candidates' processes; this method is for a user's own training loop."""
        self._record(episode, logs, agent, lock, "reward", self.rewards)

    def on_episode_end_(self, episode: int, logs: dict[str, Any], agent: Any = None, lock: Any = None) -> None:
        """Note_rl's loss callback: as :meth:`on_episode_end`, with ``logs['loss']`` and the lowest
        mean loss (``best_loss``)."""
        self._record(episode, logs, agent, lock, "loss", self.losses)

    def _record(self, episode: int, logs: dict[str, Any], agent: Any, lock: Any, key: str,
                store: dict[int, list[float]]) -> None:
        index = next(i for i, a in enumerate(self.agents) if a is agent)
        with lock or self.lock:
            store.setdefault(index, []).append(float(logs[key]))
            if self.episode is not None and episode + 1 == self.episode:
                mean = float(np.mean(store[index]))
                best = f"best_{key}"
                if (mean > self.logs[best]) if key == "reward" else (mean < self.logs[best]):
                    self.logs[best], self.logs["best_opt"] = mean, self.optimizers[index]

    def find(self, train_loss: Any = None, pool_network: bool = True, processes: int | None = None,
             processes_her: int | None = None, processes_pr: int | None = None, strategy: Any = None,
             episodes: int = 1, metrics: str = "reward", jit_compile: bool = True, n_jobs: int | None = None,
             storage: str | None = None, study_name: str | None = None, study_dir: str | None = None,
             trial_timeout: float | None = None, wandb: Any = None) -> dict[str, Any]:
        """Run all candidates; returns :attr:`logs`.  ``wandb=True`` / ``wandb=dict(...)``: one
        wandb run per candidate (``job_type=parallel_finder``)."""
        strategies = [strategy_spec(agent, strategy, "ParallelFinder") for agent in self.agents]
        study, folder, _ = python_api_study("parallel_finder", storage, study_name, study_dir,
                                            "maximize" if metrics == "reward" else "minimize")
        finder = {"kind": "episodes", "metrics": metrics}
        train = dict(pool_network=pool_network, processes=processes, processes_her=processes_her,
                     processes_pr=processes_pr, jit_compile=jit_compile)
        candidates, configs = [], []
        for i, (agent, opt) in enumerate(zip(self.agents, self.optimizers)):
            spec = agent_spec(agent, episodes, finder, train, optimizers=[opt], wandb=wandb, strategy=strategies[i])
            label = f"{type(agent).__name__}/{describe_optimizer(spec.pickled['optimizers'][0])}"
            candidates.append(Candidate({"candidate": i, "label": label}, spec))
            configs.append({"agent": f"{type(agent).__module__}:{type(agent).__qualname__}",
                            "optimizer": spec.pickled["optimizers"][0]})
        jobs = n_jobs or min(len(candidates), os.cpu_count() or 1)
        trials = run_candidates(study, folder, candidates, jobs, trial_timeout, {"finder": finder})
        self.study_dir = folder
        try:
            self.logs = summarise_candidates(trials, metrics, self.optimizers, configs)
        except ValueError as exc:
            raise ValueError(f"ParallelFinder.find() {exc}") from None
        self.rewards, self.losses, self.episode = self.logs["rewards"], self.logs["losses"], episodes
        return self.logs


def summarise_candidates(trials: list[Any], metrics: str, optimizers: Sequence[Any] | None = None,
                         configs: Sequence[Any] | None = None) -> dict[str, Any]:
    """The ``logs`` dict from finished candidate trials (also used by the config path);
    ``configs[i]`` describes candidate ``i`` (``best_config``; default: its trial params)."""
    rewards = {i: t.user_attrs.get("rewards", []) for i, t in enumerate(trials)}
    losses = {i: t.user_attrs.get("losses", []) for i, t in enumerate(trials)}
    means = {}
    for i, t in enumerate(trials):
        values = rewards[i] if metrics == "reward" else [v for v in losses[i] if v is not None]
        if failure(t) is None and values:
            means[i] = float(np.mean(values))
    logs: dict[str, Any] = {"best_reward": -1e9, "best_loss": 1e9, "rewards": rewards, "losses": losses,
                            "times": {i: (t.user_attrs.get("started_at"), t.user_attrs.get("ended_at"))
                                      for i, t in enumerate(trials)},
                            "failed": {i: failure(t) for i, t in enumerate(trials) if failure(t)}}
    if not means:
        raise RuntimeError(f"every candidate failed: {logs['failed']}")
    means, logs["no_gradient_steps"] = drop_untrained(trials, means)
    best = (max if metrics == "reward" else min)(means, key=means.get)
    logs["best_reward" if metrics == "reward" else "best_loss"] = means[best]
    logs["best_index"] = best
    logs["best_config"] = configs[best] if configs is not None else dict(trials[best].params)
    logs["best_opt"] = optimizers[best] if optimizers is not None else trials[best].params.get("label")
    return logs


def drop_untrained(trials: list[Any], means: dict[int, float]) -> tuple[dict[int, float], list[int]]:
    """``means`` without the candidates whose trial made no gradient step (their episodes played
    the untrained policy, so their score says nothing about their optimizer), and those indices.
    A warning names them; ``ValueError`` (naming ``episodes``) when no candidate trained."""
    idle = [i for i in means if trials[i].user_attrs.get("gradient_steps") == 0]
    if idle and len(idle) == len(means):
        raise ValueError("episodes: no candidate made a gradient step within its episodes (the agent had not "
                         "started learning: learning_starts / train_freq / a rollout not yet full), so no "
                         "optimizer can be compared; raise episodes")
    if idle:
        warnings.warn(f"candidates {idle} made no gradient step within their episodes and are not compared; "
                      "raise episodes", stacklevel=2)
    return {i: v for i, v in means.items() if i not in idle}, idle
