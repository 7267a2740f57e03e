import numpy as np
import pytest

from note_rl.buffers import SumTree


def test_totals_and_leaves() -> None:
    tree = SumTree(5)  # padded to 8 leaves
    tree.update(np.arange(5), np.array([1.0, 2.0, 3.0, 4.0, 0.0]))
    assert tree.total() == pytest.approx(10.0)
    tree.update(np.array([1, 1]), np.array([5.0, 7.0]))  # duplicates: last write wins
    assert tree.get(1) == pytest.approx(7.0)
    assert tree.total() == pytest.approx(15.0)
    assert tree.tree[2] == pytest.approx(1 + 7 + 3 + 4)  # left half of the root


def test_find_prefix_intervals() -> None:
    tree = SumTree(4)
    tree.update(np.arange(4), np.array([1.0, 0.0, 2.0, 1.0]))
    # prefix intervals: [0,1) -> 0, (empty) -> 1, [1,3) -> 2, [3,4) -> 3
    values = np.array([0.0, 0.99, 1.0, 2.5, 2.999, 3.0, 3.9])
    assert tree.find(values).tolist() == [0, 0, 2, 2, 2, 3, 3]


def test_sampling_proportions() -> None:
    tree = SumTree(6)
    p = np.array([1.0, 2.0, 3.0, 4.0, 0.0, 10.0])
    tree.update(np.arange(6), p)
    rng = np.random.default_rng(0)
    draws = np.concatenate([tree.sample(64, rng) for _ in range(2000)])
    freq = np.bincount(draws, minlength=6) / len(draws)
    np.testing.assert_allclose(freq, p / p.sum(), atol=0.005)


def test_rebuild_matches_updates() -> None:
    rng = np.random.default_rng(1)
    p = rng.random(37)
    a, b = SumTree(37), SumTree(37)
    a.update(np.arange(37), p)
    b.rebuild(p)
    np.testing.assert_allclose(a.tree, b.tree)


def test_deep_tree_find_matches_prefix_sums() -> None:
    # deeper than TOP_LEVELS, so find() uses both the wholesale top and the level-by-level descent
    rng = np.random.default_rng(2)
    n = 5000
    p = rng.random(n) * (rng.random(n) < 0.7)  # about 30% empty items
    tree = SumTree(n)
    tree.update(np.arange(n), p)
    assert tree.depth > tree.top
    values = rng.random(4000) * p.sum()
    expected = np.searchsorted(np.cumsum(p), values, side="right")
    np.testing.assert_array_equal(tree.find(values), expected)
    assert (p[tree.find(values)] > 0).all()


def test_batch_and_single_updates_keep_every_node_the_sum_of_its_children() -> None:
    rng = np.random.default_rng(3)
    tree = SumTree(3000)
    tree.update(np.arange(3000), rng.random(3000))
    for _ in range(20):
        tree.update(rng.integers(0, 3000, 64), rng.random(64))  # duplicates included
        tree.update(int(rng.integers(0, 3000)), float(rng.random()))
    inner = np.arange(1, tree.size)
    np.testing.assert_allclose(tree.tree[inner], tree.tree[2 * inner] + tree.tree[2 * inner + 1])


def _check_against_reference(tree: SumTree, ref: np.ndarray, rng: np.random.Generator) -> None:
    """Leaves, total, the node invariant and find() against a plain array of priorities."""
    np.testing.assert_array_equal(tree.get(np.arange(len(ref))), ref)
    assert tree.total() == pytest.approx(ref.sum())
    inner = np.arange(1, tree.size)
    np.testing.assert_array_equal(tree.tree[inner], tree.tree[2 * inner] + tree.tree[2 * inner + 1])
    values = rng.random(2000) * ref.sum()
    found = tree.find(values)
    np.testing.assert_array_equal(found, np.searchsorted(np.cumsum(ref), values, side="right"))
    assert (ref[found] > 0).all()  # empty items are never chosen


