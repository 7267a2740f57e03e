"""Observation spaces the MLP agents cannot read directly: Discrete observations are one-hot encoded."""

import gymnasium as gym
import numpy as np
import pytest

from note_rl.agents.common import make_env
from note_rl.core.envs import OneHotObservation, flat_observations


def test_discrete_observations_are_one_hot() -> None:
    env = make_env("FrozenLake-v1")
    assert isinstance(env, OneHotObservation) and env.observation_space == gym.spaces.Box(0, 1, (16,), np.float32)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs, np.eye(16, dtype=np.float32)[0])  # the start square
    obs, *_ = env.step(2)  # right (FrozenLake's default is slippery: it lands on 0, 1 or 4)
    assert obs.sum() == 1.0 and obs.dtype == np.float32


def test_space_start_offset_and_other_spaces_unchanged() -> None:
    class Offset(gym.Env):
        observation_space = gym.spaces.Discrete(3, start=5)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            return 7, {}

    np.testing.assert_array_equal(flat_observations(Offset()).reset()[0], [0, 0, 1])
    cartpole = gym.make("CartPole-v1")
    assert flat_observations(cartpole) is cartpole


def test_dqn_trains_on_a_discrete_observation_env() -> None:
    pytest.importorskip("torch")
    import torch

    from note_rl.agents.torch import DQN
    from note_rl.policy import LinearEpsGreedyPolicy

    agent = DQN(16, 32, 4, gamma=0.9, env=gym.make("FrozenLake-v1", is_slippery=False), seed=0)
    agent.set(policy=LinearEpsGreedyPolicy(1.0, 0.05, decay_steps=300), pool_size=1000, batch=32,
              learning_starts=64, update_steps=50, seed=0)
    agent.fit(torch.optim.Adam(agent.backend.flatten(agent.param), lr=1e-3), None, steps=400, p=0)
    assert agent.total_episode > 0 and all(r in (0.0, 1.0) for r in agent.reward_list)


def test_float64_box_observations_reach_the_networks_as_float32() -> None:
    """MuJoCo's observations are float64; torch refused to multiply them with float32 weights, so PPO
    and A2C crashed on every MuJoCo preset.  They are cast once, where envs are made."""
    import gymnasium as gym
    import numpy as np

    from note_rl.core.envs import flat_observations

    env = flat_observations(gym.make("Pendulum-v1"))
    assert env.observation_space.dtype == np.float32  # already float32: untouched
    base = gym.make("Hopper-v5")
    assert base.observation_space.dtype == np.float64
    wrapped = flat_observations(base)
    obs, _ = wrapped.reset(seed=0)
    assert wrapped.observation_space.dtype == np.float32 and obs.dtype == np.float32
    assert wrapped.step(wrapped.action_space.sample())[0].dtype == np.float32
