"""ACER (note_rl.agents.acer): Retrace targets, the update's gradient against baselines' formulation
(the loss differentiated directly, the trust region by a gradient with respect to f), torch / Keras
conformance of updates, smoke runs in both backends, refusals, and learning (slow)."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest

from note_rl.agents.acer import EPS, SegmentReplay, acer_sdn_targets, acer_targets, retrace
from tests.conftest import agents_module

BACKENDS = [pytest.param("torch", marks=pytest.mark.skipif(find_spec("torch") is None, reason="no torch")),
            pytest.param("tf", marks=pytest.mark.skipif(find_spec("tensorflow") is None, reason="no tensorflow"))]


# -- the numpy arithmetic ------------------------------------------------------------------------
def test_retrace_is_the_papers_recursion() -> None:
    """One env, 4 steps, an episode truncated after step 1 (bootstraps from its last state) and one
    terminated after step 3 (no bootstrap); the recursion by hand."""
    gamma = 0.9
    r = np.array([1.0, 2.0, 3.0, 4.0])[:, None]
    q_a = np.array([0.5, 0.1, 0.2, 0.3])[:, None]
    v = np.array([0.4, 0.6, 0.8, 1.0])[:, None]
    rho = np.array([0.5, 2.0, 0.25, 3.0])[:, None]
    v_next = np.array([9.0, 7.0, 9.0, 5.0])[:, None]  # only read where an episode ended, and after the last step
    term = np.array([0.0, 0.0, 0.0, 1.0])[:, None]
    end = np.array([False, True, False, True])[:, None]
    got = retrace(r, q_a, v, rho, v_next, term, end, gamma)[:, 0]
    q3 = 4.0 + gamma * 0.0                          # terminal: no bootstrap
    q2 = 3.0 + gamma * (min(1, 3.0) * (q3 - 0.3) + 1.0)
    q1 = 2.0 + gamma * 7.0                          # truncated: V of the episode's last state
    q0 = 1.0 + gamma * (min(1, 2.0) * (q1 - 0.1) + 0.6)
    np.testing.assert_allclose(got, [q0, q1, q2, q3])
    # a sequence cut by the segment's end bootstraps from V of the state reached
    got = retrace(r[:1], q_a[:1], v[:1], rho[:1], v_next[:1], term[:1], end[:1], gamma)
    assert got[0, 0] == pytest.approx(1.0 + gamma * 9.0)


def _targets(rng, trust_region=True, delta=1.0, T=5, n=3, A=3):
    logits, q, avg = rng.normal(size=(T, n, A)), rng.normal(size=(T, n, A)), rng.normal(size=(T, n, A))
    mu = np.exp(rng.normal(size=(T, n, A)) * 2)
    mu /= mu.sum(-1, keepdims=True)
    a = rng.integers(0, A, (T, n))
    end = rng.random((T, n)) < 0.2
    term = end & (rng.random((T, n)) < 0.5)
    args = (logits, q, avg, mu, a, rng.normal(size=(T, n)), rng.normal(size=(T, n)), term.astype(float), end)
    return args, acer_targets(*args, gamma=0.99, c=1.5, delta=delta, ent_coef=0.01, q_coef=0.5,
                              trust_region=trust_region)


def test_the_trust_region_bounds_the_step_along_the_kl_gradient() -> None:
    """z* = g - max(0, (k.g - delta) / |k|^2) k: k.z* <= delta in every row, and rows already inside
    keep their g (the update without the trust region)."""
    rng = np.random.default_rng(0)
    args, plain = _targets(rng, trust_region=False)
    for delta in (1.0, 0.01):
        _, tr = _targets(np.random.default_rng(0), trust_region=True, delta=delta)
        logits, _, avg = args[0], args[1], args[2]
        N, A = plain["grad_f"].shape
        f = np.exp(logits - logits.max(-1, keepdims=True)).reshape(N, A)
        f /= f.sum(1, keepdims=True)
        f_avg = np.exp(avg - avg.max(-1, keepdims=True)).reshape(N, A)
        f_avg /= f_avg.sum(1, keepdims=True)
        k = -f_avg / (f + EPS)
        g, z = -plain["grad_f"].astype(np.float64) * N, -tr["grad_f"].astype(np.float64) * N
        inside = (k * g).sum(1) <= delta
        assert ((k * z).sum(1) <= delta + 1e-3 * np.abs(k * g).sum(1)).all()
        np.testing.assert_allclose(z[inside], g[inside], rtol=1e-5, atol=1e-6)
        assert (~inside).any() and not np.allclose(z[~inside], g[~inside])
    np.testing.assert_array_equal(plain["q_ret"], tr["q_ret"])


@pytest.mark.parametrize("trust_region", [False, True])
def test_the_update_is_baselines_gradient(trust_region) -> None:
    """The gradient of ``acer_loss`` on ``acer_batch`` equals the one OpenAI baselines builds: the
    loss with its stop-gradients differentiated by autograd, and with the trust region, g = dL/df by
    autograd, adjusted, pulled back through f, plus the Q loss's gradient."""
    torch = pytest.importorskip("torch")
    agent = _agent("torch", trust_region=trust_region, c=1.2, delta=0.05)
    segment = _segment(agent, np.random.default_rng(3))
    batch = agent.acer_batch(segment)
    params = agent.param
    ours = torch.autograd.grad(agent.acer_loss(*[torch.as_tensor(b) for b in batch]), params)

    x, a, q_ret = (torch.as_tensor(batch[i]) for i in (0, 1, 3))
    A, N = agent.action_dim, len(batch[0])
    mu = torch.as_tensor(segment["mu"].reshape(N, A))
    out = agent.net(x)
    f = torch.softmax(out[:, :A], -1)
    q = out[:, A:]
    with torch.no_grad():
        f_avg = torch.softmax(agent.avg_net(x)[:, :A], -1)
    rows = torch.arange(N)
    def sg(t):  # baselines' tf.stop_gradient
        return t.detach()

    v = (f * q).sum(1)
    rho = f / (mu + EPS)
    adv = q_ret - sg(v)
    loss_f = -(torch.log(f[rows, a] + EPS) * sg(adv * torch.clamp(rho[rows, a], max=agent.c))).mean()
    adv_bc = q - v[:, None]
    loss_bc = -(torch.log(f + EPS) * sg(adv_bc * torch.relu(1.0 - agent.c / (rho + EPS)) * f)).sum(1).mean()
    entropy = -(f * torch.log(f + EPS)).sum(1).mean()
    loss_policy = loss_f + loss_bc - agent.ent_coef * entropy
    loss_q = 0.5 * ((q_ret - q[rows, a]) ** 2).mean()
    if trust_region:
        g = torch.autograd.grad(-loss_policy * N, f, retain_graph=True)[0]
        k = -f_avg / (f.detach() + EPS)
        adj = torch.clamp(((k * g).sum(1) - agent.delta) / ((k * k).sum(1) + EPS), min=0.0)
        grads_f = -(g - adj[:, None] * k) / N
        want = [gp + gq for gp, gq in zip(torch.autograd.grad(f, params, grads_f, retain_graph=True),
                                          torch.autograd.grad(agent.q_coef * loss_q, params))]
    else:
        want = torch.autograd.grad(loss_policy + agent.q_coef * loss_q, params)
    for got, ref in zip(ours, want):
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=2e-4, atol=2e-6)
    # the loss's value is the true one (policy loss + q_coef * Q loss)
    value = float(agent.acer_loss(*[torch.as_tensor(b) for b in batch]).detach())
    assert value == pytest.approx(float((loss_policy + agent.q_coef * loss_q).detach()), rel=1e-4, abs=1e-5)