@pytest.mark.parametrize("capacity", [1, 2, 3, 17, 1000, 1025, 5000])
def test_capacities_that_are_not_powers_of_two_match_a_plain_array(capacity: int) -> None:
    rng = np.random.default_rng(capacity)
    tree = SumTree(capacity)
    ref = rng.random(capacity) * (rng.random(capacity) < 0.7)
    ref[0] = 1.0  # never an all-zero tree
    tree.update(np.arange(capacity), ref)
    _check_against_reference(tree, ref, rng)
    for _ in range(10):
        idx = rng.integers(0, capacity, 40)  # duplicates included: the last write wins
        pri = rng.random(40) * (rng.random(40) < 0.8)
        tree.update(idx, pri)
        for i, p in zip(idx, pri):
            ref[i] = p
        lone = int(rng.integers(0, capacity))
        tree.update(lone, 0.25)
        ref[lone] = 0.25
        _check_against_reference(tree, ref, rng)
    assert tree.sample(64, rng).max() < capacity


def test_duplicate_indices_in_a_deep_tree_last_write_wins() -> None:
    tree = SumTree(5000)  # deeper than TOP_LEVELS: both the per-level part and the top are used
    tree.update(np.array([7, 4000, 7, 7, 4000]), np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    assert tree.get(np.array([7, 4000])).tolist() == [4.0, 5.0]
    assert tree.total() == 9.0
    assert tree.find(np.array([0.0, 3.99, 4.0, 8.99])).tolist() == [7, 7, 4000, 4000]


def test_sampling_proportions_in_a_deep_tree() -> None:
    tree = SumTree(3000)
    items = np.array([0, 1, 1023, 1024, 2047, 2999])
    p = np.array([1.0, 0.0, 2.0, 3.0, 0.0, 4.0])
    tree.update(items, p)
    assert tree.depth > tree.top
    rng = np.random.default_rng(0)
    draws = np.concatenate([tree.sample(64, rng) for _ in range(2000)])
    assert set(np.unique(draws)) <= {0, 1023, 1024, 2999}
    freq = np.array([(draws == i).mean() for i in items])
    np.testing.assert_allclose(freq, p / p.sum(), atol=0.005)


def test_capacity_one() -> None:
    tree = SumTree(1)
    tree.update(np.array([0, 0]), np.array([2.0, 3.0]))
    assert tree.total() == 3.0
    assert tree.find(np.array([0.0, 2.9])).tolist() == [0, 0]
    assert tree.find(1.5) == 0
    assert tree.sample(8, np.random.default_rng(0)).tolist() == [0] * 8


def test_array_copied_in_place_round_trips() -> None:
    # what a checkpoint does: save `tree.tree`, write it into a fresh tree's array
    rng = np.random.default_rng(4)
    a = SumTree(3000)
    a.update(np.arange(3000), rng.random(3000))
    a.update(rng.integers(0, 3000, 256), rng.random(256))  # batch update right before saving
    saved = a.tree.copy()
    b = SumTree(3000)
    b.tree[:] = saved
    np.testing.assert_array_equal(b.tree, a.tree)
    assert b.total() == a.total()
    np.testing.assert_array_equal(b.sample(256, np.random.default_rng(1)),
                                  a.sample(256, np.random.default_rng(1)))


def test_prioritized_is_weights_and_empty_buffer() -> None:
    from note_rl.buffers import PrioritizedReplayBuffer

    buf = PrioritizedReplayBuffer(3000, alpha=0.6, beta=0.4, seed=0)
    with pytest.raises(ValueError, match="empty replay buffer"):
        buf.sample(4)
    n = 2500
    buf.add_batch(np.zeros((n, 2), np.float32), np.zeros(n, np.int64), np.zeros((n, 2), np.float32),
                  np.zeros(n, np.float32), np.zeros(n, np.float32))
    buf.update_priorities(np.arange(n), np.random.default_rng(5).random(n) * 3)
    batch = buf.sample(256)
    p = buf.tree.get(batch.indices) / buf.tree.total()
    w = (n * p) ** -0.4
    np.testing.assert_allclose(batch.weights, w / w.max(), rtol=1e-6)
