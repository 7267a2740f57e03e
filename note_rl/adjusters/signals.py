"""The signals adjusters react to (numpy only).

* Effective sample size of prioritized-replay weights (Kish's ESS; see Elvira, Martino and Robert
  2018, "Rethinking the Effective Sample Size", https://arxiv.org/abs/1809.04129):
  ``ESS = 1 / sum(p_i ** 2)`` with ``p = w / sum(w)``; ``n`` for uniform weights, 1 when one item
  holds all the mass.
* Gradient noise, from ``k`` mini-batch gradients ``g_1..g_k`` of batch size ``B``:

  - Note_rl's estimate: the variance of the ``g_i`` around their mean, averaged over the ``D``
    coordinates.  Note_rl takes the population variance (``ddof=0``), which is biased low by
    ``(k - 1) / k`` (14 % for its ``k = 7``); :func:`gradient_variance` defaults to ``ddof=1`` so
    the value estimates the per-coordinate variance of one mini-batch gradient, ``tr(S) / (B D)``.
  - The simple noise scale ``B_simple = tr(S) / |G|^2`` of McCandlish et al. 2018, "An Empirical
    Model of Large-Batch Training", https://arxiv.org/abs/1812.06162 (appendix A): ``S`` is the
    per-example gradient covariance and ``G`` the true gradient.  The two-batch estimator uses a
    small batch ``B_s`` and a big batch ``B_b``: ``|G|^2 ~ (B_b |G_b|^2 - B_s |G_s|^2) / (B_b - B_s)``
    and ``tr(S) ~ (|G_s|^2 - |G_b|^2) / (1 / B_s - 1 / B_b)``, both unbiased.  Here the small batches
    are the ``k`` mini-batches (``|G_s|^2`` averaged over them) and the big batch is their union
    (``B_b = k B``, gradient = mean of the ``g_i``), so one set of gradients gives both signals.
    As the paper advises, the numerator and denominator are smoothed separately and ``B_simple``
    is the ratio of the smoothed values (one batch's ``|G|^2`` estimate can even be negative).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = ["ess_from_weights", "EMA", "NoiseAccumulator", "NoiseEstimate", "gradient_variance",
           "noise_from_gradients"]


def _sq_norm(x: np.ndarray) -> float:
    # not np.dot: OpenBLAS's threads fight the framework's threads inside a training process,
    # which made one dot product of a 67k-vector cost ~10 ms instead of ~0.1 ms
    return float(np.square(x).sum())


def ess_from_weights(weights: Any) -> float:
    """Kish's effective sample size ``1 / sum(p ** 2)``, ``p = w / sum(w)`` (0 for no weight)."""
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    total = float(w.sum()) if w.size else 0.0
    if total <= 0.0:
        return 0.0
    p = w / total
    return float(1.0 / _sq_norm(p))


class EMA:
    """Exponential moving average whose state survives between calls (and checkpoints).

    ``update(x, alpha)`` returns ``x`` the first time, then ``alpha * x + (1 - alpha) * previous``
    (Note_rl's formula; Note_rl never stored the result, so its average was the last value).
    """

    def __init__(self, value: float | None = None) -> None:
        self.value = value

    def update(self, x: float, alpha: float) -> float:
        x = float(x)
        self.value = x if self.value is None else alpha * x + (1.0 - alpha) * self.value
        return self.value

    def state_dict(self) -> dict[str, Any]:
        return {"value": self.value}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.value = state.get("value")


@dataclass(frozen=True)
class NoiseEstimate:
    """Gradient-noise statistics of ``num_samples`` mini-batch gradients of size ``batch``.

    :param variance: per-coordinate variance of a mini-batch gradient (Note_rl's signal, ``ddof=1``)
    :param tr_sigma: estimate of ``tr(S)``, the trace of the per-example gradient covariance
    :param grad_sq: estimate of ``|G|^2``, the squared norm of the true gradient
    """

    variance: float
    tr_sigma: float
    grad_sq: float
    batch: int
    num_samples: int
    dim: int

    @property
    def b_simple(self) -> float:
        """``tr(S) / |G|^2`` of this estimate alone (``nan`` when ``|G|^2 <= 0``)."""
        return self.tr_sigma / self.grad_sq if self.grad_sq > 0 else float("nan")


class NoiseAccumulator:
    """Streams gradients in and keeps only their sum and the sum of squared norms (O(D) memory)."""

    def __init__(self) -> None:
        self.total: np.ndarray | None = None
        self.sq_norms = 0.0
        self.count = 0

    def add(self, grad: np.ndarray) -> None:
        g = np.asarray(grad, dtype=np.float64).reshape(-1)
        self.total = g.copy() if self.total is None else self.total + g
        self.sq_norms += _sq_norm(g)
        self.count += 1

    def estimate(self, batch: int, ddof: int = 1) -> NoiseEstimate:
        """Statistics for mini-batches of ``batch`` items (needs at least two gradients)."""
        k = self.count
        if k < 2 or self.total is None:
            raise ValueError(f"gradient noise needs at least 2 gradients, got {k}")
        mean = self.total / k
        small = self.sq_norms / k               # mean |g_i|^2: E = |G|^2 + tr(S) / B
        big = _sq_norm(mean)                    # |mean g|^2:   E = |G|^2 + tr(S) / (k B)
        spread = max(small - big, 0.0)          # = mean_i |g_i - mean|^2 (exact identity)
        dim = int(mean.size)
        b_small, b_big = float(batch), float(k * batch)
        return NoiseEstimate(
            variance=spread / dim * k / (k - ddof),
            tr_sigma=(small - big) / (1.0 / b_small - 1.0 / b_big),
            grad_sq=(b_big * big - b_small * small) / (b_big - b_small),
            batch=int(batch), num_samples=k, dim=dim)


def noise_from_gradients(grads: Sequence[np.ndarray] | np.ndarray, batch: int,
                         ddof: int = 1) -> NoiseEstimate:
    """:class:`NoiseEstimate` of the rows of ``grads`` (one flattened gradient per mini-batch)."""
    acc = NoiseAccumulator()
    for g in grads:
        acc.add(g)
    return acc.estimate(batch, ddof)


def gradient_variance(grads: Sequence[np.ndarray] | np.ndarray, ddof: int = 1) -> float:
    """Note_rl's noise: ``mean over coordinates of var_i(g_i)``; ``ddof=0`` is Note_rl exactly."""
    g = np.asarray(grads, dtype=np.float64)
    g = g.reshape(len(g), -1)
    return float(np.var(g, axis=0, ddof=ddof).mean())
