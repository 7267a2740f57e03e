"""Goal-conditioned envs (gymnasium-robotics ``GoalEnv`` convention) for HER tests and examples.

:class:`BitFlipEnv` is the bit-flipping task of Andrychowicz et al. 2017 (Hindsight Experience
Replay, https://arxiv.org/abs/1707.01495): with ``n_bits`` bits, random start and target, the
reward is -1 per step until the bits equal the target.  Without HER, a random policy almost
never sees a reward of 0 once ``n_bits`` is around 8 or more, so plain DQN does not learn it.

:class:`PointReachEnv` is its continuous-action counterpart for DDPG/TD3/SAC + HER: move a point
in ``[-1, 1]**dim`` by at most ``step_size`` per axis and step until it lies within ``threshold``
of a random target; the reward is -1 per step until then (sparse, like the Fetch tasks).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["BitFlipEnv", "PointReachEnv"]


class BitFlipEnv(gym.Env):
    """Flip one bit per step until the bit vector equals the target.

    Observations are dicts of float32 ``{0, 1}`` vectors of length ``n_bits``: ``observation``
    and ``achieved_goal`` are the current bits, ``desired_goal`` the target.  Action ``i`` flips
    bit ``i``.  Reward 0 and ``terminated`` once the bits equal the target, else -1; episodes are
    truncated after ``max_steps`` steps (default ``n_bits``, enough to reach any target).
    Start and target are drawn from the env's generator (seed it through ``reset(seed=...)``);
    they are redrawn until they differ, so every episode needs at least one step.

    :param n_bits: number of bits
    :param max_steps: time limit (default ``n_bits``)
    """

    metadata = {"render_modes": []}

    def __init__(self, n_bits: int = 8, max_steps: int | None = None) -> None:
        if n_bits < 1:
            raise ValueError(f"BitFlipEnv(n_bits={n_bits!r}): must be >= 1")
        self.n_bits = int(n_bits)
        self.max_steps = int(max_steps if max_steps is not None else n_bits)
        box = gym.spaces.Box(0.0, 1.0, (self.n_bits,), np.float32)
        self.observation_space = gym.spaces.Dict(
            {"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = gym.spaces.Discrete(self.n_bits)
        self.state = np.zeros(self.n_bits, np.float32)
        self.goal = np.zeros(self.n_bits, np.float32)
        self.t = 0

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.state.copy(), "achieved_goal": self.state.copy(),
                "desired_goal": self.goal.copy()}

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        self.state = self.np_random.integers(0, 2, self.n_bits).astype(np.float32)
        self.goal = self.state
        while np.array_equal(self.goal, self.state):
            self.goal = self.np_random.integers(0, 2, self.n_bits).astype(np.float32)
        return self._obs(), {}

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        self.t += 1
        self.state = self.state.copy()
        i = int(action)
        self.state[i] = 1.0 - self.state[i]
        reward = float(self.compute_reward(self.state, self.goal, {}))
        terminated = reward == 0.0
        truncated = self.t >= self.max_steps and not terminated
        return self._obs(), reward, terminated, truncated, {"is_success": terminated}

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> Any:
        """0 where ``achieved_goal == desired_goal`` (all bits), else -1; batches on the last axis."""
        equal = np.all(np.asarray(achieved_goal) == np.asarray(desired_goal), axis=-1)
        return np.where(equal, 0.0, -1.0).astype(np.float32)


class PointReachEnv(gym.Env):
    """Reach a random target with a point in ``[-1, 1]**dim`` (continuous actions, sparse reward).

    Observations are dicts of float32 vectors of length ``dim``: ``observation`` and
    ``achieved_goal`` are the position, ``desired_goal`` the target.  An action in ``[-1, 1]**dim``
    moves the point by ``step_size * action`` (clipped to the box).  Reward 0 and ``terminated``
    once the distance to the target is at most ``threshold``, else -1; truncated after
    ``max_steps``.  Start and target are uniform in the box, drawn until they are further apart
    than ``threshold``.

    :param dim: dimensions of the box
    :param threshold: success distance (Euclidean)
    :param step_size: largest move per axis and step
    :param max_steps: time limit
    """

    metadata = {"render_modes": []}

    def __init__(self, dim: int = 2, threshold: float = 0.05, step_size: float = 0.1, max_steps: int = 50) -> None:
        if dim < 1 or threshold <= 0 or step_size <= 0 or max_steps < 1:
            raise ValueError("PointReachEnv: dim, threshold, step_size and max_steps must be positive")
        self.dim, self.threshold, self.step_size, self.max_steps = int(dim), float(threshold), float(step_size), int(max_steps)
        box = gym.spaces.Box(-1.0, 1.0, (self.dim,), np.float32)
        self.observation_space = gym.spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = gym.spaces.Box(-1.0, 1.0, (self.dim,), np.float32)
        self.position = np.zeros(self.dim, np.float32)
        self.goal = np.zeros(self.dim, np.float32)
        self.t = 0

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.position.copy(), "achieved_goal": self.position.copy(),
                "desired_goal": self.goal.copy()}

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        self.position = self.np_random.uniform(-1.0, 1.0, self.dim).astype(np.float32)
        self.goal = self.position
        while np.linalg.norm(self.goal - self.position) <= self.threshold:
            self.goal = self.np_random.uniform(-1.0, 1.0, self.dim).astype(np.float32)
        return self._obs(), {}

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        self.t += 1
        move = self.step_size * np.clip(np.asarray(action, np.float32).reshape(self.dim), -1.0, 1.0)
        self.position = np.clip(self.position + move, -1.0, 1.0).astype(np.float32)
        reward = float(self.compute_reward(self.position, self.goal, {}))
        terminated = reward == 0.0
        truncated = self.t >= self.max_steps and not terminated
        return self._obs(), reward, terminated, truncated, {"is_success": terminated}

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> Any:
        """0 within ``threshold`` of the goal, else -1; batches on the last axis."""
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return np.where(distance <= self.threshold, 0.0, -1.0).astype(np.float32)


# `env.id=note_rl/BitFlip-v0 env.module=note_rl.goal_envs` in a config (kwargs: n_bits, max_steps)
if "note_rl/BitFlip-v0" not in gym.registry:
    gym.register("note_rl/BitFlip-v0", entry_point="note_rl.goal_envs:BitFlipEnv")
# `env.id=note_rl/PointReach-v0 env.module=note_rl.goal_envs` (kwargs: dim, threshold, step_size, max_steps)
if "note_rl/PointReach-v0" not in gym.registry:
    gym.register("note_rl/PointReach-v0", entry_point="note_rl.goal_envs:PointReachEnv")
