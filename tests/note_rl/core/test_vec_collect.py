"""Off-policy agents on vectorised envs (``set(n_envs=k)``, note_rl.core.vec_collect)."""

import gymnasium as gym
import numpy as np
import pytest
import torch

import tests.note_rl.envs  # noqa: F401 - registers Corridor-v0
from note_rl.agents.torch import DQN, SAC
from note_rl.core.vec_collect import noise_copies
from note_rl.noise import GaussianWhiteNoiseProcess, OrnsteinUhlenbeckProcess
from note_rl.policy import LinearEpsGreedyPolicy
from tests.conftest import agents_module, make_optimizer, train
from tests.note_rl.envs import BEST_RETURN


def _cartpole_dqn(n_envs: int, **settings) -> DQN:
    agent = DQN(4, 32, 2, env="CartPole-v1", seed=0)
    agent.set(**{"policy": LinearEpsGreedyPolicy(1.0, 0.05, decay_steps=500), "pool_size": 10_000, "batch": 32,
                 "learning_starts": 64, "update_steps": 50, "seed": 0, "n_envs": n_envs, **settings})
    return agent


def test_every_copy_is_stored_with_the_state_it_really_reached() -> None:
    """300 steps of 3 CartPole copies: 300 transitions; each terminated one stores the terminal
    state (a pole past 12 degrees or a cart past 2.4), never the reset state that gymnasium's
    same-step autoreset puts in the observation; one finished episode per terminated transition,
    and a return of 1 per step."""
    agent = _cartpole_dqn(3)
    agent.train(torch.optim.Adam(agent.param, lr=1e-3), None, steps=300, p=0, jit_compile=False)
    assert agent.step_counter == 300
    buf = agent.buffer
    size = int(buf.sizes[0])
    assert size == 300
    done = buf.data["done"][:size] == 1.0
    s2 = buf.data["next_state"][:size][done]
    assert done.sum() == len(agent.reward_list) > 3  # no truncation within 300 steps (CartPole: 500)
    past = np.maximum(np.abs(s2[:, 0]) / 2.4, np.abs(s2[:, 2]) / (12 * 2 * np.pi / 360))
    assert np.all(past > 1.0)
    assert sum(agent.reward_list) <= 300 and np.all(buf.data["reward"][:size] == 1.0)


def test_gradient_steps_per_env_step_do_not_change_with_n_envs() -> None:
    """train_freq / num_updates count env steps of all copies: 2,000 steps with train_freq=8 and
    num_updates=2 give the same number of gradient steps with 1 or 4 copies: 2 per round at env
    steps 64 (learning_starts: the first with 64 stored), 72, ..., 2000."""
    counts = []
    for n in (1, 4):
        agent = _cartpole_dqn(n, train_freq=8, num_updates=2)
        agent.train(torch.optim.Adam(agent.param, lr=1e-3), None, steps=2000, p=0, jit_compile=False)
        assert agent.step_counter == 2000
        counts.append(agent.batch_counter)
    assert counts[0] == counts[1] == 2 * ((2000 - 64) // 8 + 1)


def test_dqn_learns_corridor_with_vectorised_envs(backend) -> None:
    agent = agents_module(backend).DQN(6, 32, 2, gamma=0.9, env="Corridor-v0", seed=0)
    agent.set(policy=LinearEpsGreedyPolicy(1.0, 0.05, decay_steps=800), pool_size=5000, batch=32,
              update_steps=50, learning_starts=100, seed=0, n_envs=4)
    train(agent, backend, make_optimizer(backend, agent.param, lr=3e-3), None, steps=2500, p=0,
          jit_compile=False)
    assert abs(agent.run_agent(50, env=gym.make("Corridor-v0"))[1] - BEST_RETURN) < 1e-6


def test_sac_on_two_pendulums_with_n_step_returns() -> None:
    agent = SAC(env="Pendulum-v1", hidden_size=32, seed=0)
    agent.set(pool_size=5000, batch=32, learning_starts=100, seed=0, n_envs=2, num_steps=3)
    agent.fit([torch.optim.Adam(p, lr=1e-3) for p in agent.param], steps=600, p=0)
    assert agent.step_counter == 600 and len(agent.reward_list) == 2  # 200-step episodes, 2 copies
    size = int(agent.buffer.sizes[0])
    # per copy: a 200-step episode truncated (its last n-1 = 2 windows cannot bootstrap with
    # gamma**3, so they are dropped), then 100 steps of the next with 2 windows still open
    assert size == 2 * (198 + 98)
    actions = agent.buffer.data["action"][:size]
    assert np.all(np.abs(actions) <= 1.0) and actions.std() > 0.1


def test_each_copy_gets_its_own_noise_process() -> None:
    copies = noise_copies(GaussianWhiteNoiseProcess(sigma=1.0, size=2, seed=3), 3, seed=0)
    draws = np.stack([c.sample() for c in copies])
    assert len({tuple(d) for d in draws}) == 3
    ou = noise_copies(OrnsteinUhlenbeckProcess(size=1, theta=0.15, sigma=0.3, seed=1), 2, seed=0)
    before = np.array(ou[1].x_prev, copy=True)
    ou[0].sample()
    assert np.array_equal(ou[1].x_prev, before)  # copy 1's state does not move with copy 0's
    given = [GaussianWhiteNoiseProcess(size=1), GaussianWhiteNoiseProcess(size=1)]
    assert noise_copies(given, 2, None) == given
    with pytest.raises(ValueError, match="n_envs=3"):
        noise_copies(given, 3, None)


@pytest.mark.parametrize("flag", ["HER", "pool_network"])
def test_what_vectorised_collection_refuses(flag) -> None:
    agent = _cartpole_dqn(2)
    if flag == "HER":
        agent.HER = True
    with pytest.raises(ValueError, match=f"n_envs=2 .*{flag}=True"):
        agent.train(torch.optim.Adam(agent.param), None, steps=10, p=0,
                    **({"pool_network": True, "processes": 2} if flag == "pool_network" else {}))


def test_n_envs_must_be_a_positive_integer() -> None:
    with pytest.raises(ValueError, match=r"set\(n_envs=0\)"):
        _cartpole_dqn(0)
