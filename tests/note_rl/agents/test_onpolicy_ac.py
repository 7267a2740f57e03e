"""PPO with Box actions (a state-independent Gaussian) and A2C, in both backends: losses by hand,
Keras/torch conformance, sampling and clipping, refusals, short runs, pool workers, checkpoints."""

import math

import gymnasium as gym
import numpy as np
import pytest

from note_rl.agents.common import MLPActor
from note_rl.policy import EpsGreedyQPolicy
from tests.conftest import agents_module

pytest.importorskip("torch")

HIDDEN = [16]


def _gaussian(backend, cls="PPO", **kwargs):
    args = dict(n_steps=16, n_envs=2, env="Pendulum-v1", seed=3, log_std_init=-0.3)
    if cls == "PPO":
        args.update(n_epochs=2)
    args.update(kwargs)
    return getattr(agents_module(backend), cls)(3, HIDDEN, 1, **args)


def _rollout(rng, n=24, obs=3, act=1):
    return [rng.normal(size=(n, obs)).astype(np.float32), (2.5 * rng.normal(size=(n, act))).astype(np.float32),
            rng.normal(size=n).astype(np.float32) - 1.0, rng.normal(size=n).astype(np.float32),
            rng.normal(size=n).astype(np.float32)]


def _log_normal(x, mean, log_std):
    """Diagonal Gaussian log density, summed over actions (written out, independent of note_rl)."""
    var = np.exp(2 * log_std)
    return np.sum(-((x - mean) ** 2) / (2 * var) - 0.5 * np.log(2 * math.pi * var), axis=-1)


def _by_hand(agent, batch, a2c=False):
    s, a, logp_old, adv, ret = batch
    mean = MLPActor(agent.actor_weights(), "linear", agent.activation)(s)
    log_std = agent.log_std_weights()
    logp = _log_normal(a, mean, log_std)
    if a2c:
        policy = -np.mean(logp * adv)
    else:
        ratio = np.exp(logp - logp_old)
        policy = -np.mean(np.minimum(ratio * adv, np.clip(ratio, 0.8, 1.2) * adv))
    v = MLPActor(agent.critic_weights(), "linear", agent.activation)(s)[:, 0]
    entropy = np.sum(log_std + 0.5 + 0.5 * np.log(2 * math.pi))
    return policy + agent.vf_coef * np.mean((ret - v) ** 2) - agent.entropy_coef * entropy


@pytest.mark.parametrize("cls", ["PPO", "A2C"])
@pytest.mark.parametrize("entropy_coef", [0.0, 0.01])
def test_gaussian_loss_by_hand(backend, cls, entropy_coef) -> None:
    agent = _gaussian(backend, cls, entropy_coef=entropy_coef)
    assert agent.continuous and agent.log_std_weights() == pytest.approx([-0.3])
    batch = _rollout(np.random.default_rng(0))
    loss = agent.backend.evaluate(agent.rollout_loss, batch, agent.prioritized_replay).loss
    assert loss == pytest.approx(_by_hand(agent, batch, a2c=cls == "A2C"), rel=1e-5, abs=1e-5)


def test_a2c_discrete_loss_is_the_plain_policy_gradient(backend) -> None:
    agent = agents_module(backend).A2C(4, HIDDEN, 2, seed=1)
    rng = np.random.default_rng(1)
    s = rng.normal(size=(10, 4)).astype(np.float32)
    a = rng.integers(0, 2, 10)
    adv, ret = rng.normal(size=10).astype(np.float32), rng.normal(size=10).astype(np.float32)
    batch = [s, a, np.zeros(10, np.float32), adv, ret]
    loss = agent.backend.evaluate(agent.rollout_loss, batch, agent.prioritized_replay).loss
    probs = MLPActor(agent.actor_weights(), "softmax", "tanh")(s)
    v = MLPActor(agent.critic_weights(), "linear", "tanh")(s)[:, 0]
    expected = -np.mean(np.log(probs[np.arange(10), a]) * adv) + 0.5 * np.mean((ret - v) ** 2)
    assert loss == pytest.approx(expected, rel=1e-5)
    assert agent.n_epochs == 1 and agent.lam == 1.0 and agent.max_grad_norm == 0.5  # SB3's defaults


