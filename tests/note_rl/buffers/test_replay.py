"""Ring buffer, trimming, segments, prioritized replay, n-step and GAE against hand computations."""

import numpy as np
import pytest

from note_rl.buffers import NStepAccumulator, PrioritizedReplayBuffer, ReplayBuffer, compute_gae


def _fill(buf, values, segment=0):
    for v in values:
        buf.add(np.array([v, v], np.float32), v % 2, np.array([v + 1, v + 1], np.float32), float(v), 0.0, segment)


def _stored(buf, segment=0):
    return buf.data["reward"][buf.segment_slots(segment)].tolist()


def test_ring_wraps_around_fifo() -> None:
    buf = ReplayBuffer(4)
    _fill(buf, range(7))
    assert len(buf) == 4
    assert _stored(buf) == [3.0, 4.0, 5.0, 6.0]  # oldest first
    assert buf.data["action"].dtype == np.int64


def test_window_trimming_when_full() -> None:
    buf = ReplayBuffer(5, window_size=3)
    _fill(buf, range(6))  # the 6th insert drops the 3 oldest first
    assert _stored(buf) == [3.0, 4.0, 5.0]
    calls = []
    buf2 = ReplayBuffer(4, window_size=lambda: calls.append(1) or 2)
    _fill(buf2, range(6))
    assert _stored(buf2) == [2.0, 3.0, 4.0, 5.0] and len(calls) == 1


def test_clearing_freq_drops_every_n_inserts() -> None:
    buf = ReplayBuffer(100, clearing_freq=3, window_size_=2)
    _fill(buf, range(7))
    # after inserts 0,1,2 -> drop 2 oldest -> [2]; after 3,4,5 -> [2,3,4,5] minus 2 -> [4,5]; then 6
    assert _stored(buf) == [4.0, 5.0, 6.0]


def test_add_batch_across_wrap_and_drop_oldest() -> None:
    buf = ReplayBuffer(5)
    _fill(buf, range(3))
    n = 4
    buf.add_batch(np.zeros((n, 2), np.float32), np.zeros(n, np.int64), np.zeros((n, 2), np.float32),
                  np.arange(10, 14, dtype=np.float32), np.zeros(n, np.float32))
    assert _stored(buf) == [2.0, 10.0, 11.0, 12.0, 13.0]
    buf.drop_oldest(2)
    assert _stored(buf) == [11.0, 12.0, 13.0]


def test_segments_sample_the_union_uniformly() -> None:
    buf = ReplayBuffer(6, n_segments=2, seed=0)
    _fill(buf, [1, 2, 3], segment=0)
    _fill(buf, [7], segment=1)
    draws = buf.data["reward"][np.concatenate([buf.sample_slots(100) for _ in range(200)])]
    freq = {v: np.mean(draws == v) for v in (1, 2, 3, 7)}
    for v in freq:
        assert freq[v] == pytest.approx(0.25, abs=0.02)
    _fill(buf, [8, 9, 10, 11], segment=1)  # the 3-item segment wraps on its own
    assert _stored(buf, 1) == [9.0, 10.0, 11.0] and _stored(buf, 0) == [1.0, 2.0, 3.0]


def test_priorities_plain_and_ppo() -> None:
    buf = PrioritizedReplayBuffer(8, alpha=0.5, initial_TD=4.0, eps=0.0)
    _fill(buf, range(3))
    np.testing.assert_allclose(buf.weights(), [2.0, 2.0, 2.0])  # 4 ** 0.5, new items at the max
    buf.update_priorities(np.array([0, 1]), np.array([-9.0, 1.0]))
    np.testing.assert_allclose(buf.weights(), [3.0, 1.0, 2.0])
    _fill(buf, [3])  # running max |TD| is now 9
    assert buf.weights()[-1] == pytest.approx(3.0)

    ppo = PrioritizedReplayBuffer(8, alpha=1.0, lambda_=0.25, PPO=True, eps=0.0)
    _fill(ppo, range(2))
    ppo.update_priorities(np.array([0, 1]), np.array([2.0, -4.0]), np.array([1.5, 0.2]))
    # 0.25*|TD| + 0.75*|ratio-1|
    np.testing.assert_allclose(ppo.weights(), [0.25 * 2 + 0.75 * 0.5, 0.25 * 4 + 0.75 * 0.8])


