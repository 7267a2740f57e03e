"""SAC's generalized state-dependent exploration (gSDE, ``use_sde=True``): the sample and its
log-probability worked out by hand in numpy, the same updates in both backends, the exploration
matrix's schedule and distribution while acting, the greedy action, export and checkpoints."""

import os

import numpy as np
import pytest

from note_rl.agents.common import MLPActor
from note_rl.agents.sac import SDE_CLIP_MEAN, sde_log_prob
from note_rl.core.updater import Updater
from tests.note_rl.agents.test_continuous import _fixed_normal  # constant draws: E = value * exp(log_std)
from tests.conftest import agents_module

pytest.importorskip("torch")
pytest.importorskip("tensorflow")

HIDDEN = [16, 8]
LR = 0.05
ENV = "MountainCarContinuous-v0"


def _sac(backend, **kwargs):
    kwargs = {"hidden_size": HIDDEN, "env": ENV, "seed": 3, "use_sde": True, "log_std_init": -1.0, **kwargs}
    return agents_module(backend).SAC(**kwargs)


def _is_torch(agent) -> bool:
    return agent.backend_name == "torch"


def _tensor(agent, x):
    if _is_torch(agent):
        import torch

        return torch.as_tensor(x)
    import tensorflow as tf

    return tf.constant(x)


