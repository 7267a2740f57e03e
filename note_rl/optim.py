"""Optimizers described once and built for whichever backend trains the agent.

``Adam(lr=1e-3)`` is a framework-free description; ``backend.build_optimizer(spec, params)`` turns
it into ``torch.optim.Adam(params, ...)`` or ``keras.optimizers.Adam(...)`` with the same
hyperparameters.  The tuner's ``optimizer`` configs instantiate these classes (``_target_``).
``lr=None`` leaves the learning rate to whoever builds it (the tuner uses the agent's ``lr``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

__all__ = ["OptimizerSpec", "Adam", "AdamW", "Adamax", "SGD", "RMSprop", "SPECS"]


@dataclass
class OptimizerSpec:
    """Base of the optimizer descriptions; ``kind`` names the algorithm."""

    kind: ClassVar[str] = ""
    lr: float | None = None
    weight_decay: float = 0.0

    def with_lr(self, lr: float) -> "OptimizerSpec":
        """A copy with ``lr`` filled in (when this spec leaves it open)."""
        return type(self)(**{**asdict(self), "lr": self.lr if self.lr is not None else lr})

    def hparams(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Adam(OptimizerSpec):
    """Adam (Kingma & Ba 2015)."""

    kind: ClassVar[str] = "adam"
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-7


@dataclass
class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter 2019)."""

    kind: ClassVar[str] = "adamw"
    weight_decay: float = 0.01


@dataclass
class Adamax(Adam):
    """Adamax: Adam with the infinity norm."""

    kind: ClassVar[str] = "adamax"


@dataclass
class SGD(OptimizerSpec):
    """Stochastic gradient descent with optional momentum."""

    kind: ClassVar[str] = "sgd"
    momentum: float = 0.0


@dataclass
class RMSprop(OptimizerSpec):
    """RMSprop; ``rho`` is the decay of the squared-gradient average (torch's ``alpha``) and ``eps``
    is added to its square root, as torch does (Keras adds its epsilon under the root; the Keras
    backend is given ``eps**2``, which matches torch where it matters: a near-zero average)."""

    kind: ClassVar[str] = "rmsprop"
    rho: float = 0.9
    eps: float = 1e-7
    momentum: float = 0.0


SPECS: dict[str, type[OptimizerSpec]] = {cls.kind: cls for cls in (Adam, AdamW, Adamax, SGD, RMSprop)}
