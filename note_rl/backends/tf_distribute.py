"""Gradient steps under a ``tf.distribute`` strategy with several replicas (``MirroredStrategy``).

Used by :meth:`note_rl.backends.tf_backend.TFBackend.make_update` when the step is built inside
``strategy.scope()`` (``agent.distributed_training(strategy=...)``).  One step on a global batch of
``B`` items:

1. the batch is split in ``R`` equal contiguous slices, slice ``r`` placed on replica ``r``;
2. each replica runs the agent's loss on its slice; the loss (a mean over ``B / R`` items) is
   multiplied by ``1 / R``, so the replicas' losses add up to the mean over the global batch, which
   is what ``tf.nn.compute_average_loss(..., global_batch_size=B)`` gives for per-item losses;
3. gradients are summed across replicas (the Keras optimizer all-reduces them), i.e. the gradient
   of the global mean: the same update as one device on the whole batch.  Gradient clipping
   (``max_grad_norm``) needs the global gradient, so when it is on the gradients are all-reduced
   first, clipped, and divided by ``R`` before the optimizer sums the ``R`` identical copies again;
4. the losses are summed across replicas and the TD errors / ratios the loss recorded are gathered
   in slice order, so prioritized replay gets one value per item of the global batch.

With several workers (``MultiWorkerMirroredStrategy``, one process per worker, ``TF_CONFIG``) each
worker passes only its own share of the global batch (``B * local / R`` items from its own buffer,
split over its local replicas) and gets back the TD errors of its own items.  Workers collect on
their own and may finish at different times, so each step also all-reduces two flags, ``stop``
(any worker's ``stop_training`` stops them all) and ``active``: a worker that has finished keeps
running the step on its last batch with its loss scaled by 0 (a zero gradient: it applies the
others' update, so the weights stay identical) until no worker is active (:class:`WorkerSession`).
A worker that dies mid-run (killed, crashed, frozen) aborts the collectives of the others: TF notices a
closed connection at once and a worker that stops sending heartbeats within about ten seconds (its
coordination service); each survivor then raises one :class:`~note_rl.distributed.ReplicaLost` line
naming the lost worker, instead of TF's multi-line graph error.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

from ..replica_errors import ReplicaLost

__all__ = ["ReplicaStep", "ScheduledStep", "WorkerSession", "is_parameter_server", "all_reduce_for_clipping", "broadcast_from_first",
           "local_replicas", "lost_workers", "replica_count", "scaled_loss"]

# the multi-worker loss factor (``active / R``) of the replica function being traced
_FACTOR: dict[str, Any] = {"value": None}


def scaled_loss(loss_fn: Callable[..., Any], factor: float) -> Callable[..., Any]:
    """``loss_fn`` whose loss(es) are multiplied by ``factor`` (one loss, a list or a dict); in a
    multi-worker step by the traced ``active / R`` instead (0 on a finished worker)."""

    def scaled(*inputs: Any) -> Any:
        out = loss_fn(*inputs)
        factor_now = _FACTOR["value"] if _FACTOR["value"] is not None else factor
        if isinstance(out, dict):
            return {k: v * factor_now for k, v in out.items()}
        if isinstance(out, (list, tuple)):
            return type(out)(v * factor_now for v in out)
        return out * factor_now

    return scaled


def all_reduce_for_clipping(grads: list[Any]) -> tuple[list[Any], float]:
    """In a replica context with several replicas: the summed (global) gradients and ``R``;
    otherwise the gradients unchanged and 1."""
    ctx = tf.distribute.get_replica_context()
    replicas = ctx.num_replicas_in_sync if ctx is not None else 1
    if replicas == 1:
        return grads, 1
    present = [i for i, g in enumerate(grads) if g is not None]
    reduced = ctx.all_reduce(tf.distribute.ReduceOp.SUM, [grads[i] for i in present])
    out = list(grads)
    for i, g in zip(present, reduced):
        out[i] = g
    return out, replicas


def local_replicas(strategy: Any) -> int:
    """Replicas of ``strategy`` in this process (all of them, except with several workers)."""
    return len(strategy.extended.worker_devices)


class ReplicaStep:
    """``step(*arrays) -> (losses, td, ratio)`` running ``body`` on every replica of ``strategy``.

    :param strategy: the strategy whose scope the step was built in
    :param body: the per-replica step (loss, gradients, optimizer), returning
        ``(losses, td, ratio)`` with ``td`` / ``ratio`` possibly ``None``
    """

    def __init__(self, strategy: Any, body: Callable[..., Any]) -> None:
        self.strategy = strategy
        self.replicas = strategy.num_replicas_in_sync
        self.local = local_replicas(strategy)
        self.multi_worker = self.local != self.replicas
        self.session = WorkerSession.current() if self.multi_worker else None
        self.last: tuple[np.ndarray, ...] | None = None  # a finished worker replays its last batch
        replicas = self.replicas

        def replica(*inputs: Any) -> Any:
            flags = None
            if self.multi_worker:
                *inputs, flags = inputs
                _FACTOR["value"] = flags[1] / replicas  # 1/R, or 0 on a finished worker
            try:
                losses, td, ratio = body(*inputs)
            finally:
                _FACTOR["value"] = None
            # strategy.run's outputs cannot hold None (and gathering empty tensors crashes TF 2.21):
            # only what the loss recorded is returned
            out = {"losses": list(losses)}
            for key, value in (("td", td), ("ratio", ratio)):
                if value is not None:
                    out[key] = tf.cast(tf.reshape(value, [-1]), tf.float32)
            if flags is not None:  # losses and flags summed here: strategy.reduce of a worker's one
                # replica's plain tensor fails in TF 2.21 ("destinations can not be empty")
                ctx = tf.distribute.get_replica_context()
                rid = tf.get_static_value(ctx.replica_id_in_sync_group) or 0
                device = strategy.extended.worker_devices[int(rid) % self.local]
                with tf.device(device):  # an all-reduce needs tensors placed on a device
                    placed = [tf.identity(v) for v in (*out["losses"], flags)]
                reduced = ctx.all_reduce(tf.distribute.ReduceOp.SUM, placed)
                out["losses"], out["flags"] = list(reduced[:-1]), reduced[-1]
            return out

        def run(*per_replica: Any) -> Any:
            out = strategy.run(replica, args=per_replica)
            if "flags" in out:
                total = [strategy.experimental_local_results(v)[0] for v in out["losses"]]
            else:
                total = [strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None) for v in out["losses"]]
            local = [tf.concat(strategy.experimental_local_results(out[k]), axis=0) if k in out else None
                     for k in ("td", "ratio")]  # this worker's items, in slice order
            flags = strategy.experimental_local_results(out["flags"])[0] if "flags" in out else None
            return total, *local, flags

        self._run = tf.function(run, reduce_retracing=True)
        if self.session is not None:
            self.session.steps.append(self)

    def __call__(self, *arrays: np.ndarray) -> tuple[list[Any], Any, Any]:
        self.last = arrays
        stop = bool(self.session is not None and self.session.agent.stop_training)
        losses, td, ratio, flags = self._call(arrays, active=True, stop=stop)
        if flags is not None and float(flags[0]) > 0 and self.session is not None:
            self.session.agent.stop_training = True
        return losses, td, ratio

    def shadow(self, stop: bool) -> bool:
        """One step with a zero loss on the last batch; whether any worker is still active."""
        _, _, _, flags = self._call(self.last, active=False, stop=stop)
        return float(flags[1]) > 0

    def _call(self, arrays: tuple[np.ndarray, ...], active: bool, stop: bool) -> Any:
        n = len(arrays[0])
        if n % self.local:
            raise ValueError(f"distributed_training: the batch of {n} does not split evenly over "
                             f"{self.local} replicas; make batch a multiple of {self.replicas}")
        size = n // self.local
        inputs = [self._split(np.asarray(a), size) for a in arrays]
        if self.multi_worker:
            inputs.append(self._split(np.array([[float(stop), float(active)]] * self.local, np.float32), 1,
                                      squeeze=True))
        with lost_workers(self.strategy, "a gradient step"):
            return self._run(*inputs)

    def _split(self, array: np.ndarray, size: int, squeeze: bool = False) -> Any:
        local = self.local

        def part(ctx: Any) -> Any:
            r = ctx.replica_id_in_sync_group % local  # workers hold equal numbers of replicas
            piece = array[r * size:(r + 1) * size]
            return tf.constant(piece[0] if squeeze else piece)

        return self.strategy.experimental_distribute_values_from_function(part)


def is_parameter_server(strategy: Any) -> bool:
    """Whether ``strategy`` is a ``ParameterServerStrategy`` (variables on parameter servers, steps
    scheduled on workers by a coordinator)."""
    return "ParameterServer" in type(strategy).__name__


class ScheduledStep:
    """``step(*arrays) -> (losses, td, ratio)`` under ``ParameterServerStrategy``: the coordinator
    (this process, which collects) schedules each gradient step on a free worker, whose replica reads
    and updates the variables on the parameter servers; the step's losses and TD errors are fetched
    before the next step (prioritized replay needs them), so the workers take turns.

    :param strategy: the strategy whose scope the step was built in
    :param body: the per-replica step, as for :class:`ReplicaStep`
    """

    def __init__(self, strategy: Any, body: Callable[..., Any]) -> None:
        # one coordinator per strategy: the constructor returns the strategy's existing one
        self.coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

        def replica(*inputs: Any) -> Any:
            losses, td, ratio = body(*inputs)
            out = {"losses": list(losses)}
            for key, value in (("td", td), ("ratio", ratio)):
                if value is not None:
                    out[key] = tf.cast(tf.reshape(value, [-1]), tf.float32)
            return out

        self._run = tf.function(lambda *inputs: strategy.run(replica, args=inputs), reduce_retracing=True)

    def __call__(self, *arrays: np.ndarray) -> tuple[list[Any], Any, Any]:
        remote = self.coordinator.schedule(self._run, args=tuple(tf.constant(np.asarray(a)) for a in arrays))
        out = remote.fetch()
        return list(out["losses"]), out.get("td"), out.get("ratio")


class WorkerSession:
    """One ``distributed_training`` call under a multi-worker strategy: the steps it builds share the
    agent's ``stop_training``; at the end a finished worker shadows the others' steps."""

    _current: "WorkerSession | None" = None

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.steps: list[ReplicaStep] = []

    @classmethod
    def current(cls) -> "WorkerSession | None":
        return cls._current

    def __enter__(self) -> "WorkerSession":
        WorkerSession._current = self
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        WorkerSession._current = None
        if kind is not None:
            return
        used = [s for s in self.steps if s.last is not None]
        if used:
            stop = bool(self.agent.stop_training)
            while used[0].shadow(stop):
                pass


def broadcast_from_first(strategy: Any, variables: Sequence[Any]) -> None:
    """Give every worker the first replica's values of ``variables`` (the same list everywhere):
    Keras variables built under a multi-worker scope start from each worker's own initialiser."""
    variables = list(variables)
    if not variables:
        return

    def replica() -> Any:
        ctx = tf.distribute.get_replica_context()
        first = tf.cast(tf.equal(ctx.replica_id_in_sync_group, 0), tf.float32)
        return ctx.all_reduce(tf.distribute.ReduceOp.SUM,
                              [tf.cast(tf.convert_to_tensor(v), tf.float32) * first for v in variables])

    with lost_workers(strategy, "the broadcast of the first worker's weights"):
        reduced = strategy.run(tf.function(replica))
    values = [strategy.experimental_local_results(v)[0] for v in reduced]
    for var, value in zip(variables, values):
        var.assign(tf.cast(value, var.dtype))


