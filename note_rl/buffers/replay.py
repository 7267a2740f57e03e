"""Preallocated ring-buffer replay storage, optionally split into per-process segments.

The storage holds the five Note_rl fields ``state, action, next_state, reward, done`` in numpy
arrays allocated on the first insert (shapes and dtypes come from the first transition).  With
``n_segments > 1`` (pool-network training) the capacity is split into equal contiguous slices, one
per collecting process, each a ring of its own, as Note_rl keeps one buffer per process.  Sampling
treats the union as one buffer, so the merged view never needs an ``np.concatenate``.

Trimming follows Note_rl: when a segment is full, the next insert first drops the oldest
``window_size`` items (an int, a float fraction of the segment, or a callable
``window_size(segment)`` returning either; plain FIFO when ``None``);
with ``clearing_freq`` every ``clearing_freq`` inserts drop the oldest ``window_size_`` items.  In a
ring, dropping the oldest ``k`` items only moves the tail: O(1), no array shifting.

Image observations (uint8, two or more axes; the ``frames`` option) are kept in a shared frame
pool, each frame once, instead of two dense ``state`` / ``next_state`` arrays (see
:mod:`note_rl.buffers.frames`); every subclass (prioritized replay, n-step items) gets this too.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, NamedTuple

import numpy as np

from .frames import FrameStore, gather_stacks, uses_frames

__all__ = ["Batch", "ReplayBuffer", "FIELDS"]

FIELDS = ("state", "action", "next_state", "reward", "done")

WindowSize = int | float | Callable[..., int | float] | None


def _frames(agent: Any) -> str | bool:
    """The agent's frame-pool choice (``agent.replay_frames``, the config's ``buffer.frames``)."""
    return getattr(agent, "replay_frames", "auto")


def _seed(agent: Any) -> int | None:
    """The replay sampler's seed: offset from the agent's, so it differs from the policy's."""
    return None if agent.seed is None else agent.seed + 7


class Batch(NamedTuple):
    """A sampled mini-batch (numpy arrays) with the storage indices it came from."""

    state: np.ndarray
    action: np.ndarray
    next_state: np.ndarray
    reward: np.ndarray
    done: np.ndarray
    indices: np.ndarray
    weights: np.ndarray | None = None


