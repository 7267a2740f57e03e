"""Interface every framework backend implements.

Only these operations differ between TensorFlow/Keras and PyTorch: running the user's network
for acting, one gradient step of the user's loss, reading and writing weights, optimizer state and
optimizer hyperparameters, and seeding the framework's own random generators.  The loop, buffers,
policies, checkpoints and adjusters are numpy and call the framework only through this class.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

__all__ = ["Backend", "StepResult"]


class StepResult(NamedTuple):
    """Outcome of one gradient step: the loss and what the loss pushed for prioritized replay."""

    loss: float
    td: np.ndarray | None
    ratio: np.ndarray | None


StepFn = Callable[[Sequence[np.ndarray]], StepResult]


class Backend(ABC):
    """One framework's implementation of the seam."""

    name: str = ""

    # -- randomness --------------------------------------------------------------------------
    @abstractmethod
    def seed(self, seed: int) -> None:
        """Seed the framework's global random generators (weight init, dropout)."""

    # -- parameters --------------------------------------------------------------------------
    @abstractmethod
    def is_variable(self, obj: Any) -> bool:
        """Whether ``obj`` is one trainable tensor of this framework."""

    def flatten(self, param: Any) -> list[Any]:
        """Flatten a (possibly nested) ``self.param`` into a list of variables."""
        if self.is_variable(param):
            return [param]
        out: list[Any] = []
        for item in param:
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
    def make_act(self, fn: Callable[..., Any], jit: bool) -> Callable[[np.ndarray], np.ndarray]:
        """Wrap the user's ``action(s)`` into numpy-in / numpy-out inference."""

    @abstractmethod
    def make_step(
        self,
        loss_fn: Callable[..., Any],
        optimizers: Sequence[Any],
        groups: Sequence[Sequence[Any]],
        recorder: Any,
        jit: bool,
        clip_norm: float | None = None,
    ) -> StepFn:
        """Build ``step(arrays) -> StepResult``: one gradient step of ``loss_fn(*arrays)``.

        With several optimizers, the gradient of the same loss with respect to ``groups[i]`` is
        applied by ``optimizers[i]``.  ``clip_norm`` rescales the gradients to that global norm
        when they exceed it.  Whatever the loss gave ``recorder.update(TD, ratio)`` is returned as
        numpy.
        """

    @abstractmethod
    def evaluate(self, loss_fn: Callable[..., Any], arrays: Sequence[np.ndarray],
                 recorder: Any) -> StepResult:
        """The loss (and recorded TD / ratio) of ``loss_fn(*arrays)`` without any update."""

    @abstractmethod
    def gradient(self, loss_fn: Callable[..., Any], variables: Sequence[Any],
                 arrays: Sequence[np.ndarray]) -> np.ndarray:
        """Flattened gradient of ``loss_fn(*arrays)`` without applying it (gradient-noise signals)."""

    # -- optimizers --------------------------------------------------------------------------
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
    def make_variable(self, value: float) -> Any:
        """A scalar variable the loss may read and the loop may assign (e.g. a clip range)."""

    @abstractmethod
    def assign(self, variable: Any, value: float) -> None:
        """Assign a scalar variable made by :meth:`make_variable`."""