def test_prioritized_sampling_and_is_weights() -> None:
    buf = PrioritizedReplayBuffer(4, alpha=1.0, eps=0.0, beta=0.5, seed=0)
    _fill(buf, range(4))
    buf.update_priorities(np.arange(4), np.array([1.0, 1.0, 2.0, 4.0]))
    draws = np.concatenate([buf.sample_slots(50) for _ in range(400)])
    np.testing.assert_allclose(np.bincount(draws, minlength=4) / len(draws), [0.125, 0.125, 0.25, 0.5], atol=0.01)
    batch = buf.sample(4)
    p = buf.tree.get(batch.indices) / 8.0
    w = (4 * p) ** -0.5
    np.testing.assert_allclose(batch.weights, w / w.max(), rtol=1e-6)


def test_prioritized_drop_zeroes_priorities() -> None:
    buf = PrioritizedReplayBuffer(6, eps=0.0, alpha=1.0)
    _fill(buf, range(4))
    buf.drop_oldest(3)
    assert buf.tree.total() == pytest.approx(7.0)
    assert set(buf.sample_slots(100).tolist()) == {3}


def test_set_alpha_refreshes_tree() -> None:
    buf = PrioritizedReplayBuffer(4, alpha=1.0, eps=0.0)
    _fill(buf, range(2))
    buf.update_priorities(np.array([0, 1]), np.array([4.0, 9.0]))
    buf.set_alpha(0.5)
    np.testing.assert_allclose(buf.weights(), [2.0, 3.0])


def test_nstep_returns_by_hand() -> None:
    acc = NStepAccumulator(3, gamma=0.5)
    out = []
    for t, r in enumerate([1.0, 2.0, 4.0, 8.0]):
        out += acc.push(f"s{t}", t, r, f"s{t + 1}", terminated=(t == 3), episode_end=(t == 3))
    # windows: s0 -> 1 + .5*2 + .25*4 = 3 ; s1 -> 2 + 2 + 2 = 6 ; then at the terminal step the
    # remainders s2 -> 4 + 4 = 8 and s3 -> 8, all ending in s4 with done=1
    assert [(s, a, s2, r, d) for s, a, s2, r, d in out] == [
        ("s0", 0, "s3", 3.0, 0.0), ("s1", 1, "s4", 6.0, 1.0), ("s2", 2, "s4", 8.0, 1.0),
        ("s3", 3, "s4", 8.0, 1.0)]


def test_gae_by_hand() -> None:
    r = np.array([1.0, 1.0, 1.0])
    v = np.array([0.5, 0.4, 0.3])
    nv = np.array([0.4, 0.3, 0.2])
    term = np.array([0.0, 1.0, 0.0])
    end = np.array([0.0, 1.0, 0.0])
    adv, ret = compute_gae(r, v, nv, term, end, gamma=0.9, lam=0.5)
    d2 = 1 + 0.9 * 0.2 - 0.3
    d1 = 1 + 0 - 0.4  # terminal: no bootstrap, recursion stops
    d0 = 1 + 0.9 * 0.4 - 0.5
    expected = np.array([d0 + 0.45 * d1, d1, d2])
    np.testing.assert_allclose(adv, expected, rtol=1e-6)
    np.testing.assert_allclose(ret, expected + v, rtol=1e-6)


def test_single_adds_store_exactly_what_add_batch_stores() -> None:
    rng = np.random.default_rng(5)
    n = 30
    s, s2 = rng.normal(size=(n, 4)).astype(np.float32), rng.normal(size=(n, 4)).astype(np.float32)
    a, r, d = rng.integers(0, 3, n), rng.normal(size=n), (rng.random(n) < 0.3).astype(float)
    for cls in (ReplayBuffer, PrioritizedReplayBuffer):
        one, batch = cls(20, n_segments=2), cls(20, n_segments=2)  # segments of 10: wraps and drops
        for i in range(n):
            slot = one.add(s[i], int(a[i]), s2[i], float(r[i]), float(d[i]), segment=i % 2)
            assert slot.shape == (1,)
        for seg in (0, 1):
            batch.add_batch(s[seg::2], a[seg::2], s2[seg::2], r[seg::2], d[seg::2], segment=seg)
        for name in one.data:
            np.testing.assert_array_equal(one.data[name], batch.data[name])
            assert one.data[name].dtype == batch.data[name].dtype
        assert one.sizes.tolist() == batch.sizes.tolist() and one.pos.tolist() == batch.pos.tolist()
        if cls is PrioritizedReplayBuffer:
            np.testing.assert_allclose(one.tree.tree, batch.tree.tree)


