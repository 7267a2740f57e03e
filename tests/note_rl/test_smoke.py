"""Every agent x backend x buffer x collection strategy runs a few episodes."""

import numpy as np
import pytest

from note_rl.policy import EpsGreedyQPolicy, SoftmaxPolicy
from tests.conftest import agents_module, make_optimizer, train


def _agent(name, backend):
    mod = agents_module(backend)
    if name == "dqn":
        agent = mod.DQN(4, 32, 2, seed=0)
        agent.set(policy=EpsGreedyQPolicy(0.2), update_steps=20)
    else:  # Note_rl-style PPO from the replay buffer
        agent = mod.PPO(4, 32, 2, seed=0)
        agent.set(policy=SoftmaxPolicy(), update_steps=50)
    agent.set(pool_size=2000, batch=16, seed=0)
    return agent


@pytest.mark.parametrize("strategy", ["single", "pool"])
@pytest.mark.parametrize("buffer", ["uniform", "prioritized"])
@pytest.mark.parametrize("name", ["dqn", "ppo"])
def test_smoke(name, buffer, strategy, backend) -> None:
    agent = _agent(name, backend)
    agent.set(PR=buffer == "prioritized")
    pool = strategy == "pool"
    opt = make_optimizer(backend, agent.param)
    loss = train(agent, backend, opt, 4, pool_network=pool, processes=2 if pool else None, p=0,
                 jit_compile=False)
    assert agent.total_episode == 4 and len(agent.reward_list) == 4
    assert agent.batch_counter > 0 and loss is not None and np.isfinite(loss)
    assert agent.buffer.n_segments == (2 if pool else 1)
    if pool:
        assert (agent.buffer.sizes > 0).sum() >= 1


@pytest.mark.parametrize("pool", [False, True])
def test_ppo_rollout_mode(pool, backend) -> None:
    agent = agents_module(backend).PPO(4, 32, 2, n_steps=16, n_envs=4, n_epochs=2, seed=0)
    agent.set(batch=32, seed=0)
    opt = make_optimizer(backend, agent.param)
    train(agent, backend, opt, None, steps=640, pool_network=pool, processes=2 if pool else None,
          p=0, jit_compile=False)
    assert agent.step_counter == 640  # 10 rollouts of 16 x 4
    assert agent.batch_counter == 10 * 2 * 2  # rollouts x epochs x mini-batches


def test_pool_env_mode_for_custom_agents() -> None:
    """Agents without a numpy actor act in the training process; workers only step envs."""
    import torch

    from note_rl.torch import RL_pytorch

    class Tiny(RL_pytorch):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(4, 2)
            self.param = list(self.net.parameters())
            import gymnasium as gym

            self.env = gym.make("CartPole-v1")

        def action(self, s):
            return self.net(s)

        def __call__(self, s, a, next_s, r, d):
            return ((self.net(s).gather(1, a.long().unsqueeze(1)).squeeze(1) - r) ** 2).mean()

    agent = Tiny()
    agent.set(policy=EpsGreedyQPolicy(0.5), pool_size=500, batch=8, seed=1)
    agent.train(torch.optim.SGD(agent.param, lr=0.01), 3, pool_network=True, processes=2, p=0)
    assert agent.total_episode == 3 and agent.step_counter > 0 and agent.batch_counter > 0
