"""``train(processes_pr=N)`` / ``train(processes_her=N)``: mini-batches drawn by sampler processes
over shared memory (note_rl.buffers.parallel_sampling), checked against the single-process
samplers (same slots for prioritized replay, same distributions for HER, rows as stored), for
shared storage that stays shared (priority updates, inserts, re-allocations), for blocks that
are unlinked on close, and end to end through ``train()``.

No framework is imported at module level: the HER workers import this module to unpickle
:class:`_Owner.reward_done_func`.
"""

import os
import pickle
import types

import gymnasium as gym
import numpy as np
import pytest

from note_rl.buffers import HerReplayBuffer, PrioritizedReplayBuffer
from note_rl.buffers.parallel_sampling import (AgentRewardDone, EnvRewardDone, ParallelSampler,
                                               SamplerError, worker_reward_fn)
from note_rl.core.base import RLBase
from note_rl.goal_envs import PointReachEnv  # also registers note_rl/PointReach-v0

FRAMEWORKS = ("torch", "tensorflow", "keras", "jax")


def _gone(names: list[str]) -> bool:
    """No block of these names is left (checked on Linux, where they live in /dev/shm)."""
    return not any(os.path.exists(os.path.join("/dev/shm", n)) for n in names)


def _fill_pr(buf: PrioritizedReplayBuffer, n: int, start: int = 0) -> None:
    """``n`` items whose state is ``[k, -k]`` (k = start, start + 1, ...) so rows are recognisable."""
    k = np.arange(start, start + n, dtype=np.float32)
    buf.add_batch(np.stack([k, -k], 1), (k % 2).astype(np.int64), np.stack([k + 0.5, k], 1), k / 10,
                  (k % 3 == 0).astype(np.float32))


def _assert_rows(buf, batch) -> None:
    for name in ("state", "action", "next_state", "reward", "done"):
        np.testing.assert_array_equal(getattr(batch, name), buf.data[name][batch.indices])


# -- prioritized replay ------------------------------------------------------------------------
def test_pr_draws_the_single_process_slots_with_the_right_frequencies() -> None:
    alpha, td = 0.7, np.array([1.0, 2.0, 3.0, 4.0])
    one, two = (PrioritizedReplayBuffer(8, alpha=alpha, beta=0.4, eps=0.0, seed=3) for _ in range(2))
    for buf in (one, two):
        _fill_pr(buf, 4)
        buf.update_priorities(np.arange(4), td)  # hand-set priorities td ** alpha
    counts = np.zeros(8)
    with ParallelSampler(two, 2) as sampler:
        assert sampler.worker_modules(FRAMEWORKS) == [[], []]  # workers stay framework-free
        for _ in range(1000):
            single, parallel = one.sample(48), sampler.sample(48)
            np.testing.assert_array_equal(parallel.indices, single.indices)  # same generator, same slots
            np.testing.assert_array_equal(parallel.weights, single.weights)
            _assert_rows(two, parallel)
            np.add.at(counts, parallel.indices, 1)
        names = sampler.block_names
        assert len(names) == 6  # five fields and the tree
    expected = td ** alpha / np.sum(td ** alpha)
    np.testing.assert_allclose(counts[:4] / counts.sum(), expected, atol=0.005)
    assert counts[4:].sum() == 0
    assert _gone(names)