# what TF's collectives raise when a peer is gone: a closed connection (Unavailable), the
# coordination service's missed heartbeats (Unavailable), a CommunicationOptions timeout
# (DeadlineExceeded), and the aborted collectives that follow (Cancelled, Aborted, Internal)
_PEER_ERRORS = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError, tf.errors.CancelledError,
                tf.errors.AbortedError, tf.errors.InternalError)
_TASK = re.compile(r"/job:(\w+)/(?:replica:\d+/)?task:(\d+)")


class lost_workers:
    """``with lost_workers(strategy, "a gradient step"):`` turns TF's error for a collective that a
    dead peer aborted into one :class:`~note_rl.distributed.ReplicaLost` line naming that peer."""

    def __init__(self, strategy: Any, doing: str) -> None:
        self.strategy = strategy
        self.doing = doing

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if not isinstance(exc, _PEER_ERRORS):
            return
        text = str(getattr(exc, "message", "") or exc)
        if isinstance(exc, tf.errors.InternalError) and "ollective" not in text:
            return  # an internal error of the step itself, not a lost peer
        resolver = getattr(self.strategy, "cluster_resolver", None)
        me = (getattr(resolver, "task_type", None), getattr(resolver, "task_id", None))
        peers = sorted({f"{job} {task}" for job, task in _TASK.findall(text) if (job, int(task)) != me})
        who = " or ".join(peers) if peers else "another worker"
        cause = re.search(r"aborted by: (.+)", text) or re.search(r"(Connection [\w ]+|stopped sending heartbeats|"
                                                                   r"[Dd]eadline [Ee]xceeded|timed out)", text)
        reason = cause.group(1).strip().rstrip(":") if cause else type(exc).__name__
        workers = self.strategy.num_replicas_in_sync // max(local_replicas(self.strategy), 1)
        where = f"{me[0]} {me[1]} of {workers}" if me[0] is not None else "this process"
        raise ReplicaLost(f"distributed_training: {where} lost contact with {who} during {self.doing} "
                          f"({reason}); it was killed, crashed or stopped answering, see its output") from None


def replica_count() -> int:
    """Replicas of the strategy whose scope is active (1 outside any scope)."""
    return tf.distribute.get_strategy().num_replicas_in_sync if tf.distribute.has_strategy() else 1
