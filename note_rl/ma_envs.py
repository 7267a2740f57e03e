"""Small multi-agent envs following the PettingZoo *parallel* API (without depending on it).

:class:`MatchingGame` is a cooperative coordination test for ``set(MARL=True)``: it is solved
only when every agent picks the action named by a shared cue, and it learns in seconds.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["MatchingGame", "RescaledParallelEnv"]


class MatchingGame:
    """``n_agents`` agents see the same random cue (one-hot of size ``k``, redrawn every step)
    and each gets reward 1 when *all* agents pick the action equal to the cue, else 0.

    Episodes last ``max_steps`` steps and end by truncation (no agent ever terminates).  With the
    default sum of rewards, a random team earns ``n_agents * max_steps / k**n_agents`` per
    episode on average (2.2 for 2 agents, k=3, 10 steps); the best return is
    ``n_agents * max_steps`` (20).

    :param n_agents: number of agents, named ``agent_0`` ...
    :param k: cue size = number of actions
    :param max_steps: episode length
    """

    metadata: dict[str, Any] = {"name": "matching_game_v0"}

    def __init__(self, n_agents: int = 2, k: int = 3, max_steps: int = 10) -> None:
        self.possible_agents = [f"agent_{i}" for i in range(n_agents)]
        self.agents: list[str] = []
        self.k = k
        self.max_steps = max_steps
        self._obs_space = gym.spaces.Box(0.0, 1.0, (k,), np.float32)
        self._act_space = gym.spaces.Discrete(k)
        self.np_random = np.random.default_rng()
        self.cue = 0
        self.t = 0

    @property
    def unwrapped(self) -> "MatchingGame":
        """Itself (checkpoints save the generator state through ``env.unwrapped.np_random``)."""
        return self

    def observation_space(self, agent: str) -> gym.spaces.Box:
        """One-hot cue of size ``k`` (the same space for every agent)."""
        return self._obs_space

    def action_space(self, agent: str) -> gym.spaces.Discrete:
        """``Discrete(k)`` for every agent."""
        return self._act_space

    def _observe(self) -> dict[str, np.ndarray]:
        onehot = np.zeros(self.k, np.float32)
        onehot[self.cue] = 1.0
        return {name: onehot.copy() for name in self.agents}

    def reset(self, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
        """Start an episode; ``seed`` re-seeds the cue generator (``None`` continues it)."""
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        self.cue = int(self.np_random.integers(self.k))
        return self._observe(), {name: {} for name in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """Reward every agent 1 if all actions equal the cue; then draw the next cue."""
        hit = all(int(actions[name]) == self.cue for name in self.agents)
        self.t += 1
        names = list(self.agents)
        rewards = {name: float(hit) for name in names}
        terminations = {name: False for name in names}
        truncations = {name: self.t >= self.max_steps for name in names}
        self.cue = int(self.np_random.integers(self.k))
        obs = self._observe()
        if self.t >= self.max_steps:
            self.agents = []  # PettingZoo: agents leave once their episode is over
        return obs, rewards, terminations, truncations, {name: {} for name in names}

    def close(self) -> None:
        """Nothing to release."""


class RescaledParallelEnv:
    """A PettingZoo-parallel env whose ``Box`` action spaces are presented as ``[-1, 1]``: actions
    are mapped linearly onto each agent's own bounds (and clipped to them) before the env steps
    (the multi-agent counterpart of gymnasium's ``RescaleAction``).  Everything else passes through."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.possible_agents = list(env.possible_agents)
        self._bounds = {}
        self._spaces = {}
        for name in self.possible_agents:
            space = env.action_space(name)
            self._bounds[name] = (np.asarray(space.low, np.float32), np.asarray(space.high, np.float32))
            self._spaces[name] = gym.spaces.Box(-1.0, 1.0, space.shape, np.float32)

    @property
    def agents(self) -> list[str]:
        return self.env.agents

    @property
    def unwrapped(self) -> Any:
        return getattr(self.env, "unwrapped", self.env)

    def observation_space(self, agent: str) -> Any:
        return self.env.observation_space(agent)

    def action_space(self, agent: str) -> gym.spaces.Box:
        """``Box(-1, 1)`` of the agent's action shape."""
        return self._spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        return self.env.reset(seed=seed, options=options)

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        mapped = {}
        for name, action in actions.items():
            low, high = self._bounds[name]
            unit = np.clip(np.asarray(action, np.float32), -1.0, 1.0)
            mapped[name] = np.clip(low + (unit + 1.0) * 0.5 * (high - low), low, high).astype(np.float32)
        return self.env.step(mapped)

    def close(self) -> None:
        self.env.close()