def test_pr_workers_see_priority_updates_inserts_and_reallocated_arrays() -> None:
    buf = PrioritizedReplayBuffer(64, alpha=1.0, eps=1e-9, n_segments=2, seed=0)  # pool layout
    _fill_pr(buf, 10, 0)
    buf.add_batch(*(np.asarray(v)[:6] for v in (np.ones((6, 2)), np.ones(6, np.int64), np.ones((6, 2)),
                                                 np.ones(6), np.zeros(6))), segment=1)
    sampler = ParallelSampler(buf, 2)
    names: list[str] = []
    try:
        first = sampler.sample(64)
        _assert_rows(buf, first)
        assert len(np.unique(first.indices)) > 8
        names += sampler.block_names
        # priorities written by the training process are what the workers descend next
        slots = buf.valid_slots()
        buf.update_priorities(slots, np.where(slots == 3, 1.0, 1e-6))
        assert (sampler.sample(64).indices == 3).mean() > 0.9
        # new items (written into the shared ring, entering at the largest |TD|) are drawn too
        _fill_pr(buf, 5, 100)
        new = sampler.sample(256)
        _assert_rows(buf, new)
        assert {100.0, 104.0} <= set(new.state[:, 0].tolist())
        assert sampler.sample(1).indices.shape == (1,)  # fewer items than workers: one chunk
        # a restored checkpoint replaces the data arrays (shared again, the old blocks unlinked)
        # and writes the tree in place (its block stays)
        other = PrioritizedReplayBuffer(64, alpha=1.0, n_segments=2, seed=1)
        _fill_pr(other, 20, 500)
        meta, arrays = other.state_dict()
        buf.load_state_dict(meta, {k: np.array(v) for k, v in arrays.items()})
        restored = sampler.sample(128)
        kept = set(sampler.block_names) & set(names)
        assert len(kept) == 1 and len(sampler.block_names) == 6
        assert _gone([n for n in names if n not in kept])
        names += sampler.block_names
        _assert_rows(buf, restored)
        assert restored.state[:, 0].min() >= 500
    finally:
        sampler.close()
    assert _gone(names)
    assert buf.data["state"].base is None and buf.tree._tree.base is None  # private copies again
    _assert_rows(buf, buf.sample(16))  # and the buffer works on its own
    with pytest.raises(SamplerError, match="closed"):
        sampler.sample(4)


def test_a_worker_that_dies_is_reported_and_nothing_is_leaked() -> None:
    buf = PrioritizedReplayBuffer(16, seed=0)
    _fill_pr(buf, 16)
    sampler = ParallelSampler(buf, 2)
    sampler.sample(8)
    names = sampler.block_names
    sampler.procs[1].kill()
    sampler.procs[1].join()
    with pytest.raises(SamplerError, match=r"processes_pr worker 1 died"):
        sampler.sample(8)
    assert sampler.closed and _gone(names)
    assert buf.data["state"].base is None


def test_a_failed_re_share_closes_the_sampler_without_leaking(monkeypatch) -> None:
    from note_rl.buffers import parallel_sampling

    buf = PrioritizedReplayBuffer(16, seed=0)
    _fill_pr(buf, 16)
    sampler = ParallelSampler(buf, 2)
    sampler.sample(8)
    names = sampler.block_names
    share, calls = parallel_sampling._SharedArrays.share, []

    def failing_share(self, name, array):  # the second new block fails (as with /dev/shm full)
        calls.append(name)
        if len(calls) == 2:
            raise OSError("no space left on device")
        return share(self, name, array)

    monkeypatch.setattr(parallel_sampling._SharedArrays, "share", failing_share)
    meta, arrays = buf.state_dict()
    buf.load_state_dict(meta, {k: np.array(v) for k, v in arrays.items()})  # new data arrays
    with pytest.raises(OSError, match="no space"):
        sampler.sample(8)
    assert sampler.closed and _gone(names) and not sampler.block_names
    assert buf.data["state"].base is None
    _assert_rows(buf, buf.sample(8))


# -- HER ---------------------------------------------------------------------------------------
class _Owner:
    """Stands in for an agent whose ``reward_done_func`` reads a number from ``self``."""

    tol = 1.5  # a class attribute: the workers' stand-in self has it too

    def __init__(self) -> None:
        self.bonus = 2.0
        self.env = PointReachEnv()  # not shipped: the agent's own rule wins

    def reward_done_func(self, achieved, desired):
        near = np.abs(achieved - desired).sum(axis=-1) <= self.tol
        return np.where(near, self.bonus, -1.0), near


def _her_buffer(seed: int) -> HerReplayBuffer:
    """48 episodes of 3-8 steps in a 64-slot ring (so it wraps); step t of the ring's history has
    obs ``[t, 0]`` and achieved goal ``[t, t % 4]`` (its slot is recoverable from a goal)."""
    owner = _Owner()
    buf = HerReplayBuffer(64, types.MethodType(RLBase.her_reward_done, owner), her_k=4, seed=seed)
    rng, t = np.random.default_rng(0), 0
    for _ in range(48):
        for _ in range(int(rng.integers(3, 9))):
            buf.add_step([t, 0.0], [-1.0, -1.0], [t, t % 4], [t, 1.0], [t + 1, 0.0], -1.0, 0.0)
            t += 1
        buf.end_episode()
    return buf