@pytest.mark.parametrize("cls", ["PPO", "A2C"])
def test_gaussian_sgd_step_conforms_across_backends(cls) -> None:
    pytest.importorskip("tensorflow")
    import keras
    import torch

    agents = [_gaussian(b, cls, entropy_coef=0.01, max_grad_norm=None) for b in ("torch", "tf")]
    batch = _rollout(np.random.default_rng(2))
    opts = [torch.optim.SGD(agents[0].backend.flatten(agents[0].param), lr=0.1),
            keras.optimizers.SGD(learning_rate=0.1)]
    for agent, opt in zip(agents, opts):
        variables = agent.backend.flatten(agent.param)
        agent.backend.prepare_optimizer(opt, variables)
        agent.backend.make_step(agent.rollout_loss, [opt], [variables], agent.prioritized_replay, False)(batch)
    for wt, wk in zip(agents[0].actor_weights() + agents[0].critic_weights(),
                      agents[1].actor_weights() + agents[1].critic_weights()):
        np.testing.assert_allclose(wt, wk, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(agents[0].log_std_weights(), agents[1].log_std_weights(), rtol=1e-5)
    assert not np.allclose(agents[0].log_std_weights(), -0.3)  # the log std is trained


def test_rmsprop_means_the_same_in_both_backends() -> None:
    """One RMSprop step from the same gradient: torch adds eps outside the root, Keras inside, so
    the Keras optimizer gets eps**2 (see note_rl.optim.RMSprop)."""
    pytest.importorskip("tensorflow")
    import tensorflow as tf
    import torch

    from note_rl.backends import get_backend
    from note_rl.optim import RMSprop

    spec = RMSprop(lr=0.01, rho=0.99, eps=1e-5)
    grad = np.array([1e-4, 0.3, -2.0], np.float32)
    pt = torch.nn.Parameter(torch.zeros(3))
    opt = get_backend("torch").build_optimizer(spec, [pt])
    pt.grad = torch.as_tensor(grad)
    opt.step()
    var = tf.Variable(np.zeros(3, np.float32))
    kopt = get_backend("tf").build_optimizer(spec, [var])
    assert kopt.epsilon == pytest.approx(1e-10)
    kopt.apply_gradients([(tf.constant(grad), var)])
    expected = -0.01 * grad / (np.sqrt(0.01 * grad ** 2) + 1e-5)  # torch's formula, by hand
    np.testing.assert_allclose(pt.detach().numpy(), expected, rtol=1e-4)
    # large gradients: the same step; where the root equals eps (grad 1e-4 here): sqrt(2)x, the worst case
    np.testing.assert_allclose(var.numpy()[1:], expected[1:], rtol=1e-3)
    assert var.numpy()[0] / expected[0] == pytest.approx(math.sqrt(2.0), rel=1e-3)


class _Recorder(gym.Wrapper):
    """Records the actions the env receives."""

    def __init__(self, env):
        super().__init__(env)
        self.played = []

    def step(self, action):
        self.played.append(np.array(action))
        return self.env.step(action)


def test_gaussian_actions_stored_as_sampled_and_played_clipped(backend) -> None:
    from note_rl.core.envs import make_vec_env
    from note_rl.core.runners import RolloutRunner, gaussian_log_prob

    agent = _gaussian(backend, log_std_init=1.0)  # std e: many samples outside [-2, 2]
    assert agent.action_bounds[0] == pytest.approx([-2.0]) and agent.action_bounds[1] == pytest.approx([2.0])
    recorders = []

    def make():
        recorders.append(_Recorder(gym.make("Pendulum-v1")))
        return recorders[-1]

    runner = RolloutRunner(make_vec_env(make, 2), agent.rollout_act, agent.rollout_values, seed=0,
                           bounds=agent.action_bounds)
    fields, _ = runner.collect(50)
    stored = fields["action"]  # (50, 2, 1)
    assert np.abs(stored).max() > 2.0
    played = np.stack([np.stack(r.played) for r in recorders], axis=1)
    np.testing.assert_allclose(played, np.clip(stored, -2.0, 2.0))
    # the stored log-probabilities are those of the stored (unclipped) actions
    obs = fields["state"].reshape(100, 3)
    mean = agent.act_output(obs)
    np.testing.assert_allclose(fields["log_prob"].reshape(100),
                               gaussian_log_prob(stored.reshape(100, 1), mean, agent.log_std_weights()), rtol=1e-5)
    # greedy play: the mean, clipped
    assert agent.greedy_action(np.array([3.5], np.float32)) == pytest.approx([2.0])


def test_refusals(backend) -> None:
    mod = agents_module(backend)
    with pytest.raises(ValueError, match=r"Box actions .* trains on rollouts: give n_steps"):
        mod.PPO(3, HIDDEN, 1, env="Pendulum-v1")
    with pytest.raises(ValueError, match=r"action_dim=2\): the env's actions have 1 dimensions"):
        mod.PPO(3, HIDDEN, 2, n_steps=8, env="Pendulum-v1")
    with pytest.raises(ValueError, match=r"A2C\(n_steps=None\)"):
        mod.A2C(3, HIDDEN, 1, n_steps=None, env="Pendulum-v1")
    agent = _gaussian(backend)
    agent.set(policy=EpsGreedyQPolicy(0.1), batch=16)
    with pytest.raises(ValueError, match="policy=EpsGreedyQPolicy applies to discrete actions only"):
        agent.train(optimizer=_adam(agent), steps=64)


def _adam(agent):
    from note_rl.optim import Adam

    return agent.backend.build_optimizer(Adam(lr=1e-3), agent.backend.flatten(agent.param))


@pytest.mark.parametrize("cls,env,dims", [("PPO", "Pendulum-v1", (3, 1)), ("A2C", "Pendulum-v1", (3, 1)),
                                          ("A2C", "CartPole-v1", (4, 2))])
def test_short_runs(backend, cls, env, dims) -> None:
    extra = dict(n_epochs=2) if cls == "PPO" else {}
    agent = getattr(agents_module(backend), cls)(dims[0], HIDDEN, dims[1], n_steps=16, n_envs=2, env=env,
                                                 seed=0, **extra)
    agent.set(batch=16 if cls == "PPO" else None, seed=0)
    before = agent.actor_weights()[0].copy()
    agent.train(optimizer=_adam(agent), steps=640)
    assert agent.step_counter == 640  # 20 rollouts of 16 steps x 2 envs
    # PPO: 2 epochs x 2 mini-batches of 16 per rollout; A2C: one step on the whole rollout
    assert agent.batch_counter == 20 * (4 if cls == "PPO" else 1)
    assert not np.allclose(before, agent.actor_weights()[0])
    _, total, steps = agent.run_agent(200, seed=0)
    assert steps > 0 and np.isfinite(total)


def test_gaussian_ppo_with_pool_workers() -> None:
    agent = _gaussian("torch", n_envs=4)
    agent.set(batch=32, seed=0)
    agent.train(optimizer=_adam(agent), steps=256, pool_network=True, processes=2)
    # 4 rollouts of 16 steps x 4 envs (2 per worker), each 2 epochs x 2 mini-batches of 32
    assert agent.step_counter == 256 and agent.batch_counter == 16


def test_gaussian_ppo_checkpoint_keeps_log_std(backend, tmp_path) -> None:
    agent = _gaussian(backend)
    agent.set(batch=16, seed=0)
    agent.train(optimizer=_adam(agent), steps=128)
    path = agent.save(str(tmp_path / "ppo.npz"))
    fresh = _gaussian(backend, log_std_init=0.5)
    fresh.restore(path)
    np.testing.assert_allclose(fresh.log_std_weights(), agent.log_std_weights())
    assert not np.allclose(agent.log_std_weights(), -0.3)


def test_a_restored_run_continues_the_same_way_twice(tmp_path) -> None:
    """The env copies a train() call builds after a restore are seeded from (seed, step counter): two agents
    restored from one checkpoint train to the same weights (unseeded, they drew from the OS and a PBT
    segment of A2C scored differently from run to run); a fresh run's first reset keeps the set() seed."""
    def agent():
        a = agents_module("torch").A2C(4, HIDDEN, 2, n_steps=8, n_envs=2, env="CartPole-v1", seed=0)
        a.set(seed=0)
        return a

    first = agent()
    assert first.copies_seed() == 0  # the set() seed, once; then drawn from (seed, step counter)
    assert first.copies_seed() == int(np.random.SeedSequence([0, 0]).generate_state(1)[0] >> 1)
    first = agent()
    first.train(optimizer=_adam(first), steps=160)
    path = first.save(str(tmp_path / "a2c.npz"))
    weights = []
    for _ in range(2):
        again = agent()
        opt = _adam(again)
        again.restore(path, opt)
        again.train(optimizer=opt, steps=160)
        assert again.step_counter == 320
        weights.append(again.actor_weights()[0].copy())
    np.testing.assert_array_equal(weights[0], weights[1])
    assert not np.allclose(weights[0], first.actor_weights()[0])
