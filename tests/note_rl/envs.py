"""A tiny deterministic task for fast, reliable learning tests.

Corridor: positions ``0..length-1`` as a one-hot observation, start at 0, action 1 moves right,
0 moves left; reaching the last cell gives reward 1 and ends the episode; every step costs 0.01;
episodes are truncated after ``max_steps``.  The best return is ``1 - 0.01 * (length - 1)``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class Corridor(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, length: int = 6, max_steps: int = 20) -> None:
        self.length = length
        self.max_steps = max_steps
        self.observation_space = gym.spaces.Box(0.0, 1.0, (length,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.pos = 0
        self.t = 0

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.length, np.float32)
        obs[self.pos] = 1.0
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.t = 0, 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        self.pos = int(np.clip(self.pos + (1 if int(action) == 1 else -1), 0, self.length - 1))
        done = self.pos == self.length - 1
        reward = (1.0 if done else 0.0) - 0.01
        return self._obs(), reward, done, self.t >= self.max_steps and not done, {}


if "Corridor-v0" not in gym.registry:
    gym.register("Corridor-v0", entry_point="tests.note_rl.envs:Corridor")

BEST_RETURN = 1.0 - 0.01 * 5