def _check_her(buf: HerReplayBuffer, batch, counts: np.ndarray, jumps: np.ndarray) -> None:
    """Rows match storage; relabelled goals come from the item's own episode future, with the
    reward function's reward; tallies slots, and future steps (``jumps[offset, j]``: the item was
    ``offset`` steps from its episode's end and got the goal of ``j`` steps later)."""
    d, idx, n_her = buf.data, batch.indices, buf.n_relabelled(len(batch.indices))
    np.testing.assert_array_equal(batch.state[:, :2], d["obs"][idx])
    np.testing.assert_array_equal(batch.next_state[:, :2], d["next_obs"][idx])
    np.testing.assert_array_equal(batch.action, d["action"][idx])
    goal = batch.state[:, 2:]
    np.testing.assert_array_equal(batch.next_state[:, 2:], goal)
    np.testing.assert_array_equal(goal[n_her:], d["goal"][idx[n_her:]])
    np.testing.assert_array_equal(batch.reward[n_her:], d["reward"][idx[n_her:]])
    future = goal[:n_her, 0].astype(np.int64) % buf.capacity  # achieved goal [t, .] sits in slot t % 64
    jump = (future - idx[:n_her]) % buf.capacity
    assert np.all(jump <= d["offset"][idx[:n_her]])  # within the rest of the item's episode
    reward, done = buf.reward_fn(d["achieved"][idx[:n_her]], goal[:n_her])
    np.testing.assert_array_equal(batch.reward[:n_her], reward)
    np.testing.assert_array_equal(batch.done[:n_her], done)
    np.add.at(counts, idx, 1)
    np.add.at(jumps, (d["offset"][idx[:n_her]], jump), 1)


def _chi2(observed: np.ndarray) -> float:
    expected = observed.sum() / len(observed)
    return float(((observed - expected) ** 2 / expected).sum())


def test_her_rows_relabelling_and_distributions_match_the_single_process_sampler() -> None:
    one, two, three = _her_buffer(5), _her_buffer(5), _her_buffer(5)
    rule = worker_reward_fn(two)  # the agent itself is not shipped: a stand-in with its numbers
    assert isinstance(rule, AgentRewardDone) and vars(rule.owner) == {"tol": 1.5, "bonus": 2.0}
    tallies = {name: (np.zeros(64), np.zeros((8, 8))) for name in ("single", "parallel")}
    with ParallelSampler(two, 2) as sampler, ParallelSampler(three, 2) as twin:
        assert sampler.worker_modules(FRAMEWORKS) == [[], []]
        for _ in range(300):
            parallel = sampler.sample(40)
            _check_her(two, parallel, *tallies["parallel"])
            _check_her(one, one.sample(40), *tallies["single"])
            repeat = twin.sample(40)  # same seed, same worker generators: the same batch
            for a, b in zip(parallel[:6], repeat[:6]):
                np.testing.assert_array_equal(a, b)
        names = sampler.block_names + twin.block_names
    assert _gone(names) and two.data["obs"].base is None
    for counts, jumps in tallies.values():
        assert _chi2(counts) < 120  # uniform over 64 slots (63 dof: mean 63, sd 11)
        # j uniform over 0..offset: a chi-square over each offset's row (offsets 0..7 occur)
        assert (jumps.sum(axis=1)[:7] > 100).all() and np.triu(jumps, 1).sum() == 0
        dof = sum(k for k in range(8) if jumps[k].sum())
        assert sum(_chi2(jumps[k, :k + 1]) for k in range(1, 8) if jumps[k].sum()) < dof + 6 * np.sqrt(2 * dof)
    # the relabelled rewards really came from the agent's rule (2.0 near the goal), in both
    assert {2.0, -1.0} <= set(np.unique(parallel.reward[:32]).tolist())


def test_her_reward_function_that_cannot_be_pickled_is_refused_clearly() -> None:
    buf = HerReplayBuffer(16, lambda a, g: (np.zeros(len(a)), np.zeros(len(a))), seed=0)
    with pytest.raises(ValueError, match=r"^train\(processes_her=2\): the HER reward function cannot be pickled"):
        ParallelSampler(buf, 2)
    env_rule = worker_reward_fn(HerReplayBuffer(16, types.MethodType(RLBase.her_reward_done,
                                                                     types.SimpleNamespace(env=PointReachEnv())), seed=0))
    assert isinstance(env_rule, EnvRewardDone)  # no reward_done_func: the env's compute_reward
    r, d = pickle.loads(pickle.dumps(env_rule))(np.zeros((2, 2)), np.array([[0.0, 0.01], [1.0, 1.0]]))
    assert r.tolist() == [0.0, -1.0] and d.tolist() == [0.0, 0.0]


