"""Progress lines on Note_rl's cadence.

``p`` is roughly the number of progress lines over a run (Note_rl's rule): ``p=None`` prints about
ten times, ``p=0`` prints nothing.  With ``episodes=None`` a line is printed every ten episodes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Progress", "print_period"]


def print_period(p: int | None, episodes: int | None) -> int:
    """Episodes between two progress lines (Note_rl's formula, guarded against ``p=1``)."""
    if episodes is None or episodes <= 0:
        return 10
    q = max(9 if p is None else p - 1, 1)
    if episodes % 10 != 0:
        period = int((episodes - episodes % q) / q)
    else:
        period = int(episodes / (q + 1))
    return max(period, 1)


class Progress:
    """Prints ``episode:{i}  loss:{..}`` and ``average reward`` lines every ``period`` episodes."""

    def __init__(self, p: int | None, episodes: int | None) -> None:
        self.silent = p == 0
        self.period = print_period(p, episodes)

    def episode(self, episode: int, logs: dict[str, Any]) -> None:
        if self.silent or episode % self.period != 0:
            return
        if logs.get("loss") is not None:
            print(f"episode:{episode + 1}   loss:{logs['loss']:.4f}")
        mean = logs.get("mean_reward")
        if mean is not None:
            print(f"episode:{episode + 1}   average reward:{mean:.4f}   reward:{logs['reward']:.1f}")
        else:
            print(f"episode:{episode + 1}   reward:{logs['reward']:.1f}")

    def criterion(self, episode: int, mean: float | None) -> None:
        if not self.silent:
            print(f"episode:{episode}   average reward:{mean:.4f}   criterion reached")

    def finish(self, agent: Any, elapsed: float) -> None:
        if not self.silent:
            print(f"time:{elapsed:.1f}s   env steps:{agent.step_counter}   episodes:{agent.total_episode}")
