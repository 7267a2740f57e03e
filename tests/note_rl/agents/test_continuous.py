"""The built-in continuous-control agents (DDPG, TD3, SAC): updates worked out by hand, the same
updates in both backends (to 1e-5), Box-action handling, and a short training run of each."""

import gymnasium as gym
import numpy as np
import pytest

from note_rl.agents.common import MLPActor
from note_rl.agents.sac import squashed_log_prob
from note_rl.core.updater import Updater
from tests.conftest import agents_module

pytest.importorskip("torch")
pytest.importorskip("tensorflow")

LR = 0.05
HIDDEN = [16, 8]


def _batch(rng, n=32, obs=3, act=1):
    return [rng.normal(size=(n, obs)).astype(np.float32), rng.uniform(-1, 1, (n, act)).astype(np.float32),
            rng.normal(size=(n, obs)).astype(np.float32), rng.normal(size=n).astype(np.float32),
            (rng.random(n) < 0.2).astype(np.float32)]


def _sgd(backend, variables):
    if backend == "torch":
        import torch

        return torch.optim.SGD(variables, lr=LR)
    import keras

    return keras.optimizers.SGD(learning_rate=LR)


def _nets(agent):
    """Every network's weights as numpy arrays, by name."""
    b = agent.backend
    nets = {"actor": agent.actor}
    nets.update({f"critic{i}": c for i, c in enumerate(agent.critics)})
    nets.update({f"critic_target{i}": c for i, c in enumerate(agent.critic_targets)})
    if hasattr(agent, "actor_target"):
        nets["actor_target"] = agent.actor_target
    out = {k: b.get_weights(b.module_variables(m)) for k, m in nets.items()}
    if hasattr(agent, "log_alpha"):
        alpha = agent.log_alpha.detach().numpy() if backend_of(agent) == "torch" else agent.log_alpha.numpy()
        out["log_alpha"] = [np.array(alpha)]
    return out


def backend_of(agent) -> str:
    return "torch" if agent.backend_name == "torch" else "tf"


def _fixed_normal(agent, value=0.3):
    """Replace SAC's Gaussian draws by a constant so both backends sample the same actions."""
    if backend_of(agent) == "torch":
        import torch

        agent._normal = lambda like: torch.full_like(like, value)
    else:
        import tensorflow as tf

        agent._normal = lambda like: tf.fill(tf.shape(like), value)


def _run(backend, cls_name, n_updates, **kwargs):
    agent = getattr(agents_module(backend), cls_name)(hidden_size=HIDDEN, env="Pendulum-v1", seed=1, **kwargs)
    if cls_name == "SAC":
        _fixed_normal(agent)
    updater = Updater(agent, [_sgd(backend, p) for p in agent.param], jit=False)
    rng = np.random.default_rng(0)
    history = []
    for k in range(1, n_updates + 1):
        result = updater(k, _batch(rng), None)
        history.append((result.losses, _nets(agent)))
    return agent, history


@pytest.mark.parametrize("cls_name,kwargs", [("TD3", {"target_policy_noise": 0.0}), ("DDPG", {}),
                                             ("SAC", {}), ("SAC", {"ent_coef": 0.2})])
def test_updates_match_across_backends(cls_name, kwargs) -> None:
    (_, torch_hist), (_, tf_hist) = (_run(b, cls_name, 4, **kwargs) for b in ("torch", "tf"))
    for (lt, wt), (lk, wk) in zip(torch_hist, tf_hist):
        assert lt.keys() == lk.keys()
        for name in lt:
            assert lt[name] == pytest.approx(lk[name], rel=1e-5, abs=1e-6), name
        for name in wt:
            for a, b in zip(wt[name], wk[name]):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)


def test_td3_delays_the_actor_and_the_targets() -> None:
    _, history = _run("torch", "TD3", 4, target_policy_noise=0.0)
    start = history[0][1]  # after update 1: critics moved, actor and targets not yet
    fresh = _nets(agents_module("torch").TD3(hidden_size=HIDDEN, env="Pendulum-v1", seed=1))
    for name in ("actor", "actor_target", "critic_target0", "critic_target1"):
        for a, b in zip(start[name], fresh[name]):
            np.testing.assert_array_equal(a, b, err_msg=name)
    assert not np.allclose(start["critic0"][0], fresh["critic0"][0])
    assert set(history[0][0]) == {"critic_loss"}
    assert set(history[1][0]) == {"critic_loss", "actor_loss"}
    after2 = history[1][1]
    assert not np.allclose(after2["actor"][0], fresh["actor"][0])
    # Polyak: target = (1 - tau) * old target + tau * the online net after update 2
    for t, t0, w in zip(after2["critic_target0"], fresh["critic_target0"], after2["critic0"]):
        np.testing.assert_allclose(t, 0.995 * t0 + 0.005 * w, rtol=1e-5, atol=1e-7)


