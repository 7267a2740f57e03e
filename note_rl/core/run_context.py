"""What one ``train()`` call shares with the parts it drives.

``train()`` builds a :class:`RunContext` and hands it to its collector (the collector's third
constructor argument); adjusters, callbacks and the tuner's checkpoints reach it through
:func:`current`, which is ``None`` outside ``train()``.  The context carries the call's
:class:`~note_rl.core.settings.TrainSettings`, its budget, its step origin and episode index, the
schedules it applies, and two sinks into the loop: finished episodes (:meth:`RunContext.end_episode`)
and adjuster values (:meth:`RunContext.report_adjust`).  Nothing needs the loop object itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from .schedule import Schedule, owners

if TYPE_CHECKING:
    from .settings import TrainSettings

__all__ = ["RunContext", "current"]


def current(agent: Any) -> RunContext | None:
    """The context of the ``train()`` call running ``agent``; ``None`` outside ``train()``."""
    return getattr(agent, "_run", None)


@dataclass(eq=False)
class RunContext:
    """One ``train()`` call.

    :param agent: the agent being trained
    :param settings: the call's options (an adjuster's ``store_params`` changes ``num_store`` here)
    :param episodes: the episode budget (``None``: unbounded)
    :param start_steps: the step origin: the agent's step counter when the run started (a resumed
        run restores the original one, so step budgets and schedules count from the run's start)
    :param episode: index of the current episode of this call
    :param finished: the budget or the criterion is reached
    :param schedules: the agent's schedules (:attr:`owner` says which of them this call applies)
    :param owner: ``{value: "schedule" | "adjuster"}``, decided when the call starts
    :param span: the env steps the schedules span, counted from the agent's step 0, when this call
        is one part of a longer run (a population-based training segment continues its parent's
        checkpoint); ``None``: the schedules span this call's own step budget from its start
    """

    agent: Any = field(repr=False)
    settings: TrainSettings
    episodes: int | None = None
    start_steps: int = 0
    episode: int = 0
    finished: bool = False
    schedules: dict[str, Schedule] = field(default_factory=dict)
    owner: dict[str, str] = field(default_factory=dict)
    span: int | None = None
    #: the training parts whose counters a checkpoint keeps (set by the loop once built)
    learner: Any = field(default=None, repr=False)
    cadence: Any = field(default=None, repr=False)
    on_episode_end: Callable[[float], None] | None = field(default=None, repr=False)
    on_adjust: Callable[[dict[str, float]], None] | None = field(default=None, repr=False)

    @classmethod
    def start(cls, agent: Any, settings: TrainSettings, episodes: int | None, **sinks: Any) -> RunContext:
        """The context of a call starting now: its step origin is the agent's step counter, and each
        of the agent's schedules gets its owner for the call."""
        schedules = dict(getattr(agent, "schedules", None) or {})
        return cls(agent, settings, episodes, start_steps=agent.step_counter, schedules=schedules,
                   owner=owners(schedules, getattr(agent, "adjuster", None)), **sinks)

    # -- budget and progress -------------------------------------------------------------------
    def out_of_steps(self) -> bool:
        """Whether the call's step budget (``train(steps=...)``) is spent."""
        steps = self.settings.steps
        return steps is not None and self.agent.step_counter - self.start_steps >= steps

    def progress_remaining(self) -> float:
        """1 at the start of the run, 0 at its end (by steps when a step budget is set)."""
        if self.span:  # a part of a longer run: where the whole run is, not where this part is
            done = self.agent.step_counter / self.span
        elif self.settings.steps:
            done = (self.agent.step_counter - self.start_steps) / self.settings.steps
        elif self.episodes:
            done = self.episode / self.episodes
        else:
            return 1.0
        return float(np.clip(1.0 - done, 0.0, 1.0))

    def begin_round(self) -> None:
        """A training round starts (a round of gradient steps, a rollout, an ACER segment): the
        values this call's schedules own are set for the progress made so far."""
        if not self.schedules:
            return
        progress = self.progress_remaining()
        for name, schedule in self.schedules.items():
            if self.owner.get(name) == "schedule":
                schedule.apply(self.agent, progress)

    def claim(self, name: str, owner: str) -> None:
        """``owner`` (e.g. ``"lr_finder"``) sets ``name`` for the rest of this call: a schedule of it
        stops writing it before each round (an LR range test's lr would be overwritten otherwise)."""
        if name in self.owner:
            self.owner[name] = owner

    # -- sinks into the loop ---------------------------------------------------------------------
    def end_episode(self, episode_return: float) -> None:
        """A collector finished an episode with return ``episode_return``."""
        if self.on_episode_end is not None:
            self.on_episode_end(episode_return)

    def report_adjust(self, logs: Mapping[str, float]) -> None:
        """An adjuster run's values, for ``on_adjust`` and the next episode's logs."""
        if self.on_adjust is not None:
            self.on_adjust(dict(logs))

    # -- checkpoints -----------------------------------------------------------------------------
    def loop_state(self) -> dict[str, Any]:
        """The counters a resumed run needs besides the agent's: the step origin, the gradient steps
        owed by the cadence and the learner's updates since the last target sync."""
        return {"start_steps": int(self.start_steps),
                "owed": float(getattr(self.cadence, "owed", 0.0)),
                "sync_due": bool(getattr(self.cadence, "sync_due", False)),
                "updates_since_sync": int(getattr(self.learner, "updates_since_sync", 0))}

    def restore(self, state: Mapping[str, Any]) -> None:
        """Put this call where a checkpointed one was: :meth:`loop_state`'s values and the index of
        the next ``episode``."""
        self.episode = int(state.get("episode", 0))
        self.start_steps = int(state.get("start_steps", 0))
        if self.cadence is not None:
            self.cadence.owed = float(state.get("owed", 0.0))
            self.cadence.sync_due = bool(state.get("sync_due", False))
        if hasattr(self.learner, "updates_since_sync"):
            self.learner.updates_since_sync = int(state.get("updates_since_sync", 0))
