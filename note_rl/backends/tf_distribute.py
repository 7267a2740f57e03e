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
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import tensorflow as tf

__all__ = ["ReplicaStep", "all_reduce_for_clipping", "replica_count", "scaled_loss"]


def scaled_loss(loss_fn: Callable[..., Any], factor: float) -> Callable[..., Any]:
    """``loss_fn`` whose loss(es) are multiplied by ``factor`` (one loss, a list or a dict)."""

    def scaled(*inputs: Any) -> Any:
        out = loss_fn(*inputs)
        if isinstance(out, dict):
            return {k: v * factor for k, v in out.items()}
        if isinstance(out, (list, tuple)):
            return type(out)(v * factor for v in out)
        return out * factor

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


class ReplicaStep:
    """``step(*arrays) -> (losses, td, ratio)`` running ``body`` on every replica of ``strategy``.

    :param strategy: the strategy whose scope the step was built in
    :param body: the per-replica step (loss, gradients, optimizer), returning
        ``(losses, td, ratio)`` with ``td`` / ``ratio`` possibly ``None``
    """

    def __init__(self, strategy: Any, body: Callable[..., Any]) -> None:
        self.strategy = strategy
        self.replicas = strategy.num_replicas_in_sync

        def replica(*inputs: Any) -> Any:
            losses, td, ratio = body(*inputs)
            # strategy.run's outputs cannot hold None (and gathering empty tensors crashes TF 2.21):
            # only what the loss recorded is returned
            out = {"losses": list(losses)}
            for key, value in (("td", td), ("ratio", ratio)):
                if value is not None:
                    out[key] = tf.cast(tf.reshape(value, [-1]), tf.float32)
            return out

        def run(*per_replica: Any) -> Any:
            out = strategy.run(replica, args=per_replica)
            total = [strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None) for v in out["losses"]]
            return total, *(strategy.gather(out[k], axis=0) if k in out else None for k in ("td", "ratio"))

        self._run = tf.function(run, reduce_retracing=True)

    def __call__(self, *arrays: np.ndarray) -> tuple[list[Any], Any, Any]:
        n = len(arrays[0])
        if n % self.replicas:
            raise ValueError(f"distributed_training: the batch of {n} does not split evenly over "
                             f"{self.replicas} replicas; make batch a multiple of {self.replicas}")
        size = n // self.replicas
        inputs = [self._split(np.asarray(a), size) for a in arrays]
        return self._run(*inputs)

    def _split(self, array: np.ndarray, size: int) -> Any:
        def part(ctx: Any) -> Any:
            r = ctx.replica_id_in_sync_group
            return tf.constant(array[r * size:(r + 1) * size])

        return self.strategy.experimental_distribute_values_from_function(part)


def replica_count() -> int:
    """Replicas of the strategy whose scope is active (1 outside any scope)."""
    return tf.distribute.get_strategy().num_replicas_in_sync if tf.distribute.has_strategy() else 1
