"""Hindsight Experience Replay: relabelling, ring wrap-around, errors, BitFlipEnv, checkpoints,
learning (torch) and a Keras smoke run."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from note_rl.buffers import HerReplayBuffer, flatten_goal_obs
from note_rl.goal_envs import BitFlipEnv
from note_rl.policy import EpsGreedyQPolicy, LinearEpsGreedyPolicy
from tests.conftest import agents_module, make_optimizer, train

# -- relabelling on a tiny hand-made episode set ---------------------------------------------
# goals are 1-D; an item's achieved goal encodes (episode, step) as 10 * episode + step, so the
# relabelled goal says exactly which step it came from


def _reward_done(achieved: np.ndarray, desired: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    equal = np.all(achieved == desired, axis=-1)
    return np.where(equal, 0.0, -1.0), equal.astype(np.float32)


def _episode(buf: HerReplayBuffer, ep: int, length: int, goal: float = -5.0) -> None:
    for t in range(length):
        code = 10.0 * ep + t
        buf.add_step(obs=[code, 0.0], goal=[goal], achieved=[code], action=t,
                     next_obs=[code, 1.0], reward=-7.0, done=float(t == length - 1))
    buf.end_episode()


def _filled(capacity: int = 100, her_k: int = 4, seed: int = 0) -> HerReplayBuffer:
    buf = HerReplayBuffer(capacity, _reward_done, her_k=her_k, seed=seed)
    _episode(buf, 1, 3)  # codes 10, 11, 12
    _episode(buf, 2, 5)  # codes 20 .. 24
    return buf


def test_staged_episode_is_committed_with_offsets() -> None:
    buf = HerReplayBuffer(10, _reward_done, seed=0)
    buf.add_step([0.0, 0.0], [1.0], [0.0], 0, [0.0, 1.0], -1.0, 0.0)
    assert len(buf) == 0 and len(buf.staged) == 1  # not sampled before the episode ends
    buf.end_episode()
    _episode(buf, 2, 3)
    assert len(buf) == 4
    np.testing.assert_array_equal(buf.data["offset"][:4], [0, 2, 1, 0])


def test_relabelled_goals_come_from_same_episode_at_or_after_t() -> None:
    buf = _filled()
    for _ in range(200):
        slots, future, relabelled = buf.sample_with_goals(20)
        assert relabelled.sum() == 16  # int(20 * 4 / 5)
        own = buf.data["achieved"][slots, 0]
        goal = buf.data["achieved"][future, 0]
        np.testing.assert_array_equal(goal[~relabelled], own[~relabelled])
        assert np.all(goal // 10 == own // 10)  # same episode
        assert np.all(goal >= own)  # at or after t
        length = np.where(own // 10 == 1, 3, 5)
        assert np.all(goal % 10 < length)


def test_relabelled_batch_rewards_and_kept_items() -> None:
    buf = _filled()
    for _ in range(100):
        batch = buf.sample(10)
        n_her = buf.n_relabelled(10)
        code = batch.state[:, 0]
        goal = batch.state[:, 2]
        np.testing.assert_array_equal(batch.next_state[:, 2], goal)  # same goal in s and s'
        np.testing.assert_array_equal(batch.next_state[:, 1], 1.0)
        np.testing.assert_array_equal(batch.action, code % 10)
        # relabelled: reward/done from reward_done_func(achieved of the step, new goal)
        hit = goal[:n_her] == code[:n_her]
        np.testing.assert_array_equal(batch.reward[:n_her], np.where(hit, 0.0, -1.0))
        np.testing.assert_array_equal(batch.done[:n_her], hit.astype(np.float32))
        # kept: stored desired goal, reward and termination
        np.testing.assert_array_equal(goal[n_her:], -5.0)
        np.testing.assert_array_equal(batch.reward[n_her:], -7.0)
        last = np.where(code[n_her:] // 10 == 1, 2, 4)
        np.testing.assert_array_equal(batch.done[n_her:], (code[n_her:] % 10 == last).astype(np.float32))


def test_future_goal_distribution_is_uniform_over_the_tail() -> None:
    buf = _filled(her_k=1)
    counts: dict[float, int] = {}
    for _ in range(4000):
        slots, future, relabelled = buf.sample_with_goals(2)
        if buf.data["achieved"][slots[0], 0] == 20.0:  # first step of episode 2 (5 steps)
            g = float(buf.data["achieved"][future[0], 0])
            counts[g] = counts.get(g, 0) + 1
    assert sorted(counts) == [20.0, 21.0, 22.0, 23.0, 24.0]
    freq = np.array([counts[k] for k in sorted(counts)]) / sum(counts.values())
    assert np.all(np.abs(freq - 0.2) < 0.08)


@pytest.mark.parametrize("her_k", [0, 1, 3, 4, 8])
def test_relabelled_fraction(her_k: int) -> None:
    buf = _filled(her_k=her_k)
    changed = 0
    total = 0
    for _ in range(200):
        batch = buf.sample(50)
        changed += int(np.sum(batch.state[:, 2] != -5.0))
        total += 50
    expected = her_k / (her_k + 1)
    assert abs(changed / total - expected) < 0.03
    if her_k == 0:
        assert changed == 0


def test_sampling_is_seeded() -> None:
    a, b = _filled(seed=3), _filled(seed=3)
    for _ in range(5):
        x, y = a.sample(16), b.sample(16)
        for u, v in zip(x[:5], y[:5]):
            np.testing.assert_array_equal(u, v)


# -- ring wrap-around --------------------------------------------------------------------------
def test_wrap_around_keeps_episodes_whole() -> None:
    buf = HerReplayBuffer(7, _reward_done, her_k=4, seed=1)
    _episode(buf, 1, 3)   # slots 0-2
    _episode(buf, 2, 3)   # slots 3-5
    _episode(buf, 3, 4)   # slots 6, 0, 1, 2: spans the wrap point, overwrites episode 1
    assert len(buf) == 7 and buf.pos == 3
    order = buf.data["achieved"][buf.valid_slots(), 0]
    np.testing.assert_array_equal(order, [20, 21, 22, 30, 31, 32, 33])
    np.testing.assert_array_equal(buf.data["offset"][buf.valid_slots()], [2, 1, 0, 3, 2, 1, 0])
    seen = set()
    for _ in range(300):
        slots, future, relabelled = buf.sample_with_goals(10)
        own = buf.data["achieved"][slots, 0]
        goal = buf.data["achieved"][future, 0]
        assert np.all(goal // 10 == own // 10) and np.all(goal >= own)
        seen.update(goal[own == 30.0].tolist())
    assert seen == {30.0, 31.0, 32.0, 33.0}  # goals of the wrapped episode cross slot 6 -> 0..2
    # a partly overwritten episode (episode 2 loses step 0) keeps valid tails for the rest
    _episode(buf, 4, 1)   # slot 3: overwrites the oldest item, episode 2 step 0
    order = buf.data["achieved"][buf.valid_slots(), 0]
    np.testing.assert_array_equal(order, [21, 22, 30, 31, 32, 33, 40])
    for _ in range(300):
        slots, future, _ = buf.sample_with_goals(10)
        own = buf.data["achieved"][slots, 0]
        goal = buf.data["achieved"][future, 0]
        assert np.all(goal // 10 == own // 10) and np.all(goal >= own)


def test_episode_longer_than_capacity_keeps_its_tail() -> None:
    buf = HerReplayBuffer(4, _reward_done, seed=0)
    _episode(buf, 1, 6)
    np.testing.assert_array_equal(buf.data["achieved"][buf.valid_slots(), 0], [12, 13, 14, 15])
    np.testing.assert_array_equal(buf.data["offset"][buf.valid_slots()], [3, 2, 1, 0])


# -- BitFlipEnv --------------------------------------------------------------------------------
def test_bitflip_env_by_hand() -> None:
    env = BitFlipEnv(4)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"observation", "achieved_goal", "desired_goal"}
    assert all(v.dtype == np.float32 and v.shape == (4,) for v in obs.values())
    assert env.observation_space.contains(obs)
    np.testing.assert_array_equal(obs["observation"], obs["achieved_goal"])
    assert not np.array_equal(obs["achieved_goal"], obs["desired_goal"])
    obs2, _ = BitFlipEnv(4).reset(seed=0)
    for key in obs:
        np.testing.assert_array_equal(obs[key], obs2[key])  # seeded
    # flip exactly the differing bits: -1 each step, then 0 and terminated
    diff = np.flatnonzero(obs["observation"] != obs["desired_goal"])
    for k, i in enumerate(diff):
        before = obs["observation"].copy()
        obs, reward, terminated, truncated, _ = env.step(int(i))
        before[i] = 1.0 - before[i]
        np.testing.assert_array_equal(obs["observation"], before)
        last = k == len(diff) - 1
        assert (reward, terminated, truncated) == ((0.0, True, False) if last else (-1.0, False, False))
    # truncation after n_bits steps without success
    env.reset(seed=1)
    results = [env.step(0)[1:4] for _ in range(4)]  # flipping bit 0 back and forth
    goal_hit = [r == 0.0 for r, _, _ in results]
    if not any(goal_hit):
        assert [t for _, _, t in results] == [False, False, False, True]
    assert env.compute_reward(np.ones((3, 4)), np.array([[1, 1, 1, 1], [0, 1, 1, 1], [1] * 4]), {}).tolist() \
        == [0.0, -1.0, 0.0]


def test_flatten_goal_obs() -> None:
    obs = {"observation": np.array([1.0, 0.0]), "achieved_goal": np.zeros(2),
           "desired_goal": np.array([0.0, 1.0])}
    flat = flatten_goal_obs(obs)
    assert flat.dtype == np.float32
    np.testing.assert_array_equal(flat, [1, 0, 0, 1])


# -- errors ------------------------------------------------------------------------------------
def _dqn(env=None, **kw):
    import note_rl.agents.torch as mod

    return mod.DQN(8, 16, 4, env=env if env is not None else BitFlipEnv(4), **kw)


@pytest.mark.parametrize("first, second", [
    (dict(HER=True), dict(PR=True)),
    (dict(PR=True), dict(HER=True)),
    (dict(HER=True), dict(PPO=True)),
    (dict(HER=True), dict(num_steps=3)),
    (dict(num_steps=3), dict(HER=True)),
])
def test_set_rejects_unsupported_combinations(first, second) -> None:
    agent = _dqn()
    agent.set(**first)
    with pytest.raises(ValueError, match="HER") as info:
        agent.set(**second)
    assert "\n" not in str(info.value)
    assert not (agent.HER and (agent.PR or agent.PPO or agent.num_steps))  # nothing half-set


def test_rollout_ppo_rejects_her() -> None:
    import note_rl.agents.torch as mod

    agent = mod.PPO(8, 16, 4, n_steps=8, env=BitFlipEnv(4))
    with pytest.raises(ValueError, match="HER.*PPO"):
        agent.set(HER=True)


def test_train_rejects_pool_network_and_non_goal_env() -> None:
    import torch

    agent = _dqn()
    agent.set(HER=True, batch=8, pool_size=100)
    opt = torch.optim.Adam(agent.param)
    with pytest.raises(ValueError, match="HER.*pool_network"):
        agent.train(opt, 1, pool_network=True, processes=2, p=0)
    with pytest.raises(ValueError, match="HER.*window_size"):
        agent.train(opt, 1, window_size=2, p=0)
    import note_rl.agents.torch as mod

    plain = mod.DQN(4, 16, 2, env=gym.make("CartPole-v1"))  # sizes of CartPole: the constructor checks them
    plain.set(HER=True, batch=8)
    with pytest.raises(ValueError, match="HER.*Dict") as info:
        plain.train(torch.optim.Adam(plain.param), 1, p=0)
    assert "\n" not in str(info.value)
    assert agent.step_counter == 0 and plain.step_counter == 0 and agent.buffer is None


@pytest.mark.parametrize("value", [-1, 1.5, True, "4"])
def test_her_k_is_validated(value) -> None:
    with pytest.raises(ValueError, match="her_k"):
        _dqn().set(her_k=value)


# -- training, checkpoints ---------------------------------------------------------------------
def _her_agent(backend: str, n_bits: int = 4, seed: int = 0, **kw):
    agent = agents_module(backend).DQN(2 * n_bits, 32, n_bits, env=BitFlipEnv(n_bits), seed=seed)
    agent.set(policy=EpsGreedyQPolicy(0.2), pool_size=60, batch=16, update_steps=25,
              learning_starts=16, HER=True, her_k=3, seed=seed, **kw)
    return agent


def test_fallback_reward_uses_env_compute_reward() -> None:
    agent = _her_agent("torch")
    r, d = agent.her_reward_done(np.array([[1, 0, 1, 0], [1, 1, 1, 1]], np.float32),
                                 np.array([[1, 0, 1, 0], [0, 1, 1, 1]], np.float32))
    np.testing.assert_array_equal(r, [0.0, -1.0])
    np.testing.assert_array_equal(d, [0.0, 0.0])  # done = 0 without reward_done_func


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_checkpoint_round_trip(backend, tmp_path) -> None:
    path = str(tmp_path / "her.dat")
    a = _her_agent(backend)
    opt_a = make_optimizer(backend, a.param)
    train(a, backend, opt_a, 30, p=0, jit_compile=False)  # > 60 steps: the ring has wrapped
    assert isinstance(a.buffer, HerReplayBuffer) and a.buffer.store_counter > 60
    a.save(path)
    meta_a, arrays_a = a.buffer.state_dict()
    b = _her_agent(backend, seed=5)
    b.restore(path, optimizer=make_optimizer(backend, b.param))
    assert isinstance(b.buffer, HerReplayBuffer) and b.HER and b.her_k == 3
    meta_b, arrays_b = b.buffer.state_dict()
    assert meta_a == meta_b
    assert sorted(arrays_a) == sorted(arrays_b) and "offset" in arrays_b
    for key in arrays_a:
        np.testing.assert_array_equal(arrays_a[key], arrays_b[key])
        assert arrays_a[key].dtype == arrays_b[key].dtype
    for x, y in zip(a.buffer.sample(16)[:5], b.buffer.sample(16)[:5]):
        np.testing.assert_array_equal(x, y)  # same rng state: same relabelled batches


def test_keras_smoke() -> None:
    agent = _her_agent("tf")
    train(agent, "tf", make_optimizer("tf", agent.param), 8, p=0, jit_compile=False)
    assert len(agent.reward_list) == 8 and agent.batch_counter > 0
    assert agent.buffer.data["offset"].max() <= 3


def _success_rate(agent, n_bits: int, episodes: int = 50) -> float:
    wins = [agent.run_agent(n_bits, env=BitFlipEnv(n_bits), seed=1000 + i)[1] > -n_bits
            for i in range(episodes)]
    return float(np.mean(wins))


def _bitflip_run(her: bool, seed: int, n_bits: int = 8, steps: int = 8000):
    """The run without HER is the same run with ``her_k=0``: same inputs, no relabelling."""
    import note_rl.agents.torch as mod
    import torch

    agent = mod.DQN(2 * n_bits, 64, n_bits, gamma=0.95, loss="huber", env=BitFlipEnv(n_bits), seed=seed)
    agent.set(policy=LinearEpsGreedyPolicy(1.0, 0.05, decay_steps=steps // 2), pool_size=20000,
              batch=64, update_steps=200, learning_starts=200, HER=True, her_k=4 if her else 0, seed=seed)
    agent.train(torch.optim.Adam(agent.param, lr=1e-3), None, steps=steps, p=0, jit_compile=False)
    return agent


def test_torch_dqn_her_learns_bitflip() -> None:
    n_bits = 8
    with_her = _bitflip_run(True, seed=0)
    without = _bitflip_run(False, seed=0)
    assert _success_rate(with_her, n_bits) >= 0.9
    assert _success_rate(without, n_bits) <= 0.3
    assert np.mean(with_her.reward_list[-100:]) > np.mean(without.reward_list[-100:]) + 2.0


def test_agent_reward_done_func_is_used_for_relabelled_items() -> None:
    import note_rl.agents.torch as mod

    class GoalDQN(mod.DQN):
        def reward_done_func(self, achieved_goal, desired_goal):
            near = np.abs(achieved_goal - desired_goal).sum(axis=-1) <= 1  # one bit off counts
            return np.where(near, 5.0, -2.0), near

    agent = GoalDQN(8, 16, 4, env=BitFlipEnv(4), seed=0)
    agent.set(HER=True, pool_size=50, batch=8, seed=0)
    r, d = agent.her_reward_done(np.array([[1, 0, 1, 0], [1, 1, 1, 1]], np.float32),
                                 np.array([[1, 0, 1, 1], [0, 0, 1, 1]], np.float32))
    np.testing.assert_array_equal(r, [5.0, -2.0])
    np.testing.assert_array_equal(d, [1.0, 0.0])
    buf = agent.make_buffer()
    env = agent.env
    obs, _ = env.reset(seed=0)
    for i in range(4):
        nxt, reward, term, trunc, _ = env.step(i)
        buf.add_step(obs["observation"], obs["desired_goal"], nxt["achieved_goal"], i,
                     nxt["observation"], reward, float(term))
        obs = nxt
        if term or trunc:
            break
    buf.end_episode()
    batch = buf.sample(40)
    n_her = buf.n_relabelled(40)
    assert set(np.unique(batch.reward[:n_her])) <= {5.0, -2.0}
    assert set(np.unique(batch.reward[n_her:])) <= {0.0, -1.0}
