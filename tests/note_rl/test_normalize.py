"""Running observation and reward normalisation (``set(normalize=...)``, :mod:`note_rl.normalize`):
the statistics against numpy, reward scaling against a hand computation, clipping, frozen statistics
outside training, saving with the model and checkpoints, and exported policies that take raw
observations.  Real envs, no mocks."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from note_rl.normalize import Normalizer, RunningMeanStd
from tests.conftest import agents_module, make_optimizer, train

PRIOR = 1e-4  # SB3's RunningMeanStd starts as mean 0, var 1 standing for this many samples


def _with_prior(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and population variance of ``samples`` pooled with the prior pseudo-set (mean 0, var 1,
    count PRIOR), written out from the definition."""
    n = len(samples)
    mean = samples.sum(axis=0) / (PRIOR + n)
    m2 = PRIOR * (1.0 + mean**2) + ((samples - mean) ** 2).sum(axis=0)
    return mean, m2 / (PRIOR + n)


def test_running_stats_match_numpy_in_batches_and_after_a_parallel_merge() -> None:
    rng = np.random.default_rng(0)
    data = rng.normal([3.0, -2.0, 50.0], [1.0, 0.1, 20.0], size=(300, 3))
    # prior 0: exactly numpy's mean and population variance, whatever the batches
    exact = RunningMeanStd((3,), prior=0.0)
    for batch in np.array_split(data, [1, 7, 50, 51, 200]):
        exact.update(batch)
    np.testing.assert_allclose(exact.mean, data.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(exact.var, data.var(axis=0), rtol=1e-10)
    assert exact.count == 300
    # SB3's prior: the pooled statistics of the definition, and numpy's to 1e-3
    rms = RunningMeanStd((3,))
    for batch in np.array_split(data, 10):
        rms.update(batch)
    mean, var = _with_prior(data)
    np.testing.assert_allclose(rms.mean, mean, rtol=1e-10)
    np.testing.assert_allclose(rms.var, var, rtol=1e-10)
    np.testing.assert_allclose(rms.var, data.var(axis=0), rtol=1e-3)
    # two halves kept apart (two workers), then merged: the statistics of all of it
    left, right = RunningMeanStd((3,), prior=0.0), RunningMeanStd((3,), prior=0.0)
    left.update(data[:120])
    right.update(data[120:])
    left.merge(right.mean, right.var, right.count)
    np.testing.assert_allclose(left.mean, data.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(left.var, data.var(axis=0), rtol=1e-10)


def test_reward_scaling_by_the_discounted_return_by_hand() -> None:
    """gamma 0.5, two env copies; copy 0's episode ends at step 2, so its return starts again."""
    norm = Normalizer(obs=False, gamma=0.5, clip_reward=1e6)
    rewards = np.array([[1.0, -2.0], [2.0, 0.0], [4.0, 1.0]])
    ended = np.array([[False, False], [True, False], [False, False]])
    # the returns by hand: copy 0: 1, 0.5*1 + 2 = 2.5, (reset) 4; copy 1: -2, -1, 0.5
    returns = np.array([[1.0, -2.0], [2.5, -1.0], [4.0, 0.5]])
    for t in range(3):
        scaled = norm.scale_reward(rewards[t], ended[t])
        _, var = _with_prior(returns[: t + 1].reshape(-1))
        np.testing.assert_allclose(scaled, rewards[t] / np.sqrt(var + 1e-8), rtol=1e-6)
    np.testing.assert_allclose(norm.returns, [4.0, 0.5])
    # clip_reward: the first return's variance is ~2e-4, so a reward of 1 scales to ~70, clipped to 10
    first = Normalizer(obs=False, gamma=0.99).scale_reward([1.0], [False])
    assert first[0] == np.float32(10.0)
    # frozen (training=False): scaled by the statistics as they are, nothing merged
    norm.training = False
    before = (norm.ret_rms.mean.copy(), norm.ret_rms.var.copy(), norm.ret_rms.count)
    norm.scale_reward([1.0, 1.0], [False, False])
    assert (norm.ret_rms.count, float(norm.ret_rms.var)) == (before[2], float(before[1]))


def test_observations_are_normalised_and_clipped() -> None:
    norm = Normalizer(reward=False, clip_obs=2.0)
    batch = np.array([[0.0, 1.0], [0.0, 3.0], [0.0, 5.0], [100.0, 7.0]])
    out = norm.observe(batch)
    mean, var = _with_prior(batch)
    np.testing.assert_allclose(out, np.clip((batch - mean) / np.sqrt(var + 1e-8), -2, 2), rtol=1e-6)
    assert 1.7 < out[3, 0] < 2.0  # (100 - 25) / sqrt(1875) = 1.73: inside the clip
    np.testing.assert_array_equal(norm.normalize_obs([[1e4, -1e4]]), [[2.0, -2.0]])  # clipped
    assert norm.obs_rms.count == pytest.approx(4 + PRIOR)


def _ppo(backend: str, env: str = "CartPole-v1", seed: int = 0):
    mod = agents_module(backend)
    probe = gym.make(env)
    state_dim = probe.observation_space.shape[0]
    action_dim = probe.action_space.n if hasattr(probe.action_space, "n") else probe.action_space.shape[0]
    agent = mod.PPO(state_dim, 16, action_dim, n_steps=32, n_envs=2, n_epochs=2, seed=seed, env=env)
    agent.set(batch=32, normalize=True)
    return agent


def _stats(agent) -> tuple:
    n = agent.normalizer
    return (n.obs_rms.mean.copy(), n.obs_rms.var.copy(), n.obs_rms.count, float(n.ret_rms.var), n.ret_rms.count)


def _same(a: tuple, b: tuple) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


def test_training_updates_the_stats_evaluation_and_predict_leave_them_frozen() -> None:
    from note_rl.evaluation import evaluate

    agent = _ppo("torch")
    assert agent.normalizer.gamma == 0.99  # the agent's gamma
    train(agent, "torch", make_optimizer("torch", agent.param), None, steps=256)
    n = agent.normalizer
    assert n.obs_rms.count == pytest.approx(256 + 2 + PRIOR)  # every step's observation and the 2 first resets
    assert n.ret_rms.count == pytest.approx(256 + PRIOR)
    # training's episode returns are CartPole's own rewards (1 per step), not the scaled ones
    assert agent.reward_list and all(r == int(r) and r >= 8 for r in agent.reward_list)
    before = _stats(agent)
    returns = evaluate(agent, episodes=2, seed=5)
    agent.predict(np.zeros((3, 4), np.float32))
    assert _same(before, _stats(agent))
    # evaluation's returns are the env's rewards under predict's actions (raw observations in)
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=5)
    total, done = 0.0, False
    while not done:
        obs, r, terminated, truncated, _ = env.step(int(agent.predict(obs)[0]))
        total, done = total + r, terminated or truncated
    assert total == returns[0]


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_stats_round_trip_through_model_files_and_checkpoints(backend, tmp_path) -> None:
    agent = _ppo(backend, "Pendulum-v1")
    train(agent, backend, make_optimizer(backend, agent.param), None, steps=128)
    obs = np.random.default_rng(1).normal(size=(6, 3)).astype(np.float32) * 3
    expected = agent.predict(obs)[0]
    stats = _stats(agent)
    model = agent.save_param(str(tmp_path / "model.npz"))
    loaded = _ppo(backend, "Pendulum-v1", seed=9)  # other weights, fresh statistics
    loaded.restore_param(model)
    assert _same(stats, _stats(loaded)) and loaded.normalizer.gamma == agent.normalizer.gamma
    np.testing.assert_allclose(loaded.predict(obs)[0], expected, rtol=1e-6, atol=1e-6)
    # a full checkpoint, resumed: the statistics continue from the saved counts
    ckpt = agent.save(str(tmp_path / "ckpt.npz"))
    resumed = _ppo(backend, "Pendulum-v1", seed=9)
    opt = make_optimizer(backend, resumed.param)
    resumed.restore(ckpt, opt)
    assert _same(stats, _stats(resumed))
    np.testing.assert_array_equal(resumed.normalizer.returns, agent.normalizer.returns)
    train(resumed, backend, opt, None, steps=64)
    assert resumed.normalizer.obs_rms.count == pytest.approx(stats[2] + 64 + 2)
    # a weights file without statistics leaves the agent's normaliser as it is
    plain = _ppo(backend, "Pendulum-v1")
    plain.set(normalize=False)
    bare = plain.save_param(str(tmp_path / "bare.npz"))
    loaded.restore_param(bare)
    assert loaded.normalizer is not None


def test_exported_policies_normalise_raw_observations(tmp_path) -> None:
    import torch

    from note_rl.exporting import export
    from note_rl.inference import policy_spec, spec_forward

    agent = _ppo("torch", "Pendulum-v1")
    train(agent, "torch", make_optimizer("torch", agent.param), None, steps=256)
    rng = np.random.default_rng(3)
    obs = (rng.normal(size=(16, 3)) * [1.0, 1.0, 6.0]).astype(np.float32)  # raw Pendulum observations
    expected = agent.predict(obs)[0]
    assert not np.allclose(expected, np.clip(agent.act_output(obs), -2, 2))  # normalising matters here
    spec = policy_spec(agent)
    assert spec.obs_norm is not None
    np.testing.assert_allclose(spec_forward(spec, obs), expected, atol=1e-5)
    path = export(agent, str(tmp_path / "policy.pt"), "torchscript")
    np.testing.assert_allclose(torch.jit.load(path)(torch.from_numpy(obs)).numpy(), expected, atol=1e-5)
    pytest.importorskip("onnx")
    onnxruntime = pytest.importorskip("onnxruntime")
    path = export(agent, str(tmp_path / "policy.onnx"), "onnx")
    got = onnxruntime.InferenceSession(path).run(None, {"obs": obs})[0]
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_keras_agent_exports_a_normalising_saved_model(tmp_path) -> None:
    tf = pytest.importorskip("tensorflow")
    from note_rl.exporting import export

    agent = _ppo("tf", "CartPole-v1")
    train(agent, "tf", make_optimizer("tf", agent.param), None, steps=128)
    obs = np.random.default_rng(4).normal(size=(32, 4)).astype(np.float32)
    expected = agent.predict(obs)[0]
    path = export(agent, str(tmp_path / "saved"), "saved_model")
    np.testing.assert_array_equal(tf.saved_model.load(path)(tf.constant(obs)).numpy(), expected)


def test_single_env_and_vector_env_off_policy_collection_normalise() -> None:
    mod = agents_module("torch")
    for n_envs in (1, 3):
        agent = mod.DQN(4, 16, 2, seed=0, env="CartPole-v1")
        agent.set(batch=16, pool_size=500, n_envs=n_envs, normalize={"obs": True, "reward": True, "clip_obs": 0.5})
        train(agent, "torch", make_optimizer("torch", agent.param), None, steps=120)
        n = agent.normalizer
        assert n.clip_obs == 0.5 and n.obs_rms.count > 120
        stored = np.abs(np.concatenate([agent.buffer.data[k].reshape(-1) for k in ("state", "next_state")]))
        # normalised and clipped before they were stored: raw CartPole velocities pass 0.5 within 120 steps
        assert stored.max() == np.float32(0.5)
        assert all(r == int(r) for r in agent.reward_list)  # returns in the env's own rewards


def test_set_normalize_is_checked() -> None:
    mod = agents_module("torch")
    agent = mod.DQN(4, 16, 2, seed=0, env="CartPole-v1")
    with pytest.raises(ValueError, match="unknown key"):
        agent.set(normalize={"clip": 3})
    with pytest.raises(ValueError, match="positive number"):
        agent.set(normalize={"clip_obs": -1})
    with pytest.raises(ValueError, match="give True"):
        agent.set(normalize="yes")
    agent.set(normalize=Normalizer(reward=False))
    assert agent.normalizer.gamma == 0.99 and not agent.normalizer.reward
    agent.set(normalize=None)
    assert agent.normalizer is None
    her = mod.DDPG(hidden_size=16, seed=0, env="note_rl/PointReach-v0")
    with pytest.raises(ValueError, match="not with HER"):
        her.set(HER=True, normalize=True)


def test_normalizer_state_refuses_malformed_entries() -> None:
    norm = Normalizer()
    norm.observe(np.ones((2, 3)))
    meta, arrays = norm.state()
    again = Normalizer.from_state(meta, arrays)
    np.testing.assert_array_equal(again.obs_rms.var, norm.obs_rms.var)
    with pytest.raises(ValueError, match="negative variance"):
        Normalizer.from_state(meta, {**arrays, "obs_var": -np.ones(3)})
    with pytest.raises(ValueError, match="missing"):
        Normalizer.from_state(meta, {k: v for k, v in arrays.items() if k != "ret_var"})
    with pytest.raises(ValueError, match="count"):
        Normalizer.from_state({**meta, "ret_count": -1.0}, arrays)
