"""Frame-pool replay (note_rl.buffers.frames): the same samples as dense storage, each frame once."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from note_rl.buffers import NStepAccumulator, PrioritizedReplayBuffer, ReplayBuffer
from note_rl.buffers.frames import stack_layout
from note_rl.buffers.nstep import stack_transitions

from tests.note_rl.frame_envs import make_pixel_env, rollout


def _feed(buffers, steps, n=1, batch=False, segments=(0,)):
    """Store a trajectory in each buffer (one-step or n-step items, one by one or in batches)."""
    accs = [NStepAccumulator(n, 0.9) for _ in buffers]
    for t, (s, a, s2, r, term, end) in enumerate(steps):
        seg = segments[t % len(segments)]
        for buf, acc in zip(buffers, accs):
            if n == 1 and not batch:
                buf.add(s, a, s2, r, float(term), seg)
                continue
            ready = acc.push(s, a, r, s2, term, end)
            if ready:
                buf.add_batch(*stack_transitions(ready), segment=seg)


def _same(dense, framed, slots):
    a, b = dense.get(slots), framed.get(slots)
    for name in ("state", "action", "next_state", "reward", "done"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        np.testing.assert_array_equal(x, y, err_msg=name)


def test_stack_layout() -> None:
    assert stack_layout((4, 84, 84)) == 4 and stack_layout((4, 84, 84, 3)) == 4
    assert stack_layout((84, 84, 4)) is None and stack_layout((7, 7, 3)) is None
    assert stack_layout((84, 84)) is None


@pytest.mark.parametrize("padding", ["reset", "zero"])
def test_frame_stacked_env_samples_like_dense_storage(padding: str) -> None:
    steps = rollout(make_pixel_env(4, padding), 260, seed=1)  # ~10 episodes, 5 wraps of 50
    dense, framed = ReplayBuffer(50, seed=3, frames=False), ReplayBuffer(50, seed=3)
    _feed([dense, framed], steps)
    assert "state" in dense.data and framed.frame_store is not None and "state" not in framed.data
    assert framed.data["frames"].dtype == np.uint8
    _same(dense, framed, framed.valid_slots())
    for _ in range(5):
        slots = dense.sample_slots(32)
        np.testing.assert_array_equal(slots, framed.sample_slots(32))  # the same draws
        _same(dense, framed, slots)
        np.testing.assert_array_equal(dense.sample(16).next_state, framed.sample(16).next_state)
    # each step adds one frame; an episode start adds its distinct padding frames
    live = framed.frame_store.n_live
    assert live <= 50 + 4 + 2 * 4 * 3, live


def test_unstacked_images_keep_a_truncated_episodes_final_observation() -> None:
    steps = rollout(make_pixel_env(None, max_steps=15, channels=3), 120, seed=2)
    assert any(end and not term for *_, term, end in steps)  # truncations happened
    dense, framed = ReplayBuffer(40, frames=False), ReplayBuffer(40)
    _feed([dense, framed], steps)
    assert framed.data["state_idx"].shape == (40,)
    _same(dense, framed, framed.valid_slots())
    # obs stored once: next_state of step t is state of step t + 1 within an episode
    assert framed.frame_store.n_live <= 40 + 1 + 40 // 15 + 2


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(capacity=st.integers(3, 40), k=st.sampled_from([None, 2, 4]), padding=st.sampled_from(["reset", "zero"]),
       n=st.integers(1, 3), batch=st.booleans(), two_segments=st.booleans(), steps=st.integers(1, 120),
       window=st.sampled_from([None, 2]), seed=st.integers(0, 3))
def test_any_trajectory_samples_like_dense_storage(capacity, k, padding, n, batch, two_segments, steps, window,
                                                   seed) -> None:
    traj = rollout(make_pixel_env(k, padding, max_steps=12), steps, seed=seed)
    segs = 2 if two_segments else 1
    dense = ReplayBuffer(capacity, n_segments=segs, window_size=window, frames=False)
    framed = ReplayBuffer(capacity, n_segments=segs, window_size=window)
    _feed([dense, framed], traj, n=n, batch=batch, segments=tuple(range(segs)))
    if len(dense) == 0:
        return
    np.testing.assert_array_equal(dense.valid_slots(), framed.valid_slots())
    _same(dense, framed, dense.valid_slots())
    # the pool holds no more than the items can reference, and frees what nothing references
    store = framed.frame_store
    assert store.n_live <= 2 * (k or 1) * framed.capacity
    assert len(store.free) + store.n_live == len(store.refcount)


def test_prioritized_replay_and_nstep_on_frames() -> None:
    steps = rollout(make_pixel_env(4), 200, seed=4)
    kw = dict(alpha=0.6, beta=0.4, seed=5)
    dense, framed = PrioritizedReplayBuffer(64, frames=False, **kw), PrioritizedReplayBuffer(64, **kw)
    _feed([dense, framed], steps, n=3)
    assert framed.frame_store is not None
    rng = np.random.default_rng(0)
    for _ in range(4):
        a, b = dense.sample(32), framed.sample(32)
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_array_equal(a.weights, b.weights)
        _same(dense, framed, a.indices)
        td = rng.normal(size=32)
        dense.update_priorities(a.indices, td)
        framed.update_priorities(b.indices, td)


def test_checkpoint_round_trip() -> None:
    steps = rollout(make_pixel_env(4), 90, seed=6)
    framed = ReplayBuffer(30, seed=1)
    _feed([framed], steps[:70])
    meta, arrays = framed.state_dict()
    restored = ReplayBuffer(30)
    restored.load_state_dict(meta, arrays)
    assert restored.frame_store is not None and "frame_refcount" not in restored.data
    _feed([framed, restored], steps[70:])  # writing on after a restore frees and reuses alike
    _same(framed, restored, framed.valid_slots())
    # the same references (a restored store starts without its recent-frame map, so it may hold a
    # few more distinct frames until the items written before the restore are overwritten)
    a, b = framed.frame_store, restored.frame_store
    assert a.refcount.sum() == b.refcount.sum() == 2 * 4 * 30
    assert len(b.free) + b.n_live == len(b.refcount) and b.n_live <= a.n_live + 2 * 4


def test_selection() -> None:
    with pytest.raises(ValueError, match="frames"):
        ReplayBuffer(4, frames="yes")
    floats = ReplayBuffer(4)
    floats.add(np.zeros((4, 8, 8), np.float32), 0, np.ones((4, 8, 8), np.float32), 0.0, 0.0)
    assert floats.frame_store is None  # auto: uint8 images only
    forced = ReplayBuffer(4, frames=True)
    forced.add(np.zeros((4, 8, 8), np.float32), 0, np.ones((4, 8, 8), np.float32), 0.0, 0.0)
    assert forced.frame_store is not None
    vectors = ReplayBuffer(4, frames=True)
    vectors.add(np.zeros(3, np.uint8), 0, np.ones(3, np.uint8), 0.0, 0.0)
    assert vectors.frame_store is None  # one axis per observation: not an image


def test_processes_pr_sampler_reads_the_frame_pool() -> None:
    """``train(processes_pr=N)``: the workers get the pool and index arrays through shared memory
    (they are ``buffer.data`` entries) and rebuild the same stacks, also after the pool grows."""
    from note_rl.buffers.parallel_sampling import ParallelSampler

    steps = rollout(make_pixel_env(4), 120, seed=7)
    one, two = PrioritizedReplayBuffer(64, seed=9), PrioritizedReplayBuffer(64, seed=9)
    _feed([one, two], steps[:60])
    with ParallelSampler(two, 2) as sampler:
        for part in (steps[60:], None):
            for _ in range(3):
                single, parallel = one.sample(16), sampler.sample(16)
                np.testing.assert_array_equal(parallel.indices, single.indices)
                np.testing.assert_array_equal(parallel.state, single.state)
                np.testing.assert_array_equal(parallel.next_state, single.next_state)
            if part:
                _feed([one, two], part)
                for buf in (one, two):
                    buf.frame_store._grow()  # a replaced pool array is shared again
