"""``tf.distribute`` strategies made from plain settings, and agents built in a strategy's scope
sent to another process: what the tuner's ``strategy=mirrored | multi_worker | parameter_server``
and its finders' ``strategy=`` need of TensorFlow, reached through
:meth:`note_rl.backends.tf_backend.TFBackend.make_strategy` and
:meth:`~note_rl.backends.tf_backend.TFBackend.dumps_distributed`."""

from __future__ import annotations

import io
import pickle
from typing import Any, Sequence

import numpy as np
import tensorflow as tf

__all__ = ["dumps_distributed", "make_strategy", "plain_variable"]


def make_strategy(name: str, devices: Sequence[str] | None = None, logical_cpus: int | None = None,
                  device: str | None = None) -> Any:
    """The strategy called ``name`` (``mirrored``, ``multi_worker``, ``parameter_server``), made
    before TensorFlow runs anything: ``logical_cpus`` splits the CPU into that many devices, which
    must happen first.  ``mirrored`` runs on ``devices``, else where ``device`` (``backend.device``)
    places it; the cluster strategies read the cluster from ``TF_CONFIG``."""
    if name == "mirrored":
        if logical_cpus:
            cpu = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * int(logical_cpus))
        return tf.distribute.MirroredStrategy(list(devices) if devices else _placement(device))
    if name not in ("multi_worker", "parameter_server"):
        raise ValueError(f"unknown tf.distribute strategy {name!r}; choose mirrored, multi_worker or parameter_server")
    from ..ps_server import ensure_inter_op_threads

    ensure_inter_op_threads()  # the cluster strategies' steps wait on other tasks while holding one
    if name == "multi_worker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    return tf.distribute.ParameterServerStrategy(resolver)


def _placement(device: str | None) -> list[str] | None:
    """MirroredStrategy's devices from ``backend.device`` when no devices are given: ``cpu`` the
    (logical) CPUs even where GPUs are present, ``cuda`` / ``gpu`` every GPU, ``cuda:N`` GPU N;
    ``auto`` leaves it to TensorFlow (every GPU, else the CPUs)."""
    device = str(device or "auto").lower()
    if device == "auto":
        return None
    kind, _, index = device.partition(":")
    if kind == "cpu":
        return [d.name for d in tf.config.list_logical_devices("CPU")]
    if index:
        return [f"/gpu:{int(index)}"]
    return [d.name for d in tf.config.list_logical_devices("GPU")] or None


def plain_variable(value: Any, trainable: bool, name: str) -> Any:
    """A ``tf.Variable`` of ``value``: how :func:`dumps_distributed` makes a distributed variable
    again (unpickled inside a strategy's scope, it is a distributed one of that strategy)."""
    return tf.Variable(value, trainable=trainable, name=name)


def dumps_distributed(agent: Any) -> bytes:
    """``pickle.dumps(agent)`` for an agent built in a strategy's scope, whose variables cannot be
    pickled (they hold weak references to the strategy): each goes as its value and is made again
    by :func:`plain_variable`."""

    class _Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, tf.distribute.DistributedValues) and hasattr(obj, "read_value"):
                return plain_variable, (np.asarray(obj.read_value()), bool(obj.trainable), obj.name.split(":")[0])
            return NotImplemented

    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(agent)
    return buffer.getvalue()