def test_segment_replay_is_a_ring_and_draws_whole_sequences() -> None:
    replay = SegmentReplay(2)
    segs = [{f: np.full((3, 2), i, np.float32) for f in ("state", "action", "reward", "mu", "next_state",
                                                           "terminated", "episode_end")} for i in range(3)]
    for s in segs:
        replay.add(s)
    assert len(replay.segments) == 2 and len(replay) == 12
    drawn = replay.sample(5, np.random.default_rng(0))
    assert drawn["reward"].shape == (3, 5) and set(np.unique(drawn["reward"])) <= {1.0, 2.0}
    assert (drawn["reward"] == drawn["reward"][:1]).all()  # each column is one stored sequence


# -- on a tiny network ---------------------------------------------------------------------------
def _agent(backend: str, **kwargs):
    return agents_module(backend).ACER(4, [8], 2, env="CartPole-v1", n_steps=6, n_envs=3, seed=1, **kwargs)


def _segment(agent, rng, T=6, n=3) -> dict[str, np.ndarray]:
    s = rng.normal(size=(T, n, 4)).astype(np.float32)
    mu = rng.dirichlet([1.0, 1.0], size=(T, n)).astype(np.float32)
    end = rng.random((T, n)) < 0.25
    return {"state": s, "action": rng.integers(0, 2, (T, n)), "reward": rng.normal(size=(T, n)).astype(np.float32),
            "mu": mu, "next_state": rng.normal(size=(T, n, 4)).astype(np.float32),
            "terminated": end & (rng.random((T, n)) < 0.5), "episode_end": end}


