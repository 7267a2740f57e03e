"""PPO's and A2C's generalized state-dependent exploration (gSDE, ``use_sde=True``, on rollouts): the
sampled actions and their log-probabilities worked out by hand in numpy, the loss reading the same
log-probabilities the rollout stored, the entropy, the exploration matrices' schedule, the same
updates in both backends, one-line refusals, the greedy action and its export, checkpoints and pool
collection."""

import os

import numpy as np
import pytest

from note_rl.agents.common import MLPActor
from note_rl.core.runners import SDE_EPS, StateDependentNoise, sample_rollout_actions, sde_log_prob
from note_rl.core.updater import Updater
from tests.conftest import agents_module

pytest.importorskip("torch")
pytest.importorskip("tensorflow")

HIDDEN = [16, 8]
ENV = "MountainCarContinuous-v0"  # one action dimension, bounds [-1, 1]
HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)


def _ppo(backend, **kwargs):
    kwargs = {"env": ENV, "seed": 3, "use_sde": True, "log_std_init": -1.0, "n_steps": 4, "n_envs": 2, **kwargs}
    return agents_module(backend).PPO(2, HIDDEN, 1, **kwargs)


def _tensor(agent, x):
    if agent.backend_name == "torch":
        import torch

        return torch.as_tensor(x)
    import tensorflow as tf

    return tf.constant(x)


