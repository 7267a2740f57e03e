"""TRPO (note_rl.agents.trpo): conjugate gradient, the Fisher-vector product, the line search, the
trust region of one update, torch / Keras conformance of one update, and learning (slow)."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest

from note_rl.agents.trpo import conjugate_gradient, gaussian_kl_np, line_search
from note_rl.buffers import RolloutBatch
from note_rl.utils import log_softmax
from tests.conftest import agents_module

BACKENDS = [pytest.param("torch", marks=pytest.mark.skipif(find_spec("torch") is None, reason="no torch")),
            pytest.param("tf", marks=pytest.mark.skipif(find_spec("tensorflow") is None, reason="no tensorflow"))]


# -- the numpy algebra ---------------------------------------------------------------------------
def test_conjugate_gradient_solves_an_spd_system() -> None:
    rng = np.random.default_rng(0)
    m = rng.normal(size=(8, 8))
    a = m @ m.T + 0.5 * np.eye(8)
    b = rng.normal(size=8)
    x = conjugate_gradient(lambda v: a @ v, b, max_steps=50)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-6, atol=1e-8)
    # n steps solve an n x n system (exact arithmetic); fewer give the Krylov approximation
    np.testing.assert_allclose(conjugate_gradient(lambda v: a @ v, b, max_steps=8), np.linalg.solve(a, b),
                               rtol=1e-4, atol=1e-6)
    assert np.linalg.norm(a @ conjugate_gradient(lambda v: a @ v, b, max_steps=2) - b) < np.linalg.norm(b)


def test_line_search_rejects_steps_that_leave_the_trust_region() -> None:
    theta_old, full = np.zeros(2), np.array([1.0, 0.0])
    def kl(theta: np.ndarray) -> float:  # the full step's KL is 1, far above 0.01
        return float(theta @ theta)

    # the surrogate always improves, but 3 shrinks of 0.8 still leave KL = 0.8**4 = 0.41 > 0.01
    theta, i, _, k = line_search(lambda t: (1.0 + t[0], kl(t)), theta_old, full, 1.0, 0.01, 0.8, 3)
    assert i == -1 and np.array_equal(theta, theta_old) and k > 0.01
    # with enough shrinking the first step inside the region is taken: 0.8**i <= 0.1 from i = 11
    theta, i, s, k = line_search(lambda t: (1.0 + t[0], kl(t)), theta_old, full, 1.0, 0.01, 0.8, 20)
    assert i == 11 and k <= 0.01 and s > 1.0 and theta[0] == pytest.approx(0.8 ** 11)
    # inside the region but no improvement of the surrogate: no step
    theta, i, _, _ = line_search(lambda t: (1.0 - t[0], 0.0), theta_old, full, 1.0, 0.01, 0.8, 10)
    assert i == -1 and np.array_equal(theta, theta_old)


def test_gaussian_kl_reference() -> None:
    m0, s0, m1, s1 = np.array([[0.3]]), np.array([0.1]), np.array([[-0.2]]), np.array([-0.4])
    # closed form of KL(N0 || N1) in one dimension
    v0, v1 = np.exp(2 * s0), np.exp(2 * s1)
    want = 0.5 * (v0 / v1 + (m1 - m0) ** 2 / v1 - 1 + np.log(v1 / v0))
    np.testing.assert_allclose(gaussian_kl_np(m0, s0, m1, s1), want.sum(-1))


# -- on a tiny policy ----------------------------------------------------------------------------
def _agent(backend: str, continuous: bool, **kwargs):
    cls = agents_module(backend).TRPO
    if continuous:
        return cls(3, [8], 1, env="Pendulum-v1", n_steps=64, seed=1, **kwargs)
    return cls(4, [8], 2, env="CartPole-v1", n_steps=64, seed=1, **kwargs)


def _batch(agent, n: int = 64, seed: int = 0) -> RolloutBatch:
    """States, actions drawn from the agent's policy with their log-probs, normalised advantages."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(n, agent.state_dim)).astype(np.float32)
    out = agent.policy_output(s).astype(np.float64)
    if agent.continuous:
        log_std = agent.log_std_weights().astype(np.float64)
        a = out + np.exp(log_std) * rng.normal(size=out.shape)
        logp = (-0.5 * ((a - out) / np.exp(log_std)) ** 2 - log_std - 0.5 * np.log(2 * np.pi)).sum(-1)
        a = a.astype(np.float32)
    else:
        lp = log_softmax(out)
        a = np.array([rng.choice(lp.shape[1], p=np.exp(row)) for row in lp])
        logp = lp[np.arange(n), a]
    adv = rng.normal(size=n)
    adv = (adv - adv.mean()) / adv.std(ddof=1)
    return RolloutBatch(s, a, logp.astype(np.float32), adv.astype(np.float32), rng.normal(size=n).astype(np.float32))