# -- train() end to end ------------------------------------------------------------------------
@pytest.fixture
def closed_blocks(monkeypatch):
    """Names of the blocks of every sampler closed during the test (torch on one thread: on a
    busy 2-core machine a second one stalls every operation at its barrier, 5x slower runs)."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    names: list[str] = []
    close = ParallelSampler.close

    def recording_close(self):
        names.extend(self.block_names)
        close(self)

    monkeypatch.setattr(ParallelSampler, "close", recording_close)
    yield names
    torch.set_num_threads(threads)


def _cartpole_dqn(PR: bool = True):
    import note_rl.agents.torch as mod
    from note_rl.policy import EpsGreedyQPolicy

    agent = mod.DQN(4, 16, 2, env=gym.make("CartPole-v1"), seed=0)
    agent.set(policy=EpsGreedyQPolicy(0.3), pool_size=2000, batch=32, learning_starts=50,
              update_steps=20, PR=PR, seed=0)
    return agent


def _torch_train(agent, episodes, **kwargs):
    import torch

    return agent.train(torch.optim.Adam(agent.param, lr=1e-3), episodes, p=0, **kwargs)


def test_dqn_trains_with_processes_pr(closed_blocks) -> None:
    runs = {}
    for n in (None, 2):
        agent = _cartpole_dqn()
        _torch_train(agent, 6, processes_pr=n)
        assert agent.batch_counter > 0 and np.isfinite(agent.loss_list[-1])
        assert agent.buffer.data["state"].base is None  # the buffer got its arrays back
        runs[n] = agent
    assert len(closed_blocks) == 6 and _gone(closed_blocks)
    # the workers drew the very slots one process draws: the seeded runs are the same run
    assert runs[2].batch_counter == runs[None].batch_counter
    np.testing.assert_allclose(np.array(runs[2].loss_list, float), np.array(runs[None].loss_list, float),
                               rtol=1e-5)


def test_dqn_pool_network_with_processes_pr(closed_blocks) -> None:
    agent = _cartpole_dqn()
    _torch_train(agent, 4, pool_network=True, processes=2, num_store=3, processes_pr=2)
    assert agent.batch_counter > 0 and agent.buffer.n_segments == 2
    assert closed_blocks and _gone(closed_blocks)


def test_processes_pr_without_pr_warns_that_it_has_no_effect(closed_blocks) -> None:
    agent = _cartpole_dqn(PR=False)
    with pytest.warns(UserWarning, match=r"train\(processes_pr=2\) has no effect.*not PR=True") as record:
        _torch_train(agent, 8, processes_pr=2)
    assert len([w for w in record if "processes_pr" in str(w.message)]) == 1  # once
    assert agent.batch_counter > 0 and not closed_blocks  # no sampler was started


def _ddpg_her(seed: int = 0):
    import note_rl.agents.torch as mod
    from note_rl.noise import GaussianWhiteNoiseProcess

    agent = mod.DDPG(hidden_size=[16, 16], tau=0.05, gamma=0.95, env="note_rl/PointReach-v0", seed=seed)
    agent.set(noise=GaussianWhiteNoiseProcess(sigma=0.2, size=2), pool_size=100_000, batch=64,
              learning_starts=300, HER=True, her_k=4, seed=seed)
    return agent


def test_ddpg_her_trains_with_processes_her(closed_blocks) -> None:
    import torch

    for n in (None, 2):
        agent = _ddpg_her()
        agent.fit([torch.optim.Adam(p, lr=1e-3) for p in agent.param], None, steps=500, p=0,
                  processes_her=n)
        assert agent.step_counter == 500 and agent.batch_counter == 201
        assert all(np.isfinite(v) for v in agent.loss_list if v is not None)
        assert agent.buffer.data["obs"].base is None
    assert len(closed_blocks) == 8 and _gone(closed_blocks)  # the eight HER fields


def test_processes_her_with_a_reward_rule_that_cannot_be_pickled(closed_blocks) -> None:
    import torch

    agent = _ddpg_her()
    agent.reward_done_func = lambda achieved, desired: (np.zeros(len(achieved)), np.zeros(len(achieved)))
    with pytest.raises(ValueError, match=r"train\(processes_her=2\).*cannot be pickled"):
        agent.fit([torch.optim.Adam(p, lr=1e-3) for p in agent.param], None, steps=400, p=0,
                  processes_her=2)
