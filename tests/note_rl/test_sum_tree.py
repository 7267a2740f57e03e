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