class ReplayBuffer:
    """Uniform experience replay over a ring buffer.

    Subclasses that store other fields set :attr:`fields` (and :attr:`float32_fields`) and write
    through :meth:`_write`.

    :param capacity: total number of transitions kept (Note_rl ``pool_size``)
    :param n_segments: number of independent ring segments (one per collecting process)
    :param window_size: items dropped from a full segment before an insert (int or callable)
    :param clearing_freq: every this many inserts into a segment, drop ``window_size_`` items
    :param window_size_: number of items dropped by ``clearing_freq``
    :param seed: seed of the sampling generator
    :param frames: ``"auto"`` (default): image observations stored as uint8 go to a frame pool
        that keeps each frame once; ``True``: any observation with two or more axes does;
        ``False``: dense arrays always (see :mod:`note_rl.buffers.frames`)
    """

    #: the set() flags this class stands for (``set(buffer=cls)`` applies them)
    flags: dict[str, bool] = {"PR": False, "HER": False, "TRL": False}
    #: the arrays stored per item
    fields: tuple[str, ...] = FIELDS
    #: fields stored as float32 whatever their input dtype (others: float64 becomes float32)
    float32_fields: tuple[str, ...] = ("done",)

    def __init__(
        self,
        capacity: int,
        n_segments: int = 1,
        window_size: WindowSize = None,
        clearing_freq: int | None = None,
        window_size_: int | None = None,
        seed: int | None = None,
        frames: str | bool = "auto",
    ) -> None:
        if capacity < 1:
            raise ValueError(f"pool_size must be >= 1, got {capacity}")
        self.n_segments = int(n_segments)
        self.seg_capacity = -(-int(capacity) // self.n_segments)
        self.capacity = self.seg_capacity * self.n_segments
        self.window_size = window_size
        self.clearing_freq = clearing_freq
        self.window_size_ = window_size_
        self.rng = np.random.default_rng(seed)
        uses_frames(frames, np.zeros((1, 1)))  # a bad value fails here, not at the first insert
        self.frames = frames
        self.frame_store: FrameStore | None = None  # set at the first insert of images
        self.data: dict[str, np.ndarray] = {}
        self.pos = np.zeros(self.n_segments, dtype=np.int64)  # next write slot, per segment
        self.sizes = np.zeros(self.n_segments, dtype=np.int64)
        self.store_counter = np.zeros(self.n_segments, dtype=np.int64)
        #: draw mini-batches without replacement from shuffled passes (``train(shuffle=True)``)
        self.shuffle = False
        self._pass: np.ndarray | None = None  # slots of the current shuffled pass, in draw order
        self._pass_pos = 0
        self._drops = 0  # items forgotten so far: a pass started before a drop may hold stale slots
        self._pass_drops = -1

    # -- bookkeeping -------------------------------------------------------------------------
    #: empty the buffer after every ``update_param()`` (on-policy data expires; ``PPO=True``)
    clear_on_update = False
    #: pool network: each worker writes to its own segment (else to one drawn by inverse length,
    #: Note_rl's placement for uniform replay)
    own_segments = False

    @classmethod
    def for_agent(cls, agent: Any, n_segments: int = 1, window_size: WindowSize = None,
                  clearing_freq: int | None = None, window_size_: int | None = None) -> "ReplayBuffer":
        """The buffer an agent's ``set()`` settings describe, laid out for one ``train()`` call
        (``n_segments`` collecting processes and Note_rl's trimming options); with ``PPO=True`` its
        data expires at every ``update_param()``, as Note_rl clears a PPO agent's uniform pool.
        Image observations go to the frame pool as ``agent.replay_frames`` says (default ``"auto"``)."""
        buffer = cls(agent.pool_size or 100_000, n_segments=n_segments, window_size=window_size,
                     clearing_freq=clearing_freq, window_size_=window_size_, seed=_seed(agent),
                     frames=_frames(agent))
        buffer.clear_on_update = bool(agent.PPO)
        return buffer

    def after_update_param(self, window: Callable[[int], int | None]) -> None:
        """Maintenance after ``update_param()``: uniform replay keeps its data (or, on-policy,
        drops all of it); ``window(segment)`` is for buffers that trim (prioritized replay)."""
        if self.clear_on_update:
            self.clear()

    def post_update_window(self, settings: Any) -> int | None:
        """This buffer's default trim after ``update_param()`` from the ``train()`` options."""
        return None

    def __len__(self) -> int:
        return int(self.sizes.sum())

    def can_sample(self, min_items: int) -> bool:
        """Whether training may start: ``min_items`` (``learning_starts``) items are stored."""
        return len(self) >= min_items

    def seed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)

    def _allocate(self, example: dict[str, np.ndarray]) -> None:
        names = self.fields
        if "state" in names and "next_state" in names and uses_frames(self.frames, np.asarray(example["state"])):
            self.frame_store = FrameStore(self.data, self.capacity, np.asarray(example["state"]))
            names = tuple(n for n in names if n not in ("state", "next_state"))
        for name in names:
            value = np.asarray(example[name])
            dtype = np.float32 if value.dtype == np.float64 else value.dtype
            if name in self.float32_fields:
                dtype = np.float32
            self.data[name] = np.zeros((self.capacity, *value.shape[1:]), dtype=dtype)

    def segment_slots(self, segment: int) -> np.ndarray:
        """Global slot indices of ``segment``'s items, oldest first."""
        size, pos = int(self.sizes[segment]), int(self.pos[segment])
        local = (pos - size + np.arange(size)) % self.seg_capacity
        return local + segment * self.seg_capacity

    def valid_slots(self) -> np.ndarray:
        """Global slot indices of all stored items (segment by segment, oldest first)."""
        return np.concatenate([self.segment_slots(k) for k in range(self.n_segments)])

    # -- inserting ---------------------------------------------------------------------------
    def add(self, state: Any, action: Any, next_state: Any, reward: float, done: float,
            segment: int = 0) -> np.ndarray:
        """Store one transition; returns the slot index written (as a length-1 array)."""
        if not self.data or self.clearing_freq or self.sizes[segment] >= self.seg_capacity:
            return self.add_batch(
                np.asarray(state)[None], np.asarray(action)[None], np.asarray(next_state)[None],
                np.asarray([reward]), np.asarray([done]), segment,
            )
        # the common case (room left, no clearing rule) without add_batch's chunking: this runs
        # once per env step in single-process training
        pos = int(self.pos[segment])
        slot = segment * self.seg_capacity + pos
        d = self.data
        if self.frame_store is not None:
            self.frame_store.write([slot], [state], [next_state])
        else:
            d["state"][slot] = state
            d["next_state"][slot] = next_state
        d["action"][slot] = action
        d["reward"][slot] = reward
        d["done"][slot] = done
        slots = np.array([slot], dtype=np.int64)
        self._on_write(slots)
        self.pos[segment] = (pos + 1) % self.seg_capacity
        self.sizes[segment] += 1
        self.store_counter[segment] += 1
        return slots

    def add_batch(self, state: np.ndarray, action: np.ndarray, next_state: np.ndarray,
                  reward: np.ndarray, done: np.ndarray, segment: int = 0) -> np.ndarray:
        """Store ``len(state)`` transitions in ``segment``; returns the slot indices written."""
        return self._write({"state": state, "action": action, "next_state": next_state,
                            "reward": reward, "done": done}, segment)

    def _write(self, arrays: dict[str, np.ndarray], segment: int) -> np.ndarray:
        """Store the items of ``arrays`` (one array per name of :attr:`fields`, equal lengths) in
        ``segment``, applying the window and clearing rules; returns the slot indices written."""
        n = len(arrays[self.fields[0]])
        if n == 0:  # e.g. an n-step episode truncated before its first full window
            return np.empty(0, dtype=np.int64)
        if not self.data:
            self._allocate(arrays)
        slots = np.empty(n, dtype=np.int64)
        i = 0
        while i < n:
            if self.sizes[segment] >= self.seg_capacity:
                self.drop_oldest(max(1, self._window(segment)), segment)
            # write as many as fit before the segment is full, the ring wraps or a clearing is due
            pos = int(self.pos[segment])
            free = self.seg_capacity - int(self.sizes[segment])
            chunk = min(n - i, free, self.seg_capacity - pos, self._until_clearing(segment))
            base = segment * self.seg_capacity + pos
            for name in self.fields:
                if name in self.data:  # state / next_state go to the frame store, if any
                    self.data[name][base:base + chunk] = arrays[name][i:i + chunk]
            if self.frame_store is not None:
                self.frame_store.write(range(base, base + chunk), arrays["state"][i:i + chunk],
                                       arrays["next_state"][i:i + chunk])
            slots[i:i + chunk] = np.arange(base, base + chunk)
            self._on_write(slots[i:i + chunk])
            self.pos[segment] = (pos + chunk) % self.seg_capacity
            self.sizes[segment] += chunk
            self.store_counter[segment] += chunk
            i += chunk
            if self.clearing_freq and self.store_counter[segment] % self.clearing_freq == 0:
                self.drop_oldest(int(self.window_size_ or 0), segment)
        return slots

    def _until_clearing(self, segment: int) -> int:
        if not self.clearing_freq:
            return self.seg_capacity
        return self.clearing_freq - int(self.store_counter[segment]) % self.clearing_freq

    def _window(self, segment: int) -> int:
        window = self.window_size
        if callable(window):
            window = window(segment) if self.n_segments > 1 else window()
        return 1 if window is None else self.window_items(window)

    def window_items(self, window: float) -> int:
        """Items a window size stands for: an int is a count; a float in (0, 1] (Note_rl's
        README) is that fraction of a full segment, rounded up (a larger float, e.g. from a
        callable's arithmetic, is a count)."""
        if isinstance(window, numbers.Integral) or window > 1:
            return int(window)
        return int(math.ceil(float(window) * self.seg_capacity))

    def drop_oldest(self, k: int, segment: int = 0) -> None:
        """Forget the ``k`` oldest items of ``segment`` (clipped to its size)."""
        k = int(min(max(k, 0), self.sizes[segment]))
        if k == 0:
            return
        self._on_drop(self.segment_slots(segment)[:k])
        self.sizes[segment] -= k
        self._drops += k

    def clear(self) -> None:
        """Empty every segment (on-policy data is discarded after an update)."""
        for k in range(self.n_segments):
            self.drop_oldest(int(self.sizes[k]), k)

    # hooks for the prioritized subclass
    def _on_write(self, slots: np.ndarray) -> None:
        pass

    def _on_drop(self, slots: np.ndarray) -> None:
        pass

    # -- sampling ----------------------------------------------------------------------------
    def sample_slots(self, batch: int) -> np.ndarray:
        """``batch`` slot indices drawn uniformly (with replacement) over all stored items, or
        without replacement from shuffled passes when :attr:`shuffle` is set."""
        total = len(self)
        if total == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        if self.shuffle:
            return self._shuffled_slots(batch)
        ranks = self.rng.integers(0, total, size=batch)
        if self.n_segments == 1:
            return (int(self.pos[0]) - total + ranks) % self.seg_capacity
        bounds = np.cumsum(self.sizes)
        seg = np.searchsorted(bounds, ranks, side="right")
        offset = ranks - (bounds[seg] - self.sizes[seg])
        local = (self.pos[seg] - self.sizes[seg] + offset) % self.seg_capacity
        return local + seg * self.seg_capacity

    def _shuffled_slots(self, batch: int) -> np.ndarray:
        """Note_rl 001's ``shuffle``: successive mini-batches walk one random permutation of the
        stored items (each item once per pass); a pass ends when used up or when items were
        dropped since it began.  Items stored during a pass join the next one."""
        parts, need = [], batch
        while need > 0:
            if self._pass is None or self._pass_pos >= len(self._pass) or self._pass_drops != self._drops:
                slots = self.valid_slots()
                self._pass = slots[self.rng.permutation(len(slots))]
                self._pass_pos, self._pass_drops = 0, self._drops
            take = self._pass[self._pass_pos:self._pass_pos + need]
            self._pass_pos += len(take)
            parts.append(take)
            need -= len(take)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def get(self, slots: np.ndarray, weights: np.ndarray | None = None) -> Batch:
        d = self.data
        if "frames" in d:  # image items: stacks rebuilt from the frame pool
            state, next_state = gather_stacks(d, "state_idx", slots), gather_stacks(d, "next_idx", slots)
        else:  # ndarray.take(axis=0) gathers rows ~5x faster than fancy indexing for 2-D fields
            state, next_state = d["state"].take(slots, axis=0), d["next_state"].take(slots, axis=0)
        return Batch(state, d["action"].take(slots, axis=0), next_state, d["reward"].take(slots, axis=0),
                     d["done"].take(slots, axis=0), slots, weights)

    def sample(self, batch: int) -> Batch:
        """A uniform mini-batch."""
        return self.get(self.sample_slots(batch))

    # -- checkpoints -------------------------------------------------------------------------
    def _stored_names(self, frames: bool) -> tuple[str, ...]:
        """The arrays of a checkpoint: the fields, with a frame pool in place of the dense states."""
        if not frames:
            return self.fields
        return (*(n for n in self.fields if n not in ("state", "next_state")), "frames", "state_idx", "next_idx",
                "frame_refcount")

    def state_dict(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """``(json_meta, arrays)``: counters and RNG state as JSON, the stored items as arrays."""
        meta = {
            "kind": type(self).__name__,
            "capacity": self.capacity,
            "n_segments": self.n_segments,
            "pos": self.pos.tolist(),
            "sizes": self.sizes.tolist(),
            "store_counter": self.store_counter.tolist(),
            "rng": self.rng.bit_generator.state,
            "frames": self.frame_store is not None,
        }
        arrays = dict(self.data)
        if self.frame_store is not None:
            arrays.update(self.frame_store.arrays())
        return meta, arrays

    def load_state_dict(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        if meta["capacity"] != self.capacity or meta["n_segments"] != self.n_segments:
            raise ValueError(
                f"checkpoint buffer has capacity {meta['capacity']} x {meta['n_segments']} segments, "
                f"this agent {self.capacity} x {self.n_segments}"
            )
        names = self._stored_names(bool(meta.get("frames")))
        if int(np.sum(meta["sizes"])) > 0:  # a buffer that holds items must have every field's array
            missing = [k for k in names if k not in arrays]
            if missing:
                raise ValueError(f"member 'buffer/{missing[0]}' is missing")
        self.data = {k: np.array(arrays[k]) for k in names if k in arrays}
        self.frame_store = None
        if meta.get("frames") and "frames" in self.data:
            self.frame_store = FrameStore.restore(self.data, arrays)
        self.pos = np.asarray(meta["pos"], dtype=np.int64)
        self.sizes = np.asarray(meta["sizes"], dtype=np.int64)
        self.store_counter = np.asarray(meta["store_counter"], dtype=np.int64)
        self.rng.bit_generator.state = meta["rng"]
        self._pass = None
