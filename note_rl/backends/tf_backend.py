"""TensorFlow/Keras 3 implementation of the backend seam.

Gradient steps run inside one ``tf.function`` (``jit_compile`` selects XLA).  Keras 3 optimizers
read ``beta_1``, ``beta_2`` and ``weight_decay`` as Python floats, which a traced function would
freeze as constants; :meth:`TFBackend.prepare_optimizer` turns them into ``tf.Variable`` so that
adjusters can change them between steps and the compiled step sees the new value.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any, Callable, Iterator, Sequence

# errors reach Python as exceptions; TensorFlow's C++ log lines (XLA set-up, "failed call to cuInit"
# on a machine without a GPU) are noise in an RL run's output.  TF_CPP_MIN_LOG_LEVEL=0 shows them.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


@contextlib.contextmanager
def _native_stderr_silenced() -> Iterator[None]:
    """Drop what native code writes to file descriptor 2 meanwhile.  TensorFlow 2.21's C++ logging
    prints informational lines (oneDNN, missing CUDA drivers, cuInit) at import and when it first
    looks for devices, whatever TF_CPP_MIN_LOG_LEVEL says; Python exceptions are unaffected."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:  # no file descriptor 2 (embedded interpreters): nothing to silence
        yield
        return
    os.dup2(null, 2)
    os.close(null)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


from . import require_framework  # noqa: E402

require_framework("tf")  # one line that says how to install TensorFlow, not a bare ModuleNotFoundError
with _native_stderr_silenced():
    import keras  # noqa: E402
    import tensorflow as tf  # noqa: E402
import numpy as np  # noqa: E402

from ..optim import OptimizerSpec  # noqa: E402
from ..utils import network_input  # noqa: E402
from .base import (Backend, BoundGroup, DeviceError, StepFn, StepResult, check_device_name,  # noqa: E402
                   distinct, split_losses, sum_losses)
from .tf_distribute import (ReplicaStep, ScheduledStep, all_reduce_for_clipping, is_parameter_server,  # noqa: E402
                            replica_count, scaled_loss)
from .tf_strategies import dumps_distributed, make_strategy  # noqa: E402

__all__ = ["TFBackend", "BACKEND"]

# optimizer attributes that must become variables to stay adjustable inside tf.function (only
# those used arithmetically: SGD's momentum feeds a Python `if`, so it stays a float)
_VARIABLE_HPARAMS = {"beta1": "beta_1", "beta2": "beta_2", "weight_decay": "weight_decay", "rho": "rho"}


class _ByShape:
    """A ``tf.function`` called through the concrete function of the exact argument shapes and
    dtypes.

    Why: calling a ``tf.function`` first matches its arguments against its traces, which costs
    about half a millisecond per call on a small CPU - as much as a whole gradient step of a small
    network.  Calling the concrete function skips that.  Tracing is unchanged (one trace per
    distinct shape, as ``tf.function`` does until it relaxes shapes); after ``MAX_SHAPES`` distinct
    shapes the ``tf.function`` itself is called, so varying shapes never trace without bound.
    """

    MAX_SHAPES = 8

    def __init__(self, fn: Callable[..., Any], jit: bool) -> None:
        self.function = tf.function(fn, jit_compile=jit, reduce_retracing=True)
        self.concrete: dict[tuple[Any, ...], Any] = {}

    def __call__(self, *arrays: Any) -> Any:
        arrays = tuple(np.asarray(a) for a in arrays)
        key = tuple((a.shape, a.dtype.str) for a in arrays)
        fn = self.concrete.get(key)
        if fn is None:
            if len(self.concrete) >= self.MAX_SHAPES:
                return self.function(*arrays)
            specs = [tf.TensorSpec(a.shape, tf.as_dtype(a.dtype)) for a in arrays]
            fn = self.concrete[key] = self.function.get_concrete_function(*specs)
        return fn(*[tf.constant(a) for a in arrays])



class _NeedsPersistentTape(Exception):
    """Raised while tracing a step whose loss function returned several losses."""


