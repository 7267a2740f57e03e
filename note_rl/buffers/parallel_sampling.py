"""Mini-batches drawn in worker processes: ``train(processes_pr=N)`` / ``train(processes_her=N)``.

Note_rl let a user draw each prioritized or HER mini-batch in ``N`` processes, each producing
``batch / N`` items, the results stacked.  :class:`ParallelSampler` does that over shared memory.

* Storage.  Before its first draw the sampler copies the buffer's arrays (``buffer.data`` and a
  prioritized buffer's sum-tree array) into ``multiprocessing.shared_memory`` blocks, once, and
  rebinds the buffer to views of them: inserts and priority updates of the training process land
  in the pages the workers read, so only drawn rows cross a pipe.  An array the buffer replaces
  (first insert, ``load_state_dict``) is noticed by identity before the next draw and shared
  again.  :meth:`ParallelSampler.close` gives the buffer private copies back (it outlives one
  ``train()`` call) and unlinks every block.
* Prioritized replay.  The training process draws the stratified values exactly as
  :meth:`SumTree.sample` does and sends worker ``i`` the ``i``-th contiguous chunk; the worker
  descends the shared tree (``SumTree._find`` reads level ``top`` and below only, which every
  update keeps current, never the lazily re-summed levels above) and gathers the rows.  Chunks
  are concatenated in order: a seeded run draws the very slots one process draws.  The
  importance-sampling weights are normalised by the batch's smallest priority, which no single
  worker knows, so they are computed on the whole batch.
* HER.  Worker ``i`` draws its chunk's items and "future" goals with its own generator (seeded
  from the buffer's, so seeded runs repeat) and computes relabelled rewards with the buffer's
  reward function, pickled once at start-up; the first ``n_relabelled(batch)`` items of the whole
  batch are the relabelled ones, as in one process.

Workers (``spawn`` or ``forkserver``, daemonic) import numpy and ``note_rl.buffers`` only, plus
what unpickling the HER reward function needs.  A draw costs a pipe round trip per worker: more
than an in-process O(log n) draw of a small batch (see BENCHMARKS.md).
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing as mp
import pickle
import sys
import traceback
import types
import weakref
from multiprocessing.shared_memory import SharedMemory
from typing import Any, Callable

import numpy as np

from ..utils import main_not_rerun, standard_start_method, stop_workers
from .her import HerReplayBuffer
from .prioritized import PrioritizedReplayBuffer
from .replay import Batch, ReplayBuffer
from .sum_tree import SumTree

__all__ = ["ParallelSampler", "SamplerError", "worker_reward_fn"]

#: how a worker maps one shared array: (block name, shape, dtype)
Spec = tuple[str, tuple[int, ...], np.dtype]


class SamplerError(RuntimeError):
    """A sampler worker raised or died."""


# -- the HER reward function, in a form that pickles without the agent -----------------------
class AgentRewardDone:
    """An agent's ``reward_done_func`` as ``RLBase.her_reward_done`` calls it (float32, broadcast).

    With ``owner``, ``func`` is the method's function, called on that stand-in ``self`` (the
    agent's plain attributes).  Why: pickling the bound method would pickle the whole agent
    (networks, optimizers, the replay buffer itself); a reward rule needs a few numbers at most."""

    def __init__(self, func: Callable[..., tuple[Any, Any]], owner: Any = None) -> None:
        self.func, self.owner = func, owner

    def __call__(self, achieved: np.ndarray, desired: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        args = (achieved, desired) if self.owner is None else (self.owner, achieved, desired)
        reward, done = self.func(*args)
        n = len(achieved)
        return (np.broadcast_to(np.asarray(reward, np.float32), (n,)),
                np.broadcast_to(np.asarray(done, np.float32), (n,)))


class EnvRewardDone:
    """A goal env's ``compute_reward(achieved, desired, {})`` with done = 0 (SB3's convention,
    as ``RLBase.her_reward_done``)."""

    def __init__(self, compute_reward: Callable[..., Any]) -> None:
        self.compute_reward = compute_reward

    def __call__(self, achieved: np.ndarray, desired: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        reward = np.asarray(self.compute_reward(achieved, desired, {}), np.float32)
        return reward, np.zeros(len(achieved), np.float32)


_PLAIN = (bool, int, float, str, bytes, type(None), np.generic)


def _plain_attributes(obj: Any) -> types.SimpleNamespace:
    """Numbers, strings and small arrays of ``obj`` (class attributes, then instance ones)."""
    items = {}
    for scope in [*reversed(type(obj).__mro__), obj]:
        for name, value in vars(scope).items():
            if isinstance(value, _PLAIN) or (isinstance(value, np.ndarray) and value.nbytes <= 1 << 20):
                items[name] = value
    return types.SimpleNamespace(**{k: v for k, v in items.items() if not k.startswith("__")})


def worker_reward_fn(buffer: HerReplayBuffer) -> Callable[[np.ndarray, np.ndarray], tuple[Any, Any]]:
    """The buffer's relabelling reward in a form the workers can unpickle.

    ``HerReplayBuffer.for_agent`` passes the agent's ``her_reward_done``: that is the agent's
    ``reward_done_func`` (run in the workers on a stand-in ``self`` with the agent's numbers,
    strings and small arrays) or else the env's ``compute_reward``.  Any other function the
    buffer was built with is shipped as it is."""
    fn = buffer.reward_fn
    agent = getattr(fn, "__self__", None)
    if agent is None or getattr(getattr(fn, "__func__", None), "__qualname__", "") != "RLBase.her_reward_done":
        return fn
    own = getattr(agent, "reward_done_func", None)
    if callable(own):
        if getattr(own, "__self__", None) is agent:
            return AgentRewardDone(own.__func__, _plain_attributes(agent))
        return AgentRewardDone(own)
    env = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
    return EnvRewardDone(env.unwrapped.compute_reward)


# -- shared-memory blocks (training-process side) ----------------------------------------------
def _release(shm: SharedMemory, unlink: bool) -> None:
    """Unmap ``shm`` (kept mapped if a view of it is still alive) and remove its name."""
    with contextlib.suppress(BufferError):
        shm.close()
    if unlink:
        with contextlib.suppress(FileNotFoundError):
            shm.unlink()


class _SharedArrays:
    """Shared-memory copies of named arrays; :attr:`views` are what the buffer holds."""

    def __init__(self) -> None:
        self.blocks: dict[str, SharedMemory] = {}
        self.views: dict[str, np.ndarray] = {}

    def share(self, name: str, array: np.ndarray) -> tuple[np.ndarray, Spec, SharedMemory | None]:
        """Copy ``array`` into a new block: ``(view, spec, the block it replaces or None)``."""
        array = np.asarray(array)
        if array.dtype.hasobject:
            raise ValueError(f"buffer field {name!r} holds Python objects; it cannot be shared")
        shm = SharedMemory(create=True, size=max(array.nbytes, 1))  # size 0 is refused
        try:
            view = np.ndarray(array.shape, array.dtype, buffer=shm.buf)
            view[...] = array
        except BaseException:
            _release(shm, unlink=True)
            raise
        old = self.blocks.pop(name, None)
        self.blocks[name], self.views[name] = shm, view
        return view, (shm.name, array.shape, array.dtype), old

    def release_all(self) -> None:
        """Unmap and unlink every block."""
        self.views.clear()  # drop our views first, so close() can unmap
        for shm in self.blocks.values():
            _release(shm, unlink=True)
        self.blocks.clear()


# -- the sampler -------------------------------------------------------------------------------
class ParallelSampler:
    """Draw mini-batches of a prioritized or HER buffer in ``n`` worker processes.

    Use it as a context manager or call :meth:`close`: until then the buffer's arrays live in
    shared memory.  Draws have the single-process sampler's distribution (prioritized replay:
    the very same slots, given the buffer's generator state).

    :param buffer: a :class:`PrioritizedReplayBuffer` or a :class:`HerReplayBuffer`
    :param n: number of worker processes
    :param start_method: ``spawn`` or ``forkserver``
    :raises ValueError: the HER reward function cannot be pickled for the workers
    """

    def __init__(self, buffer: ReplayBuffer, n: int, start_method: str = "spawn") -> None:
        if isinstance(buffer, PrioritizedReplayBuffer):
            self.kind, self.option = "pr", "processes_pr"
        elif isinstance(buffer, HerReplayBuffer):
            self.kind, self.option = "her", "processes_her"
        else:
            raise TypeError(f"ParallelSampler needs a prioritized or HER buffer, got {type(buffer).__name__}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"train({self.option}={n!r}): must be a positive integer")
        self.buffer, self.n = buffer, n
        self.closed = False
        self.conns: list[Any] = []
        self.procs: list[Any] = []
        self._shared = _SharedArrays()
        # a safety net (also run at exit) should a sampler be dropped without close()
        self._finalizer = weakref.finalize(self, self._shared.release_all)
        inits, uses_main = self._inits()
        try:
            self._start(inits, start_method, uses_main)
        except BaseException:
            self.close()
            raise

    def _inits(self) -> tuple[list[dict[str, Any]], bool]:
        """Each worker's start-up message and whether unpickling it needs ``__main__``."""
        base: dict[str, Any] = {"kind": self.kind, "capacity": self.buffer.capacity}
        if self.kind == "pr":  # the training process draws the values: workers need no generator
            return [base] * self.n, False
        try:
            reward = pickle.dumps(worker_reward_fn(self.buffer))
        except Exception as err:  # PicklingError, AttributeError, TypeError: local or bound objects
            raise ValueError(
                f"train({self.option}={self.n}): the HER reward function cannot be pickled for the "
                f"sampler processes ({type(err).__name__}: {err}); define reward_done_func (or the "
                f"env) at module level, or train without {self.option}") from None
        # one draw from the buffer's generator seeds every worker: seeded runs repeat
        seeds = np.random.SeedSequence(int(self.buffer.rng.integers(2**63))).spawn(self.n)
        return [dict(base, reward_fn=reward, seed=s) for s in seeds], b"__main__" in reward

    def _start(self, inits: list[dict[str, Any]], start_method: str, uses_main: bool) -> None:
        standard_start_method()  # see its docstring (joblib/loky workers)
        ctx = mp.get_context(start_method)
        with contextlib.nullcontext() if uses_main else main_not_rerun():
            for i, init in enumerate(inits):
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=_worker_main, args=(child, init), daemon=True,
                                   name=f"note_rl-sampler-{i}")
                proc.start()
                child.close()  # so a dead worker shows as EOF on our end
                self.conns.append(parent)
                self.procs.append(proc)
        for i in range(self.n):
            self._recv(i)  # "ready" or the start-up error

    # -- talking to the workers ----------------------------------------------------------------
    def _recv(self, i: int) -> Any:
        try:
            status, payload = self.conns[i].recv()
        except (EOFError, OSError):
            raise SamplerError(f"{self.option} worker {i} died (exit code {self.procs[i].exitcode})") from None
        if status == "error":
            raise SamplerError(f"{self.option} worker {i} failed:\n{payload}")
        return payload

    def _call(self, cmd: str, payloads: dict[int, Any]) -> list[Any]:
        """Send ``cmd`` to the workers in ``payloads`` (all at once, so they work in parallel)
        and collect their replies in worker order.  Any failure closes the sampler: replies left
        in the other pipes would otherwise be read as the next draw's."""
        if self.closed:
            raise SamplerError(f"the {self.option} sampler is closed")
        try:
            for i, payload in payloads.items():
                try:
                    self.conns[i].send((cmd, payload))
                except OSError:  # a broken pipe: the worker is gone
                    raise SamplerError(f"{self.option} worker {i} died (exit code "
                                       f"{self.procs[i].exitcode})") from None
            return [self._recv(i) for i in payloads]
        except BaseException:
            self.close()
            raise

    def ping(self) -> None:
        """One empty round trip to every worker (what a draw costs besides the work itself)."""
        self._call("ping", dict.fromkeys(range(self.n)))

    def worker_modules(self, names: tuple[str, ...]) -> list[list[str]]:
        """Which of ``names`` each worker has imported (to check they stay framework-free)."""
        return self._call("modules", dict.fromkeys(range(self.n), names))

    @property
    def block_names(self) -> list[str]:
        """Names of the shared-memory blocks in use (under ``/dev/shm`` on Linux)."""
        return [shm.name for shm in self._shared.blocks.values()]

    # -- shared storage ------------------------------------------------------------------------
    def _arrays(self) -> dict[str, np.ndarray]:
        arrays = dict(self.buffer.data)
        if self.kind == "pr":
            arrays["tree"] = self.buffer.tree._tree
        return arrays

    def _rebind(self, name: str, array: np.ndarray) -> None:
        if name == "tree":
            # not through the `tree` setter: it would mark possibly stale top levels fresh
            self.buffer.tree._tree = array
        else:
            self.buffer.data[name] = array

    def _sync(self) -> None:
        """Share every array the buffer allocated or replaced since the last draw.  A failure
        (e.g. /dev/shm full) closes the sampler: the workers would not know of what was shared."""
        changed: dict[str, Spec] = {}
        replaced: list[SharedMemory] = []
        try:
            for name, array in self._arrays().items():
                if array is not self._shared.views.get(name):
                    view, changed[name], old = self._shared.share(name, array)
                    self._rebind(name, view)
                    if old is not None:
                        replaced.append(old)
            if changed:
                self._call("attach", dict.fromkeys(range(self.n), changed))
        except BaseException:
            self.close()
            raise
        finally:  # the workers have switched over (or are gone): the replaced blocks can go
            for shm in replaced:
                _release(shm, unlink=True)

    def _unshare(self) -> None:
        """Give the buffer private copies of the arrays it still holds from shared memory."""
        current = self._arrays()
        for name, view in self._shared.views.items():
            if current.get(name) is view:
                self._rebind(name, view.copy())

    # -- drawing -------------------------------------------------------------------------------
    def _chunks(self, batch: int) -> list[tuple[int, int, int]]:
        """``(worker, lo, hi)``: contiguous, near-equal chunks of the batch (empty ones left out)."""
        bounds = [batch * i // self.n for i in range(self.n + 1)]
        return [(i, bounds[i], bounds[i + 1]) for i in range(self.n) if bounds[i + 1] > bounds[i]]

    def sample(self, batch: int) -> Batch:
        """A mini-batch drawn by the workers, as ``buffer.sample(batch)`` would return it."""
        if self.closed:
            raise SamplerError(f"the {self.option} sampler is closed")
        buffer = self.buffer
        if len(buffer) == 0 or not buffer.data:
            return buffer.sample(batch)  # raises the buffer's own "empty" error
        self._sync()
        return self._sample_pr(batch) if self.kind == "pr" else self._sample_her(batch)

    def _sample_pr(self, batch: int) -> Batch:
        buffer: PrioritizedReplayBuffer = self.buffer  # type: ignore[assignment]
        tree = buffer.tree
        total = float(tree._top_prefix()[-1])  # the total as the workers' search sees it
        if total <= 0.0:
            return buffer.sample(batch)  # all priorities zero: the buffer's own error
        values = _stratified_values(batch, total, buffer.rng)
        parts = self._call("draw_pr", {i: values[lo:hi] for i, lo, hi in self._chunks(batch)})
        slots, prio, *rows = (np.concatenate(field) for field in zip(*parts))
        if prio.min() <= 0.0:  # as PrioritizedReplayBuffer._draw: rounding hit an empty slot
            empty = prio <= 0.0
            slots[empty] = ReplayBuffer.sample_slots(buffer, int(empty.sum()))
            prio = tree.get(slots)
            rows = list(buffer.get(slots)[:5])  # rare: gathered here
        return Batch(*rows, slots, _is_weights(buffer.beta, prio))

    def _sample_her(self, batch: int) -> Batch:
        buffer: HerReplayBuffer = self.buffer  # type: ignore[assignment]
        if getattr(buffer, "shuffle", False):  # passes live in this process; train() refuses it too
            raise ValueError(f"{self.option} cannot draw shuffled passes (shuffle=True is for uniform replay)")
        n_her = buffer.n_relabelled(batch)
        pos, size = int(buffer.pos[0]), int(buffer.sizes[0])
        payloads = {i: (hi - lo, min(max(n_her - lo, 0), hi - lo), pos, size)
                    for i, lo, hi in self._chunks(batch)}
        parts = self._call("draw_her", payloads)
        return Batch(*(np.concatenate(field) for field in zip(*parts)))

    # -- closing -------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the workers, give the buffer private arrays back and unlink every block."""
        if self.closed:
            return
        self.closed = True
        try:
            stop_workers(self.conns, self.procs)
        finally:
            try:
                self._unshare()
            finally:
                self._finalizer()  # release_all(), once

    def __enter__(self) -> "ParallelSampler":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _stratified_values(batch: int, total: float, rng: np.random.Generator) -> np.ndarray:
    """The values :meth:`SumTree.sample` searches for, computed the same way (bit for bit)."""
    step = total / batch
    values = rng.random(batch)
    values *= step
    values += np.arange(batch, dtype=np.float64) * step
    return np.minimum(values, math.nextafter(total, 0.0), out=values)


def _is_weights(beta: float | None, prio: np.ndarray) -> np.ndarray | None:
    """``PrioritizedReplayBuffer.sample``'s importance-sampling weights for priorities ``prio``."""
    if beta is None:
        return None
    beta = float(beta)
    w = np.divide(float(prio.min()) if beta >= 0.0 else prio.max(), prio)
    return np.power(w, beta, out=w).astype(np.float32)


# -- the worker process ------------------------------------------------------------------------
class _ChunkHer(HerReplayBuffer):
    """A worker's HER sampler over the shared arrays: relabels the chunk's share of the batch's
    first ``n_relabelled(batch)`` items instead of its own fraction."""

    chunk_relabelled = 0

    def n_relabelled(self, batch: int) -> int:
        return self.chunk_relabelled


class _Worker:
    """State of one sampler worker; ``cmd_<name>`` answers the command ``name``."""

    def __init__(self, init: dict[str, Any]) -> None:
        self.blocks: dict[str, SharedMemory] = {}
        capacity = init["capacity"]
        self.tree = SumTree(capacity) if init["kind"] == "pr" else None
        if init["kind"] == "pr":
            self.rows: ReplayBuffer = ReplayBuffer(capacity)  # a shell over the shared arrays
        else:
            self.rows = _ChunkHer(capacity, pickle.loads(init["reward_fn"]), seed=init["seed"])

    def cmd_attach(self, specs: dict[str, Spec]) -> None:
        for name, (block, shape, dtype) in specs.items():
            shm = SharedMemory(name=block)
            view = np.ndarray(shape, dtype, buffer=shm.buf)
            if name == "tree":
                self.tree._tree = view
            else:
                self.rows.data[name] = view
            old = self.blocks.pop(name, None)
            self.blocks[name] = shm
            if old is not None:  # the training process unlinks it
                _release(old, unlink=False)

    def cmd_draw_pr(self, values: np.ndarray) -> tuple[np.ndarray, ...]:
        tree = self.tree
        slots = tree._find(np.array(values, dtype=np.float64), tree._top_prefix())
        b = self.rows.get(slots)
        return slots, tree.get(slots), b.state, b.action, b.next_state, b.reward, b.done

    def cmd_draw_her(self, request: tuple[int, int, int, int]) -> tuple[np.ndarray, ...]:
        m, n_her, pos, size = request
        her: _ChunkHer = self.rows  # type: ignore[assignment]
        her.pos[0], her.sizes[0], her.chunk_relabelled = pos, size, n_her
        return tuple(her.sample(m))[:6]

    def cmd_ping(self, _: Any) -> None:
        return None

    def cmd_modules(self, names: tuple[str, ...]) -> list[str]:
        return [name for name in names if name in sys.modules]

    def detach(self) -> None:
        self.rows.data, self.tree = {}, None  # drop the views so the blocks can be unmapped
        for shm in self.blocks.values():
            _release(shm, unlink=False)


def _worker_main(conn: Any, init: dict[str, Any]) -> None:
    """Body of a sampler process: answer commands until ``close`` or the training process goes."""
    try:
        worker = _Worker(init)
        conn.send(("ok", None))
    except BaseException:
        conn.send(("error", traceback.format_exc()))
        return
    try:
        while True:
            try:
                cmd, payload = conn.recv()
            except (EOFError, OSError):
                break
            if cmd == "close":
                break
            try:
                conn.send(("ok", getattr(worker, f"cmd_{cmd}")(payload)))
            except Exception:
                conn.send(("error", traceback.format_exc()))
    finally:
        worker.detach()
