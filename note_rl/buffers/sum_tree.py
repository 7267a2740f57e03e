"""Array sum tree for proportional sampling in O(log n) (Schaul et al. 2015, appendix B.2.1).

Layout: a complete binary tree in one float64 array of length ``2 * size`` where ``size`` is the
capacity rounded up to a power of two.  Node ``1`` is the root, node ``i`` has children ``2i`` and
``2i + 1``, and leaf ``j`` (item ``j``) sits at ``size + j``.  Both updates and lookups are
vectorised over a batch: a few numpy operations per tree level, never a Python loop per item.

Speed: a batch costs a handful of numpy calls per level, and call overhead, not arithmetic, is what
a 256-item batch pays for.  So the top ``TOP_LEVELS`` levels (at most 1,024 nodes) are handled
wholesale: :meth:`SumTree.find` locates each value among the nodes of level ``TOP_LEVELS`` with one
``cumsum`` + ``searchsorted`` and only descends level by level below it, and
:meth:`SumTree.update` re-sums the top levels with one slice operation per level.  A lone index
(one stored transition) walks up in plain Python, which is faster than numpy for one item.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SumTree", "TOP_LEVELS"]

#: levels below the root handled wholesale (level ``k`` has ``2**k`` nodes)
TOP_LEVELS = 10


class SumTree:
    """Sum tree over ``capacity`` non-negative priorities.

    :param capacity: number of leaves (items) the tree can hold
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"SumTree capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self.size = 1 << max(0, (self.capacity - 1).bit_length())
        self.depth = self.size.bit_length() - 1
        self.top = min(self.depth, TOP_LEVELS)
        self.tree = np.zeros(2 * self.size, dtype=np.float64)

    def total(self) -> float:
        """Sum of all priorities."""
        return float(self.tree[1])

    def get(self, indices: np.ndarray | int) -> np.ndarray:
        """Priorities of the given items."""
        return self.tree[np.asarray(indices) + self.size]

    def update(self, indices: np.ndarray | int, priorities: np.ndarray | float) -> None:
        """Set the priorities of ``indices`` and refresh their ancestors (last write wins)."""
        idx = np.atleast_1d(np.asarray(indices, dtype=np.int64)) + self.size
        if len(idx) == 1:
            self._update_one(int(idx[0]), float(np.asarray(priorities).reshape(-1)[0]))
            return
        tree = self.tree
        tree[idx] = priorities
        for _ in range(self.depth - self.top):
            # duplicates are harmless: every copy of a parent gets the same freshly summed value
            idx >>= 1
            tree[idx] = tree[2 * idx] + tree[2 * idx + 1]
        self._sum_levels(1 << self.top)

    def _update_one(self, node: int, priority: float) -> None:
        tree = self.tree
        tree[node] = priority
        node >>= 1
        while node:
            tree[node] = tree[2 * node] + tree[2 * node + 1]
            node >>= 1

    def _sum_levels(self, lo: int) -> None:
        """Recompute every node above level ``lo`` (a power of two) from its children."""
        tree = self.tree
        while lo > 1:
            hi, lo = lo, lo >> 1
            tree[lo:hi] = tree[2 * lo : 2 * hi : 2] + tree[2 * lo + 1 : 2 * hi : 2]

    def rebuild(self, priorities: np.ndarray) -> None:
        """Replace every leaf at once (``priorities`` covers items ``0..len-1``; others get 0)."""
        self.tree[:] = 0.0
        self.tree[self.size : self.size + len(priorities)] = priorities
        self._sum_levels(self.size)

    def find(self, values: np.ndarray) -> np.ndarray:
        """For each ``v`` in ``[0, total)`` the item whose prefix-sum interval contains ``v``."""
        v = np.array(values, dtype=np.float64)  # a copy: reduced in place on the way down
        tree, first = self.tree, 1 << self.top
        # level `top` at once: node j holds v when prefix[j] <= v < prefix[j + 1] (so empty
        # nodes are never chosen, as in the descent below)
        prefix = np.concatenate(([0.0], np.cumsum(tree[first : 2 * first])))
        node = np.minimum(np.searchsorted(prefix, v, side="right") - 1, first - 1)
        v -= prefix[node]
        idx = node + first
        for _ in range(self.depth - self.top):
            idx <<= 1
            left = tree[idx]
            go_right = v >= left
            v -= left * go_right
            idx += go_right
        return np.minimum(idx - self.size, self.capacity - 1)

    def sample(self, batch: int, rng: np.random.Generator, n_valid: int | None = None) -> np.ndarray:
        """Stratified proportional sampling: one uniform draw in each of ``batch`` equal segments
        of the total mass.  ``n_valid`` clips results to the filled prefix (guards float rounding).
        """
        total = self.total()
        if total <= 0.0:
            raise ValueError("SumTree.sample: all priorities are zero")
        bounds = np.arange(batch, dtype=np.float64) * (total / batch)
        values = bounds + rng.random(batch) * (total / batch)
        items = self.find(np.minimum(values, np.nextafter(total, 0.0)))
        if n_valid is not None:
            items = np.minimum(items, n_valid - 1)
        return items