def test_one_acer_update_matches_across_backends() -> None:
    """Same initial weights and segments: three updates (each batch built from the weights the last
    one left) give the same network and average network in torch and Keras (SGD: RMSprop's first
    steps divide gradients by their own size, which turns float32 noise into 1e-4 differences)."""
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    from note_rl.core.updater import Updater
    from note_rl.optim import SGD

    agents = [_agent(b) for b in ("torch", "tf")]
    segments = [_segment(agents[0], np.random.default_rng(i)) for i in range(3)]
    out = []
    for agent in agents:
        updater = Updater(agent, agent.backend.build_optimizer(SGD(lr=0.1), agent.param), jit=False)
        losses = [updater(i + 1, agent.acer_batch(seg), None).loss for i, seg in enumerate(segments)]
        out.append((losses, agent.net_weights(), agent.net_weights(avg=True)))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-5, atol=1e-6)
    for w0, w1 in zip(out[0][1] + out[0][2], out[1][1] + out[1][2]):
        np.testing.assert_allclose(w0, w1, rtol=1e-5, atol=1e-5)
    start = _agent("torch").net_weights()
    assert not np.allclose(out[0][1][0], start[0])  # the updates moved the network
    # Algorithm 2, line 20, after one update: theta_a = alpha * theta_a + (1 - alpha) * theta
    agent = _agent("torch")
    Updater(agent, agent.backend.build_optimizer(SGD(lr=0.1), agent.param), jit=False)(
        1, agent.acer_batch(segments[0]), None)
    for avg, w, s in zip(agent.net_weights(avg=True), agent.net_weights(), start):
        np.testing.assert_allclose(avg, 0.99 * s + 0.01 * w, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_acer_trains_and_replays_in_each_backend(backend) -> None:
    """600 steps of segments 6 x 3 with replay from 100 transitions on: on-policy and replayed
    updates run, the average network trails the network, the greedy policy plays."""
    from note_rl.evaluation import evaluate
    from note_rl.optim import RMSprop

    agent = _agent(backend, replay_start=100, replay_ratio=4)
    agent.train(optimizer=agent.backend.build_optimizer(RMSprop(lr=7e-4, rho=0.99, eps=1e-5), agent.param),
                steps=600, p=0)
    units = 600 // 18 + 1
    assert agent.step_counter == units * 18
    assert agent.batch_counter > units + 40  # the Poisson(4) replay updates ran (about 4 * 28)
    assert len(agent.replay) >= 600 and agent.reward_list
    assert {"loss_policy", "loss_q", "entropy", "adj", "rho"} <= set(agent.last_update)
    net, avg = agent.net_weights(), agent.net_weights(avg=True)
    assert all(np.isfinite(w).all() for w in net) and not np.allclose(net[0], avg[0])
    assert len(evaluate(agent, episodes=2)) == 2


def test_other_action_spaces_and_bad_arguments_are_refused_in_one_line() -> None:
    pytest.importorskip("torch")
    import gymnasium as gym

    from note_rl.agents.torch import ACER

    env = gym.make("CartPole-v1")
    env.action_space = gym.spaces.MultiDiscrete([2, 2])
    with pytest.raises(ValueError, match=r"ACER needs a Discrete or Box action space; the env has MultiDiscrete") as err:
        ACER(4, [8], 2, env=env)
    assert "\n" not in str(err.value)
    for kwargs, message in (({"c": 0.0}, r"ACER\(c=0.0\): must be > 0"),
                            ({"alpha": 1.0}, r"ACER\(alpha=1.0\): must be in \[0, 1\)"),
                            ({"delta": -1.0}, r"ACER\(delta=-1.0\): must be > 0"),
                            ({"replay_ratio": -1}, r"ACER\(replay_ratio=-1\): must be >= 0"),
                            ({"n_steps": 0}, r"ACER\(n_steps=0\): must be a positive integer"),
                            ({"buffer_size": 10}, r"ACER\(buffer_size=10\): must hold one segment")):
        with pytest.raises(ValueError, match=message):
            ACER(4, [8], 2, env="CartPole-v1", **kwargs)
    with pytest.raises(ValueError, match=r"ACER\(action_std=0.0\): must be > 0"):
        ACER(3, [8], 1, env="Pendulum-v1", action_std=0.0)
    agent = ACER(4, [8], 2, env="CartPole-v1")
    with pytest.raises(ValueError, match="ACER: distributed_training is not supported"):
        agent.distributed_training()
    from note_rl.optim import RMSprop

    agent.set(pool_size=100, batch=8)
    with pytest.raises(ValueError, match="pool_network=True is not supported"):
        agent.train(optimizer=agent.backend.build_optimizer(RMSprop(lr=1e-3), agent.param), steps=10,
                    pool_network=True,
                    processes=2, p=0)


# -- Box actions: the stochastic dueling network -------------------------------------------------
def _box_agent(backend: str, **kwargs):
    return agents_module(backend).ACER(3, [8], 1, env="Pendulum-v1", n_steps=6, n_envs=3, seed=1, **kwargs)


def _box_segment(agent, rng, T=6, n=3) -> dict[str, np.ndarray]:
    seg = _segment(agent, rng, T, n)
    seg["state"], seg["next_state"] = (rng.normal(size=(T, n, 3)).astype(np.float32) for _ in range(2))
    seg["mu"] = rng.normal(scale=0.3, size=(T, n, 1)).astype(np.float32)
    seg["action"] = (seg["mu"] + agent.std * rng.normal(size=(T, n, 1))).astype(np.float32)
    return seg


def test_sdn_targets_trace_and_trust_region() -> None:
    """Q_opc is Retrace with traces 1, Q_ret with min(1, rho^(1/d)); on-policy (mu = f) they agree;
    the adjusted step keeps k.z* <= delta."""
    rng = np.random.default_rng(0)
    T, n, d, k = 5, 2, 2, 3
    mean = rng.normal(size=(T, n, d))
    args = dict(mean_avg=mean + rng.normal(scale=0.5, size=mean.shape), std=np.array([0.5, 0.5]),
                a=mean + 0.5 * rng.normal(size=mean.shape), a_prime=mean + 0.5 * rng.normal(size=mean.shape),
                v=rng.normal(size=(T, n)), adv=rng.normal(size=(T, n, 2 + k)), r=rng.normal(size=(T, n)),
                v_next=rng.normal(size=(T, n)), terminated=np.zeros((T, n)), episode_end=np.zeros((T, n), bool),
                gamma=0.9, c=10.0, delta=0.1, q_coef=0.5)
    on = acer_sdn_targets(mean, mu_mean=mean, **args)  # rho = 1 everywhere: both traces are 1
    q_a = args["v"] + args["adv"][..., 0] - args["adv"][..., 2:].mean(-1)
    want = retrace(args["r"], q_a, args["v"], np.ones((T, n)), args["v_next"], args["terminated"],
                   args["episode_end"], 0.9).reshape(-1)
    np.testing.assert_allclose(on["q_ret"], want, rtol=1e-5)
    np.testing.assert_allclose(on["v_coef"], want - q_a.reshape(-1), rtol=1e-4, atol=1e-5)
    off = acer_sdn_targets(mean, mu_mean=mean + 1.0, **args)
    assert not np.allclose(off["q_ret"], on["q_ret"])
    z = -off["grad_mean"].astype(np.float64) * T * n
    kk = ((mean - args["mean_avg"]) / 0.25).reshape(-1, d)
    assert ((kk * z).sum(1) <= 0.1 + 1e-4 * np.abs(kk).sum(1) * np.abs(z).sum(1)).all() and off["adj"] > 0


def test_the_box_update_is_algorithm_3s_gradient() -> None:
    """The gradient of ``sdn_loss`` on ``sdn_batch`` against Algorithm 3 written with autograd: g from
    the log-densities' gradient with respect to the mean, adjusted by the trust region and pulled back,
    plus (Q_ret - Q~) dQ~ + min(1, rho) (Q_ret - Q~) dV for the dueling network."""
    torch = pytest.importorskip("torch")
    agent = _box_agent("torch", delta=0.05)
    segment = _box_segment(agent, np.random.default_rng(4))
    state = agent._sample_rng().bit_generator.state
    x, au, grad_mean, targets = agent.acer_batch(segment)
    agent._sample_rng().bit_generator.state = state  # the same a' and u_j again
    N, d, k = len(x), 1, agent.sdn_samples
    drawn = agent._sample_rng().standard_normal((N, 1 + k, d))
    params = agent.param
    ours = torch.autograd.grad(agent.sdn_loss(*map(torch.as_tensor, (x, au, grad_mean, targets))), params)

    xt, std = torch.as_tensor(x), torch.as_tensor(agent.std, dtype=torch.float64)
    mean = agent.net(xt)
    with torch.no_grad():
        mean_avg = agent.avg_net(xt).double()
    a, mu = torch.as_tensor(au[:, 0]).double(), torch.as_tensor(segment["mu"].reshape(N, d)).double()
    a_p = (mean.detach().double() + std * torch.as_tensor(drawn[:, 0]))
    u = torch.as_tensor(au[:, 1:])

    def log_f(act, m):
        return (-0.5 * ((act - m) / std) ** 2).sum(-1)

    v = agent.v_net(xt)[:, 0]

    def q_tilde(act):
        pairs = torch.cat([xt[:, None].expand(N, k + 1, 3), torch.cat([act[:, None].float(), u], 1)], -1)
        adv = agent.a_net(pairs.reshape(N * (k + 1), -1)).reshape(N, k + 1)
        return v + adv[:, 0] - adv[:, 1:].mean(1)

    q_a, q_ap = q_tilde(a), q_tilde(a_p)
    q_ret = torch.as_tensor(targets[:, 0]).double()
    with torch.no_grad():
        md = mean.double()
        rho, rho_p = torch.exp(log_f(a, md) - log_f(a, mu)), torch.exp(log_f(a_p, md) - log_f(a_p, mu))
    # Q_opc by its own recursion (traces 1), from the numpy Retrace
    q_opc = torch.as_tensor(retrace(segment["reward"], q_a.detach().numpy().reshape(6, 3), v.detach().numpy().reshape(6, 3),
                                    np.ones((6, 3)), agent.v_net(torch.as_tensor(segment["next_state"].reshape(N, 3)))
                                    [:, 0].detach().numpy().reshape(6, 3), segment["terminated"].astype(float),
                                    segment["episode_end"], 0.99).reshape(N))
    md = mean.double()
    gain = (torch.clamp(rho, max=agent.c) * (q_opc - v.detach()) * log_f(a, md)
            + torch.relu(1 - agent.c / (rho_p + EPS)) * (q_ap.detach() - v.detach()) * log_f(a_p.detach(), md)).sum()
    g = torch.autograd.grad(gain, md, retain_graph=True)[0]
    kk = (md.detach() - mean_avg) / std ** 2
    adj = torch.clamp(((kk * g).sum(1) - agent.delta) / ((kk * kk).sum(1) + EPS), min=0.0)
    z = (g - adj[:, None] * kk) / N
    value = 0.5 * ((q_ret - q_a.double()) ** 2).mean() - (torch.clamp(rho, max=1.0) * (q_ret - q_a.detach()) * v).mean()
    grads_pi = torch.autograd.grad(mean, params, -z.float(), retain_graph=True, allow_unused=True)
    grads_v = torch.autograd.grad(agent.q_coef * value, params, allow_unused=True)
    want = [(gp if gp is not None else 0) + (gv if gv is not None else 0) for gp, gv in zip(grads_pi, grads_v)]
    for got, ref in zip(ours, want):
        np.testing.assert_allclose(got.numpy(), np.asarray(ref, np.float32), rtol=2e-3, atol=2e-5)


def test_one_box_update_matches_across_backends() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    from note_rl.core.updater import Updater
    from note_rl.optim import SGD

    agents = [_box_agent(b) for b in ("torch", "tf")]
    segments = [_box_segment(agents[0], np.random.default_rng(i)) for i in range(3)]
    out = []
    for agent in agents:
        updater = Updater(agent, agent.backend.build_optimizer(SGD(lr=0.01), agent.param), jit=False)
        losses = [updater(i + 1, agent.acer_batch(seg), None).loss for i, seg in enumerate(segments)]
        out.append((losses, agent.backend.get_flat(agent.param), agent.net_weights(avg=True)))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-5, atol=1e-5)
    for w0, w1 in zip(out[0][2], out[1][2]):
        np.testing.assert_allclose(w0, w1, rtol=1e-5, atol=1e-5)
    assert not np.allclose(out[0][1], _box_agent("torch").backend.get_flat(_box_agent("torch").param))