def test_td3_critic_loss_by_hand() -> None:
    import torch

    agent = agents_module("torch").TD3(hidden_size=HIDDEN, env="Pendulum-v1", seed=2, gamma=0.9,
                                       target_policy_noise=0.0)
    s, a, s2, r, d = _batch(np.random.default_rng(3))
    w = _nets(agent)
    next_a = MLPActor(w["actor_target"], "tanh")(s2)
    q_next = np.minimum(*(MLPActor(w[f"critic_target{i}"])(np.concatenate([s2, next_a], 1))[:, 0] for i in (0, 1)))
    y = r + 0.9 * (1 - d) * q_next
    qs = [MLPActor(w[f"critic{i}"])(np.concatenate([s, a], 1))[:, 0] for i in (0, 1)]
    expected = sum(np.mean((q - y) ** 2) for q in qs)
    got = agent.critic_loss(*(torch.as_tensor(x) for x in (s, a, s2, r, d)))
    assert float(got.detach()) == pytest.approx(expected, rel=1e-5)
    actor = -np.mean(MLPActor(w["critic0"])(np.concatenate([s, MLPActor(w["actor"], "tanh")(s)], 1)))
    assert float(agent.actor_loss(*(torch.as_tensor(x) for x in (s, a, s2, r, d)))) == pytest.approx(actor, rel=1e-5)


