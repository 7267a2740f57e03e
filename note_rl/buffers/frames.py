"""Image observations stored once: a pool of frames shared by reference between transitions.

A replay item of an image env holds ``state`` and ``next_state``; with gymnasium's
``FrameStackObservation(k)`` each is a stack ``(k, H, W[, C])`` whose newest frame is ``[-1]``, and
``next_state`` of step ``t`` shares ``k - 1`` frames with ``state`` of step ``t`` and equals ``state``
of step ``t + 1``.  Stored as two dense arrays, every frame sits in memory ``2k`` times.

:class:`FrameStore` keeps each distinct frame once, in a pool ``data["frames"]`` of shape
``(F, *frame_shape)``, and each item keeps the pool indices of its stacks (``data["state_idx"]``,
``data["next_idx"]``, shape ``(capacity, k)``; ``(capacity,)`` for unstacked images, where the whole
observation is one frame).  Sampling rebuilds the stacks with one gather per field
(:func:`gather_stacks`), so a batch equals what the dense buffer returns for the same items.

Why references rather than the Dopamine layout (frames in step order, stacks rebuilt by walking
back ``k`` slots and stopping at an episode start): an item here records exactly the frames its
observation had, so no stack can cross an episode boundary, FrameStackObservation's padding
(repeats of the first frame, or zeros) needs no special case, and the write head, ring wrap-around,
Note_rl's window trims, pool segments and n-step items (whose ``next_state`` is ``k`` steps on) all
stay exact without bookkeeping of their own.  A frame is found again by content: the store keeps a
small map ``hash(bytes) -> pool index`` of recently written frames and reuses an index only after
an exact comparison, so sharing never changes what is sampled.  Frames are reference-counted; a
frame whose last item is overwritten returns to the free list.  One new frame per env step is
the steady state (plus a stack's distinct frames at each episode start and a truncated
episode's final observation).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["FrameStore", "gather_stacks", "replay_bytes", "stack_layout", "uses_frames"]

#: recently written frames looked up by content (covers k-frame stacks with n-step windows of
#: up to ~100 steps: an n-step item's next_state comes back as a state n items later)
RECENT_FRAMES = 512


def stack_layout(shape: tuple[int, ...]) -> int | None:
    """The stack size ``k`` of one observation of ``shape`` (frames along axis 0), or ``None``
    when the observation is one image.  ``(k, H, W, C)`` is a stack; ``(k, H, W)`` is one when ``k``
    is smaller than both ``H`` and ``W`` (``(84, 84, 4)`` or MiniGrid's ``(7, 7, 3)`` are images)."""
    if len(shape) == 4:
        return int(shape[0])
    if len(shape) == 3 and shape[0] < shape[1] and shape[0] < shape[2]:
        return int(shape[0])
    return None


def uses_frames(mode: Any, example: np.ndarray) -> bool:
    """Whether items like ``example`` (a batch of observations) go to a :class:`FrameStore`:
    ``mode`` ``"auto"`` for uint8 images (two or more axes per observation), ``True`` for any
    observation with two or more axes, ``False`` never."""
    if mode not in ("auto", True, False):
        raise ValueError(f"frames: must be 'auto', true or false, got {mode!r}")
    if mode is False or example.ndim < 3:
        return False
    return mode is True or example.dtype == np.uint8


def replay_bytes(pool_size: int, obs_shape: tuple[int, ...], obs_dtype: Any, action_shape: tuple[int, ...] = (),
                 frames: Any = "auto") -> int:
    """Estimated bytes of a full replay buffer of ``pool_size`` items with observations of
    ``obs_shape`` / ``obs_dtype``: with the frame pool, one frame per item (what a long run of
    frame-stacked steps costs; episode starts add one to ``k`` frames each) plus its stack indices;
    else two dense observations per item.  Actions, rewards and done flags are float32-sized."""
    dtype = np.dtype(np.float32 if np.dtype(obs_dtype) == np.float64 else obs_dtype)
    shape = tuple(int(d) for d in obs_shape)
    others = pool_size * (int(np.prod(action_shape, dtype=np.int64)) + 2) * 4
    if not uses_frames(frames, np.zeros((1, *shape[:1], *[1] * max(len(shape) - 1, 0)), dtype)):
        return int(2 * pool_size * int(np.prod(shape, dtype=np.int64)) * dtype.itemsize + others)
    k = stack_layout(shape)
    frame = int(np.prod(shape[1:] if k else shape, dtype=np.int64)) * dtype.itemsize
    return int(pool_size * (frame + 2 * (k or 1) * 4) + others)


def gather_stacks(data: dict[str, np.ndarray], name: str, slots: np.ndarray) -> np.ndarray:
    """The observations ``name`` (``"state_idx"`` or ``"next_idx"``) of ``slots``, rebuilt from the
    frame pool: ``(len(slots), k, *frame_shape)`` or ``(len(slots), *frame_shape)``."""
    return data["frames"].take(data[name].take(slots, axis=0), axis=0)


class FrameStore:
    """The frame pool of one replay buffer; it owns ``data``'s ``frames``, ``state_idx`` and
    ``next_idx`` arrays (kept in ``data`` so the prioritized sampler processes share them).

    :param data: the buffer's field arrays (written into)
    :param capacity: items of the buffer
    :param example: a batch of observations (sets the stack layout and dtype)
    """

    def __init__(self, data: dict[str, np.ndarray], capacity: int, example: np.ndarray) -> None:
        self.data = data
        shape = tuple(example.shape[1:])
        self.k = stack_layout(shape)
        self.frame_shape = shape[1:] if self.k else shape
        dtype = np.float32 if example.dtype == np.float64 else example.dtype  # as the dense buffer
        per_item = self.k or 1
        # one frame per step plus slack for episode starts; np.zeros pages stay unmapped until used
        n_frames = capacity + capacity // 8 + 4 * per_item + 16
        data["frames"] = np.zeros((n_frames, *self.frame_shape), dtype=dtype)
        idx_shape = (capacity, self.k) if self.k else (capacity,)
        data["state_idx"] = np.full(idx_shape, -1, dtype=np.int32)
        data["next_idx"] = np.full(idx_shape, -1, dtype=np.int32)
        self.refcount = np.zeros(n_frames, dtype=np.int32)
        self.free: list[int] = list(range(n_frames - 1, -1, -1))  # pop() hands out low indices first
        self.recent: dict[int, int] = {}

    @property
    def n_live(self) -> int:
        """Frames referenced by at least one item."""
        return int(np.count_nonzero(self.refcount))

    def write(self, slots: np.ndarray, states: np.ndarray, next_states: np.ndarray) -> None:
        """Store the observations of items ``slots`` (overwriting what those slots held)."""
        d = self.data
        for i, slot in enumerate(slots):
            new_s = self._intern_obs(states[i])
            new_n = self._intern_obs(next_states[i])
            # release the overwritten item only now: its frames may be the new item's too
            self._release(d["state_idx"][slot])
            self._release(d["next_idx"][slot])
            d["state_idx"][slot] = new_s
            d["next_idx"][slot] = new_n

    def _intern_obs(self, obs: Any) -> Any:
        obs = np.asarray(obs)
        if self.k is None:
            return self._intern(obs)
        return [self._intern(obs[j]) for j in range(self.k)]

    def _intern(self, frame: np.ndarray) -> int:
        """The pool index of a frame equal to ``frame`` (a new one if none is recent)."""
        frame = np.ascontiguousarray(frame, dtype=self.data["frames"].dtype)
        key = hash(frame.tobytes())
        frames, recent = self.data["frames"], self.recent
        j = recent.pop(key, None)
        if j is None or self.refcount[j] == 0 or not np.array_equal(frames[j], frame):
            if not self.free:
                self._grow()
                frames = self.data["frames"]
            j = self.free.pop()
            frames[j] = frame
        self.refcount[j] += 1
        recent[key] = j  # re-inserted: most recent last
        if len(recent) > RECENT_FRAMES:
            del recent[next(iter(recent))]
        return j

    def _release(self, idx: np.ndarray) -> None:
        for j in np.atleast_1d(idx).tolist():
            if j < 0:  # a slot never written
                return
            self.refcount[j] -= 1
            if self.refcount[j] == 0:
                self.free.append(j)

    def _grow(self) -> None:
        """More pool room (items without shared frames, e.g. unrelated images per step)."""
        old = self.data["frames"]
        extra = max(16, len(old) // 4)
        self.data["frames"] = np.concatenate([old, np.zeros((extra, *old.shape[1:]), old.dtype)])
        self.refcount = np.concatenate([self.refcount, np.zeros(extra, np.int32)])
        self.free.extend(range(len(old) + extra - 1, len(old) - 1, -1))

    # -- checkpoints -------------------------------------------------------------------------
    def arrays(self) -> dict[str, np.ndarray]:
        """What a checkpoint needs besides ``data``: the reference counts."""
        return {"frame_refcount": self.refcount}

    @classmethod
    def restore(cls, data: dict[str, np.ndarray], arrays: dict[str, np.ndarray]) -> "FrameStore":
        """The store of a checkpoint: ``data`` holds its pool and indices (the reference counts,
        read from ``arrays``, are taken out of ``data``)."""
        store = cls.__new__(cls)
        store.data = data
        data.pop("frame_refcount", None)
        idx = data["state_idx"]
        store.k = int(idx.shape[1]) if idx.ndim == 2 else None
        store.frame_shape = tuple(data["frames"].shape[1:])
        store.refcount = np.array(arrays["frame_refcount"], dtype=np.int32)
        store.free = np.flatnonzero(store.refcount == 0)[::-1].tolist()
        store.recent = {}
        return store