class _GroupUpdate:
    """The graph code of one step after the loss: split the losses over the groups, differentiate,
    clip (each group to its ``max_grad_norm``, then all to ``clip_norm``), apply each optimizer once
    and collect what the loss recorded.  Called while tracing; AutoGraph leaves it alone."""

    def __init__(self, groups: Sequence[BoundGroup], clip_norm: float | None, recorder: Any) -> None:
        self.groups, self.clip_norm, self.recorder = list(groups), clip_norm, recorder
        self.names = [g.name for g in groups]
        self.flat = [v for g in groups for v in g.variables]
        self.bounds = np.cumsum([0] + [len(g.variables) for g in groups])
        self.optimizers = distinct(g.optimizer for g in groups)
        self.labels: list[str | None] = []  # the losses' labels, known once traced

    @tf.autograph.experimental.do_not_convert
    def __call__(self, tape: Any, out: Any, persistent: bool) -> Any:
        # first, before anything that synchronises replicas (all-reduce, the optimizer's merge
        # call): under tf.distribute the replicas share the recorder and trace one after another
        td, ratio = self.recorder.pop()
        parts = split_losses(out, self.names)
        if len(parts) > 1 and not persistent:
            raise _NeedsPersistentTape
        b = self.bounds
        if len(parts) == 1:
            grads = list(tape.gradient(parts[0][1], self.flat))
        else:
            grads = [None] * len(self.flat)
            for _, loss, (i,) in parts:
                grads[b[i]:b[i + 1]] = tape.gradient(loss, self.groups[i].variables)
        clipping = self.clip_norm is not None or any(g.max_grad_norm is not None for g in self.groups)
        replicas = 1
        if clipping:  # several replicas: clip the global gradient, not each replica's share
            grads, replicas = all_reduce_for_clipping(grads)
        for i, g in enumerate(self.groups):
            if g.max_grad_norm is not None:
                grads[b[i]:b[i + 1]] = tf.clip_by_global_norm(grads[b[i]:b[i + 1]], g.max_grad_norm)[0]
        if self.clip_norm is not None:
            grads = list(tf.clip_by_global_norm(grads, self.clip_norm)[0])
        if replicas > 1:  # the optimizer sums the replicas' (now identical) gradients once more
            grads = [None if g is None else g / replicas for g in grads]
        for opt in self.optimizers:
            opt.apply_gradients([(g, v) for i, grp in enumerate(self.groups) if grp.optimizer is opt
                                 for g, v in zip(grads[b[i]:b[i + 1]], grp.variables) if g is not None])
        self.labels = [label for label, _, _ in parts]
        return [loss for _, loss, _ in parts], td, ratio


def _config_value(value: Any) -> Any:
    """A value ``from_config`` can take back: JSON as it is, a number as a float, else ``None``."""
    try:
        json.dumps(value)
        return value
    except TypeError:
        try:
            return float(np.asarray(value))
        except (TypeError, ValueError):
            return None


# Keras optimizers and their arguments for each note_rl.optim spec kind (Keras takes
# weight_decay=None for "none"; AdamW always decays)
_OPTIMIZERS: dict[str, Callable[[Any], Any]] = {
    "adam": lambda s: keras.optimizers.Adam(s.lr, beta_1=s.beta1, beta_2=s.beta2, epsilon=s.eps,
                                            weight_decay=s.weight_decay or None),
    "adamw": lambda s: keras.optimizers.AdamW(s.lr, weight_decay=s.weight_decay, beta_1=s.beta1,
                                              beta_2=s.beta2, epsilon=s.eps),
    "adamax": lambda s: keras.optimizers.Adamax(s.lr, beta_1=s.beta1, beta_2=s.beta2, epsilon=s.eps,
                                                weight_decay=s.weight_decay or None),
    "sgd": lambda s: keras.optimizers.SGD(s.lr, momentum=s.momentum, weight_decay=s.weight_decay or None),
    # the spec's eps is torch's, added outside the square root; Keras adds it inside, so it gets
    # eps**2: the same step when the root of the average is far from eps, at most sqrt(2)x larger
    # where they are equal (eps as given would damp small gradients up to sqrt(1/eps) times more)
    "rmsprop": lambda s: keras.optimizers.RMSprop(s.lr, rho=s.rho, momentum=s.momentum, epsilon=s.eps ** 2,
                                                  weight_decay=s.weight_decay or None),
}


def _numpy(x: Any) -> np.ndarray | None:
    return None if x is None else np.asarray(x)


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except TypeError:
        try:
            return float(value)
        except (TypeError, ValueError):
            return repr(value)


