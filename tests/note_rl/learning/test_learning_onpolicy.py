"""A2C solves CartPole-v1 and PPO with a Gaussian policy improves on Pendulum-v1 (torch, seeded, at
rl-zoo3's settings: A2C's CartPole ones, PPO's Pendulum ones without gSDE)."""

import numpy as np
import pytest

from note_rl.optim import Adam, RMSprop

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # two tests share two cores
    yield
    torch.set_num_threads(before)


def _optimizer(agent, spec):
    return agent.backend.build_optimizer(spec, agent.backend.flatten(agent.param))


def test_a2c_solves_cartpole() -> None:
    from note_rl.agents.torch import A2C

    agent = A2C(4, [64, 64], 2, n_envs=8, env="CartPole-v1", seed=0)  # seeds 0-2 solved in 43k-94k steps
    agent.set(seed=0, trial_count=20, criterion=475)
    agent.train(optimizer=_optimizer(agent, RMSprop(lr=7e-4, rho=0.99, eps=1e-5)), steps=150_000)
    returns = np.asarray(agent.reward_list)
    assert returns[-20:].mean() >= 475 and agent.step_counter < 150_000, returns[-20:]


def test_gaussian_ppo_improves_on_pendulum() -> None:
    from note_rl.agents.torch import PPO

    agent = PPO(3, [64, 64], 1, n_steps=1024, n_envs=4, gamma=0.9, lam=0.95, n_epochs=10, env="Pendulum-v1",
                activation="tanh", ortho_init=True, seed=0)
    agent.set(batch=64, seed=0)
    agent.train(optimizer=_optimizer(agent, Adam(lr=1e-3)), steps=49_152)  # 12 rollouts
    returns = np.asarray(agent.reward_list)
    # seeds 0-2: from about -1300 to -330 / -575 / -550; random play stays near -1200
    assert returns[:10].mean() < -1000 and returns[-10:].mean() >= -800, returns[-10:]
