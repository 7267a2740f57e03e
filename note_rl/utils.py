"""Small numpy helpers shared across the package."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["scalar", "log_softmax"]


def scalar(x: Any) -> float:
    """A Python float from a float, numpy value, tf.Variable or torch tensor."""
    return float(np.asarray(x))


def log_softmax(x: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax, stable for large logits."""
    z = x - x.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
