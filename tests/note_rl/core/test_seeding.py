"""``set(seed=...)`` makes built-in agents reproducible on its own, and env resets are seeded
once (the first reset after seeding), not every episode."""

import gymnasium as gym
import numpy as np
import pytest

from note_rl.policy import EpsGreedyQPolicy
from tests.conftest import agents_module, make_optimizer, train


def _same(a, b) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def _module_weights(agent, name):
    return agent.backend.module_weights(agent.backend.modules(agent)[name])


def test_set_seed_redraws_untrained_dqn_weights_and_returns(backend) -> None:
    mod = agents_module(backend)
    runs = []
    for _ in range(2):
        agent = mod.DQN(4, 16, 2)  # no constructor seed: weights come from fresh entropy
        agent.set(policy=EpsGreedyQPolicy(0.3), pool_size=500, batch=8, update_steps=10, seed=0)
        runs.append(agent)
    a, b = runs
    assert _same(a.q_weights(), b.q_weights())
    # the target network is re-drawn too, as the same copy of the online network
    assert _same(_module_weights(a, "target_q_net"), a.q_weights())
    # exactly what the constructor draws with seed=0
    assert _same(a.q_weights(), mod.DQN(4, 16, 2, seed=0).q_weights())
    other = mod.DQN(4, 16, 2)
    other.set(seed=1)
    assert not _same(other.q_weights(), a.q_weights())

    for agent in (a, b):
        train(agent, backend, make_optimizer(backend, agent.param), 4, p=0, jit_compile=False)
    assert a.batch_counter > 0 and a.reward_list == b.reward_list
    assert _same(a.q_weights(), b.q_weights())


@pytest.mark.parametrize("backend_name", ["torch", "tf"])
def test_set_seed_redraws_ppo_networks(backend_name) -> None:
    mod = agents_module(backend_name)
    a, b = mod.PPO(4, 8, 2), mod.PPO(4, 8, 2)  # CartPole's sizes (the default env)
    a.set(seed=5)
    b.set(seed=5)
    ref = mod.PPO(4, 8, 2, seed=5)
    for name in ("actor", "actor_old", "critic"):
        assert _same(_module_weights(a, name), _module_weights(b, name))
        assert _same(_module_weights(a, name), _module_weights(ref, name))
    assert _same(_module_weights(a, "actor_old"), _module_weights(a, "actor"))
    b.set(seed=6)
    assert not _same(_module_weights(a, "actor"), _module_weights(b, "actor"))
    assert not _same(_module_weights(a, "critic"), _module_weights(b, "critic"))


def test_set_seed_keeps_trained_or_loaded_weights(tmp_path) -> None:
    import torch

    mod = agents_module("torch")
    agent = mod.DQN(4, 16, 2)
    agent.set(policy=EpsGreedyQPolicy(0.3), pool_size=500, batch=8, seed=0)
    opt = torch.optim.Adam(agent.param)  # built before a re-seed: must still drive the network
    agent.set(seed=3)
    agent.train(opt, 2, p=0)
    assert agent.batch_counter > 0
    assert not _same(agent.q_weights(), mod.DQN(4, 16, 2, seed=3).q_weights())  # the optimizer moved them
    trained = [w.copy() for w in agent.q_weights()]
    agent.set(seed=3)  # after training: reseeds sampling and envs, never resets the weights
    assert _same(agent.q_weights(), trained)

    path = agent.save_param(str(tmp_path / "w.npz"))
    fresh = mod.DQN(4, 16, 2)
    fresh.restore_param(path)
    fresh.set(seed=0)
    assert _same(fresh.q_weights(), trained)


class _RecordResets(gym.Wrapper):
    def __init__(self, env):
        super().__init__(env)
        self.seeds = []

    def reset(self, **kwargs):
        self.seeds.append(kwargs.get("seed"))
        return self.env.reset(**kwargs)


def test_env_reset_uses_the_seed_once() -> None:
    agent = agents_module("torch").DQN(4, 16, 2, env=_RecordResets(gym.make("CartPole-v1")))
    agent.set(seed=4)
    first = agent.env_(initial=True)
    second = agent.env_(initial=True)
    np.testing.assert_array_equal(first, gym.make("CartPole-v1").reset(seed=4)[0])
    assert not np.array_equal(first, second)  # Note_rl reset every episode with seed 7
    assert agent.env.seeds == [4, None]
    agent.set(seed=4)  # seeding again re-arms the first reset
    np.testing.assert_array_equal(agent.env_(initial=True), first)
    state, reward, done = agent.env_(1)
    assert reward == 1.0 and done is False and state.shape == (4,)


def test_training_loop_and_env_share_the_reset_seed() -> None:
    """The loop takes its first reset seed from the same place as ``env_``: after a seeded
    episode, ``env_(initial=True)`` is not seeded again."""
    import torch

    env = _RecordResets(gym.make("CartPole-v1"))
    agent = agents_module("torch").DQN(4, 16, 2, env=env)
    agent.set(policy=EpsGreedyQPolicy(0.3), pool_size=500, batch=8, seed=2)
    agent.train(torch.optim.Adam(agent.param), 3, p=0)
    agent.env_(initial=True)
    assert env.seeds == [2, None, None, None]
