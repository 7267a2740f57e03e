"""Every adjustable hyperparameter: where it lives on the agent and how its rule behaves.

Each entry gives the rule kind, the direction in ESS mode and in gradient-noise mode (the
reference table of Note_rl's 2025-10 suite, ``+1``: rises when the signal exceeds the target) and a
getter / setter.  Getters return a list: one value per optimizer for ``lr``, ``weight_decay``,
``beta1``, ``beta2`` (a list of optimizers is adjusted optimizer by optimizer) and one per policy
for ``eps``; one value otherwise.  Setters write the value where the training loop reads it, so it
takes effect at the next use: optimizers through the backend seam (a compiled TensorFlow step
reads variables), ``gamma`` / ``clip`` / ``beta`` by ``assign`` when they are backend variables, the
PR exponent on the buffer (all priorities refreshed), ``num_store`` on the running ``train()``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from ..core.run_context import current
from ..utils import scalar
from ..update import optimizer_list
from .rule import BATCH, RATE, SCALE

__all__ = ["HParam", "REGISTRY", "ORDER", "AdjusterError"]

Getter = Callable[[Any], list[float]]
Setter = Callable[[Any, list[float]], None]


class AdjusterError(ValueError):
    """An adjuster was asked to change a hyperparameter this agent does not have."""


@dataclass(frozen=True)
class HParam:
    """One adjustable hyperparameter.

    :param noise_direction: ``None`` when the hyperparameter is not adjusted in noise mode
    """

    name: str
    kind: str
    ess_direction: int
    noise_direction: int | None
    get: Getter
    set: Setter
    domain: tuple[float, float] = (-math.inf, math.inf)
    integer: bool = False


# -- accessors -------------------------------------------------------------------------------
def _as_list(obj: Any) -> list[Any]:
    if obj is None:
        return []
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _scalar_attr(attr: str, hint: str) -> tuple[Getter, Setter]:
    """A float attribute or a backend scalar variable (read inside compiled losses)."""

    def get(agent: Any) -> list[float]:
        value = getattr(agent, attr, None)
        if value is None:
            raise AdjusterError(f"{attr}_params given but the agent has no {attr} ({hint})")
        return [scalar(value)]

    def set_(agent: Any, values: list[float]) -> None:
        current = getattr(agent, attr)
        if _is_number(current):
            setattr(agent, attr, float(values[0]))
        else:
            agent.backend.assign(current, float(values[0]))

    return get, set_


def _optimizer_hparam(name: str) -> tuple[Getter, Setter]:
    def get(agent: Any) -> list[float]:
        opts = optimizer_list(agent.optimizer)
        if not opts:
            raise AdjusterError(f"{name}_params given but the agent has no optimizer yet")
        values = [agent.backend.get_hparam(opt, name) for opt in opts]
        if any(v is None for v in values):
            raise AdjusterError(f"{name}_params given but an optimizer has no {name} "
                                f"({[agent.backend.optimizer_name(o) for o in opts]})")
        return [float(v) for v in values]

    def set_(agent: Any, values: list[float]) -> None:
        for opt, value in zip(optimizer_list(agent.optimizer), values):
            agent.backend.set_hparam(opt, name, float(value))

    return get, set_


def _get_eps(agent: Any) -> list[float]:
    policies = _as_list(agent.policy)
    if not policies or any(not hasattr(p, "eps") for p in policies):
        raise AdjusterError("eps_params given but the agent's policy has no eps (use an epsilon-greedy policy)")
    return [float(p.eps) for p in policies]


def _set_eps(agent: Any, values: list[float]) -> None:
    for policy, value in zip(_as_list(agent.policy), values):
        policy.eps = float(value)


def _get_alpha(agent: Any) -> list[float]:
    if not agent.PR:  # the set() setting the alpha rule needs
        raise AdjusterError("alpha_params given but prioritized replay is off (set(PR=True))")
    return [float(agent.priority_alpha)]


def _set_alpha(agent: Any, values: list[float]) -> None:
    agent.priority_alpha = float(values[0])
    if agent.buffer is not None and hasattr(agent.buffer, "set_alpha"):
        agent.buffer.set_alpha(float(values[0]))  # refreshes every stored priority


def _freq_attr(agent: Any) -> str:
    if agent.update_batches is not None:
        return "update_batches"
    if agent.update_steps is not None:
        return "update_steps"
    raise AdjusterError("freq_params given but neither update_batches nor update_steps is set")


def _get_freq(agent: Any) -> list[float]:
    return [float(getattr(agent, _freq_attr(agent)))]


def _set_freq(agent: Any, values: list[float]) -> None:
    setattr(agent, _freq_attr(agent), int(values[0]))


def _get_batch(agent: Any) -> list[float]:
    if agent.batch is None:
        raise AdjusterError("batch_params given but set(batch=...) was never called")
    return [float(agent.batch)]


def _set_batch(agent: Any, values: list[float]) -> None:
    agent.batch = int(values[0])


def _settings(agent: Any) -> Any:
    run = current(agent)
    if run is None:
        raise AdjusterError("store_params: num_store is a train() setting and can only be adjusted during train()")
    return run.settings


def _get_store(agent: Any) -> list[float]:
    return [float(_settings(agent).num_store)]


def _set_store(agent: Any, values: list[float]) -> None:
    _settings(agent).num_store = int(values[0])


_get_beta, _set_beta_attr = _scalar_attr("beta", "set(beta=...) for PR importance weights, or a model variable")


def _set_beta(agent: Any, values: list[float]) -> None:
    _set_beta_attr(agent, values)
    buffer = agent.buffer
    if buffer is not None and hasattr(buffer, "beta") and _is_number(getattr(agent, "beta", None)):
        buffer.beta = float(values[0])  # the PR importance-sampling exponent is read at sampling


_UNIT = (0.0, 1.0)
_POSITIVE = (0.0, math.inf)


def _entry(name: str, kind: str, ess: int, noise: int | None, accessors: tuple[Getter, Setter],
           domain: tuple[float, float] = (-math.inf, math.inf), integer: bool = False) -> HParam:
    return HParam(name, kind, ess, noise, accessors[0], accessors[1], domain, integer)


#: in Note_rl's order of application (the batch first, so later rules see the new batch)
REGISTRY: dict[str, HParam] = {h.name: h for h in (
    _entry("batch", BATCH, 1, 1, (_get_batch, _set_batch), (1, math.inf), integer=True),
    _entry("alpha", RATE, 1, -1, (_get_alpha, _set_alpha), _POSITIVE),
    _entry("lr", RATE, 1, -1, _optimizer_hparam("lr"), _POSITIVE),
    _entry("eps", RATE, -1, 1, (_get_eps, _set_eps), _UNIT),
    _entry("freq", SCALE, -1, 1, (_get_freq, _set_freq), (1, math.inf), integer=True),
    _entry("tau", RATE, 1, -1, _scalar_attr("tau", "e.g. DQN's target update rate"), (1e-6, 1.0)),
    _entry("gamma", RATE, 1, -1, _scalar_attr("gamma", "the discount"), _UNIT),
    _entry("store", SCALE, -1, None, (_get_store, _set_store), (1, math.inf), integer=True),
    _entry("weight_decay", RATE, -1, 1, _optimizer_hparam("weight_decay"), _POSITIVE),
    _entry("beta1", RATE, 1, 1, _optimizer_hparam("beta1"), (0.0, 0.9999)),
    _entry("beta2", RATE, 1, 1, _optimizer_hparam("beta2"), (0.0, 0.9999)),
    _entry("clip", RATE, 1, -1, _scalar_attr("clip", "e.g. PPO's clip range"), (1e-6, math.inf)),
    _entry("beta", RATE, -1, 1, (_get_beta, _set_beta), _POSITIVE),
)}

ORDER: tuple[str, ...] = tuple(REGISTRY)
