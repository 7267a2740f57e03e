"""MADDPG on PettingZoo MPE simple_spread (mpe2) and on MatchingGame: losses by hand, Keras/torch
conformance, action rescaling, the seeds' reward_done_func_ma contract, short runs, and (slow)
learning that beats random play."""

import numpy as np
import pytest

from note_rl.agents.common import MLPActor
from note_rl.ma_envs import MatchingGame, RescaledParallelEnv
from note_rl.noise import GaussianWhiteNoiseProcess
from note_rl.policy import SoftmaxPolicy
from tests.conftest import agents_module

pytest.importorskip("torch")
pytest.importorskip("mpe2")

from note_rl.agents.maddpg import simple_spread  # noqa: E402 - after the mpe2 check


def _agent(backend, continuous=True, seed=0, **kwargs):
    env = simple_spread(continuous, n_agents=2) if continuous else MatchingGame()
    return agents_module(backend).MADDPG(hidden_size=[16], env=env, seed=seed, **kwargs)


def _batch(agent, rng, n=12):
    s = rng.normal(size=(n, agent.n_agents, agent.obs_dim)).astype(np.float32)
    s2 = rng.normal(size=s.shape).astype(np.float32)
    if agent.discrete:
        a = rng.integers(0, agent.action_dim, (n, agent.n_agents))
    else:
        a = rng.uniform(-1, 1, (n, agent.n_agents, agent.action_dim)).astype(np.float32)
    return [s, a, s2, rng.normal(size=n).astype(np.float32), (rng.random(n) < 0.3).astype(np.float32)]


def _weights(agent, name):
    nets = getattr(agent, name)
    if agent.backend_name == "torch":
        return [net.numpy_weights() for net in nets]
    return [[np.asarray(v.numpy()) for v in net.weights] for net in nets]


def _set(agent, name, weights):
    for net, w in zip(getattr(agent, name), weights):
        if agent.backend_name == "torch":
            agent.backend.set_weights(list(net.parameters()), w)
        else:
            net.set_weights(w)


def _losses_by_hand(agent, batch, target_actors, target_critics):
    s, a, s2, r, d = batch
    n, act, out = agent.n_agents, agent.action_dim, "softmax" if agent.discrete else "tanh"
    actors = [MLPActor(w, out) for w in _weights(agent, "actors")]
    critics = [MLPActor(w) for w in _weights(agent, "critics")]
    stored = [np.eye(act)[a[:, j]] if agent.discrete else a[:, j] for j in range(n)]
    next_a = [MLPActor(w, out)(s2[:, j]) for j, w in enumerate(target_actors)]
    x2 = np.concatenate([s2.reshape(len(r), -1), *next_a], axis=1)
    x = np.concatenate([s.reshape(len(r), -1), *stored], axis=1)
    critic = sum(np.mean((critics[i](x)[:, 0] - (r + 0.95 * (1 - d) * MLPActor(target_critics[i])(x2)[:, 0])) ** 2)
                 for i in range(n))
    mine = [actors[j](s[:, j]) for j in range(n)]
    actor = -sum(np.mean(critics[i](np.concatenate([s.reshape(len(r), -1)] + [mine[j] if j == i else stored[j]
                                                                              for j in range(n)], axis=1)))
                 for i in range(n))
    return critic, actor


@pytest.mark.parametrize("continuous", [True, False])
def test_losses_by_hand(backend, continuous) -> None:
    agent = _agent(backend, continuous)
    rng = np.random.default_rng(0)
    targets = {name: [[w * 1.3 for w in ws] for ws in _weights(agent, name[:-8] + "s")]
               for name in ("actor_targets", "critic_targets")}
    for name, weights in targets.items():
        _set(agent, name, weights)  # targets that differ from the online networks
    batch = _batch(agent, rng)
    critic, actor = _losses_by_hand(agent, batch, targets["actor_targets"], targets["critic_targets"])
    got_critic = agent.backend.evaluate(agent.critic_loss, batch, agent.prioritized_replay).loss
    got_actor = agent.backend.evaluate(agent.actor_loss, batch, agent.prioritized_replay).loss
    assert got_critic == pytest.approx(critic, rel=1e-5)
    assert got_actor == pytest.approx(actor, rel=1e-5)


