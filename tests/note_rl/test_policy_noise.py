"""Seeded statistics of every policy and noise process."""

import numpy as np
import pytest

from note_rl import noise, policy

Q = np.array([1.0, 3.0, 2.0])


def _freq(actions, n=3):
    return np.bincount(np.asarray(actions), minlength=n) / len(actions)


def test_greedy_and_eps_greedy() -> None:
    assert policy.GreedyQPolicy().select_action(Q) == 1
    p = policy.EpsGreedyQPolicy(0.3, seed=0)
    acts = p.act(np.tile(Q, (20000, 1)))
    # greedy with prob 0.7 + uniform 0.1 each
    np.testing.assert_allclose(_freq(acts), [0.1, 0.8, 0.1], atol=0.01)
    assert isinstance(p.select_action(Q), int)


def test_seeding_reproduces_and_state_round_trips() -> None:
    a, b = policy.EpsGreedyQPolicy(0.5, seed=3), policy.EpsGreedyQPolicy(0.5, seed=3)
    assert [a.select_action(Q) for _ in range(50)] == [b.select_action(Q) for _ in range(50)]
    state = a.get_state()
    first = [a.select_action(Q) for _ in range(20)]
    a.set_state(state)
    assert [a.select_action(Q) for _ in range(20)] == first


def test_softmax_policy_samples_probabilities() -> None:
    p = policy.SoftmaxPolicy(seed=0)
    probs = np.array([0.2, 0.5, 0.3])
    np.testing.assert_allclose(_freq(p.act(np.tile(probs, (20000, 1)))), probs, atol=0.01)
    assert p.select_action(3, probs) in (0, 1, 2)


def test_boltzmann_and_max_boltzmann() -> None:
    p = policy.BoltzmannQPolicy(tau=2.0, seed=0)
    expected = np.exp(Q / 2.0) / np.exp(Q / 2.0).sum()
    np.testing.assert_allclose(_freq(p.act(np.tile(Q, (20000, 1)))), expected, atol=0.01)
    m = policy.MaxBoltzmannQPolicy(eps=0.4, tau=1.0, seed=0)
    boltz = np.exp(Q) / np.exp(Q).sum()
    np.testing.assert_allclose(_freq(m.act(np.tile(Q, (20000, 1)))), 0.6 * np.eye(3)[1] + 0.4 * boltz, atol=0.01)


def test_adaptive_and_linear_eps_schedules() -> None:
    p = policy.AdaptiveEpsGreedyPolicy(initial_eps=1.0, min_eps=0.1, decay_rate=1e-2, seed=0)
    p.act(Q, step_counter=100)
    assert p.eps == pytest.approx(0.1 + 0.9 * np.exp(-1.0))
    lin = policy.LinearEpsGreedyPolicy(1.0, 0.04, decay_steps=8000)
    lin.act(Q, 4000)
    assert lin.eps == pytest.approx(0.52)
    lin.act(Q, 10**6)
    assert lin.eps == pytest.approx(0.04)


def test_boltzmann_gumbel_counts() -> None:
    p = policy.BoltzmannGumbelQPolicy(C=1.0, seed=0)
    acts = [p.select_action(np.array([0.0, 0.0]), step_counter=i) for i in range(2000)]
    assert p.action_counts.sum() == pytest.approx(2 + 2000)  # ones at step 0, +1 per draw
    assert abs(np.mean(acts) - 0.5) < 0.05  # symmetric values: both actions alike
    with pytest.raises(AssertionError):
        policy.BoltzmannGumbelQPolicy(C=0.0)


def test_gumbel_softmax_helpers() -> None:
    p = policy.GumbelSoftmaxPolicy(temperature=1.0, eps=0.0, seed=0)
    logits = np.log(np.array([[0.2, 0.8]]))
    samples = np.concatenate([p.act(logits) for _ in range(5000)])
    assert np.mean(samples == 1) == pytest.approx(0.8, abs=0.02)  # Gumbel-max is exact
    soft = p.gumbel_softmax_sample(np.tile(logits, (10, 1)))
    np.testing.assert_allclose(soft.sum(axis=1), 1.0)
    hard = p.gumbel_softmax(logits)
    assert set(np.round(hard, 6).ravel().tolist()) <= {0.0, 1.0}
    np.testing.assert_array_equal(p.onehot_from_logits(np.array([[0.0, 5.0, 1.0]])), [[0, 1, 0]])


