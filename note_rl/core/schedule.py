"""Values scheduled over one ``train()`` call: the learning rate(s) and PPO's clip range.

A :class:`Schedule` is a starting value and a shape, a function of ``progress_remaining`` (1 at the
start of ``train(steps=...)``, 0 at its end; by episodes when only an episode budget is set)::

    value(progress_remaining) = start * shape(progress_remaining)

``linear`` is rl-zoo's / SB3's ``lin_`` schedule; ``constant`` keeps the start.  Where a scheduled
value lives on the agent is its :data:`TARGETS` entry.

Each value has one owner for a ``train()`` call, decided once when the call starts
(:func:`owners`): the agent's schedule, or an online adjuster whose rules change that value
(``lr_params``, ``clip_params``); an adjuster's value is then never overwritten by the schedule.
The loop applies the schedules it owns at one point, the start of each training round
(:meth:`note_rl.core.run_context.RunContext.begin_round`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

__all__ = ["Schedule", "SHAPES", "TARGETS", "Target", "owners", "linear", "constant"]


def linear(progress_remaining: float) -> float:
    """The fraction of the run left: 1 -> 0."""
    return progress_remaining


def constant(progress_remaining: float) -> float:
    """The start value throughout."""
    return 1.0


#: shape name -> factor of the start value as a function of ``progress_remaining``
SHAPES: dict[str, Callable[[float], float]] = {"linear": linear, "constant": constant}


@dataclass(frozen=True)
class Target:
    """Where a scheduled value lives on an agent.

    :param read_start: the starting value(s) when the schedule holds none
    :param write: set the value(s) where training reads them
    :param keep_start: keep the start read in the schedule (the lr: the optimizers' values before the
        first change, saved in checkpoints) or read it at every application (the clip: the agent's
        ``clip_init``, always at hand)
    """

    read_start: Callable[[Any], list[float]]
    write: Callable[[Any, list[float]], None]
    keep_start: bool


def _optimizers(agent: Any) -> list[Any]:
    # not update.optimizer_list (distinct objects, dicts): the lr schedule has always listed the
    # optimizers this way, and its kept starts (checkpoints' ``initial_lrs``) follow that listing
    opt = agent.optimizer
    return list(opt) if isinstance(opt, (list, tuple)) else [opt]


def _read_lrs(agent: Any) -> list[float]:
    return [agent.backend.get_hparam(o, "lr") or 0.0 for o in _optimizers(agent)]


def _write_lrs(agent: Any, values: list[float]) -> None:
    for opt, lr in zip(_optimizers(agent), values):
        agent.backend.set_hparam(opt, "lr", lr)


def _write_clip(agent: Any, values: list[float]) -> None:
    agent.backend.assign(agent.clip, values[0])  # a backend variable read inside the compiled loss


#: value name -> where it lives: ``lr`` every optimizer's learning rate, ``clip`` PPO's clip range
TARGETS: dict[str, Target] = {
    "lr": Target(_read_lrs, _write_lrs, keep_start=True),
    "clip": Target(lambda agent: [agent.clip_init], _write_clip, keep_start=False),
}


@dataclass
class Schedule:
    """One scheduled value: ``start * SHAPES[shape](progress_remaining)``.

    :param name: the value (a :data:`TARGETS` key)
    :param shape: ``"linear"`` or ``"constant"``
    :param start: the starting value(s), one per optimizer for ``lr``; ``None``: read from the agent
        at the first application (kept when the target keeps it)
    """

    name: str
    shape: str = "linear"
    start: list[float] | None = None

    def __post_init__(self) -> None:
        if self.name not in TARGETS:
            raise ValueError(f"Schedule({self.name!r}): schedulable values are {sorted(TARGETS)}")
        if self.shape not in SHAPES:
            raise ValueError(f"Schedule(shape={self.shape!r}): one of {sorted(SHAPES)}")

    def value(self, progress_remaining: float, start: list[float] | None = None) -> list[float]:
        """The value(s) at ``progress_remaining`` from ``start`` (default: the schedule's own)."""
        start = self.start if start is None else start
        if start is None:
            raise ValueError(f"Schedule({self.name!r}) has no start value yet")
        factor = SHAPES[self.shape](progress_remaining)
        return [s * factor for s in start]

    def apply(self, agent: Any, progress_remaining: float) -> None:
        """Write the value at ``progress_remaining`` to ``agent``."""
        target = TARGETS[self.name]
        start = self.start if self.start is not None else target.read_start(agent)
        if target.keep_start:
            self.start = start
        target.write(agent, self.value(progress_remaining, start))


def owners(schedules: Mapping[str, Schedule], adjuster: Any) -> dict[str, str]:
    """Who sets each scheduled value during one ``train()`` call: ``"adjuster"`` where the online
    adjuster's rules change it (its value is not overwritten before each round), else
    ``"schedule"``.  Decided once, when the call starts."""
    managed = set(getattr(adjuster, "active", ()) or ()) if adjuster is not None else set()
    return {name: "adjuster" if name in managed else "schedule" for name in schedules}
