"""Interface every framework backend implements.

Only these operations differ between TensorFlow/Keras and PyTorch: running the user's network
for acting, one gradient step of the user's loss, reading and writing weights, optimizer state and
optimizer hyperparameters, and seeding the framework's own random generators.  The loop, buffers,
policies, checkpoints and adjusters are numpy and call the framework only through this class.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from abc import ABC, abstractmethod
from typing import Any, Callable, ContextManager, Mapping, NamedTuple, Sequence

import numpy as np

__all__ = ["Backend", "StepResult", "BoundGroup", "split_losses", "sum_losses", "distinct", "DeviceError",
           "export_thread_env", "check_device_name", "DEVICE_CHOICES", "TORCH_COMPILE_MODES", "TORCH_GRAPH_MODES",
           "check_jit_compile"]

#: what ``backend.device`` accepts (``cuda:N`` too); ``auto`` picks a GPU when one is present
DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")

#: ``torch.compile`` modes ``jit_compile`` may name instead of ``True`` (PyTorch backend)
TORCH_COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
#: ``jit_compile`` values that capture the whole gradient step as one CUDA graph (PyTorch backend;
#: note_rl/backends/torch_graphs.py)
TORCH_GRAPH_MODES = ("cudagraph", "compile+cudagraph")


def check_jit_compile(value: Any, backend: str) -> None:
    """Raise ``ValueError`` unless ``value`` is a ``jit_compile`` the backend takes: ``True`` or
    ``False``, or on PyTorch one of :data:`TORCH_COMPILE_MODES` and :data:`TORCH_GRAPH_MODES`."""
    if isinstance(value, bool):
        return
    modes = TORCH_COMPILE_MODES + TORCH_GRAPH_MODES if backend == "torch" else ()
    if not (isinstance(value, str) and value in modes):
        raise ValueError(f"jit_compile={value!r}: use true, false" + (f" or one of {', '.join(modes)}" if modes else
                                                                     f" (the {backend} backend has no named modes)"))


def export_thread_env(n: int) -> None:
    """Ask OpenMP (torch) and TensorFlow for ``n`` threads through the environment, which they
    read when they start their thread pools (so this works before either is imported)."""
    for var in ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        os.environ[var] = str(n)


def check_device_name(device: str) -> None:
    """Raise :class:`DeviceError` unless ``device`` is ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``."""
    base, _, index = str(device).partition(":")
    if base not in DEVICE_CHOICES or (index and (base != "cuda" or not index.isdigit())):
        raise DeviceError(f"unknown device {device!r}; use auto, cpu, cuda, cuda:N or mps")


class StepResult(NamedTuple):
    """Outcome of one gradient step: the (total) loss, what the loss pushed for prioritized
    replay, and, when the step computed several losses, each one by group name."""

    loss: float
    td: np.ndarray | None
    ratio: np.ndarray | None
    losses: dict[str, float] | None = None


class BoundGroup(NamedTuple):
    """A parameter group bound to its optimizer for one compiled update step."""

    name: str
    variables: list[Any]
    optimizer: Any
    max_grad_norm: float | None = None


class DeviceError(ValueError):
    """The requested device does not exist on this machine (or in this backend)."""


StepFn = Callable[[Sequence[np.ndarray]], StepResult]


def split_losses(out: Any, names: Sequence[str]) -> list[tuple[str | None, Any, list[int]]]:
    """Match what a loss function returned to the groups ``names`` of its term:
    ``[(label, loss, group indices)]``.  One loss steps every group (Note_rl's rule for several
    optimizers; label ``None``); a list / tuple gives one loss per group in order, a dict one per
    group by name.  Framework-free: works on tensors of either backend (and while TF traces)."""
    if isinstance(out, Mapping):
        if set(map(str, out)) != set(names):
            raise ValueError(f"the loss returned keys {sorted(map(str, out))}; the parameter groups "
                             f"are {list(names)}")
        return [(str(k), v, [list(names).index(str(k))]) for k, v in out.items()]
    if isinstance(out, (list, tuple)):
        if len(out) != len(names):
            raise ValueError(f"the loss returned {len(out)} losses for {len(names)} parameter "
                             f"group(s) {list(names)}: return one loss per group (or a single loss)")
        return [(names[i], v, [i]) for i, v in enumerate(out)]
    return [(None, out, list(range(len(names))))]


def distinct(items: Any) -> list[Any]:
    """The items in order, each object once (by identity: optimizers are not hashable by value)."""
    out: list[Any] = []
    for item in items:
        if all(item is not o for o in out):
            out.append(item)
    return out


def sum_losses(out: Any) -> Any:
    """The total of what a loss function returned (one loss, a list or a dict of losses)."""
    if isinstance(out, Mapping):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        total = out[0]
        for loss in out[1:]:
            total = total + loss
        return total
    return out


class Backend(ABC):
    """One framework's implementation of the seam."""

    name: str = ""

    # -- the process: threads, device ---------------------------------------------------------
    def set_threads(self, n: int) -> None:
        """Use ``n`` intra-op threads from now on (and in processes started from this one)."""
        export_thread_env(n)

    def training_numerics(self) -> ContextManager[None]:
        """Floating-point settings of the process while ``train()`` runs (none by default)."""
        return contextlib.nullcontext()

    @abstractmethod
    def framework_threads(self) -> int | None:
        """Intra-op threads the framework runs with (``None``: its own default, not yet known)."""

    @abstractmethod
    def resolve_device(self, device: str | None) -> str:
        """The framework's name of ``device`` (``auto``/``None``: a GPU when one is present, else
        the CPU); raises :class:`DeviceError` with one line when it does not exist here."""

    def cap_device_memory(self, fraction: float) -> bool:
        """Let this process use at most ``fraction`` of each visible GPU's memory (several trials
        share one GPU); ``False`` where the framework has no such cap (TensorFlow: it allocates on
        demand instead) or no GPU is visible."""
        return False

    # -- data-parallel training: replicas and strategies --------------------------------------
    def place_replica(self, device: str | None, rank: int) -> str | None:
        """The device data-parallel replica ``rank`` of this machine trains on when ``device``
        (``backend.device``) leaves the choice open, made this process's current one; ``None``:
        ``device`` as it is (the default, and where there is nothing to choose from)."""
        return None

    def make_strategy(self, name: str, devices: Sequence[str] | None = None, logical_cpus: int | None = None,
                      device: str | None = None) -> Any:
        """The framework's data-parallel strategy object called ``name`` (one of
        :attr:`~note_rl.backends.BackendInfo.strategies` that is an object, such as TensorFlow's
        ``mirrored``), made before the framework runs anything: ``logical_cpus`` splits the CPU
        into that many devices; ``devices`` or else ``device`` (``backend.device``) place it."""
        raise ValueError(f"backend {self.name} makes no strategy object (asked for {name!r})")

    def dumps_distributed(self, agent: Any) -> bytes:
        """``pickle.dumps(agent)`` for an agent built in a strategy's scope (which a fresh process
        unpickles inside its own strategy's scope); the default: a plain pickle."""
        return pickle.dumps(agent)

    # -- randomness --------------------------------------------------------------------------
    @abstractmethod
    def seed(self, seed: int) -> None:
        """Seed the framework's global random generators (weight init, dropout)."""

    def rng_state(self) -> np.ndarray | None:
        """The framework's global generator state as a uint8 array, for a checkpoint; ``None`` when
        the framework has none that can be read and set again (TensorFlow derives op seeds from the
        global seed and a per-op counter)."""
        return None

    def set_rng_state(self, state: np.ndarray) -> None:
        """Set the generator state :meth:`rng_state` returned."""

    # -- parameters --------------------------------------------------------------------------
    @abstractmethod
    def is_variable(self, obj: Any) -> bool:
        """Whether ``obj`` is one trainable tensor of this framework."""

    def flatten(self, param: Any) -> list[Any]:
        """Flatten a (possibly nested) ``self.param`` into a list of variables."""
        if self.is_variable(param):
            return [param]
        out: list[Any] = []
        for item in (param.values() if isinstance(param, Mapping) else param):
            out.extend(self.flatten(item))
        return out

    def groups(self, param: Any, n_optimizers: int) -> list[list[Any]]:
        """Split ``param`` into one variable list per optimizer (Note_rl's list-of-groups rule)."""
        if n_optimizers == 1:
            return [self.flatten(param)]
        if self.is_variable(param) or len(param) != n_optimizers:
            raise ValueError(
                f"{n_optimizers} optimizers need self.param to be a list of {n_optimizers} groups"
            )
        return [self.flatten(group) for group in param]

    @abstractmethod
    def get_weights(self, variables: Sequence[Any]) -> list[np.ndarray]:
        """Copies of the variables' values."""

    @abstractmethod
    def set_weights(self, variables: Sequence[Any], arrays: Sequence[np.ndarray]) -> None:
        """Assign values to variables in place (shapes must match)."""

    @abstractmethod
    def modules(self, agent: Any) -> dict[str, Any]:
        """Network objects held as attributes of ``agent`` (checkpointed by attribute name)."""

    @abstractmethod
    def module_variables(self, module: Any) -> list[Any]:
        """The variable objects of one network object, in a stable order."""

    @abstractmethod
    def module_weights(self, module: Any) -> list[np.ndarray]:
        """All weights of one network object (trainable or not)."""

    @abstractmethod
    def set_module_weights(self, module: Any, arrays: Sequence[np.ndarray]) -> None:
        """Assign all weights of one network object."""

    # -- computation -------------------------------------------------------------------------
    @abstractmethod
    def make_act(self, fn: Callable[..., Any], jit: bool,
                 variables: Sequence[Any] = ()) -> Callable[[np.ndarray], np.ndarray]:
        """Wrap the user's ``action(s)`` into numpy-in / numpy-out inference (inputs go to the
        device of ``variables``, the acting network's parameters)."""

    @abstractmethod
    def make_update(self, loss_fn: Callable[..., Any], groups: Sequence[BoundGroup], recorder: Any,
                    jit: bool, clip_norm: float | None = None, every_group: bool = True) -> StepFn:
        """Build ``step(arrays) -> StepResult``: one gradient step of ``loss_fn(*arrays)``.

        ``loss_fn`` returns one loss, whose gradient with respect to every group is applied by
        that group's optimizer, or one loss per group (a list in group order or a dict by group
        name), each differentiated with respect to its own group only (see :func:`split_losses`).
        Each group's gradient is clipped to its ``max_grad_norm``, then all of them together to
        ``clip_norm``.  An optimizer shared by several groups steps once, with all their gradients.
        Whatever the loss gave ``recorder.update(TD, ratio)`` is returned as numpy.
        ``every_group=False`` says that other groups (stepped by other terms) may be read by the loss:
        their gradients must then be left alone.
        """

    def make_step(self, loss_fn: Callable[..., Any], optimizers: Sequence[Any],
                  groups: Sequence[Sequence[Any]], recorder: Any, jit: bool,
                  clip_norm: float | None = None) -> StepFn:
        """:meth:`make_update` with ``optimizers[i]`` stepping ``groups[i]`` (groups named ``"0"``,
        ``"1"``, ...)."""
        bound = [BoundGroup(str(i), list(g), opt) for i, (g, opt) in enumerate(zip(groups, optimizers, strict=True))]
        return self.make_update(loss_fn, bound, recorder, jit, clip_norm)

    @abstractmethod
    def update_targets(self, targets: Sequence[Any], sources: Sequence[Any], tau: float) -> None:
        """``target <- (1 - tau) * target + tau * source`` for each pair of variables (``tau=1``: copy)."""

    @abstractmethod
    def evaluate(self, loss_fn: Callable[..., Any], arrays: Sequence[np.ndarray],
                 recorder: Any) -> StepResult:
        """The loss (and recorded TD / ratio) of ``loss_fn(*arrays)`` without any update (several
        losses: their sum, and each in ``losses``)."""

    @abstractmethod
    def gradient(self, loss_fn: Callable[..., Any], variables: Sequence[Any],
                 arrays: Sequence[np.ndarray]) -> np.ndarray:
        """Flattened gradient of ``loss_fn(*arrays)`` (of the sum, if it returns several losses)
        without applying it (gradient-noise signals)."""

    # -- second-order steps (TRPO's natural gradient: numpy does the algebra, the backend the calculus)
    def get_flat(self, variables: Sequence[Any]) -> np.ndarray:
        """The variables' values as one float64 vector (in order, each flattened)."""
        arrays = self.get_weights(variables)
        return np.concatenate([np.asarray(a, np.float64).ravel() for a in arrays]) if arrays else np.zeros(0)

    def set_flat(self, variables: Sequence[Any], flat: np.ndarray) -> None:
        """Assign a vector of :meth:`get_flat`'s layout back to the variables (cast to their dtypes)."""
        current = self.get_weights(variables)
        sizes = np.cumsum([0] + [a.size for a in current])
        if int(sizes[-1]) != np.size(flat):
            raise ValueError(f"set_flat: {np.size(flat)} values for {int(sizes[-1])} parameters")
        self.set_weights(variables, [np.asarray(flat[i:j]).reshape(a.shape).astype(a.dtype)
                                     for a, i, j in zip(current, sizes[:-1], sizes[1:])])

    def loss_values(self, loss_fn: Callable[..., Any], variables: Sequence[Any],
                    arrays: Sequence[np.ndarray]) -> dict[str, float]:
        """What ``loss_fn(*arrays)`` returns (a dict of scalars, or one scalar under ``"loss"``) as
        floats, without gradients; the arrays go to the device of ``variables``."""
        raise NotImplementedError(f"the {self.name} backend has no loss_values (second-order steps)")

    def loss_gradient(self, loss_fn: Callable[..., Any], variables: Sequence[Any],
                      arrays: Sequence[np.ndarray]) -> tuple[float, np.ndarray]:
        """``(loss, flat float64 gradient)`` of the scalar ``loss_fn(*arrays)`` with respect to
        ``variables`` (zeros for a variable the loss does not read), nothing applied."""
        raise NotImplementedError(f"the {self.name} backend has no loss_gradient (second-order steps)")

    def hessian_vector_product(self, loss_fn: Callable[..., Any], variables: Sequence[Any],
                               arrays: Sequence[np.ndarray], vector: np.ndarray) -> np.ndarray:
        """``H @ vector`` with ``H`` the Hessian of the scalar ``loss_fn(*arrays)`` with respect to
        ``variables`` (flat float64; Pearlmutter's trick: the gradient of ``grad . vector``)."""
        raise NotImplementedError(f"the {self.name} backend has no hessian_vector_product")

    # -- optimizers --------------------------------------------------------------------------
    @abstractmethod
    def build_optimizer(self, spec: Any, params: Sequence[Any]) -> Any:
        """A framework optimizer over ``params`` from a :class:`note_rl.optim.OptimizerSpec`, or from
        a factory of this framework's optimizer (e.g. ``functools.partial(torch.optim.NAdam, lr=1e-3)``)."""

    @abstractmethod
    def optimizer_recipe(self, optimizer: Any) -> dict[str, Any]:
        """A picklable description of ``optimizer`` (class and hyperparameters, not its state)."""

    @abstractmethod
    def rebuild_optimizer(self, recipe: dict[str, Any], params: Sequence[Any]) -> Any:
        """A fresh optimizer over ``params`` from :meth:`optimizer_recipe`."""

    @abstractmethod
    def prepare_optimizer(self, optimizer: Any, variables: Sequence[Any]) -> None:
        """Create the optimizer's slots for ``variables`` ahead of the first step."""

    @abstractmethod
    def optimizer_state(self, optimizer: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """``(json_meta, arrays)`` fully describing the optimizer's state."""

    @abstractmethod
    def load_optimizer_state(self, optimizer: Any, variables: Sequence[Any], meta: dict[str, Any],
                             arrays: dict[str, np.ndarray]) -> None:
        """Inverse of :meth:`optimizer_state`."""

    @abstractmethod
    def get_hparam(self, optimizer: Any, name: str) -> float | None:
        """An optimizer hyperparameter (``lr``, ``weight_decay``, ``beta1``, ``beta2``) or ``None``."""

    @abstractmethod
    def set_hparam(self, optimizer: Any, name: str, value: float) -> bool:
        """Change a hyperparameter so that the next step uses it; ``False`` if it does not exist."""

    @abstractmethod
    def optimizer_name(self, optimizer: Any) -> str:
        """Lower-case class name, e.g. ``adam``."""

    @abstractmethod
    def make_variable(self, value: float, device: str | None = None) -> Any:
        """A scalar variable the loss may read and the loop may assign (e.g. a clip range), on
        ``device`` where the framework places it by hand (torch: an op such as ``clamp`` wants its
        bounds on its input's device; ``None``: the CPU)."""

    @abstractmethod
    def assign(self, variable: Any, value: float) -> None:
        """Assign a scalar variable made by :meth:`make_variable`."""