def test_gaussian_noise_statistics_and_annealing() -> None:
    n = noise.GaussianWhiteNoiseProcess(mu=0.5, sigma=2.0, size=20000, seed=0)
    x = n.sample()
    assert x.mean() == pytest.approx(0.5, abs=0.05) and x.std() == pytest.approx(2.0, abs=0.05)
    a = noise.GaussianWhiteNoiseProcess(sigma=1.0, sigma_min=0.2, n_steps_annealing=100)
    a.n_steps = 50
    assert a.current_sigma == pytest.approx(0.6)
    a.n_steps = 500
    assert a.current_sigma == pytest.approx(0.2)


def test_ornstein_uhlenbeck_stationary_variance() -> None:
    theta, sigma, dt = 0.15, 0.3, 1e-2
    ou = noise.OrnsteinUhlenbeckProcess(theta, mu=1.0, sigma=sigma, dt=dt, size=1, seed=0)
    xs = np.array([ou.sample()[0] for _ in range(200_000)])[20_000:]
    # stationary std of the discretised process: sigma * sqrt(dt / (1 - (1 - theta dt)^2))
    expected = sigma * np.sqrt(dt / (1 - (1 - theta * dt) ** 2))
    assert xs.mean() == pytest.approx(1.0, abs=0.1)
    assert xs.std() == pytest.approx(expected, rel=0.15)
    state = ou.get_state()
    nxt = ou.sample()
    ou.set_state(state)
    np.testing.assert_array_equal(ou.sample(), nxt)


def test_boltzmann_gumbel_unequal_values() -> None:
    q = np.array([0.0, 1.0])
    # with fresh counts (step_counter=0 resets them to 1) beta = C, and argmax(q + C * Gumbel) is
    # the Gumbel-max trick: P(a) = softmax(q / C)_a, i.e. P(1) = 1 / (1 + exp(-1 / C))
    for C in (1.0, 2.0):
        p = policy.BoltzmannGumbelQPolicy(C=C, seed=0)
        acts = np.array([p.select_action(q, step_counter=0) for _ in range(20000)])
        assert np.mean(acts == 1) == pytest.approx(1 / (1 + np.exp(-1 / C)), abs=0.01)
    # counts kept across steps: beta = C / sqrt(N_a) shrinks, so the better action wins even more
    p = policy.BoltzmannGumbelQPolicy(C=1.0, seed=0)
    acts = np.array([p.select_action(q, step_counter=i) for i in range(2000)])
    assert np.mean(acts == 1) > 0.9
    np.testing.assert_array_equal(p.action_counts, np.bincount(acts, minlength=2) + 1)


def test_ornstein_uhlenbeck_annealing_through_sample() -> None:
    # theta = 0, dt = 1: each sample adds current_sigma * z, so the increments reveal the sigma used
    ou = noise.OrnsteinUhlenbeckProcess(theta=0.0, mu=0.0, sigma=1.0, dt=1.0, sigma_min=0.2,
                                        n_steps_annealing=100, seed=3)
    z = np.random.default_rng(3)
    x = z.normal(0.0, 1.0, 1)  # the starting point drawn by reset_states() at sigma = 1
    np.testing.assert_allclose(ou.x_prev, x)
    for k in range(150):
        sigma = max(0.2, 1.0 - 0.8 * k / 100)  # 1 -> 0.2 linearly over 100 samples, then 0.2
        x = x + sigma * z.normal(size=1)
        np.testing.assert_allclose(ou.sample(), x, rtol=1e-12)
    assert ou.n_steps == 150 and ou.current_sigma == pytest.approx(0.2)
    half = noise.OrnsteinUhlenbeckProcess(theta=0.15, sigma=1.0, sigma_min=0.2, n_steps_annealing=100, seed=0)
    for _ in range(50):
        half.sample()
    assert half.current_sigma == pytest.approx(0.6)