@pytest.mark.parametrize("continuous", [True, False])
def test_torch_and_keras_take_the_same_update(continuous) -> None:
    pytest.importorskip("tensorflow")
    import keras
    import torch

    agents = [_agent(b, continuous, seed=4) for b in ("torch", "tf")]
    batch = _batch(agents[0], np.random.default_rng(1))
    for agent in agents:
        spec = agent.update_spec()
        assert [g.name for g in spec.groups] == ["actor", "critic"] and len(spec.targets) == 2
    torch_opts = [torch.optim.SGD(p, lr=0.1) for p in agents[0].param]
    keras_opts = [keras.optimizers.SGD(0.1) for _ in agents[1].param]
    for agent, opts in zip(agents, (torch_opts, keras_opts)):
        for group, opt in zip(agent.param, opts):
            agent.backend.prepare_optimizer(opt, group)
        for loss, group, opt in ((agent.critic_loss, agent.param[1], opts[1]), (agent.actor_loss, agent.param[0], opts[0])):
            agent.backend.make_step(loss, [opt], [group], agent.prioritized_replay, False)(batch)
    for name in ("actors", "critics"):
        for wt, wk in zip(_weights(agents[0], name), _weights(agents[1], name)):
            for x, y in zip(wt, wk):
                np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_box_actions_are_rescaled_to_each_agents_bounds() -> None:
    env = RescaledParallelEnv(simple_spread(True, n_agents=2))
    assert env.action_space("agent_0").low.min() == -1.0 and env.action_space("agent_0").high.max() == 1.0
    seen = []
    inner_step = env.env.step
    env.env.step = lambda actions: (seen.append(actions), inner_step(actions))[1]
    env.reset(seed=0)
    env.step({"agent_0": np.array([-1, 1, 0, 3, -0.5], np.float32), "agent_1": np.zeros(5, np.float32)})
    np.testing.assert_allclose(seen[0]["agent_0"], [0.0, 1.0, 0.5, 1.0, 0.25])  # MPE's Box(0, 1)
    np.testing.assert_allclose(seen[0]["agent_1"], np.full(5, 0.5))


def test_short_runs_and_the_seed_reward_done_contract(backend) -> None:
    mod = agents_module(backend)
    calls = []

    class TeamMADDPG(mod.MADDPG):
        def reward_done_func_ma(self, rewards, dones):  # the seed documents' MARL hook
            calls.append(len(rewards))
            return float(np.mean(rewards)), any(dones)

    agent = TeamMADDPG(hidden_size=[16], env=simple_spread(True, n_agents=2), seed=0)
    agent.set(noise=[GaussianWhiteNoiseProcess(sigma=0.1, size=5) for _ in range(2)], pool_size=2000, batch=32,
              learning_starts=50, train_freq=4, seed=0)
    agent.fit([_optimizer(backend, p) for p in agent.param], None, steps=100, p=0)
    assert agent.MARL and agent.step_counter == 100 and len(agent.reward_list) == 4  # 25-step episodes
    assert calls == [2] * 100 and agent.batch_counter == 13  # updates on steps 52, 56, ..., 100
    assert agent.buffer.data["action"].shape[1:] == (2, 5)
    assert np.abs(agent.buffer.data["action"][:100]).max() <= 1.0

    discrete = mod.MADDPG(hidden_size=[16], env=MatchingGame(), seed=0)  # the seeds' policy=SoftmaxPolicy() form
    discrete.set(policy=SoftmaxPolicy(), pool_size=500, batch=16, learning_starts=20, seed=0)
    discrete.fit([_optimizer(backend, p) for p in discrete.param], None, steps=60, p=0)
    assert discrete.batch_counter == 41 and discrete.buffer.data["action"].shape[1:] == (2,)
    assert np.isfinite(discrete.team_return(2))


def _optimizer(backend, params, lr=1e-3):
    if backend == "torch":
        import torch

        return torch.optim.Adam(params, lr=lr)
    import keras

    return keras.optimizers.Adam(lr)


def test_refusals() -> None:
    import note_rl.agents.torch as mod

    with pytest.raises(ValueError, match="PettingZoo-parallel-style env"):
        mod.MADDPG(env=object())


def _random_team_return(env, episodes=20, seed=500):
    rng, total = np.random.default_rng(0), 0.0
    for e in range(episodes):
        env.reset(seed=seed + e)
        while env.agents:
            _, rewards, _, _, _ = env.step({n: rng.uniform(0, 1, 5).astype(np.float32) for n in env.agents})
            total += sum(rewards.values())
    return total / episodes


@pytest.mark.slow
def test_maddpg_beats_random_play_on_simple_spread() -> None:
    import torch

    from note_rl.agents.torch import MADDPG

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        agent = MADDPG(env=simple_spread(True, n_agents=3), seed=0)
        agent.set(noise=[GaussianWhiteNoiseProcess(sigma=0.1, size=5) for _ in range(3)], pool_size=100_000,
                  batch=256, learning_starts=1000, train_freq=4, seed=0)
        agent.fit([torch.optim.Adam(p, lr=1e-3) for p in agent.param], None, steps=10_000, p=0)
    finally:
        torch.set_num_threads(before)
    random_play = _random_team_return(simple_spread(True, n_agents=3))  # about -78 (100 episodes: -78.4)
    # measured (seed 0): -61.5 greedy after 10,000 steps (-62.6 after 20,000)
    assert agent.team_return(20, seed=500) >= random_play + 8.0
