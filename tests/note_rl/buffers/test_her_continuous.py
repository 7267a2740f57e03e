"""DDPG + HER on PointReachEnv (note_rl's continuous goal env): the env by hand, both backends'
HER runs, the one-line refusals, and (slow) learning where the same run with her_k=0 does not."""

import numpy as np
import pytest

from note_rl.goal_envs import PointReachEnv
from note_rl.noise import GaussianWhiteNoiseProcess
from tests.conftest import agents_module

pytest.importorskip("torch")


def test_point_reach_by_hand() -> None:
    env = PointReachEnv(dim=2, threshold=0.05, step_size=0.1, max_steps=3)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"observation", "achieved_goal", "desired_goal"}
    assert np.linalg.norm(obs["achieved_goal"] - obs["desired_goal"]) > 0.05
    env.position = np.array([0.0, 0.0], np.float32)
    env.goal = np.array([0.12, -0.03], np.float32)
    obs, r, term, trunc, info = env.step(np.array([5.0, -0.3]))  # clipped to 1: moves (0.1, -0.03)
    np.testing.assert_allclose(obs["observation"], [0.1, -0.03], atol=1e-6)
    assert (r, term, trunc) == (0.0, True, False) and info["is_success"]  # 0.02 away
    env.position = np.array([0.95, 0.0], np.float32)
    obs, r, term, trunc, _ = env.step(np.array([1.0, 0.0]))
    assert obs["observation"][0] == 1.0 and r == -1.0 and not term  # kept inside the box
    _, _, _, trunc, _ = env.step(np.zeros(2))
    assert trunc  # third step: the time limit
    achieved = np.array([[0.0, 0.0], [0.3, 0.4]])
    np.testing.assert_array_equal(env.compute_reward(achieved, np.zeros((2, 2)), {}), [0.0, -1.0])


def _ddpg_her(backend, her_k=4, seed=0, hidden=(64, 64)):
    agent = agents_module(backend).DDPG(hidden_size=list(hidden), tau=0.05, gamma=0.95,
                                        env="note_rl/PointReach-v0", seed=seed)
    agent.set(noise=GaussianWhiteNoiseProcess(sigma=0.2, size=2), pool_size=100_000, batch=128,
              learning_starts=500, HER=True, her_k=her_k, seed=seed)
    return agent


def _optimizers(agent, backend, lr=1e-3):
    if backend == "torch":
        import torch

        return [torch.optim.Adam(p, lr=lr) for p in agent.param]
    import keras

    return [keras.optimizers.Adam(lr) for _ in agent.param]


def test_ddpg_her_runs(backend) -> None:
    agent = _ddpg_her(backend, hidden=(16, 16))
    assert agent.state_dim == 4 and agent.action_dim == 2  # observation + desired goal
    agent.fit(_optimizers(agent, backend), None, steps=700, p=0)
    assert agent.step_counter == 700 and agent.batch_counter == 201  # one update per step from 500
    assert agent.buffer.her_k == 4 and len(agent.buffer) > 0


def test_refusals() -> None:
    agent = _ddpg_her("torch", hidden=(8,))
    with pytest.raises(ValueError, match=r"^train\(\): .*HER") as info:
        agent.fit(_optimizers(agent, "torch"), None, steps=100, pool_network=True, processes=2)
    assert "\n" not in str(info.value)
    agent.set(HER=False)
    with pytest.raises(ValueError, match=r"observations are dicts \(a goal env\); train it with HER=True"):
        agent.fit(_optimizers(agent, "torch"), None, steps=100)


def _success_rate(agent, episodes=50):
    return float(np.mean([agent.run_agent(50, env=PointReachEnv(), seed=1000 + i)[1] > -50
                          for i in range(episodes)]))


@pytest.mark.slow
def test_ddpg_her_reaches_targets_where_plain_ddpg_does_not() -> None:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        runs = {}
        for her_k in (4, 0):  # the same run without relabelling
            agent = _ddpg_her("torch", her_k=her_k)
            agent.fit(_optimizers(agent, "torch"), None, steps=6000, p=0)
            runs[her_k] = agent
    finally:
        torch.set_num_threads(before)
    # measured: 100% with HER (seeds 0, 1) against 8% without
    assert _success_rate(runs[4]) >= 0.9
    assert _success_rate(runs[0]) <= 0.3
