"""OptFinder: which optimizer trains this agent best?  One trial per candidate, same start."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..run.finder_child import describe_optimizer
from .common import python_api_study, strategy_spec
from .lr import agent_spec
from .parallel import drop_untrained
from .runner import Candidate, failure, run_candidates

__all__ = ["OptFinder"]


class OptFinder:
    """Train the agent once per candidate optimizer, from the same initial weights and seed, for
    ``episodes`` episodes each (a grid over the candidates, every run in a fresh process); the best
    has the highest mean episode reward (or, with ``metrics="loss"``, the lowest mean loss).

    :param agent: the agent to copy for every candidate (it is not modified)
    :param optimizers: candidate optimizer objects built for the agent's parameters
    """

    def __init__(self, agent: Any, optimizers: Sequence[Any]) -> None:
        self.agent = agent
        self.optimizers = list(optimizers)
        self.rewards: list[list[float]] = []
        self.losses: list[list[float | None]] = []
        self.mean_rewards: list[float | None] = []
        self.mean_losses: list[float | None] = []
        self.best_opt: Any = None
        self.best_index: int | None = None
        self.best_reward = -1e9
        self.best_loss = 1e9
        self.table: list[dict[str, Any]] = []
        self.study_dir = ""

    def find(self, train_loss: Any = None, pool_network: bool = False, processes: int | None = None,
             processes_her: int | None = None, processes_pr: int | None = None, strategy: Any = None,
             random: bool = True, num_updates: int | None = None, episodes: int = 7, metrics: str = "reward",
             jit_compile: bool = True, n_jobs: int = 1, storage: str | None = None,
             study_name: str | None = None, study_dir: str | None = None,
             trial_timeout: float | None = None, wandb: Any = None) -> Any:
        """Run every candidate; returns the best optimizer object (also ``self.best_opt``).
        ``wandb=True`` / ``wandb=dict(...)``: one wandb run per candidate (``job_type=opt_finder``)."""
        strategy = strategy_spec(self.agent, strategy, "OptFinder")
        study, folder, _ = python_api_study("opt_finder", storage, study_name, study_dir,
                                            "maximize" if metrics == "reward" else "minimize")
        finder = {"kind": "episodes", "metrics": metrics}
        train = dict(pool_network=pool_network, processes=processes, processes_her=processes_her,
                     processes_pr=processes_pr, random=random, jit_compile=jit_compile)
        candidates = []
        for i, opt in enumerate(self.optimizers):
            spec = agent_spec(self.agent, episodes, finder, train, num_updates, optimizers=[opt], wandb=wandb,
                              strategy=strategy)
            params = {"candidate": i, "optimizer": describe_optimizer(spec.pickled["optimizers"][0])}
            candidates.append(Candidate(params, spec))
        trials = run_candidates(study, folder, candidates, n_jobs, trial_timeout, {"finder": finder})
        self.study_dir = folder
        self._collect(trials, metrics)
        return self.best_opt

    def _collect(self, trials: list[Any], metrics: str) -> None:
        self.rewards, self.losses, self.table = [], [], []
        for i, t in enumerate(trials):
            rewards = t.user_attrs.get("rewards", [])
            losses = t.user_attrs.get("losses", [])
            trained = [v for v in losses if v is not None]
            self.rewards.append(rewards)
            self.losses.append(losses)
            self.table.append({"index": i, "optimizer": t.params.get("optimizer"),
                               "mean_reward": float(np.mean(rewards)) if rewards else None,
                               "mean_loss": float(np.mean(trained)) if trained else None,
                               "initial_weights_sha256": t.user_attrs.get("initial_weights_sha256"),
                               "failed": failure(t)})
        self.mean_rewards = [row["mean_reward"] for row in self.table]
        self.mean_losses = [row["mean_loss"] for row in self.table]
        key = "mean_reward" if metrics == "reward" else "mean_loss"
        ok = [row for row in self.table if row["failed"] is None and row[key] is not None]
        if not ok:
            raise RuntimeError(f"every candidate failed: {[row['failed'] for row in self.table]}")
        try:
            kept, _ = drop_untrained(trials, {row["index"]: row[key] for row in ok})
        except ValueError as exc:
            raise ValueError(f"OptFinder.find() {exc}") from None
        ok = [row for row in ok if row["index"] in kept]
        best = (max if metrics == "reward" else min)(ok, key=lambda row: row[key])
        self.best_index = best["index"]
        self.best_opt = self.optimizers[self.best_index]
        self.best_reward = best["mean_reward"] if best["mean_reward"] is not None else self.best_reward
        self.best_loss = best["mean_loss"] if best["mean_loss"] is not None else self.best_loss
