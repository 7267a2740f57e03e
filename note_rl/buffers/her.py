"""Hindsight Experience Replay storage (Andrychowicz et al. 2017, https://arxiv.org/abs/1707.01495).

Goal envs follow the gymnasium-robotics ``GoalEnv`` convention: observations are dicts with
``observation``, ``achieved_goal`` and ``desired_goal``.  The agent acts on the flat float32
``concat(observation, desired_goal)`` (:func:`flatten_goal_obs`), so a plain MLP agent works unchanged.

:class:`HerReplayBuffer` keeps, per transition, the observation, the desired goal, the goal
achieved *after* the step, the action, the next observation, the env reward and termination and
the offset from the item to the last step of its episode.  A running episode is staged and only
committed to the ring when it ends, so every stored item's "future" steps are known.  Episodes are
written contiguously and the ring overwrites oldest items first, so an item's episode tail (which
is newer than the item) is always still stored: ``slot + j`` for ``j <= offset`` stays valid.

Sampling follows Stable-Baselines3's "future" strategy: ``int(batch * her_k / (her_k + 1))`` items of
each batch get the achieved goal of a step ``t'`` drawn uniformly from ``[t, episode end]`` of the
same episode, with reward and done recomputed by ``reward_fn(achieved, goal)``; the other items
keep their desired goal and the env's reward and termination.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .replay import Batch, ReplayBuffer, _seed

__all__ = ["HerReplayBuffer", "flatten_goal_obs", "GOAL_KEYS", "HER_FIELDS"]

GOAL_KEYS = ("observation", "achieved_goal", "desired_goal")
HER_FIELDS = ("obs", "goal", "achieved", "action", "next_obs", "reward", "done", "offset")

#: ``reward_fn(achieved_goals, desired_goals) -> (rewards, dones)`` on ``(B, goal_dim)`` arrays
RewardFn = Callable[[np.ndarray, np.ndarray], tuple[Any, Any]]


def flatten_goal_obs(obs: dict[str, Any], goal: Any = None) -> np.ndarray:
    """The agent's input ``concat(observation, goal)`` as float32 (``goal`` defaults to the
    observation's ``desired_goal``); works for one observation or a batch (leading axis)."""
    o = np.asarray(obs["observation"], dtype=np.float32)
    g = np.asarray(obs["desired_goal"] if goal is None else goal, dtype=np.float32)
    return np.concatenate([o, g], axis=-1)


