"""Prioritized experience replay (Schaul et al. 2015, https://arxiv.org/abs/1511.05952) with the
Note_rl scoring rule.

Each stored item keeps ``|TD|`` (and, for PPO, the policy ratio).  Its score is
``lambda_ * |TD| + (1 - lambda_) * |ratio - 1|`` with PPO and ``|TD|`` otherwise, its priority
``(score + eps) ** alpha``, and it is drawn with probability ``priority / sum(priority)`` by
stratified sampling on a :class:`SumTree` (O(log n) per draw).  New items enter with the running
maximum ``|TD|`` (and ratio) seen so far, starting from ``initial_TD`` / ``initial_ratio``, so each is
sampled soon after it arrives.  With ``beta`` set, mini-batches carry importance-sampling weights
``(N * P_i) ** -beta`` normalised by their largest value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .replay import Batch, ReplayBuffer, WindowSize, _frames, _seed
from .sum_tree import SumTree

__all__ = ["PrioritizedReplayBuffer", "PriorityRecorder", "TDScore", "TDRatioScore"]


class PriorityRecorder:
    """What an agent's loss talks to: ``self.prioritized_replay.update(TD, ratio)``.

    Note_rl agents push the per-sample TD errors (and PPO ratios) from inside ``__call__``, which
    may run inside a compiled ``tf.function``.  The recorder only keeps the tensors it is given; the
    backend returns them from the compiled step and the training loop writes them into the buffer
    as numpy.  Calling ``update()`` with no arguments is accepted (Note_rl's second phase) and does
    nothing, because the loop already does that write-back.
    """

    def __init__(self) -> None:
        self.TD: Any = None
        self.ratio: Any = None

    def update(self, TD: Any = None, ratio: Any = None) -> None:
        if TD is not None:
            self.TD = TD
            self.ratio = ratio

    def pop(self) -> tuple[Any, Any]:
        td, ratio = self.TD, self.ratio
        self.TD = self.ratio = None
        return td, ratio


class TDScore:
    """Note_rl's score of an item for value-based agents: ``|TD|``."""

    ratio: np.ndarray | None = None

    def score(self, buf: "PrioritizedReplayBuffer", slots: Any) -> np.ndarray:
        return buf.TD[slots]

    def on_write(self, buf: "PrioritizedReplayBuffer", slots: np.ndarray) -> None:
        """New items: nothing besides their ``|TD|``."""

    def record(self, buf: "PrioritizedReplayBuffer", slots: np.ndarray, td: np.ndarray,
               ratio: np.ndarray | None) -> np.ndarray:
        """The scores of ``slots`` after their ``|TD|`` (already written) came back from a step."""
        return td  # the score is |TD| itself: no need to read it back (duplicates: last wins either way)


class TDRatioScore(TDScore):
    """Note_rl's PPO score: ``lambda_ * |TD| + (1 - lambda_) * |ratio - 1|``; keeps each item's
    policy ratio (new items enter with the largest ratio seen)."""

    def __init__(self, capacity: int) -> None:
        self.ratio = np.ones(capacity, dtype=np.float64)

    def score(self, buf: "PrioritizedReplayBuffer", slots: Any) -> np.ndarray:
        return buf.lambda_ * buf.TD[slots] + (1.0 - buf.lambda_) * np.abs(self.ratio[slots] - 1.0)

    def on_write(self, buf: "PrioritizedReplayBuffer", slots: np.ndarray) -> None:
        self.ratio[slots] = buf.max_ratio

    def record(self, buf: "PrioritizedReplayBuffer", slots: np.ndarray, td: np.ndarray,
               ratio: np.ndarray | None) -> np.ndarray:
        if ratio is not None:
            r = np.asarray(ratio, dtype=np.float64).reshape(-1)
            self.ratio[slots] = r
            buf.max_ratio = max(buf.max_ratio, float(r.max()))
        return self.score(buf, slots)


class PrioritizedReplayBuffer(ReplayBuffer):
    """Replay buffer sampling proportionally to priority.

    :param capacity: total number of transitions kept
    :param alpha: priority exponent (0 = uniform)
    :param lambda_: weight of ``|TD|`` against ``|ratio - 1|`` in the PPO score
    :param PPO: score items by TD error and policy ratio
    :param initial_TD: ``|TD|`` given to the first items
    :param initial_ratio: ratio given to the first items (PPO)
    :param beta: importance-sampling exponent; ``None`` returns no weights
    :param eps: added to the score so no item has zero probability
    :param n_segments, window_size, clearing_freq, window_size_, seed, frames: as :class:`ReplayBuffer`
    """

    def __init__(
        self,
        capacity: int,
        alpha: float = 0.7,
        lambda_: float = 0.5,
        PPO: bool = False,
        initial_TD: float = 7.0,
        initial_ratio: float = 1.0,
        beta: float | None = None,
        eps: float = 1e-7,
        n_segments: int = 1,
        window_size: WindowSize = None,
        clearing_freq: int | None = None,
        window_size_: int | None = None,
        seed: int | None = None,
        frames: str | bool = "auto",
    ) -> None:
        super().__init__(capacity, n_segments, window_size, clearing_freq, window_size_, seed, frames)
        self.alpha = float(alpha)
        self.lambda_ = float(lambda_)
        self.PPO = bool(PPO)
        self.beta = beta
        self.eps = float(eps)
        self.TD = np.zeros(self.capacity, dtype=np.float64)
        self.scoring = TDRatioScore(self.capacity) if self.PPO else TDScore()
        self.max_TD = float(initial_TD)
        self.max_ratio = float(initial_ratio)
        self.tree = SumTree(self.capacity)

    flags = {"PR": True, "HER": False, "TRL": False}
    own_segments = True  # segment-wise trims and ESS follow each worker's own data

    @classmethod
    def for_agent(cls, agent: Any, n_segments: int = 1, window_size: WindowSize = None,
                  clearing_freq: int | None = None, window_size_: int | None = None) -> "PrioritizedReplayBuffer":
        """Prioritized replay with the agent's ``set()`` settings (``alpha`` is its ``priority_alpha``;
        ``PPO=True`` scores items by TD error and policy ratio)."""
        return cls(agent.pool_size or 100_000, alpha=agent.priority_alpha, lambda_=agent.lambda_,
                   PPO=agent.PPO, initial_TD=agent.initial_TD, initial_ratio=agent.initial_ratio,
                   beta=agent.beta, n_segments=n_segments, window_size=window_size,
                   clearing_freq=clearing_freq, window_size_=window_size_, seed=_seed(agent),
                   frames=_frames(agent))

    def after_update_param(self, window: Any) -> None:
        """Note_rl's trim after ``update_param()``: drop the oldest ``window(segment)`` items of
        each segment (``window_size_func`` / the ESS window rule / ``window_size_ppo|pr``)."""
        for seg in range(self.n_segments):
            drop = window(seg)
            if drop:
                self.drop_oldest(self.window_items(drop), seg)

    def post_update_window(self, settings: Any) -> int | None:
        return settings.window_size_ppo if self.PPO else settings.window_size_pr

    # -- priorities --------------------------------------------------------------------------
    @property
    def ratio(self) -> np.ndarray | None:
        """Each item's policy ratio (PPO scoring only)."""
        return self.scoring.ratio

    def score(self, slots: np.ndarray | slice) -> np.ndarray:
        """Note_rl's score of the given slots (before ``eps`` and ``alpha``)."""
        return self.scoring.score(self, slots)

    def priorities_of(self, score: np.ndarray) -> np.ndarray:
        return (score + self.eps) ** self.alpha

    def _on_write(self, slots: np.ndarray) -> None:
        self.TD[slots] = self.max_TD
        self.scoring.on_write(self, slots)
        self.tree.update(slots, self.priorities_of(self.score(slots)))

    def _on_drop(self, slots: np.ndarray) -> None:
        self.tree.update(slots, 0.0)

    def update_priorities(self, slots: np.ndarray, td: np.ndarray, ratio: np.ndarray | None = None) -> None:
        """Write back ``|td|`` (and ``ratio``) for sampled slots and refresh their priorities."""
        td = np.abs(np.asarray(td, dtype=np.float64).reshape(-1))
        if len(td) != len(slots):
            raise ValueError(f"update_priorities: {len(td)} TD errors for {len(slots)} sampled items")
        self.TD[slots] = td
        self.max_TD = max(self.max_TD, float(td.max())) if len(td) else self.max_TD
        self.tree.update(slots, self.priorities_of(self.scoring.record(self, slots, td, ratio)))

    def refresh(self) -> None:
        """Recompute every priority (after ``alpha`` or ``lambda_`` changed)."""
        prio = np.zeros(self.capacity)
        slots = self.valid_slots()
        prio[slots] = self.priorities_of(self.score(slots))
        self.tree.rebuild(prio)

    def set_alpha(self, alpha: float) -> None:
        self.alpha = float(alpha)
        self.refresh()

    def weights(self, segment: int | None = None) -> np.ndarray:
        """Current priorities of the stored items (all, or one segment's), oldest first."""
        slots = self.valid_slots() if segment is None else self.segment_slots(segment)
        return self.tree.get(slots)

    # -- sampling ----------------------------------------------------------------------------
    def sample_slots(self, batch: int) -> np.ndarray:
        return self._draw(batch)[0]

    def _draw(self, batch: int) -> tuple[np.ndarray, np.ndarray, float]:
        """Slots drawn by priority, their priorities and the smallest of these."""
        tree = self.tree
        try:
            slots = tree.sample(batch, self.rng)
        except ValueError:  # all priorities zero: an empty buffer gets its own message
            if len(self) == 0:
                raise ValueError("cannot sample from an empty replay buffer") from None
            raise
        prio = tree.get(slots)
        lowest = float(prio.min()) if len(prio) else 1.0
        if lowest <= 0.0:  # float rounding at a boundary can land on an empty slot
            empty = prio <= 0.0
            slots[empty] = super().sample_slots(int(empty.sum()))
            prio = tree.get(slots)
            lowest = float(prio.min())
        return slots, prio, lowest

    def sample(self, batch: int) -> Batch:
        slots, prio, lowest = self._draw(batch)
        weights = None
        if self.beta is not None:
            # (N * P_i) ** -beta / max_j (N * P_j) ** -beta, with N and sum(priority) cancelled:
            # the largest weight belongs to the smallest priority (the largest if beta < 0)
            beta = float(self.beta)
            w = np.divide(lowest if beta >= 0.0 else prio.max(), prio)
            weights = np.power(w, beta, out=w).astype(np.float32)
        return self.get(slots, weights)

    # -- checkpoints -------------------------------------------------------------------------
    def state_dict(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta, arrays = super().state_dict()
        meta.update(alpha=self.alpha, lambda_=self.lambda_, max_TD=self.max_TD,
                    max_ratio=self.max_ratio, beta=self.beta)
        # the tree itself is saved so a restored buffer samples bit-identically
        arrays = dict(arrays, TD=self.TD, tree=self.tree.tree)
        if self.ratio is not None:
            arrays["ratio"] = self.ratio
        return meta, arrays

    def load_state_dict(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super().load_state_dict(meta, arrays)
        self.alpha, self.lambda_ = float(meta["alpha"]), float(meta["lambda_"])
        self.max_TD, self.max_ratio = float(meta["max_TD"]), float(meta["max_ratio"])
        self.beta = meta["beta"]
        self.TD = np.array(arrays["TD"], dtype=np.float64)
        if self.ratio is not None:
            self.ratio[:] = arrays["ratio"]
        self.tree.tree[:] = arrays["tree"]