class TFBackend(Backend):
    """TensorFlow 2 / Keras 3."""

    name = "tf"

    def __init__(self) -> None:
        self._grad_fns: dict[int, Callable[..., Any]] = {}

    # -- the process: threads, device ---------------------------------------------------------
    def set_threads(self, n: int) -> None:
        super().set_threads(n)
        try:  # only possible before TensorFlow's runtime has started; the environment covers later
            tf.config.threading.set_intra_op_parallelism_threads(int(n))
            tf.config.threading.set_inter_op_parallelism_threads(int(n))
        except RuntimeError:
            pass

    def framework_threads(self) -> int | None:
        n = tf.config.threading.get_intra_op_parallelism_threads() or os.environ.get("TF_NUM_INTRAOP_THREADS")
        return int(n) if n else None

    def resolve_device(self, device: str | None) -> str:
        device = device or "auto"
        check_device_name(device)
        with _native_stderr_silenced():
            gpus = tf.config.list_physical_devices("GPU")
        if device == "auto":
            return "/GPU:0" if gpus else "/CPU:0"
        if device == "cpu":
            return "/CPU:0"
        if device == "mps":
            raise DeviceError("mps requested, but TensorFlow has no MPS device (use auto or cpu)")
        index = int(device.partition(":")[2] or 0)
        if index >= len(gpus):
            found = f"{len(gpus)} GPU(s)" if gpus else "no GPU"
            raise DeviceError(f"{device} requested, but TensorFlow sees {found} on this machine")
        return f"/GPU:{index}"

    def make_strategy(self, name: str, devices: Sequence[str] | None = None, logical_cpus: int | None = None,
                      device: str | None = None) -> Any:
        """``mirrored`` / ``multi_worker`` / ``parameter_server``: see
        :func:`note_rl.backends.tf_strategies.make_strategy`."""
        with _native_stderr_silenced():  # the device search prints "failed call to cuInit" without a GPU
            return make_strategy(name, devices, logical_cpus, device)

    def dumps_distributed(self, agent: Any) -> bytes:
        return dumps_distributed(agent)

    def seed(self, seed: int) -> None:
        keras.utils.set_random_seed(seed)

    def is_variable(self, obj: Any) -> bool:
        return isinstance(obj, (tf.Variable, keras.Variable))

    def get_weights(self, variables: Sequence[Any]) -> list[np.ndarray]:
        return [np.array(v.numpy()) for v in variables]

    def set_weights(self, variables: Sequence[Any], arrays: Sequence[np.ndarray]) -> None:
        for v, a in zip(variables, arrays, strict=True):
            v.assign(np.asarray(a).reshape(tuple(v.shape)))

    def modules(self, agent: Any) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name, value in vars(agent).items():
            if isinstance(value, keras.layers.Layer):
                found[name] = value
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, keras.layers.Layer):
                        found[f"{name}[{i}]"] = item
        return found

    def module_variables(self, module: Any) -> list[Any]:
        return list(module.weights)

    def module_weights(self, module: Any) -> list[np.ndarray]:
        return [np.array(w) for w in module.get_weights()]

    def set_module_weights(self, module: Any, arrays: Sequence[np.ndarray]) -> None:
        module.set_weights(list(arrays))

    def make_act(self, fn: Callable[..., Any], jit: bool,
                 variables: Sequence[Any] = ()) -> Callable[[np.ndarray], np.ndarray]:
        compiled = _ByShape(fn, jit)

        def act(s: np.ndarray) -> np.ndarray:
            return np.asarray(compiled(network_input(s)))

        return act

    def make_update(self, loss_fn: Callable[..., Any], groups: Sequence[BoundGroup], recorder: Any,
                    jit: bool, clip_norm: float | None = None, every_group: bool = True) -> StepFn:
        # (every_group needs nothing here: a tape differentiates with respect to the given variables only)
        update = _GroupUpdate(groups, clip_norm, recorder)
        # A persistent tape (one gradient per loss) only for a loss function that returns several
        # losses: it makes the traced graph larger and tracing slower.  The first trace finds out.
        mode = {"persistent": False}
        replicas = replica_count()  # built inside a tf.distribute strategy's scope: see tf_distribute
        if replicas > 1:
            loss_fn = scaled_loss(loss_fn, 1.0 / replicas)

        def body(*inputs: Any) -> Any:
            # kept this small: AutoGraph converts it (and through it the user's loss); the update
            # itself is plain graph code it need not analyse
            with tf.GradientTape(persistent=mode["persistent"]) as tape:
                out = loss_fn(*inputs)
            return update(tape, out, mode["persistent"])

        def build() -> Callable[..., Any]:
            # several replicas: tf.function around strategy.run, without XLA (jit_compile applies
            # to single-device steps)
            strategy = tf.distribute.get_strategy()
            if is_parameter_server(strategy):  # scheduled on the workers, variables on the PS
                return ScheduledStep(strategy, body)
            return ReplicaStep(strategy, body) if replicas > 1 else _ByShape(body, jit)

        compiled = build()

        def step(arrays: Sequence[np.ndarray]) -> StepResult:
            nonlocal compiled
            try:
                losses, td, ratio = compiled(*arrays)
            except _NeedsPersistentTape:  # raised while tracing: nothing ran yet
                recorder.pop()
                mode["persistent"] = True
                compiled = build()
                losses, td, ratio = compiled(*arrays)
            values = [float(v) for v in losses]
            if len(values) == 1:
                return StepResult(values[0], _numpy(td), _numpy(ratio))
            return StepResult(sum(values), _numpy(td), _numpy(ratio), dict(zip(update.labels, values)))

        return step

    def update_targets(self, targets: Sequence[Any], sources: Sequence[Any], tau: float) -> None:
        for t, s in zip(targets, sources, strict=True):
            t.assign(s if tau >= 1.0 else (1.0 - tau) * t + tau * s)

    def evaluate(self, loss_fn: Callable[..., Any], arrays: Sequence[np.ndarray],
                 recorder: Any) -> StepResult:
        out = loss_fn(*[tf.convert_to_tensor(a) for a in arrays])
        td, ratio = recorder.pop()
        losses = None
        if isinstance(out, (list, tuple, dict)):
            items = out.items() if isinstance(out, dict) else enumerate(out)
            losses = {str(k): float(v) for k, v in items}
        return StepResult(float(sum_losses(out)), _numpy(td), _numpy(ratio), losses)

    def gradient(self, loss_fn: Callable[..., Any], variables: Sequence[Any],
                 arrays: Sequence[np.ndarray]) -> np.ndarray:
        key = id(loss_fn)
        if key not in self._grad_fns:
            @tf.function(reduce_retracing=True)
            def grad_fn(*inputs: Any) -> Any:
                with tf.GradientTape() as tape:
                    loss = sum_losses(loss_fn(*inputs))
                grads = tape.gradient(loss, list(variables))
                return tf.concat([tf.reshape(tf.zeros_like(v) if g is None else g, [-1])
                                  for g, v in zip(grads, variables)], axis=0)

            self._grad_fns[key] = grad_fn
        return np.asarray(self._grad_fns[key](*arrays), dtype=np.float64)

    def loss_values(self, loss_fn: Callable[..., Any], variables: Sequence[Any],
                    arrays: Sequence[np.ndarray]) -> dict[str, float]:
        out = loss_fn(*[tf.convert_to_tensor(a) for a in arrays])
        return {str(k): float(v) for k, v in out.items()} if isinstance(out, dict) else {"loss": float(out)}

    def loss_gradient(self, loss_fn: Callable[..., Any], variables: Sequence[Any],
                      arrays: Sequence[np.ndarray]) -> tuple[float, np.ndarray]:
        variables = list(variables)
        with tf.GradientTape() as tape:
            loss = loss_fn(*[tf.convert_to_tensor(a) for a in arrays])
        grads = tape.gradient(loss, variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        return float(loss), tf.concat([tf.reshape(g, [-1]) for g in grads], 0).numpy().astype(np.float64)

    def hessian_vector_product(self, loss_fn: Callable[..., Any], variables: Sequence[Any],
                               arrays: Sequence[np.ndarray], vector: np.ndarray) -> np.ndarray:
        variables = list(variables)
        v = tf.constant(np.asarray(vector, np.float32))
        zero = tf.UnconnectedGradients.ZERO
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                loss = loss_fn(*[tf.convert_to_tensor(a) for a in arrays])
            grads = inner.gradient(loss, variables, unconnected_gradients=zero)
            gv = tf.reduce_sum(tf.concat([tf.reshape(g, [-1]) for g in grads], 0) * v)
        hv = outer.gradient(gv, variables, unconnected_gradients=zero)
        return tf.concat([tf.reshape(g, [-1]) for g in hv], 0).numpy().astype(np.float64)

    # -- optimizers --------------------------------------------------------------------------
    def build_optimizer(self, spec: Any, params: Sequence[Any]) -> Any:
        if isinstance(spec, OptimizerSpec):
            if spec.lr is None:
                raise ValueError(f"{type(spec).__name__}: lr is not set")
            return _OPTIMIZERS[spec.kind](spec)
        return spec()  # a factory of a Keras optimizer (e.g. a functools.partial)

    def optimizer_recipe(self, optimizer: Any) -> dict[str, Any]:
        config = {k: _config_value(v) for k, v in optimizer.get_config().items()}
        return {"cls": f"{type(optimizer).__module__}:{type(optimizer).__qualname__}", "config": config}

    def rebuild_optimizer(self, recipe: dict[str, Any], params: Sequence[Any]) -> Any:
        import importlib

        module, _, name = recipe["cls"].partition(":")
        return getattr(importlib.import_module(module), name).from_config(recipe["config"])

    def prepare_optimizer(self, optimizer: Any, variables: Sequence[Any]) -> None:
        for attr in _VARIABLE_HPARAMS.values():
            value = getattr(optimizer, attr, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                setattr(optimizer, attr, tf.Variable(float(value), trainable=False, dtype=tf.float32))
        if not optimizer.built:
            optimizer.build(list(variables))

    def optimizer_state(self, optimizer: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        arrays = {f"v{i}": np.array(v.numpy()) for i, v in enumerate(optimizer.variables)}
        hparams = {name: self.get_hparam(optimizer, name) for name in ("lr", *_VARIABLE_HPARAMS)}
        config = {k: _jsonable(v) for k, v in optimizer.get_config().items()}
        meta = {"class": type(optimizer).__name__, "n": len(arrays), "config": config,
                "hparams": hparams}
        return meta, arrays

    def load_optimizer_state(self, optimizer: Any, variables: Sequence[Any], meta: dict[str, Any],
                             arrays: dict[str, np.ndarray]) -> None:
        if meta["class"] != type(optimizer).__name__:
            raise ValueError(f"checkpoint optimizer is {meta['class']}, agent has {type(optimizer).__name__}")
        self.prepare_optimizer(optimizer, variables)
        if len(optimizer.variables) != meta["n"]:
            raise ValueError(f"optimizer has {len(optimizer.variables)} slots, checkpoint {meta['n']}")
        for i, v in enumerate(optimizer.variables):
            v.assign(arrays[f"v{i}"])
        for name, value in meta["hparams"].items():
            if value is not None:
                self.set_hparam(optimizer, name, value)

    def get_hparam(self, optimizer: Any, name: str) -> float | None:
        attr = "learning_rate" if name == "lr" else _VARIABLE_HPARAMS.get(name, name)
        value = getattr(optimizer, attr, None)
        if value is None or callable(value) and not self.is_variable(value):
            return None
        try:
            return float(np.asarray(value))
        except (TypeError, ValueError):
            return None

    def set_hparam(self, optimizer: Any, name: str, value: float) -> bool:
        if name == "lr":
            optimizer.learning_rate = float(value)  # assigns the optimizer's lr variable
            return True
        attr = _VARIABLE_HPARAMS.get(name, name)
        current = getattr(optimizer, attr, None)
        if self.is_variable(current):
            current.assign(float(value))
            return True
        if isinstance(current, (int, float)) and not isinstance(current, bool):
            setattr(optimizer, attr, float(value))  # not yet traced: the plain float is enough
            return True
        return False

    def optimizer_name(self, optimizer: Any) -> str:
        return type(optimizer).__name__.lower()

    def make_variable(self, value: float, device: str | None = None) -> Any:  # placed by tf.device scopes
        return tf.Variable(float(value), trainable=False, dtype=tf.float32)

    def assign(self, variable: Any, value: float) -> None:
        variable.assign(float(value))


BACKEND = TFBackend()