def _numpy(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def _mean_and_features(agent, s):
    """The actor's mean (unclipped) and last hidden layer, by a numpy pass over its weights."""
    *body, w, b = agent.actor_weights()
    # an identity output layer after the hidden ones gives their (ReLU'd) output
    z = MLPActor([*body, np.eye(w.shape[0], dtype=np.float32), np.zeros(w.shape[0], np.float32)])(s)
    return z @ w + b, z


def _states(n=32, seed=5):
    rng = np.random.default_rng(seed)
    return np.stack([rng.uniform(-1.2, 0.6, n), rng.uniform(-0.07, 0.07, n)], axis=1).astype(np.float32)


def _batch(n=32, seed=0):
    rng = np.random.default_rng(seed)
    return [_states(n, seed), rng.uniform(-1, 1, (n, 1)).astype(np.float32), _states(n, seed + 1),
            rng.normal(size=n).astype(np.float32), (rng.random(n) < 0.2).astype(np.float32)]


def test_the_sample_and_its_log_prob_by_hand(backend) -> None:
    agent = _sac(backend)
    # a mean past the clip for some states, so the clip is exercised
    s = _states()
    shift = SDE_CLIP_MEAN - np.median(_mean_and_features(agent, s)[0] * 100.0)  # half the means past the clip
    if _is_torch(agent):
        agent.actor.layers[-2].data *= 100.0
        agent.actor.layers[-1].data = agent.actor.layers[-1].data * 100.0 + float(shift)
    else:
        last = agent.actor.layers[-1]
        last.kernel.assign(last.kernel * 100.0)
        last.bias.assign(last.bias * 100.0 + float(shift))
    _fixed_normal(agent, 0.3)
    mean, z = _mean_and_features(agent, s)
    assert mean.min() < SDE_CLIP_MEAN < mean.max()
    mean = np.clip(mean, -SDE_CLIP_MEAN, SDE_CLIP_MEAN)
    log_std = agent.read_sde_log_std()
    assert log_std.shape == (HIDDEN[-1], 1) and np.all(log_std == -1.0)
    u = mean + z @ (0.3 * np.exp(log_std))
    action, logp = agent._sample(_tensor(agent, s))
    np.testing.assert_allclose(_numpy(action), np.tanh(u), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_numpy(logp), sde_log_prob(u, mean, z, log_std), rtol=1e-4, atol=1e-4)


def test_the_log_prob_reference_is_the_gaussian_of_the_state_dependent_variance() -> None:
    """``sde_log_prob`` against scipy-free arithmetic: one state, one action, two features."""
    z = np.array([[1.0, 2.0]])
    log_std = np.log(np.array([[0.5], [0.25]]))
    var = 1.0 * 0.25 + 4.0 * 0.0625 + 1e-6  # z**2 @ std**2 + eps
    u, mean = np.array([[0.4]]), np.array([[0.1]])
    expected = -0.5 * 0.09 / var - 0.5 * np.log(2 * np.pi * var) - np.log(1 - np.tanh(0.4) ** 2 + 1e-6)
    assert sde_log_prob(u, mean, z, log_std)[0] == pytest.approx(expected, rel=1e-12)


def _run(backend, n_updates):
    agent = _sac(backend, ent_coef="auto_0.5")
    _fixed_normal(agent, 0.3)
    if _is_torch(agent):
        import torch

        opts = [torch.optim.SGD(p, lr=LR) for p in agent.param]
    else:
        import keras

        opts = [keras.optimizers.SGD(learning_rate=LR) for _ in agent.param]
    updater = Updater(agent, opts, jit=False)
    history = []
    for k in range(1, n_updates + 1):
        result = updater(k, _batch(seed=k), None)
        history.append((result.losses, [np.array(w) for w in agent.actor_weights() + [agent.read_sde_log_std()]]))
    return history


def test_updates_match_across_backends_and_train_the_log_std() -> None:
    torch_hist, tf_hist = _run("torch", 3), _run("keras", 3)
    for (lt, wt), (lk, wk) in zip(torch_hist, tf_hist):
        for name in lt:
            assert lt[name] == pytest.approx(lk[name], rel=1e-5, abs=1e-6), name
        for a, b in zip(wt, wk):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not np.allclose(torch_hist[-1][1][-1], -1.0)  # the reparameterisation reached log_std


def test_the_acting_output_is_the_mean_and_the_features(backend) -> None:
    agent = _sac(backend)
    s = _states(8)
    mean, z = _mean_and_features(agent, s)
    out = agent.act_output(s)  # the numpy actor (identity-widened output layer)
    np.testing.assert_allclose(out, np.concatenate([mean, z], axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_numpy(agent.action(_tensor(agent, s))), out, rtol=1e-5, atol=1e-6)
    greedy = np.array([agent.greedy_action(o) for o in out])
    np.testing.assert_allclose(greedy, np.tanh(np.clip(mean, -2, 2)), rtol=1e-6)


def test_the_exploration_matrix_is_held_for_a_round_then_redrawn() -> None:
    agent = _sac("torch", seed=0)
    agent.set(learning_starts=0, train_freq=4)
    out = agent.act_output(_states(1))[0]
    mean, z = agent.sde_split(out)
    played = []
    for step in range(12):
        agent.step_counter = step
        played.append(agent.explore(out))
    played = np.array(played)[:, 0]
    for k in range(3):  # one matrix per training round of train_freq=4 env steps
        assert np.all(played[4 * k: 4 * k + 4] == played[4 * k])
    assert len(set(played[::4])) == 3
    agent.step_counter = 11
    e = agent.exploration_matrix()
    assert played[-1] == pytest.approx(np.tanh(mean + z @ e)[0], rel=1e-6)
    # another env copy (vectorised collection) holds its own matrix over the same steps
    assert not np.array_equal(agent.exploration_matrix(copy=1), e)
    agent.sde_sample_freq = 2
    agent.step_counter = 12
    first = agent.exploration_matrix()
    agent.step_counter = 13
    assert np.array_equal(agent.exploration_matrix(), first)
    agent.step_counter = 14
    assert not np.array_equal(agent.exploration_matrix(), first)


def test_the_exploration_matrix_is_normal_with_the_learned_std_and_seeded() -> None:
    agent = _sac("torch", seed=0, log_std_init=-1.0, sde_sample_freq=1)
    draws = []
    for step in range(4000):
        agent.step_counter = step
        draws.append(agent.exploration_matrix())
    draws = np.stack(draws)  # (4000, 8, 1)
    assert draws.mean() == pytest.approx(0.0, abs=0.01)
    assert draws.std() == pytest.approx(np.exp(-1.0), rel=0.03)
    twin = _sac("torch", seed=0, log_std_init=-1.0, sde_sample_freq=1)
    twin.step_counter = 0
    np.testing.assert_array_equal(twin.exploration_matrix(), draws[0])
    agent.set(seed=0)  # re-seeding draws the same matrices again
    agent.step_counter = 0
    np.testing.assert_array_equal(agent.exploration_matrix(), draws[0])


def test_bad_gsde_arguments_are_one_line() -> None:
    for kwargs, key in (({"use_sde": "yes"}, "use_sde"), ({"sde_sample_freq": 0}, "sde_sample_freq"),
                        ({"log_std_init": float("nan")}, "log_std_init")):
        with pytest.raises(ValueError, match=key) as err:
            _sac("torch", **kwargs)
        assert "\n" not in str(err.value)


def test_export_plays_the_clipped_mean(tmp_path) -> None:
    import torch

    import note_rl

    agent = _sac("torch")
    with torch.no_grad():
        agent.actor.layers[-1] += 2.5  # tanh(clip(mean)) differs from tanh(mean) wherever mean > 2
    obs = _states(16, seed=9)
    expected = agent.predict(obs)[0]
    assert np.allclose(expected, np.tanh(2.0))  # every mean is past the clip
    path = note_rl.export(agent, str(tmp_path / "policy.pt"), "torchscript")
    got = torch.jit.load(path)(torch.as_tensor(obs)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_a_checkpoint_restores_the_log_std(backend, tmp_path) -> None:
    agent = _sac(backend)
    if _is_torch(agent):
        import torch

        with torch.no_grad():
            agent.sde_log_std.fill_(-2.5)
    else:
        agent.sde_log_std.assign(np.full((HIDDEN[-1], 1), -2.5, np.float32))
    path = os.path.join(tmp_path, "model.npz")
    agent.save_param(path)
    fresh = _sac(backend)
    assert np.all(fresh.read_sde_log_std() == -1.0)
    fresh.restore_param(path)
    assert np.all(fresh.read_sde_log_std() == -2.5)


def test_a_short_training_run_moves_the_log_std(backend) -> None:
    agent = _sac(backend, seed=0)
    agent.set(learning_starts=0, batch=32, train_freq=8, num_updates=8)
    if _is_torch(agent):
        import torch

        optimizer = [torch.optim.Adam(p, lr=1e-3) for p in agent.param]
    else:
        import keras

        optimizer = [keras.optimizers.Adam(learning_rate=1e-3) for _ in agent.param]
    agent.train(optimizer=optimizer, steps=200)
    assert agent.step_counter == 200
    log_std = agent.read_sde_log_std()
    assert np.all(np.isfinite(log_std)) and not np.allclose(log_std, -1.0)
