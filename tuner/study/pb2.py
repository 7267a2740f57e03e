"""PB2's explore step (Parker-Holder et al. 2020, "Provably Efficient Online Hyperparameter
Optimization with Population-Based Bandits", https://arxiv.org/abs/2002.02518): instead of PBT's random
x0.8 / x1.2 perturbation, a member that exploits takes the hyperparameters a Gaussian-process bandit
expects to improve the copied weights most.

The data are the finished segments of generations ``1 .. g - 1``: for each, ``x`` = its continuous
hyperparameters mapped to ``[0, 1]`` (log intervals in log space) and ``t`` = its generation, and
``y`` = its score minus the score its starting checkpoint had (the parent's previous generation): how
much training under ``x`` improved the weights.  Then::

    k((t, x), (t', x')) = exp(-|x - x'|^2 / (2 l^2)) * (1 - eps)^(|t - t'| / 2)   # time-varying (Bogunovic et al. 2016)
    y standardised; l picked from LENGTHSCALES by the marginal likelihood; noise variance NOISE
    for each exploiting member, in member order (GP-BUCB, Desautels et al. 2014):
        x* = argmax over CANDIDATES uniform points of  mu(g, x) + KAPPA * sigma(g, x)
        (g, x*) joins the data with y = mu(g, x*): sigma shrinks there, so the next member looks elsewhere

Categorical and frozen parameters are left to PBT's explore (:func:`tuner.study.pbt_rules.explore`), as
PB2's paper covers continuous ones.  With fewer than ``MIN_POINTS`` finished segments (generation 1)
PB2 explores as PBT does.  The candidates draw from :func:`pb2_rng` (a stream of its own beside PBT's), so
a resumed driver decides exactly what a killed one did.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..config.search import Param
from .pbt_rules import Categorical, Step, _fit, _holds, _searched

__all__ = ["pb2_explore", "pb2_rng", "GP", "continuous", "to_unit", "from_unit", "segment_data"]

EPS = 0.1          # the time kernel's forgetting rate per generation
NOISE = 0.1        # observation noise variance (y standardised)
KAPPA = 2.0        # UCB's width, in posterior standard deviations
CANDIDATES = 1000  # uniform points the acquisition is maximised over
LENGTHSCALES = (0.1, 0.2, 0.5, 1.0)
MIN_POINTS = 2


def pb2_rng(seed: int, generation: int) -> np.random.Generator:
    """The candidates' generator for ``generation``: apart from PBT's ``rng_for(seed, generation)``."""
    return np.random.default_rng([seed, generation, 2])


def continuous(space: Sequence[Param], frozen: Sequence[str] = ()) -> list[Param]:
    """The parameters PB2 chooses: searched intervals (not choices), not frozen."""
    return [p for p in _searched(space) if not isinstance(p.distribution, Categorical) and p.name not in frozen]


def to_unit(p: Param, value: float) -> float:
    """``value`` of ``p``'s interval as a point of ``[0, 1]`` (log intervals in log space)."""
    d = p.distribution
    if getattr(d, "log", False):
        return (math.log(value) - math.log(d.low)) / (math.log(d.high) - math.log(d.low))
    return (value - d.low) / (d.high - d.low) if d.high > d.low else 0.0


def from_unit(p: Param, u: float) -> Any:
    """The inverse of :func:`to_unit`, put on the interval's grid."""
    d = p.distribution
    if getattr(d, "log", False):
        return _fit(d, math.exp(math.log(d.low) + u * (math.log(d.high) - math.log(d.low))))
    return _fit(d, d.low + u * (d.high - d.low))


