"""Each built-in agent learns the Corridor task (tests/note_rl/envs.py) in both backends."""

import gymnasium as gym
import numpy as np

import tests.note_rl.envs  # noqa: F401 - registers Corridor-v0
from note_rl.policy import LinearEpsGreedyPolicy, SoftmaxPolicy
from tests.conftest import agents_module, make_optimizer, train
from tests.note_rl.envs import BEST_RETURN


def _greedy_return(agent) -> float:
    return agent.run_agent(50, env=gym.make("Corridor-v0"))[1]


def test_dqn_learns_corridor(backend) -> None:
    agent = agents_module(backend).DQN(6, 32, 2, gamma=0.9, env="Corridor-v0", seed=0)
    agent.set(policy=LinearEpsGreedyPolicy(1.0, 0.05, decay_steps=800), pool_size=5000, batch=32,
              update_steps=50, learning_starts=100, seed=0)
    train(agent, backend, make_optimizer(backend, agent.param, lr=3e-3), None, steps=2500, p=0,
          jit_compile=False)
    assert abs(_greedy_return(agent) - BEST_RETURN) < 1e-6
    assert np.mean(agent.reward_list[-10:]) > 0.8


def test_ppo_learns_corridor(backend) -> None:
    agent = agents_module(backend).PPO(6, 32, 2, gamma=0.9, lam=0.9, n_steps=32, n_envs=4,
                                       n_epochs=4, env="Corridor-v0", seed=0)
    agent.set(policy=SoftmaxPolicy(), batch=64, seed=0)
    train(agent, backend, make_optimizer(backend, agent.param, lr=3e-3), None, steps=4096, p=0,
          jit_compile=False)
    assert abs(_greedy_return(agent) - BEST_RETURN) < 1e-6
    assert np.mean(agent.reward_list[-10:]) > 0.8
