"""Array sum tree for proportional sampling in O(log n) (Schaul et al. 2015, appendix B.2.1).

Layout: a complete binary tree in one float64 array of length ``2 * size`` where ``size`` is the
capacity rounded up to a power of two.  Node ``1`` is the root, node ``i`` has children ``2i`` and
``2i + 1``, and leaf ``j`` (item ``j``) sits at ``size + j``.  Every inner node is
``tree[2i] + tree[2i + 1]`` (float64, summed in that order); :attr:`SumTree.tree` is that array,
always up to date when read, which checkpoints save and restore in place.  Both updates and lookups
are vectorised over a batch: a few numpy calls per tree level, never a Python loop per item.

Speed: with a 256-item batch, numpy's per-call overhead (~1-3 us here), not arithmetic, is the
cost, so the code minimises calls per level:

* The top ``TOP_LEVELS`` levels (at most 1,024 nodes at level ``top``) are handled wholesale.
  :meth:`SumTree.find` locates each value among the nodes of level ``top`` with one
  ``add.accumulate`` (their prefix sums) and one ``searchsorted``, then descends level by level
  below it (six in-place numpy calls per level, five at the leaves).  :meth:`SumTree.sample`
  stratifies over the last of those prefix sums, so sampling never reads the nodes above level
  ``top``.
* A batch :meth:`SumTree.update` therefore stops at level ``top`` and only marks the nodes above
  it stale; they are re-summed (one slice operation per level) the next time :meth:`total` or
  :attr:`tree` is read, so a sample/update loop never pays for them.  Below the top it computes
  every ancestor index with one broadcast shift, then per level gathers both children of each
  ancestor in one call through a ``complex128`` view of the array (real part = left child,
  imaginary part = right child), adds and scatters.
  Duplicated indices are harmless: every copy of a node gets the same freshly summed value.
* A lone index (one stored transition) walks up in plain Python, which is faster than numpy for
  one item.
"""

from __future__ import annotations