@pytest.mark.parametrize("backend", BACKENDS)
def test_box_acer_trains_in_each_backend(backend) -> None:
    from note_rl.evaluation import evaluate
    from note_rl.optim import RMSprop

    agent = _box_agent(backend, replay_start=100)
    agent.train(optimizer=agent.backend.build_optimizer(RMSprop(lr=7e-4, rho=0.99, eps=1e-5), agent.param),
                steps=600, p=0)
    assert agent.step_counter >= 600 and agent.batch_counter > 600 // 18 + 40
    assert agent.replay.segments[0]["mu"].shape == (6, 3, 1) and agent.replay.segments[0]["action"].dtype == np.float32
    assert np.isfinite(agent.backend.get_flat(agent.param)).all() and {"adj", "rho"} <= set(agent.last_update)
    returns = evaluate(agent, episodes=1)
    assert len(returns) == 1 and np.isfinite(returns[0])


# -- learning ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_acer_solves_cartpole() -> None:
    torch = pytest.importorskip("torch")
    from note_rl.agents.torch import ACER
    from note_rl.evaluation import evaluate
    from note_rl.optim import RMSprop

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        agent = ACER(4, [64, 64], 2, env="CartPole-v1", seed=0)  # baselines' defaults, 4 envs
        agent.set(seed=0, trial_count=20, criterion=475)
        agent.train(optimizer=agent.backend.build_optimizer(RMSprop(lr=7e-4, rho=0.99, eps=1e-5), agent.param),
                    steps=200_000, p=0)
    finally:
        torch.set_num_threads(before)
    returns = np.asarray(agent.reward_list)
    # seeds 0-2 reach a mean of 475 over 20 training episodes after 108,160 / 126,800 / 101,600 steps
    # (~15 s each); their greedy policies then score 500 in each of 10 evaluation episodes
    assert returns[-20:].mean() >= 475 and agent.step_counter < 200_000, returns[-20:]
    assert np.mean(evaluate(agent, episodes=10)) >= 475


@pytest.mark.slow
def test_box_acer_improves_on_pendulum() -> None:
    torch = pytest.importorskip("torch")
    from note_rl.agents.torch import ACER
    from note_rl.optim import RMSprop

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:  # conf/hyperparams/acer_pendulum.yaml
        agent = ACER(3, [64, 64], 1, gamma=0.9, n_steps=5, n_envs=8, replay_start=1000, env="Pendulum-v1", seed=0)
        agent.set(seed=0)
        agent.train(optimizer=agent.backend.build_optimizer(RMSprop(lr=2e-3, rho=0.99, eps=1e-5), agent.param),
                    steps=40_000, p=0)
    finally:
        torch.set_num_threads(before)
    returns = np.asarray(agent.reward_list)
    # seeds 0-2: from -1267 / -1232 / -1280 over the first 10 episodes to -191 / -190 / -407 over the last
    # 10 (30-50 s each); random play stays near -1200
    assert returns[:10].mean() < -1000 and returns[-10:].mean() >= -500, returns[-10:]
