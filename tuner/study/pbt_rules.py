"""Population-based training's exploit and explore steps (Jaderberg et al. 2017,
https://arxiv.org/abs/1711.09846), as pure functions of the scores, the hyperparameters and a seed.

Hyperparameters are kept in Optuna's terms (a trial's ``params``: list choices encoded as text, see
:func:`tuner.config.search.encode_choice`), so the same values are stored in the study, perturbed here
and turned into Hydra overrides by :func:`tuner.config.search.to_overrides`.

Randomness: generation ``g``'s decisions draw from ``numpy.random.default_rng([seed, g])`` in a fixed
order, so a resumed driver recomputes exactly what a killed one decided, and a test can work the
decisions out by hand:

* initial population (generation 0): member 0 takes ``first`` (the config's own values) where given;
  then for each member in order, each searched parameter in space order draws one uniform ``u``:
  a choice takes ``choices[floor(u * n)]``, an interval ``low + u * (high - low)`` (in log space for
  ``log`` intervals; integers rounded);
* exploit (generation ``g >= 1``): members are ranked by their generation ``g - 1`` score (best first,
  ties by member number); ``n = min(ceil(P * quantile), P // 2)`` members form the top and the bottom;
  each bottom member, in member order, copies the weights, optimizer state and hyperparameters of
  ``top[rng.integers(n)]`` and then explores;
* explore: each searched parameter not in ``frozen``, in space order, draws one uniform ``u``:
  an interval is multiplied by 0.8 (``u < 0.5``) or 1.2 (clipped to its bounds; integers rounded, and
  moved by at least one step when rounding would undo the change); a choice is resampled uniformly
  (one more draw, ``rng.integers(n)``) when ``u < resample_p``, else moved to a neighbouring choice:
  one more draw ``v``, down when ``v < 0.5`` and up otherwise (at either end: the only neighbour).

Conditional parameters (``search.when``) come after the others: a member holds one only while its
condition holds; explore perturbs it then, samples it (one draw ``u``) when the condition has just
become true, and drops it when the condition no longer holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import optuna

from ..config.search import Param, encode_choice

__all__ = ["Step", "initial_population", "exploit_explore", "rng_for", "ranking", "quantile_size"]

Categorical = optuna.distributions.CategoricalDistribution
IntDist = optuna.distributions.IntDistribution


@dataclass
class Step:
    """What member ``member`` trains in the next generation: it continues from ``parent``'s checkpoint
    (itself unless exploited) with ``params``; ``changes`` maps each perturbed parameter to
    ``(old, new, how)`` with ``how`` one of ``x0.8``, ``x1.2``, ``down``, ``up``, ``resample``."""

    member: int
    parent: int
    params: dict[str, Any]
    changes: dict[str, tuple[Any, Any, str]] = field(default_factory=dict)

    @property
    def exploited(self) -> bool:
        return self.parent != self.member


def rng_for(seed: int, generation: int) -> np.random.Generator:
    """The generator of generation ``generation``'s decisions."""
    return np.random.default_rng([int(seed), int(generation)])


def _searched(space: Sequence[Param]) -> list[Param]:
    """The searched parameters, the conditional ones last."""
    return [p for p in space if p.distribution is not None and p.when is None] + \
        [p for p in space if p.distribution is not None and p.when is not None]


def _holds(p: Param, params: Mapping[str, Any]) -> bool:
    if p.when is None:
        return True
    other, allowed = p.when
    return other in params and encode_choice(params[other]) in allowed


def _sample(d: Any, u: float) -> Any:
    if isinstance(d, Categorical):
        return d.choices[min(int(u * len(d.choices)), len(d.choices) - 1)]
    if getattr(d, "log", False):
        value = math.exp(math.log(d.low) + u * (math.log(d.high) - math.log(d.low)))
    else:
        value = d.low + u * (d.high - d.low)
    return _fit(d, value)


def _fit(d: Any, value: float) -> Any:
    """``value`` clipped to ``d``'s bounds and put on its grid (integers, ``step``)."""
    value = min(max(value, d.low), d.high)
    step = getattr(d, "step", None)
    if isinstance(d, IntDist):
        step = step or 1
        return int(min(max(d.low + round((value - d.low) / step) * step, d.low), d.high))
    if step:
        return float(min(max(d.low + round((value - d.low) / step) * step, d.low), d.high))
    return float(value)


