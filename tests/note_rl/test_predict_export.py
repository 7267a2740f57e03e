"""``agent.predict`` (SB3's ``(action, None)``, one observation or a batch, the env's own actions) and
the policy read-out that every export format is built from (:mod:`note_rl.inference`), on freshly built
agents of both backends (no training: what is checked is the mapping, not the learning)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from note_rl.inference import ExportError, check_spec, policy_spec, sample_observations, spec_forward
from tests.conftest import agents_module


def _agents(backend: str) -> dict:
    mod = agents_module(backend)
    return {"dqn": mod.DQN(4, [16, 16], 2, seed=0, env="CartPole-v1"),
            "ppo": mod.PPO(4, 16, 2, n_steps=8, seed=1, env="CartPole-v1"),
            "ppo_box": mod.PPO(3, 16, 1, n_steps=8, seed=2, env="Pendulum-v1"),
            "a2c": mod.A2C(4, 16, 2, n_steps=8, seed=3, env="CartPole-v1"),
            "ddpg": mod.DDPG(hidden_size=16, seed=4, env="Pendulum-v1"),
            "td3": mod.TD3(hidden_size=16, seed=5, env="MountainCarContinuous-v0"),
            "sac": mod.SAC(hidden_size=[16, 16], seed=6, env="Pendulum-v1")}


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_spec_of_every_built_in_agent_acts_as_predict(backend) -> None:
    for name, agent in _agents(backend).items():
        spec = policy_spec(agent)
        check_spec(agent, spec)  # raises when the read-out policy acts differently
        obs = sample_observations(agent, 32, seed=7)
        expected, state = agent.predict(obs)
        assert state is None
        got = spec_forward(spec, obs)
        assert got.dtype == expected.dtype, name
        np.testing.assert_allclose(got, expected, atol=1e-6, err_msg=name)
        env = gym.make(agent.env.spec.id)
        assert all(env.action_space.contains(np.asarray(a, env.action_space.dtype)) for a in expected), name


def test_predict_one_observation_or_a_batch_in_the_envs_own_bounds() -> None:
    from note_rl.agents.torch import DQN, SAC

    dqn = DQN(4, 16, 2, seed=0, env="CartPole-v1")
    obs = sample_observations(dqn, 5)
    batch, state = dqn.predict(obs)
    assert state is None and batch.shape == (5,) and batch.dtype == np.int64
    one, _ = dqn.predict(obs[0])
    assert np.ndim(one) == 0 and one == batch[0]
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    env.step(one)  # the env takes it as it is

    sac = SAC(hidden_size=16, seed=0, env="Pendulum-v1")
    obs = sample_observations(sac, 64)
    actions, _ = sac.predict(obs)
    assert actions.shape == (64, 1) and actions.dtype == np.float32
    # the agent acts in [-1, 1]; predict gives Pendulum's own [-2, 2]: twice the internal action
    internal = np.stack([sac.greedy_action(o) for o in sac.act_output(obs)])
    np.testing.assert_allclose(actions, 2.0 * internal, rtol=1e-6)
    assert sac.predict(obs[3])[0].shape == (1,)


def test_predict_reads_discrete_and_goal_observations_as_the_agent_does() -> None:
    from note_rl.agents.torch import DQN, DDPG

    lake = DQN(16, 16, 4, seed=0, env="FrozenLake-v1")  # Discrete(16) observations, one-hot inside
    eye = np.eye(16, dtype=np.float32)
    assert lake.predict(5)[0] == int(np.argmax(lake.act_output(eye[[5]])[0]))
    batch, _ = lake.predict(np.arange(16))
    assert batch.shape == (16,) and np.array_equal(batch, np.argmax(lake.act_output(eye), axis=1))
    with pytest.raises(ValueError, match="must be in"):
        lake.predict(16)

    reach = DDPG(hidden_size=16, seed=0, env="note_rl/PointReach-v0")
    obs, _ = reach.env.reset(seed=0)
    one, _ = reach.predict(obs)
    flat = np.concatenate([obs["observation"], obs["desired_goal"]]).astype(np.float32)
    assert np.array_equal(one, reach.predict(flat)[0])
    check_spec(reach, policy_spec(reach))


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_predict_deterministic_false_samples_the_agents_own_policy(backend) -> None:
    """SB3's ``deterministic=False``: PPO draws from its softmax (frequencies follow the probabilities)
    or its Gaussian (clipped to the bounds), SAC from its squashed Gaussian (in the env's bounds);
    DQN, DDPG and TD3 are deterministic policies: the greedy action."""
    agents = _agents(backend)
    ppo = agents["ppo"]
    obs = np.repeat(sample_observations(ppo, 1), 4000, axis=0)
    drawn, state = ppo.predict(obs, deterministic=False)
    assert state is None and drawn.dtype == np.int64 and set(drawn) == {0, 1}
    assert abs(drawn.mean() - ppo.act_output(obs[:1])[0, 1]) < 0.03
    for name in ("ppo_box", "sac"):
        agent = agents[name]
        obs = sample_observations(agent, 200)
        sampled, greedy = agent.predict(obs, deterministic=False)[0], agent.predict(obs)[0]
        assert sampled.shape == greedy.shape and not np.allclose(sampled, greedy)
        assert np.all(np.abs(sampled) <= 2.0)  # Pendulum's bounds
    for name in ("dqn", "ddpg", "td3"):
        agent = agents[name]
        obs = sample_observations(agent, 16)
        assert np.array_equal(agent.predict(obs, deterministic=False)[0], agent.predict(obs)[0]), name


def test_a_users_own_agent_predicts_but_does_not_export(tmp_path) -> None:
    """``predict`` goes through the agent's own ``action(s)``; export needs a built-in MLP policy and
    says so in one line instead of writing something that acts differently."""
    import note_rl
    from tests.tuner.trl_agent import PairAgent

    agent = PairAgent(env=gym.make("CartPole-v1"), seed=0)
    obs = sample_observations(agent, 8)
    actions, _ = agent.predict(obs)
    assert actions.shape == (8,) and set(actions) <= {0, 1}
    with pytest.raises(ExportError, match="only agents with a built-in MLP actor"):
        note_rl.export(agent, str(tmp_path / "p.pt"), "torchscript")
    assert not list(tmp_path.iterdir())
    with pytest.raises(ExportError, match="format: 'pickle' is not one of"):
        note_rl.export(agent, str(tmp_path / "p.pkl"), "pickle")