def test_nstep_truncated_episode_stores_only_full_windows() -> None:
    acc = NStepAccumulator(3, gamma=0.5)
    out = []
    for t, r in enumerate([1.0, 2.0, 4.0, 8.0]):  # time limit after the 4th step: truncated
        out += acc.push(f"s{t}", t, r, f"s{t + 1}", terminated=False, episode_end=(t == 3))
    # s0 -> 1 + .5*2 + .25*4 = 3 (ends in s3) ; s1 -> 2 + .5*4 + .25*8 = 6 (ends in s4); both not
    # done, so both bootstrap with gamma**3.  The remainders s2 (k=2) and s3 (k=1) would need
    # gamma**2 and gamma**1 and are not stored.
    assert out == [("s0", 0, "s3", 3.0, 0.0), ("s1", 1, "s4", 6.0, 0.0)]
    assert not acc.window  # nothing leaks into the next episode


def _rollout(T: int = 4, n_envs: int = 2) -> dict[str, np.ndarray]:
    """A rollout of ``T`` steps of ``n_envs`` envs: reward 1 per step, no episode ends, values 0."""
    n, shape = T * n_envs, (T, n_envs)
    zeros = np.zeros(shape, np.float32)
    return {"state": np.arange(n * 2, dtype=np.float32).reshape(T, n_envs, 2), "action": np.arange(n).reshape(shape),
            "log_prob": zeros, "value": zeros, "final_value": zeros, "reward": np.ones(shape, np.float32),
            "terminated": zeros.astype(bool), "episode_end": zeros.astype(bool),
            "last_value": np.zeros(n_envs, np.float32)}


@pytest.mark.parametrize("batch,per_epoch", [(None, 1), (8, 1), (100, 1), (4, 2), (3, 3)])
def test_rollout_epochs_of_minibatches(batch, per_epoch) -> None:
    """Each epoch passes over the whole rollout once; a mini-batch as large as the rollout is the
    same batch every epoch, in rollout order (a mean loss does not depend on the order), and its
    advantages are standardised with the unbiased std (SB3); smaller ones are shuffled."""
    from types import SimpleNamespace

    from note_rl.core.collect import train_on_rollout

    fields = _rollout()
    seen = []
    agent = SimpleNamespace(step_counter=0, gamma=1.0, lam=1.0, n_epochs=3, batch=batch,
                            normalize_advantage=True, stop_training=False)
    learner = SimpleNamespace(rollout_update=seen.append)
    train_on_rollout(agent, learner, SimpleNamespace(end_episode=None), fields, [], np.random.default_rng(0))
    assert agent.step_counter == 8 and len(seen) == 3 * per_epoch
    for epoch in range(3):
        states = np.concatenate([mb.state for mb in seen[epoch * per_epoch:(epoch + 1) * per_epoch]])
        assert sorted(states[:, 0].tolist()) == list(range(0, 16, 2))  # every sample once per epoch
    if per_epoch == 1:
        # GAE with gamma = lam = 1 and no ends: A = (steps left) * 1, the same in both envs
        adv = np.repeat([4.0, 3.0, 2.0, 1.0], 2)
        expected = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
        for mb in seen:
            assert mb.state[:, 0].tolist() == list(range(0, 16, 2))
            np.testing.assert_allclose(mb.advantage, expected, rtol=1e-6)
    else:
        orders = {tuple(np.concatenate([mb.state[:, 0] for mb in seen[e * per_epoch:(e + 1) * per_epoch]]))
                  for e in range(3)}
        assert len(orders) > 1  # reshuffled between epochs