def initial_population(space: Sequence[Param], population: int, seed: int,
                       first: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Generation 0's hyperparameters: member 0 keeps ``first``'s values where given (the config's
    own), every other value is drawn uniformly from its distribution (see the module docstring)."""
    rng = rng_for(seed, 0)
    out: list[dict[str, Any]] = []
    for m in range(population):
        params: dict[str, Any] = {}
        for p in _searched(space):
            u = float(rng.random())
            params[p.name] = first[p.name] if m == 0 and first and p.name in first else _sample(p.distribution, u)
        out.append({k: v for k, v in params.items() if _holds(_by_name(space, k), params)})
    return out


def _by_name(space: Sequence[Param], name: str) -> Param:
    return next(p for p in space if p.name == name)


def quantile_size(population: int, quantile: float) -> int:
    """How many members form the top (and the bottom) quantile: ``ceil(P * quantile)``, at most ``P // 2``."""
    return min(int(math.ceil(population * quantile)), population // 2)


def ranking(scores: Sequence[float], maximize: bool = True) -> list[int]:
    """Member numbers best first (ties: the lower member number first)."""
    return sorted(range(len(scores)), key=lambda m: (-scores[m] if maximize else scores[m], m))


def exploit_explore(scores: Sequence[float], params: Sequence[Mapping[str, Any]], space: Sequence[Param],
                    seed: int, generation: int, quantile: float = 0.25, resample_p: float = 0.25,
                    maximize: bool = True, frozen: Sequence[str] = ()) -> list[Step]:
    """Generation ``generation``'s step for every member, from generation ``generation - 1``'s
    ``scores`` and ``params`` (one per member); see the module docstring for the draws."""
    n_members = len(scores)
    order = ranking(scores, maximize)
    n = quantile_size(n_members, quantile)
    top, bottom = order[:n], set(order[n_members - n:]) if n else set()
    rng = rng_for(seed, generation)
    steps = []
    for m in range(n_members):
        if m not in bottom:
            steps.append(Step(m, m, dict(params[m])))
            continue
        parent = top[int(rng.integers(len(top)))]
        new, changes = explore(params[parent], space, rng, resample_p, frozen)
        steps.append(Step(m, parent, new, changes))
    return steps


def explore(params: Mapping[str, Any], space: Sequence[Param], rng: np.random.Generator,
            resample_p: float = 0.25, frozen: Sequence[str] = ()) -> tuple[dict[str, Any], dict[str, tuple[Any, Any, str]]]:
    """Perturbed copy of ``params`` and what changed (draws as the module docstring says)."""
    new, changes = dict(params), {}
    for p in _searched(space):
        if not _holds(p, new):
            if p.name in new:
                changes[p.name] = (new.pop(p.name), None, "dropped")
            continue
        if p.name not in new:  # its condition has just come true
            new[p.name] = _sample(p.distribution, float(rng.random()))
            changes[p.name] = (None, new[p.name], "sampled")
            continue
        if p.name in frozen:
            continue
        d, old = p.distribution, new[p.name]
        u = float(rng.random())
        if isinstance(d, Categorical):
            choices = list(d.choices)
            if u < resample_p:
                value, how = choices[int(rng.integers(len(choices)))], "resample"
            else:
                i = choices.index(old) if old in choices else 0
                down = float(rng.random()) < 0.5
                j = i - 1 if (down and i > 0) or i == len(choices) - 1 else i + 1
                j = min(max(j, 0), len(choices) - 1)
                value, how = choices[j], "down" if j < i else "up"
        else:
            factor = 0.8 if u < 0.5 else 1.2
            value, how = _fit(d, old * factor), f"x{factor}"
            if isinstance(d, IntDist) and value == old:  # 3 x 1.2 rounds back to 3: one step instead
                value = _fit(d, old + (d.step or 1) * (1 if factor > 1 else -1))
        new[p.name] = value
        changes[p.name] = (old, value, how)
    return new, changes
