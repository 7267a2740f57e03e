"""One-step envs whose return depends only on the episode's reset seed, to build a config that is
lucky on its tuning seeds: ``Lucky-v0`` pays 100 on the reset seeds a study evaluates trials with
(``eval.seed`` 1,000,000 onwards) and 0 on any other; ``Steady-v0`` pays 50 whatever the seed;
``Fragile-v0`` pays 50 too, except on the held-out evaluation episodes of training seed 10002 (reset
seeds 2,000,000 + 1000 x 10002 onwards), where it pays 0."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class _OneStep(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.seed_ = seed
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), self.payoff(self.seed_), True, False, {}


class Lucky(_OneStep):
    def payoff(self, seed) -> float:
        return 100.0 if seed is not None and 1_000_000 <= seed < 1_100_000 else 0.0


class Steady(_OneStep):
    def payoff(self, seed) -> float:
        return 50.0


class Fragile(_OneStep):
    def payoff(self, seed) -> float:
        return 0.0 if seed is not None and 12_002_000 <= seed < 12_003_000 else 50.0


gym.register("Fragile-v0", entry_point=Fragile, max_episode_steps=1)
gym.register("Lucky-v0", entry_point=Lucky, max_episode_steps=1)
gym.register("Steady-v0", entry_point=Steady, max_episode_steps=1)


class Broke(_OneStep):
    def payoff(self, seed) -> float:
        return 0.0


class Gated(_OneStep):
    """Pays 50, but only opens with the right ``api_token`` (a secret the run needs to be rebuilt)."""

    def __init__(self, api_token: str = "") -> None:
        if api_token != GATE_TOKEN:
            raise ValueError("Gated-v0: wrong api_token")

    def payoff(self, seed) -> float:
        return 50.0


GATE_TOKEN = "gate-T0ken-9931"
gym.register("Gated-v0", entry_point=Gated, max_episode_steps=1)
gym.register("Broke-v0", entry_point=Broke, max_episode_steps=1)
