"""Backend conformance: identical numpy weights and batches give identical losses, TD errors and
updates in Keras and PyTorch (to 1e-5)."""

import numpy as np
import pytest

from tests.conftest import agents_module

pytest.importorskip("torch")
pytest.importorskip("tensorflow")


def _three_actions():
    """An env with 4-dim observations and 3 actions: the agents check their sizes against their env
    (CartPole, the default, has 2 actions)."""
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    env.action_space = gym.spaces.Discrete(3)
    return env


def _batch(rng, n=32, obs=4, actions=2):
    return [rng.normal(size=(n, obs)).astype(np.float32), rng.integers(0, actions, n).astype(np.int64),
            rng.normal(size=(n, obs)).astype(np.float32), rng.normal(size=n).astype(np.float32),
            (rng.random(n) < 0.2).astype(np.float32)]


def _pair(cls_name, **kwargs):
    agents = [getattr(agents_module(b), cls_name)(**kwargs) for b in ("torch", "tf")]
    for a in agents:
        a.set(PR=True)
    return agents


def _set_module(agent, name, weights):
    module = agent.backend.modules(agent)[name]
    if agent.backend_name == "torch":
        agent.backend.set_module_weights(module, weights)
    else:
        module.set_weights(weights)


@pytest.mark.parametrize("loss", ["mse", "huber"])
@pytest.mark.parametrize("double", [True, False])
def test_dqn_loss_and_td_match(loss: str, double: bool) -> None:
    rng = np.random.default_rng(0)
    agents = _pair("DQN", state_dim=4, hidden_size=[16, 8], action_dim=2, gamma=0.9, loss=loss,
                   double=double, seed=1)
    target = [w * 1.5 for w in agents[0].q_weights()]  # a target net different from the online one
    for a in agents:
        _set_module(a, "target_q_net", target)
    batch = _batch(rng)
    weights = rng.random(32).astype(np.float32)
    results = [a.backend.evaluate(a.__call__, batch + [weights], a.prioritized_replay) for a in agents]
    assert results[0].loss == pytest.approx(results[1].loss, rel=1e-5, abs=1e-6)
    np.testing.assert_allclose(results[0].td, results[1].td, rtol=1e-5, atol=1e-5)
    # TD by hand from the numpy weights
    q = agents[0].numpy_actor()(batch[0])[np.arange(32), batch[1]]
    from note_rl.agents.common import MLPActor

    tq = MLPActor(target)(batch[2])
    oq = agents[0].numpy_actor()(batch[2])
    nxt = tq[np.arange(32), oq.argmax(1)] if double else tq.max(1)
    np.testing.assert_allclose(results[0].td, q - (batch[3] + 0.9 * nxt * (1 - batch[4])), rtol=1e-4, atol=1e-5)


def test_dqn_sgd_step_updates_identically() -> None:
    import keras
    import torch

    rng = np.random.default_rng(2)
    agents = _pair("DQN", state_dim=4, hidden_size=16, action_dim=3, seed=3, env=_three_actions())
    batch = _batch(rng, actions=3)
    opts = [torch.optim.SGD(agents[0].param, lr=0.1), keras.optimizers.SGD(learning_rate=0.1)]
    for a, opt in zip(agents, opts):
        a.backend.prepare_optimizer(opt, a.param)
        step = a.backend.make_step(a.__call__, [opt], [a.backend.flatten(a.param)], a.prioritized_replay, False)
        step(batch)
    for wt, wk in zip(agents[0].q_weights(), agents[1].q_weights()):
        np.testing.assert_allclose(wt, wk, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("entropy_coef", [0.0, 0.05])
def test_ppo_losses_match(entropy_coef: float) -> None:
    rng = np.random.default_rng(4)
    agents = _pair("PPO", state_dim=4, hidden_size=[16], action_dim=3, clip=0.2, env=_three_actions(),
                   entropy_coef=entropy_coef, gamma=0.95, seed=5)
    old = [w + 0.05 * rng.normal(size=w.shape).astype(np.float32) for w in agents[0].actor_weights()]
    for a in agents:
        _set_module(a, "actor_old", old)
    batch = _batch(rng, actions=3)
    res = [a.backend.evaluate(a.__call__, batch, a.prioritized_replay) for a in agents]
    assert res[0].loss == pytest.approx(res[1].loss, rel=1e-5, abs=1e-6)
    np.testing.assert_allclose(res[0].td, res[1].td, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(res[0].ratio, res[1].ratio, rtol=1e-5, atol=1e-6)
    rollout = [batch[0], batch[1], rng.normal(size=32).astype(np.float32) - 1.0,
               rng.normal(size=32).astype(np.float32), rng.normal(size=32).astype(np.float32)]
    losses = [a.backend.evaluate(a.rollout_loss, rollout, a.prioritized_replay).loss for a in agents]
    assert losses[0] == pytest.approx(losses[1], rel=1e-5, abs=1e-6)