def _kl_np(agent, old_out, old_log_std, s) -> float:
    out = agent.policy_output(s).astype(np.float64)
    if agent.continuous:
        return float(gaussian_kl_np(old_out, old_log_std, out, agent.log_std_weights().astype(np.float64)).mean())
    lp_old, lp = log_softmax(old_out.astype(np.float64)), log_softmax(out)
    return float((np.exp(lp_old) * (lp_old - lp)).sum(-1).mean())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("continuous", [False, True])
def test_fisher_vector_product_is_the_kl_hessian(backend, continuous) -> None:
    """The backend's Hessian-vector product of the mean KL at theta_old against the Hessian taken
    by central differences of the KL's gradient, column by column."""
    agent = _agent(backend, continuous)
    b, params = agent.backend, agent.param[0]
    s = _batch(agent).state
    old = [s, agent.policy_output(s), agent.log_std_weights() if continuous else np.zeros(1, np.float32)]
    theta = b.get_flat(params)
    n, eps = theta.size, 1e-2
    hessian = np.zeros((n, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = eps
        b.set_flat(params, theta + e)
        up = b.loss_gradient(agent.kl, params, old)[1]
        b.set_flat(params, theta - e)
        down = b.loss_gradient(agent.kl, params, old)[1]
        hessian[:, j] = (up - down) / (2 * eps)
    b.set_flat(params, theta)
    assert b.loss_values(agent.kl, params, old)["loss"] == pytest.approx(0.0, abs=1e-6)  # KL(pi_old || pi_old)
    rng = np.random.default_rng(1)
    for _ in range(3):
        v = rng.normal(size=n)
        hv = b.hessian_vector_product(agent.kl, params, old, v)
        np.testing.assert_allclose(hv, hessian @ v, rtol=2e-2, atol=2e-3 * np.abs(hessian @ v).max())
    # the Fisher matrix is symmetric positive semi-definite
    assert np.allclose(hessian, hessian.T, atol=1e-2 * np.abs(hessian).max())
    assert np.linalg.eigvalsh((hessian + hessian.T) / 2).min() > -1e-2 * np.abs(hessian).max()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("continuous", [False, True])
def test_one_update_stays_in_the_trust_region_and_improves_the_surrogate(backend, continuous) -> None:
    agent = _agent(backend, continuous, target_kl=0.01)
    batch = _batch(agent, n=256)
    old_out = agent.policy_output(batch.state)
    old_log_std = agent.log_std_weights() if continuous else None
    before = agent.backend.loss_values(agent.surrogate, agent.param[0], list(batch[:4]))["loss"]
    info = agent.policy_step(batch)
    kl = _kl_np(agent, old_out, old_log_std, batch.state)
    after = agent.backend.loss_values(agent.surrogate, agent.param[0], list(batch[:4]))["loss"]
    assert info["line_search_iter"] >= 0, info
    assert 0.0 < kl <= 0.01 * (1 + 1e-3) and kl == pytest.approx(info["kl"], rel=1e-3, abs=1e-7)
    assert after > before and after - before == pytest.approx(info["surrogate_gain"], rel=1e-3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_step_that_breaks_the_kl_bound_is_not_taken(backend, monkeypatch) -> None:
    """A KL surface 10x steeper than the quadratic model the step was sized on: the full step and its
    first shrink break the bound, so with 2 tries the policy stays; with more, the first step inside
    the bound (about 0.64**i * 0.1 <= 0.01, i = 5 or 6: the KL is not quite quadratic) is taken."""
    for max_iter, want in ((2, -1), (20, 5)):
        agent = _agent(backend, False, line_search_max_iter=max_iter)
        values = agent.backend.loss_values

        def steep(fn, variables, arrays, agent=agent, values=values):
            out = values(fn, variables, arrays)
            return {"loss": 10.0 * out["loss"]} if fn == agent.kl else out

        monkeypatch.setattr(agent.backend, "loss_values", steep)
        theta = agent.backend.get_flat(agent.param[0])
        info = agent.policy_step(_batch(agent, n=256))
        monkeypatch.undo()
        assert info["line_search_iter"] == want if want < 0 else 5 <= info["line_search_iter"] <= 6, info
        moved = not np.array_equal(agent.backend.get_flat(agent.param[0]), theta)
        assert moved == (want >= 0) and info["kl"] <= agent.target_kl


@pytest.mark.parametrize("continuous", [False, True])
def test_one_trpo_update_matches_across_backends(continuous) -> None:
    """Same initial weights and rollout: the policy step (CG, line search) and 4 critic steps give the
    same weights in torch and Keras (SGD for the critic: Adam's first steps divide gradients near 0 by
    their own size, which turns float32 noise into 1e-4 differences)."""
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    from note_rl.core.updater import Updater
    from note_rl.optim import SGD

    agents = [_agent(b, continuous) for b in ("torch", "tf")]
    batch = _batch(agents[0], n=128)
    infos, weights = [], []
    for agent in agents:
        infos.append(agent.policy_step(batch))
        updater = Updater(agent, agent.backend.build_optimizer(SGD(lr=0.1), agent.param[1]), jit=False)
        for i in range(4):  # the critic's mini-batches of 32, in order
            mb = [np.asarray(f[32 * i:32 * (i + 1)]) for f in batch]
            updater(i + 1, mb, None)
        weights.append([agent.backend.get_flat(agent.param[0]), agent.backend.get_flat(agent.param[1])])
    assert infos[0]["line_search_iter"] == infos[1]["line_search_iter"] >= 0
    assert infos[0]["kl"] == pytest.approx(infos[1]["kl"], rel=1e-4, abs=1e-7)
    np.testing.assert_allclose(weights[0][0], weights[1][0], rtol=1e-5, atol=1e-5)  # the policy
    np.testing.assert_allclose(weights[0][1], weights[1][1], rtol=1e-5, atol=1e-5)  # the critic
    assert not np.allclose(weights[0][0], agents[0].backend.get_flat(_agent("torch", continuous).param[0]))


def test_arguments_are_checked() -> None:
    pytest.importorskip("torch")
    from note_rl.agents.torch import TRPO

    for kwargs, message in (({"target_kl": 0.0}, "TRPO(target_kl=0.0): must be a finite number > 0"),
                            ({"cg_damping": -1.0}, "TRPO(cg_damping=-1.0): must be a finite number >= 0"),
                            ({"line_search_shrinking_factor": 1.0}, "must be in (0, 1)"),
                            ({"cg_max_steps": 0}, "TRPO(cg_max_steps=0): must be a positive integer"),
                            ({"n_critic_updates": 1.5}, "TRPO(n_critic_updates=1.5): must be a positive integer"),
                            ({"n_steps": None}, "TRPO trains on rollouts")):
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            TRPO(4, [8], 2, env="CartPole-v1", **kwargs)
    agent = TRPO(4, [8], 2, env="CartPole-v1")
    with pytest.raises(ValueError, match="TRPO: distributed_training is not supported"):
        agent.distributed_training()
    assert agent.batch == 128 and agent.n_epochs == 10 and agent.n_steps == 2048 and agent.lam == 0.95


# -- learning ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_trpo_solves_cartpole() -> None:
    torch = pytest.importorskip("torch")
    from note_rl.agents.torch import TRPO
    from note_rl.optim import Adam

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        agent = TRPO(4, [64, 64], 2, env="CartPole-v1", seed=0)  # sb3-contrib's defaults
        agent.set(seed=0, trial_count=20, criterion=475)
        agent.train(optimizer=agent.backend.build_optimizer(Adam(lr=1e-3), agent.param[1]), steps=80_000)
    finally:
        torch.set_num_threads(before)
    returns = np.asarray(agent.reward_list)
    # seeds 0-2 reach a mean of 475 over 20 episodes after 34,816 / 34,816 / 30,720 steps (~10 s each)
    assert returns[-20:].mean() >= 475 and agent.step_counter < 80_000, returns[-20:]


@pytest.mark.slow
def test_gaussian_trpo_improves_on_pendulum() -> None:
    torch = pytest.importorskip("torch")
    from note_rl.agents.torch import TRPO
    from note_rl.optim import Adam

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:  # rl-zoo3's Pendulum-v1 settings for TRPO without gSDE
        agent = TRPO(3, [64, 64], 1, n_steps=1024, n_envs=2, gamma=0.9, n_critic_updates=20, env="Pendulum-v1",
                     seed=0)
        agent.set(seed=0)
        agent.train(optimizer=agent.backend.build_optimizer(Adam(lr=1e-3), agent.param[1]), steps=100_000)
    finally:
        torch.set_num_threads(before)
    returns = np.asarray(agent.reward_list)
    # seeds 0-2: from about -1100 / -1100 / -1240 over the first 10 episodes to -143 / -209 / -195
    # over the last 10 (~30 s each); random play stays near -1200
    assert returns[:10].mean() < -1000 and returns[-10:].mean() >= -400, returns[-10:]