import math

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
        self._tree = np.zeros(2 * self.size, dtype=np.float64)
        self._stale_top = False  # nodes above level `top` not yet re-summed after an update
        # scratch: [0, inclusive prefix sums of level `top`]
        self._prefix = np.zeros((1 << self.top) + 1, dtype=np.float64)
        # shifts from a leaf to its ancestors below level `top`, as a column for broadcasting
        self._shifts = np.arange(1, self.depth - self.top + 1, dtype=np.int64)[:, None]
        self._strata: dict[int, np.ndarray] = {}  # np.arange(batch) per batch size

    @property
    def tree(self) -> np.ndarray:
        """The whole array (every node up to date); write into it in place only."""
        if self._stale_top:
            self._sum_levels(1 << self.top)
            self._stale_top = False
        return self._tree

    @tree.setter
    def tree(self, value: np.ndarray) -> None:
        value = np.asarray(value, dtype=np.float64)
        if value.shape != self._tree.shape:
            raise ValueError(f"SumTree.tree must have shape {self._tree.shape}, got {value.shape}")
        self._tree = value
        self._stale_top = False

    def total(self) -> float:
        """Sum of all priorities."""
        return float(self.tree[1])

    def get(self, indices: np.ndarray | int) -> np.ndarray:
        """Priorities of the given items."""
        return self._tree[np.asarray(indices) + self.size]

    def update(self, indices: np.ndarray | int, priorities: np.ndarray | float) -> None:
        """Set the priorities of ``indices`` and refresh their ancestors (last write wins)."""
        idx = np.asarray(indices, dtype=np.int64)
        if idx.size == 1:
            self._update_one(int(idx.reshape(-1)[0]) + self.size,
                             float(np.asarray(priorities).reshape(-1)[0]))
            return
        if idx.ndim != 1:
            priorities = np.broadcast_to(np.asarray(priorities, dtype=np.float64), idx.shape).reshape(-1)
            idx = idx.reshape(-1)
        idx = idx + self.size
        tree = self._tree
        tree[idx] = priorities
        pairs = tree.view(np.complex128)  # pairs[i] = (tree[2i], tree[2i + 1])
        for node in idx >> self._shifts:  # ancestors, one row per level, from the leaves up to `top`
            children = pairs[node]
            tree[node] = children.real + children.imag
        self._stale_top = True  # levels above `top`: re-summed when `tree` or total() is read

    def _update_one(self, node: int, priority: float) -> None:
        tree = self._tree
        tree[node] = priority
        node >>= 1
        while node:
            tree[node] = tree[2 * node] + tree[2 * node + 1]
            node >>= 1

    def _sum_levels(self, lo: int) -> None:
        """Recompute every node above level ``lo`` (a power of two) from its children."""
        tree = self._tree
        pairs = tree.view(np.complex128)
        while lo > 1:
            hi, lo = lo, lo >> 1
            children = pairs[lo:hi]
            np.add(children.real, children.imag, out=tree[lo:hi])

    def rebuild(self, priorities: np.ndarray) -> None:
        """Replace every leaf at once (``priorities`` covers items ``0..len-1``; others get 0)."""
        tree = self._tree
        tree[:] = 0.0
        tree[self.size : self.size + len(priorities)] = priorities
        self._sum_levels(self.size)
        self._stale_top = False

    def _top_prefix(self) -> np.ndarray:
        """``[0, prefix sums of the nodes of level top]`` (the last entry is the total)."""
        first = 1 << self.top
        np.add.accumulate(self._tree[first : 2 * first], out=self._prefix[1:])
        return self._prefix

    def find(self, values: np.ndarray) -> np.ndarray:
        """For each ``v`` in ``[0, total)`` the item whose prefix-sum interval contains ``v``."""
        v = np.array(values, dtype=np.float64)  # a copy: reduced in place on the way down
        if v.ndim == 0:
            return self._find(v.reshape(1), self._top_prefix())[0]
        return self._find(v, self._top_prefix())

    def _find(self, v: np.ndarray, prefix: np.ndarray) -> np.ndarray:
        """:meth:`find` on a 1-d float64 array it may overwrite, given :meth:`_top_prefix`."""
        tree, first = self._tree, 1 << self.top
        # level `top` at once: node j holds v when prefix[j] <= v < prefix[j + 1] (so empty nodes
        # are never chosen, as in the descent below); values past the end go to the last node
        idx = np.searchsorted(prefix[1:first], v, side="right")
        v -= prefix[idx]
        idx += first
        levels = self.depth - self.top
        for _ in range(levels - 1):
            idx += idx  # left child
            left = tree[idx]
            go_right = v >= left
            left *= go_right
            v -= left
            idx += go_right
        if levels:  # the leaves: no residual needed past them
            idx += idx
            idx += v >= tree[idx]
        idx -= self.size
        return np.minimum(idx, self.capacity - 1, out=idx)

    def sample(self, batch: int, rng: np.random.Generator, n_valid: int | None = None) -> np.ndarray:
        """Stratified proportional sampling: one uniform draw in each of ``batch`` equal segments
        of the total mass.  ``n_valid`` clips results to the filled prefix (guards float rounding).
        """
        prefix = self._top_prefix()
        total = float(prefix[-1])  # the total as the search sees it (tree[1] up to rounding)
        if total <= 0.0:
            raise ValueError("SumTree.sample: all priorities are zero")
        strata = self._strata.get(batch)
        if strata is None:
            strata = self._strata[batch] = np.arange(batch, dtype=np.float64)
        step = total / batch
        values = rng.random(batch)
        values *= step
        values += strata * step  # segment starts, same rounding as `starts + u * step`
        np.minimum(values, math.nextafter(total, 0.0), out=values)
        items = self._find(values, prefix)
        if n_valid is not None:
            np.minimum(items, n_valid - 1, out=items)
        return items
