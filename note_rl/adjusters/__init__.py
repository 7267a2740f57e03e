"""Online hyperparameter adjusters driven by the ESS of prioritized replay or by gradient noise.

Framework-free: optimizers and scalar variables are changed through the backend seam, so the same
code serves Keras and PyTorch, single-process and pool-network training.

* :mod:`.signals` - ESS, EMA, Note_rl's gradient variance, McCandlish et al.'s ``B_simple``
* :mod:`.rule` - the one generic update rule (rate / scale / batch)
* :mod:`.registry` - every adjustable hyperparameter: kind, directions, getter / setter
* :mod:`.adjusters` - :class:`ESSAdjuster`, :class:`GNSAdjuster`, :class:`WindowAdjuster`
* :mod:`.spec` - :func:`make_adjuster`, the declarative (config) form
* :mod:`.mixin` - Note_rl's method names on every agent (``adjust``, ``adabatch``, ...)
"""

from .adjusters import DEFAULT_EVERY, Adjuster, ESSAdjuster, GNSAdjuster, WindowAdjuster, minibatch_noise
from .mixin import AdjusterMixin
from .registry import ORDER, REGISTRY, AdjusterError, HParam
from .rule import Rule
from .signals import (EMA, NoiseAccumulator, NoiseEstimate, ess_from_weights, gradient_variance,
                      noise_from_gradients)
from .spec import KINDS, make_adjuster

__all__ = ["Adjuster", "AdjusterError", "AdjusterMixin", "DEFAULT_EVERY", "EMA", "ESSAdjuster",
           "GNSAdjuster", "HParam", "KINDS", "NoiseAccumulator", "NoiseEstimate", "ORDER",
           "REGISTRY", "Rule", "WindowAdjuster", "ess_from_weights", "gradient_variance",
           "make_adjuster", "minibatch_noise", "noise_from_gradients"]