class GP:
    """A Gaussian process on ``(t, x)`` with the time-varying kernel of the module docstring."""

    def __init__(self, t: np.ndarray, x: np.ndarray, y: np.ndarray, lengthscale: float | None = None) -> None:
        self.t, self.x = np.asarray(t, float), np.asarray(x, float).reshape(len(t), -1)
        y = np.asarray(y, float)
        self.mean, self.scale = float(y.mean()), float(y.std()) or 1.0
        self.y = (y - self.mean) / self.scale
        self.l = lengthscale if lengthscale is not None else max(LENGTHSCALES, key=self._log_likelihood)
        self._fit()

    def kernel(self, t1: np.ndarray, x1: np.ndarray, t2: np.ndarray, x2: np.ndarray, l: float | None = None) -> np.ndarray:
        l = self.l if l is None else l
        sq = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1)
        return np.exp(-sq / (2 * l * l)) * (1 - EPS) ** (np.abs(t1[:, None] - t2[None, :]) / 2)

    def _log_likelihood(self, l: float) -> float:
        k = self.kernel(self.t, self.x, self.t, self.x, l) + NOISE * np.eye(len(self.t))
        chol = np.linalg.cholesky(k)
        alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, self.y))
        return float(-0.5 * self.y @ alpha - np.log(np.diag(chol)).sum())

    def _fit(self) -> None:
        k = self.kernel(self.t, self.x, self.t, self.x) + NOISE * np.eye(len(self.t))
        self._chol = np.linalg.cholesky(k)
        self._alpha = np.linalg.solve(self._chol.T, np.linalg.solve(self._chol, self.y))

    def predict(self, t: float, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation (in ``y``'s own units) at generation ``t``, points ``x``."""
        x = np.atleast_2d(np.asarray(x, float))
        ts = np.full(len(x), float(t))
        ks = self.kernel(ts, x, self.t, self.x)
        mu = ks @ self._alpha
        v = np.linalg.solve(self._chol, ks.T)
        var = np.clip(1.0 - (v * v).sum(0), 1e-12, None)
        return mu * self.scale + self.mean, np.sqrt(var) * self.scale

    def add(self, t: float, x: np.ndarray, y: float) -> "GP":
        """This GP with one more point (same lengthscale and standardisation): GP-BUCB's pending point."""
        gp = object.__new__(GP)
        gp.t, gp.x = np.append(self.t, t), np.vstack([self.x, np.asarray(x, float).reshape(1, -1)])
        gp.mean, gp.scale, gp.l = self.mean, self.scale, self.l
        gp.y = np.append(self.y, (y - self.mean) / self.scale)
        gp._fit()
        return gp


def segment_data(history: Mapping[tuple[int, int], tuple[float, int, Mapping[str, Any]]], params: Sequence[Param],
                 maximize: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t, x, y)`` of the finished segments of generation >= 1: ``history[(member, g)]`` is ``(score,
    parent, params)``; ``y`` is the segment's score minus its parent's previous score (negated when the
    study minimises, so that larger is better)."""
    t, x, y = [], [], []
    for (m, g), (score, parent, values) in sorted(history.items()):
        before = history.get((parent, g - 1))
        if g == 0 or before is None or any(p.name not in values for p in params):
            continue
        t.append(g)
        x.append([to_unit(p, values[p.name]) for p in params])
        y.append((score - before[0]) * (1 if maximize else -1))
    return np.asarray(t, float), np.asarray(x, float).reshape(len(t), len(params)), np.asarray(y, float)


def pb2_explore(steps: Sequence[Step], history: Mapping[tuple[int, int], tuple[float, int, Mapping[str, Any]]],
                space: Sequence[Param], rng: np.random.Generator, generation: int,
                frozen: Sequence[str] = (), maximize: bool = True) -> list[Step]:
    """PBT's ``steps`` for ``generation`` (exploit and explore done) with each exploiting member's
    continuous hyperparameters chosen by the GP bandit instead (module docstring)."""
    params = continuous(space, frozen)
    t, x, y = segment_data(history, params, maximize)
    if not params or len(y) < MIN_POINTS:
        return list(steps)
    gp = GP(t, x, y)
    candidates = rng.random((CANDIDATES, len(params)))
    out = []
    for step in steps:
        if not step.exploited:
            out.append(step)
            continue
        mu, sigma = gp.predict(generation, candidates)
        best = int(np.argmax(mu + KAPPA * sigma))
        gp = gp.add(generation, candidates[best], float(mu[best]))
        new, changes = dict(step.params), dict(step.changes)
        for p, u in zip(params, candidates[best]):
            if p.name in new and _holds(p, new):
                old = changes[p.name][0] if p.name in changes else new[p.name]
                new[p.name] = from_unit(p, float(u))
                changes[p.name] = (old, new[p.name], "pb2")
        out.append(Step(step.member, step.parent, new, changes))
    return out