class HerReplayBuffer(ReplayBuffer):
    """Episode-aware ring buffer with "future" goal relabelling (one segment, no trimming rules:
    the inherited ring overwrites the oldest items when full).

    :param capacity: number of transitions kept (``pool_size``)
    :param reward_fn: ``(achieved (B, g), desired (B, g)) -> (reward (B,), done (B,))`` used for
        relabelled items
    :param her_k: relabelled goals per real goal (SB3's ``n_sampled_goal``); 0 relabels nothing
    :param seed: seed of the sampling generator
    """

    fields = HER_FIELDS
    float32_fields = ("reward", "done")

    def __init__(self, capacity: int, reward_fn: RewardFn, her_k: int = 4,
                 seed: int | None = None) -> None:
        if isinstance(her_k, bool) or not isinstance(her_k, (int, np.integer)) or her_k < 0:
            raise ValueError(f"her_k={her_k!r}: must be a non-negative integer")
        super().__init__(capacity, seed=seed)
        self.reward_fn = reward_fn
        self.her_k = int(her_k)
        self.staged: list[dict[str, np.ndarray]] = []  # the running episode

    flags = {"PR": False, "HER": True, "TRL": False}

    @classmethod
    def for_agent(cls, agent: Any, n_segments: int = 1, window_size: Any = None,
                  clearing_freq: int | None = None, window_size_: int | None = None) -> "HerReplayBuffer":
        """HER storage with the agent's ``her_k`` and its relabelling reward (one process, no
        trimming: the training loop refuses those options with HER before building the buffer)."""
        return cls(agent.pool_size or 100_000, agent.her_reward_done, her_k=agent.her_k, seed=_seed(agent))

    # -- inserting ---------------------------------------------------------------------------
    def add(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError("HerReplayBuffer stores episodes: use add_step() and end_episode()")

    add_batch = add

    def add_step(self, obs: Any, goal: Any, achieved: Any, action: Any, next_obs: Any,
                 reward: float, done: float) -> None:
        """Stage one transition of the running episode (``achieved`` is the goal achieved after
        the step, ``done`` the env's termination, not truncation)."""
        self.staged.append({"obs": np.asarray(obs), "goal": np.asarray(goal),
                            "achieved": np.asarray(achieved), "action": np.asarray(action),
                            "next_obs": np.asarray(next_obs), "reward": np.asarray(reward),
                            "done": np.asarray(done)})

    def end_episode(self) -> np.ndarray:
        """Commit the staged episode (terminated, truncated or cut short); returns its slots."""
        if not self.staged:
            return np.empty(0, dtype=np.int64)
        n = len(self.staged)
        arrays = {k: np.stack([step[k] for step in self.staged]) for k in self.staged[0]}
        arrays["offset"] = np.arange(n - 1, -1, -1, dtype=np.int64)
        self.staged = []
        return self.add_episode(arrays)

    def add_episode(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        """Write one whole episode (fields of :data:`HER_FIELDS`, ``offset`` included)."""
        n = len(arrays["obs"])
        if n > self.capacity:  # keep its last ``capacity`` steps; their offsets stay right
            arrays = {k: v[n - self.capacity:] for k, v in arrays.items()}
        return self._write(arrays, 0)

    # -- sampling ----------------------------------------------------------------------------
    def n_relabelled(self, batch: int) -> int:
        """How many items of a ``batch`` get a hindsight goal (SB3's deterministic split)."""
        return int(batch * self.her_k / (self.her_k + 1))

    def sample_with_goals(self, batch: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(slots, future_slots, relabelled)``: the sampled items, the slot whose achieved goal
        each relabelled item uses (its own slot otherwise) and the boolean relabel mask."""
        slots = self.sample_slots(batch)
        n_her = self.n_relabelled(batch)
        relabelled = np.zeros(batch, dtype=bool)
        relabelled[:n_her] = True
        future = slots.copy()
        if n_her:
            offsets = self.data["offset"][slots[:n_her]]
            # uniform over t' in [t, t + offset]: integers(0, offset + 1) per item
            j = self.rng.integers(0, offsets + 1)
            future[:n_her] = (slots[:n_her] + j) % self.capacity
        return slots, future, relabelled

    def sample(self, batch: int) -> Batch:
        """A mini-batch with state ``concat(obs, goal)`` and next state ``concat(next_obs, goal)``."""
        slots, future, relabelled = self.sample_with_goals(batch)
        d = self.data
        goal = d["goal"].take(slots, axis=0)
        reward = d["reward"].take(slots, axis=0)
        done = d["done"].take(slots, axis=0)
        if relabelled.any():
            idx = np.flatnonzero(relabelled)
            new_goal = d["achieved"].take(future[idx], axis=0)
            r, dn = self.reward_fn(d["achieved"].take(slots[idx], axis=0), new_goal)
            goal[idx] = new_goal
            reward[idx] = np.asarray(r, dtype=np.float32).reshape(-1)
            done[idx] = np.asarray(dn, dtype=np.float32).reshape(-1)
        obs, next_obs = d["obs"].take(slots, axis=0), d["next_obs"].take(slots, axis=0)
        state = np.concatenate([obs, goal], axis=-1).astype(np.float32, copy=False)
        next_state = np.concatenate([next_obs, goal], axis=-1).astype(np.float32, copy=False)
        return Batch(state, d["action"].take(slots, axis=0), next_state, reward, done, slots)

    # -- checkpoints -------------------------------------------------------------------------
    def state_dict(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The ring's ``(json_meta, arrays)`` plus ``her_k`` and the staged (unfinished) episode."""
        meta, arrays = super().state_dict()
        meta.update(her_k=self.her_k, n_staged=len(self.staged))
        if self.staged:
            arrays.update({f"staged_{k}": np.stack([s[k] for s in self.staged])
                           for k in self.staged[0]})
        return meta, arrays

    def load_state_dict(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        if meta.get("kind") != type(self).__name__:
            raise ValueError(f"checkpoint buffer is a {meta.get('kind')}, this agent uses HER "
                             f"({type(self).__name__})")
        super().load_state_dict(meta, arrays)
        self.her_k = int(meta["her_k"])
        keys = [k for k in arrays if k.startswith("staged_")]
        self.staged = [{k[len("staged_"):]: np.array(arrays[k][i]) for k in keys}
                       for i in range(int(meta.get("n_staged", 0)))]