def _numpy(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def _mean_and_features(agent, s):
    """The actor's mean and last hidden layer, by a numpy pass over its weights."""
    *body, w, b = agent.actor_weights()
    z = MLPActor([*body, np.eye(w.shape[0], dtype=np.float32), np.zeros(w.shape[0], np.float32)],
                 activation=agent.activation)(s)
    return z @ w + b, z


def _states(n=2, seed=5):
    rng = np.random.default_rng(seed)
    return np.stack([rng.uniform(-1.2, 0.6, n), rng.uniform(-0.07, 0.07, n)], axis=1).astype(np.float32)


def test_the_log_prob_is_the_gaussian_of_the_state_dependent_variance() -> None:
    """One state, one action dimension, two features: ``var = z**2 @ std**2 + 1e-6``."""
    z = np.array([[1.0, 2.0]])
    log_std = np.log(np.array([[0.5], [0.25]]))
    var = 1.0 * 0.25 + 4.0 * 0.0625 + 1e-6
    a, mean = np.array([[0.4]]), np.array([[0.1]])
    expected = -0.5 * 0.09 / var - 0.5 * np.log(2 * np.pi * var)
    assert sde_log_prob(a, mean, z, log_std)[0] == pytest.approx(expected, rel=1e-12)


def test_the_noise_is_the_features_times_each_copys_matrix() -> None:
    log_std = np.log(np.array([[0.5], [0.25]], np.float32))
    noise = StateDependentNoise(log_std, 2, np.random.default_rng(0))
    e = noise.matrices  # (copies, features, actions)
    assert e.shape == (2, 2, 1) and not np.array_equal(e[0], e[1])
    out = np.array([[0.1, 1.0, 2.0], [-0.3, 0.5, -1.0]], np.float32)  # [mean, z] per copy
    actions, logp = noise.sample(out)
    assert actions[0, 0] == pytest.approx(0.1 + 1.0 * e[0, 0, 0] + 2.0 * e[0, 1, 0], rel=1e-6)
    assert actions[1, 0] == pytest.approx(-0.3 + 0.5 * e[1, 0, 0] - 1.0 * e[1, 1, 0], rel=1e-6)
    np.testing.assert_allclose(logp, sde_log_prob(actions, out[:, :1], out[:, 1:], log_std), rtol=1e-6)


def test_the_matrices_are_normal_with_the_learned_std() -> None:
    noise = StateDependentNoise(np.full((8, 1), -1.0, np.float32), 4000, np.random.default_rng(1))
    assert noise.matrices.mean() == pytest.approx(0.0, abs=0.01)
    assert noise.matrices.std() == pytest.approx(np.exp(-1.0), rel=0.03)


def test_rollout_actions_and_log_probs_by_hand_and_in_the_loss(backend) -> None:
    agent = _ppo(backend)
    assert agent.log_std_weights().shape == (HIDDEN[-1], 1)
    agent.on_rollout_start(1.0)
    s = _states()
    actions, logp, _ = agent.rollout_act(s)
    mean, z = _mean_and_features(agent, s)
    e = agent.sde_noise().matrices
    np.testing.assert_allclose(actions, mean + np.einsum("bi,bij->bj", z, e), rtol=1e-5, atol=1e-6)
    var = (z ** 2) @ np.exp(2 * agent.log_std_weights()) + SDE_EPS
    by_hand = (-0.5 * (actions - mean) ** 2 / var - 0.5 * np.log(var) - HALF_LOG_2PI).sum(axis=1)
    np.testing.assert_allclose(logp, by_hand, rtol=1e-5, atol=1e-5)
    # the loss reads the same log-probability of the stored action: PPO's first ratio is 1
    loss_logp = agent._log_prob(agent._policy_out(_tensor(agent, s)), _tensor(agent, actions))
    np.testing.assert_allclose(_numpy(loss_logp), logp, rtol=1e-5, atol=1e-5)
    # the entropy bonus: a Gaussian's 0.5 + log(sqrt(2 pi) sigma) per action dimension, sigma per state
    entropy = _numpy(agent._entropy(agent._policy_out(_tensor(agent, s))))
    assert entropy == pytest.approx(np.mean(0.5 + HALF_LOG_2PI + 0.5 * np.log(var[:, 0])), rel=1e-5)


def test_matrices_are_held_for_the_rollout_or_sde_sample_freq_steps() -> None:
    agent = _ppo("torch")
    s = np.repeat(_states(1), 2, axis=0)  # the same state in both copies
    agent.on_rollout_start(1.0)
    first = agent.rollout_act(s)[0]
    assert first[0, 0] != first[1, 0]  # each copy explores with its own matrix
    np.testing.assert_array_equal(agent.rollout_act(s)[0], first)  # held over the rollout
    agent.on_rollout_start(1.0)  # a new rollout draws new matrices
    assert not np.array_equal(agent.rollout_act(s)[0], first)
    agent = _ppo("torch", sde_sample_freq=2)
    agent.on_rollout_start(1.0)
    played = [agent.rollout_act(s)[0] for _ in range(5)]
    np.testing.assert_array_equal(played[1], played[0])
    assert not np.array_equal(played[2], played[1])
    np.testing.assert_array_equal(played[3], played[2])
    assert not np.array_equal(played[4], played[3])


def _batch(agent, n=8, seed=0):
    rng = np.random.default_rng(seed)
    s = _states(n, seed)
    agent.on_rollout_start(1.0)
    a, logp = sample_rollout_actions(agent.act_output(s), rng, agent.log_std_weights())  # fresh matrices
    return [s, a, logp, rng.normal(size=n).astype(np.float32), rng.normal(size=n).astype(np.float32)]


def _run(backend, n_updates):
    agent = _ppo(backend, entropy_coef=0.01)
    if backend == "torch":
        import torch

        opts = torch.optim.SGD(agent.backend.flatten(agent.param), lr=0.05)
    else:
        import keras

        opts = keras.optimizers.SGD(learning_rate=0.05)
    updater = Updater(agent, opts, jit=False)
    history = []
    for k in range(1, n_updates + 1):
        result = updater(k, _batch(agent, seed=k), None)
        agent.batch_counter += 1  # as the training loop counts it: the numpy actor re-reads the weights
        # copies: on the CPU torch's numpy weights are views the next update changes
        history.append((result.loss, [np.array(w) for w in agent.actor_weights() + [agent.log_std_weights()]]))
    return history


def test_updates_match_across_backends_and_train_the_log_std() -> None:
    torch_hist, tf_hist = _run("torch", 3), _run("keras", 3)
    for (lt, wt), (lk, wk) in zip(torch_hist, tf_hist):
        assert lt == pytest.approx(lk, rel=1e-4, abs=1e-5)
        for a, b in zip(wt, wk):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert not np.allclose(torch_hist[-1][1][-1], -1.0)


def test_bad_gsde_arguments_are_one_line() -> None:
    torch_agents = agents_module("torch")
    for build, key in ((lambda: _ppo("torch", use_sde="yes"), "use_sde"),
                       (lambda: _ppo("torch", sde_sample_freq=0), "sde_sample_freq"),
                       (lambda: torch_agents.PPO(4, HIDDEN, 2, env="CartPole-v1", n_steps=8, use_sde=True),
                        "use_sde=True"),  # discrete actions
                       (lambda: torch_agents.PPO(4, HIDDEN, 2, env="CartPole-v1", use_sde=True), "use_sde")):
        with pytest.raises(ValueError, match=key) as err:
            build()
        assert "\n" not in str(err.value)


def test_a2c_takes_gsde_too(backend) -> None:
    agent = agents_module(backend).A2C(2, HIDDEN, 1, env=ENV, seed=0, use_sde=True, sde_sample_freq=4)
    assert agent.use_sde and agent.sde_sample_freq == 4 and agent.log_std_weights().shape == (HIDDEN[-1], 1)


def test_predict_and_export_play_the_clipped_mean(tmp_path) -> None:
    import torch

    import note_rl

    agent = _ppo("torch")
    with torch.no_grad():
        agent.actor.layers[-1] += 0.8  # some means past the bound 1
    obs = _states(16, seed=9)
    mean = _mean_and_features(agent, obs)[0]
    expected = agent.predict(obs)[0]
    np.testing.assert_allclose(expected, np.clip(mean, -1, 1), rtol=1e-6)
    assert (mean > 1).any()
    path = note_rl.export(agent, str(tmp_path / "policy.pt"), "torchscript")
    np.testing.assert_allclose(torch.jit.load(path)(torch.as_tensor(obs)).numpy(), expected, rtol=1e-6, atol=1e-6)
    sampled = agent.predict(obs, deterministic=False)[0]
    assert sampled.shape == (16, 1) and np.all(np.abs(sampled) <= 1) and not np.allclose(sampled, expected)


def test_a_checkpoint_restores_the_log_std_matrix(backend, tmp_path) -> None:
    agent = _ppo(backend)
    if agent.backend_name == "torch":
        import torch

        with torch.no_grad():
            agent.log_std.fill_(-2.5)
    else:
        agent.log_std.assign(np.full((HIDDEN[-1], 1), -2.5, np.float32))
    path = os.path.join(tmp_path, "model.npz")
    agent.save_param(path)
    fresh = _ppo(backend)
    fresh.restore_param(path)
    assert fresh.log_std_weights().shape == (HIDDEN[-1], 1) and np.all(fresh.log_std_weights() == -2.5)


@pytest.mark.parametrize("pool", [False, True])
def test_training_moves_the_log_std_locally_and_in_pool_workers(pool) -> None:
    import torch

    agent = _ppo("torch", n_steps=16, seed=0)
    agent.set(batch=16)
    opt = torch.optim.Adam(agent.backend.flatten(agent.param), lr=1e-2)
    extra = {"pool_network": True, "processes": 2} if pool else {}
    agent.train(optimizer=opt, steps=128, **extra)
    assert agent.step_counter == 128
    log_std = agent.log_std_weights()
    assert np.all(np.isfinite(log_std)) and not np.allclose(log_std, -1.0)
