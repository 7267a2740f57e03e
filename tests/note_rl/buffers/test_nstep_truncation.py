"""n-step returns through the training loop: an episode cut by the time limit stores only
transitions whose bootstrap discount is ``gamma**num_steps``, and the built-in DQN's target uses
exactly that discount (both backends)."""

import gymnasium as gym
import numpy as np
import pytest

from note_rl.agents.common import MLPActor
from note_rl.policy import EpsGreedyQPolicy
from tests.conftest import agents_module, make_optimizer, train


class _Doubling(gym.Env):
    """Observation ``[t, 1]``; reward ``2**t``; truncated (never terminated) after 4 steps."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def _obs(self) -> np.ndarray:
        return np.array([self.t, 1.0], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        reward = 2.0 ** self.t
        self.t += 1
        return self._obs(), reward, False, self.t >= 4, {}


def test_truncated_nstep_transitions_and_dqn_discount(backend) -> None:
    agent = agents_module(backend).DQN(2, 8, 2, gamma=0.5, env=_Doubling(), seed=0)
    agent.set(policy=EpsGreedyQPolicy(0.5), pool_size=100, batch=2, num_steps=3,
              learning_starts=1000, PR=True)  # collect only
    train(agent, backend, make_optimizer(backend, agent.param), 1, p=0, jit_compile=False)
    buf = agent.buffer
    slots = buf.valid_slots()
    assert agent.step_counter == 4 and len(slots) == 2
    np.testing.assert_allclose(buf.data["state"][slots], [[0, 1], [1, 1]])
    np.testing.assert_allclose(buf.data["next_state"][slots], [[3, 1], [4, 1]])
    np.testing.assert_allclose(buf.data["reward"][slots], [1 + 0.5 * 2 + 0.25 * 4, 2 + 0.5 * 4 + 0.25 * 8])
    np.testing.assert_allclose(buf.data["done"][slots], [0.0, 0.0])

    # the target bootstraps both with gamma**3 = 0.125, the discount of a 3-step window
    target_w = [w * 1.5 for w in agent.q_weights()]
    agent.backend.set_module_weights(agent.backend.modules(agent)["target_q_net"], target_w)
    d = buf.data
    batch = [d["state"][slots], d["action"][slots], d["next_state"][slots], d["reward"][slots],
             d["done"][slots], np.ones(2, np.float32)]
    res = agent.backend.evaluate(agent.__call__, batch, agent.prioritized_replay)
    online = MLPActor(agent.q_weights())
    q = online(batch[0])[np.arange(2), batch[1]]
    next_q = MLPActor(target_w)(batch[2])[np.arange(2), online(batch[2]).argmax(1)]
    np.testing.assert_allclose(res.td, q - (batch[3] + 0.125 * next_q), rtol=1e-5, atol=1e-5)
    assert res.loss == pytest.approx(float(np.mean(res.td ** 2)), rel=1e-5)


class _Short(_Doubling):
    """Truncated after 2 steps: shorter than a 3-step window, so an episode stores nothing."""

    def step(self, action):
        obs, reward, _, _, info = super().step(action)
        return obs, reward, False, self.t >= 2, info


def test_episodes_shorter_than_n_store_nothing_in_pool_workers() -> None:
    agent = agents_module("torch").DQN(2, 8, 2, gamma=0.5, env=_Short(), seed=0)
    agent.set(policy=EpsGreedyQPolicy(0.5), pool_size=100, batch=2, num_steps=3, learning_starts=1000)
    train(agent, "torch", make_optimizer("torch", agent.param), 4, p=0, jit_compile=False,
          pool_network=True, processes=2, num_store=2)
    assert agent.step_counter == 4 * 2 * 2 * 2  # 4 phases x 2 workers x 2 episodes x 2 steps
    assert len(agent.buffer) == 0 and agent.total_episode == 4


def test_learning_starts_counts_env_steps_not_stored_windows(backend) -> None:
    """With 3-step returns a 4-step truncated episode stores 2 windows, so stored items lag the env
    steps; ``learning_starts=8`` means 8 env steps (SB3's meaning): one gradient step on each of steps
    8..20 of 5 episodes (13), where counting stored items would start at step 16 (8 windows)."""
    agent = agents_module(backend).DQN(2, 8, 2, gamma=0.5, env=_Doubling(), seed=0)
    agent.set(policy=EpsGreedyQPolicy(0.5), pool_size=100, batch=2, num_steps=3, learning_starts=8,
              train_freq=1, num_updates=1)
    train(agent, backend, make_optimizer(backend, agent.param), 5, p=0, jit_compile=False)
    assert agent.step_counter == 20 and len(agent.buffer) == 10
    assert agent.batch_counter == 13
