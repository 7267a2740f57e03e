"""Trajectory-triplet replay (Note_rl's ``set(TRL=True)``).

Each sampled item is built from one stored episode: three distinct time steps ``i < k < j`` are
drawn uniformly from it and combined into a pair of transitions,

* ``state      = [s_i,  s'_k]``,  ``action = [a_i, a_k]``,
* ``next_state = [s'_k, s'_j]``,  ``reward = [r_i, r_k]``,  ``done = [d_i, d_k]``,

so every field gets an axis of length 2 after the batch axis (``state``: ``(batch, 2, *obs)``).  The
agent's loss reads the pair however its method needs (e.g. temporal-distance or trajectory
consistency objectives); the buffer only supplies it.

Episodes are delimited the way Note_rl delimits them: an episode ends at a stored ``done == 1``
and starts after the previous one (or at the oldest stored item).  Only finished episodes of at
least three steps are drawn from, each with equal probability (Note_rl picks a random terminal
index), and an episode cut short by a time limit (``done == 0`` at its end) runs on into the next
one, as in Note_rl.  With pool-network segments, episodes never span two segments.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .replay import Batch, ReplayBuffer

__all__ = ["TrajectoryReplayBuffer", "distinct_triples"]


def distinct_triples(lengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each length ``L >= 3`` one uniformly drawn sorted triple of distinct offsets in
    ``[0, L)``; shape ``(len(lengths), 3)``.  Vectorised: draw ``x1`` from ``L`` values, ``x2`` from
    the ``L - 1`` others, ``x3`` from the ``L - 2`` others by skipping the ones already taken."""
    lengths = np.asarray(lengths, dtype=np.int64)
    x1 = (rng.random(len(lengths)) * lengths).astype(np.int64)
    x2 = (rng.random(len(lengths)) * (lengths - 1)).astype(np.int64)
    x2 += x2 >= x1
    lo, hi = np.minimum(x1, x2), np.maximum(x1, x2)
    x3 = (rng.random(len(lengths)) * (lengths - 2)).astype(np.int64)
    x3 += x3 >= lo
    x3 += x3 >= hi
    return np.sort(np.stack([x1, x2, x3], axis=1), axis=1)


class TrajectoryReplayBuffer(ReplayBuffer):
    """Uniform storage; :meth:`sample` returns trajectory triplets (see the module docstring)."""

    flags = {"PR": False, "HER": False, "TRL": True}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._episodes_key: tuple[Any, ...] | None = None
        self._episodes: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def episodes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(order, starts, lengths)``: ``order`` holds every stored slot, segment by segment,
        oldest first; finished episode ``m`` is ``order[starts[m]:starts[m] + lengths[m]]``
        (only episodes of three steps or more)."""
        key = (self.pos.tobytes(), self.sizes.tobytes(), int(self.store_counter.sum()), self._drops)
        if key != self._episodes_key or self._episodes is None:
            self._episodes = self._find_episodes()
            self._episodes_key = key
        return self._episodes

    def _find_episodes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        order = self.valid_slots()
        dones = self.data["done"][order] if self.data else np.zeros(0)
        ends = np.flatnonzero(dones > 0.5)
        # an episode also starts at every segment's oldest item
        seg_starts = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])
        previous_end = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
        # (an empty segment repeats its neighbour's start; side="right" picks the last of equal ones)
        own_segment = seg_starts[np.searchsorted(seg_starts, ends, side="right") - 1]
        starts = np.maximum(previous_end, own_segment)
        lengths = ends - starts + 1
        keep = lengths >= 3
        return order, starts[keep], lengths[keep]

    def can_sample(self, min_items: int) -> bool:
        """Training waits for ``min_items`` items *and* one finished episode to draw from (the
        first episode may outlast ``learning_starts``)."""
        return super().can_sample(min_items) and len(self.episodes()[1]) > 0

    def sample(self, batch: int) -> Batch:
        order, starts, lengths = self.episodes()
        if len(starts) == 0:
            raise ValueError("TRL=True: no finished episode of three or more steps is stored yet "
                             "(trajectory triplets need one)")
        picked = self.rng.integers(0, len(starts), size=batch)
        offsets = distinct_triples(lengths[picked], self.rng)
        i, k, j = (order[starts[picked] + offsets[:, c]] for c in range(3))
        d = self.data
        return Batch(np.stack([d["state"][i], d["next_state"][k]], axis=1),
                     np.stack([d["action"][i], d["action"][k]], axis=1),
                     np.stack([d["next_state"][k], d["next_state"][j]], axis=1),
                     np.stack([d["reward"][i], d["reward"][k]], axis=1),
                     np.stack([d["done"][i], d["done"][k]], axis=1),
                     np.stack([i, k, j], axis=1))