def test_sac_log_prob_and_temperature_by_hand() -> None:
    import torch

    agent = agents_module("torch").SAC(hidden_size=HIDDEN, env="Pendulum-v1", seed=4, ent_coef="auto_0.5")
    _fixed_normal(agent, 0.3)
    s = _batch(np.random.default_rng(5))[0]
    out = MLPActor(_nets(agent)["actor"])(s)
    mean, log_std = np.split(out, 2, axis=1)
    log_std = np.clip(log_std, -20, 2)
    u = mean + np.exp(log_std) * 0.3
    action, logp = agent._sample(torch.as_tensor(s))
    np.testing.assert_allclose(action.detach().numpy(), np.tanh(u), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(logp.detach().numpy(), squashed_log_prob(u, mean, log_std), rtol=1e-4, atol=1e-5)
    # one SGD step of the temperature: d/d log_alpha of -mean(log_alpha * (logp + target_entropy))
    assert agent.target_entropy == -1.0
    opt = torch.optim.SGD([agent.log_alpha], lr=LR)
    loss = agent.alpha_loss(torch.as_tensor(s), None, None, None, None)
    opt.zero_grad()
    loss.backward()
    opt.step()
    expected = np.log(0.5) + LR * np.mean(squashed_log_prob(u, mean, log_std) - 1.0)
    assert float(agent.log_alpha) == pytest.approx(expected, rel=1e-5)


def test_sac_temperature_uses_the_actor_loss_sample(backend) -> None:
    """One update runs the actor twice (the target action at s', the sample at s that both the actor's
    and the temperature's losses use) and steps log_alpha from the actor of *before* the update."""
    agent = agents_module(backend).SAC(hidden_size=HIDDEN, env="Pendulum-v1", seed=4, ent_coef="auto_0.5")
    _fixed_normal(agent, 0.3)
    s = _batch(np.random.default_rng(5))[0]
    out = MLPActor(_nets(agent)["actor"])(s)
    mean, log_std = np.split(out, 2, axis=1)
    log_std = np.clip(log_std, -20, 2)
    logp = squashed_log_prob(mean + np.exp(log_std) * 0.3, mean, log_std)
    calls, before = [], _nets(agent)["actor"][0].copy()
    if backend_of(agent) == "torch":
        agent.actor.register_forward_hook(lambda *_: calls.append(1))
    updater = Updater(agent, [_sgd(backend, p) for p in agent.param], jit=False)
    result = updater(1, [s, *_batch(np.random.default_rng(5))[1:]], None)
    if backend_of(agent) == "torch":  # (Keras counts calls while tracing, which may trace a step twice)
        assert len(calls) == 2
    assert set(result.losses) == {"critic_loss", "actor", "alpha"}
    expected = np.log(0.5) + LR * np.mean(logp - 1.0)  # -d/dlog_alpha of -mean(log_alpha * (logp - 1))
    assert float(_nets(agent)["log_alpha"][0][0]) == pytest.approx(expected, rel=1e-5)
    assert not np.allclose(_nets(agent)["actor"][0], before)  # the actor stepped in the same update


def test_box_actions_are_rescaled_and_clipped(backend) -> None:
    from note_rl.noise import GaussianWhiteNoiseProcess

    agent = agents_module(backend).TD3(hidden_size=HIDDEN, env="Pendulum-v1", seed=0)
    assert (agent.env.action_space.low, agent.env.action_space.high) == (np.float32(-1.0), np.float32(1.0))
    agent.env.reset(seed=0)
    agent.env.step(np.array([0.5], np.float32))
    assert agent.env.unwrapped.last_u == pytest.approx(1.0)  # 0.5 of the [-2, 2] torque range
    agent.set(noise=GaussianWhiteNoiseProcess(sigma=10.0, size=1, seed=0))
    actions = np.array([agent.explore(np.array([0.9], np.float32)) for _ in range(50)])
    assert actions.min() == -1.0 and actions.max() == 1.0  # big noise, clipped to the bounds
    assert agent.greedy_action(np.array([0.25], np.float32)) == pytest.approx(0.25)


def test_sac_acts_with_its_squashed_policy() -> None:
    agent = agents_module("torch").SAC(hidden_size=HIDDEN, env="Pendulum-v1", seed=0)
    agent.set(learning_starts=0)  # no uniform warm-up: the policy acts from the first step
    output = np.array([0.2, -1.0], np.float32)  # mean, log std
    assert agent.greedy_action(output) == pytest.approx(np.tanh(0.2))
    samples = np.array([agent.explore(output) for _ in range(2000)])[:, 0]
    assert np.all(np.abs(samples) < 1.0)
    assert np.mean(np.arctanh(samples)) == pytest.approx(0.2, abs=0.03)
    assert np.std(np.arctanh(samples)) == pytest.approx(np.exp(-1.0), rel=0.1)


@pytest.mark.parametrize("backend", ["torch", "keras"])
def test_warm_up_actions_are_uniform_until_learning_starts(backend) -> None:
    """The first ``learning_starts`` env steps act uniformly in [-1, 1] (SB3's warm-up), noise
    added and clipped; from then on the actor acts.  Checked by hand: a 2-D action env, the agent's
    seeded generator (seed + 17) and the noise process replayed from its seed (seed + 101)."""
    from gymnasium.envs.classic_control import Continuous_MountainCarEnv

    from note_rl.noise import GaussianWhiteNoiseProcess

    class TwoD(Continuous_MountainCarEnv):  # two action dims, so the draw's shape is checked too
        def __init__(self) -> None:
            super().__init__()
            self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

        def step(self, action):
            return super().step(action[:1])

    def replay(size):  # what the agent's generator and noise draw, step by step
        rng, noise = np.random.default_rng(3 + 17), GaussianWhiteNoiseProcess(sigma=0.1, size=size, seed=3 + 101)
        return lambda: np.clip(rng.uniform(-1.0, 1.0, size) + noise.sample(), -1.0, 1.0), noise

    agent = agents_module(backend).TD3(hidden_size=HIDDEN, env=TwoD(), seed=3)
    agent.set(noise=GaussianWhiteNoiseProcess(sigma=0.1, size=2), learning_starts=4, batch=2, seed=3)
    warm_up, noise = replay(2)
    output = np.array([0.25, -0.5], np.float32)
    for step in range(4):
        agent.step_counter = step
        np.testing.assert_allclose(agent.explore(output), warm_up(), rtol=1e-6)
    agent.step_counter = 4
    np.testing.assert_allclose(agent.explore(output), np.clip(output + noise.sample(), -1, 1), rtol=1e-6)

    # a real run: the 4 warm-up actions are stored as drawn, the 5th is the actor's plus noise
    # (train_freq=100: no update changes the actor within these 5 steps)
    agent = agents_module(backend).TD3(hidden_size=HIDDEN, env="Pendulum-v1", seed=3)
    agent.set(noise=GaussianWhiteNoiseProcess(sigma=0.1, size=1), pool_size=100, batch=2, learning_starts=4,
              train_freq=100, seed=3)
    warm_up, noise = replay(1)
    expected = [warm_up() for _ in range(4)]
    ones = np.ones(1, np.float32)
    env = gym.wrappers.RescaleAction(gym.make("Pendulum-v1"), -ones, ones)  # the agent's env, replayed
    env.reset(seed=3)
    for a in expected:
        state, *_ = env.step(a)
    expected.append(np.clip(agent.numpy_actor()(state[None].astype(np.float32))[0] + noise.sample(), -1, 1))
    agent.fit([_sgd(backend, p) for p in agent.param], None, steps=5)
    stored = agent.buffer.get(np.arange(5)).action
    np.testing.assert_allclose(stored[:, 0], np.concatenate(expected), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls_name", ["DDPG", "TD3", "SAC"])
def test_discrete_action_envs_are_refused_in_one_line(cls_name) -> None:
    with pytest.raises(ValueError, match=f"^{cls_name} needs a Box .*Discrete") as info:
        getattr(agents_module("torch"), cls_name)(env="CartPole-v1")
    assert "\n" not in str(info.value)


def test_dqn_refuses_a_continuous_env_in_one_line() -> None:
    with pytest.raises(ValueError) as info:
        agents_module("torch").DQN(3, 16, 1, env="Pendulum-v1")
    assert str(info.value).startswith("DQN needs a Discrete action space") and "\n" not in str(info.value)


def test_seed_signature_of_ddpg(backend) -> None:
    """The seeds' ``DDPG(hidden_size=128, tau=0.1, gamma=0.98, lr=0.005)``."""
    agent = agents_module(backend).DDPG(hidden_size=128, tau=0.1, gamma=0.98, lr=0.005)
    assert (agent.state_dim, agent.action_dim, agent.tau, agent.lr) == (3, 1, 0.1, 0.005)
    assert agent.env.unwrapped.spec.id == "Pendulum-v1"


@pytest.mark.parametrize("cls_name", ["DDPG", "TD3", "SAC"])
def test_short_training_run(backend, cls_name) -> None:
    from note_rl.noise import GaussianWhiteNoiseProcess

    agent = getattr(agents_module(backend), cls_name)(hidden_size=[32, 32], env="Pendulum-v1", seed=0)
    before = _nets(agent)
    noise = None if cls_name == "SAC" else GaussianWhiteNoiseProcess(sigma=0.1, size=1)
    agent.set(noise=noise, pool_size=10_000, batch=64, learning_starts=200, seed=0)
    agent.fit([_adam(backend, p) for p in agent.param], None, steps=400)
    assert len(agent.reward_list) == 2  # Pendulum episodes are 200 steps
    losses = [v for v in agent.loss_list if v is not None]
    assert losses and np.all(np.isfinite(losses))
    after = _nets(agent)
    assert not np.allclose(before["actor"][0], after["actor"][0])
    assert not np.allclose(before["critic0"][0], after["critic0"][0])
    _, total, steps = agent.run_agent(200, seed=0)
    assert steps == 200 and np.isfinite(total)


def _adam(backend, variables):
    if backend == "torch":
        import torch

        return torch.optim.Adam(variables, lr=1e-3)
    import keras

    return keras.optimizers.Adam(1e-3)


def test_env_with_other_bounds_is_wrapped(backend) -> None:
    env = gym.make("MountainCarContinuous-v0")
    agent = agents_module(backend).SAC(hidden_size=HIDDEN, env=env, seed=0)
    assert agent.env is env  # already in [-1, 1]: not wrapped
    agent = agents_module(backend).SAC(hidden_size=HIDDEN, env="Pendulum-v1", seed=0)
    assert isinstance(agent.env, gym.wrappers.RescaleAction)


@pytest.mark.parametrize("cls_name", ["TD3", "SAC"])
def test_checkpoint_round_trip(backend, cls_name, tmp_path) -> None:
    """save() / restore() bring back every network, the targets and SAC's temperature."""
    make = getattr(agents_module(backend), cls_name)
    agent = make(hidden_size=[16], env="Pendulum-v1", seed=0)
    agent.set(pool_size=1000, batch=32, learning_starts=50, seed=0)
    agent.fit([_adam(backend, p) for p in agent.param], None, steps=200, p=0)
    path = agent.save(str(tmp_path / "agent.ckpt"))
    other = make(hidden_size=[16], env="Pendulum-v1", seed=5)
    other.restore(path, [_adam(backend, p) for p in other.param])
    saved, restored = _nets(agent), _nets(other)
    assert saved.keys() == restored.keys()
    for name in saved:
        for a, b in zip(saved[name], restored[name]):
            np.testing.assert_array_equal(a, b, err_msg=name)
    assert other.reward_list == agent.reward_list
