"""Progress of a training run: a live bar on a terminal, plain lines on Note_rl's cadence otherwise.

``p`` is roughly the number of progress lines over a run (Note_rl's rule): ``p=None`` prints about
ten times, ``p=0`` prints nothing.  With ``episodes=None`` a line is printed every ten episodes.
When stdout is a terminal the lines are replaced by a tqdm bar over the env-step budget (or the
episode budget) showing the episode, return, mean return, loss and env steps/s; the environment
variable ``NOTE_RL_PROGRESS=bar|lines`` forces either form.  tqdm is imported only for a bar.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import Any, TextIO

__all__ = ["Progress", "print_period", "use_bar"]


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


def use_bar(stream: TextIO) -> bool:
    """A live bar when ``stream`` is a terminal (``NOTE_RL_PROGRESS=bar|lines`` overrides)."""
    forced = os.environ.get("NOTE_RL_PROGRESS", "").lower()
    if forced in ("bar", "lines"):
        return forced == "bar"
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


class Progress:
    """Prints ``episode:{i}  loss:{..}`` and ``average reward`` lines every ``period`` episodes, or
    drives a bar on a terminal.

    :param p: Note_rl's ``p`` (``0``: silent)
    :param episodes: the episode budget (``None``: unbounded)
    :param steps: the env-step budget of this ``train()`` call (the bar's total when set)
    :param start_steps: the agent's step counter when the call started
    :param stream: where to write (default ``sys.stdout``)
    """

    def __init__(self, p: int | None, episodes: int | None, steps: int | None = None, start_steps: int = 0,
                 stream: TextIO | None = None) -> None:
        self.silent = p == 0
        self.period = print_period(p, episodes)
        self.stream = stream
        self.start_steps = start_steps
        self.bar: Any = None
        if not self.silent and use_bar(self._out()):
            self.bar = self._make_bar(episodes, steps)
        self._t0 = time.perf_counter()

    def _out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stdout

    def _make_bar(self, episodes: int | None, steps: int | None) -> Any:
        from tqdm import tqdm

        self.by_steps = bool(steps)
        total = steps if steps else episodes
        # a terminal that reports no size (e.g. a bare pty) would get a zero-width, invisible bar
        width = shutil.get_terminal_size((100, 24)).columns or 100
        return tqdm(total=total, unit="step" if self.by_steps else "ep", file=self._out(), ncols=width,
                    mininterval=0.2, leave=True)

    def episode(self, episode: int, logs: dict[str, Any]) -> None:
        if self.silent:
            return
        if self.bar is not None:
            self._bar_episode(episode, logs)
            return
        if episode % self.period != 0:
            return
        if logs.get("loss") is not None:
            print(f"episode:{episode + 1}   loss:{logs['loss']:.4f}", file=self._out())
        mean = logs.get("mean_reward")
        if mean is not None:
            print(f"episode:{episode + 1}   average reward:{mean:.4f}   reward:{logs['reward']:.1f}", file=self._out())
        else:
            print(f"episode:{episode + 1}   reward:{logs['reward']:.1f}", file=self._out())

    def _bar_episode(self, episode: int, logs: dict[str, Any]) -> None:
        steps = int(logs.get("env_steps", self.start_steps)) - self.start_steps
        position = steps if self.by_steps else episode + 1
        if self.bar.total:
            position = min(position, self.bar.total)
        post = {"ep": episode + 1, "return": f"{logs['reward']:.1f}"}
        if logs.get("mean_reward") is not None:
            post["mean"] = f"{logs['mean_reward']:.1f}"
        if logs.get("loss") is not None:
            post["loss"] = f"{logs['loss']:.4g}"
        if not self.by_steps:  # the bar's own rate is episodes/s: add env steps/s
            elapsed = time.perf_counter() - self._t0
            post["steps/s"] = f"{steps / elapsed:.0f}" if elapsed > 0 else "-"
        self.bar.set_postfix(post, refresh=False)
        self.bar.update(position - self.bar.n)

    def criterion(self, episode: int, mean: float | None) -> None:
        if self.silent:
            return
        line = f"episode:{episode}   average reward:{mean:.4f}   criterion reached"
        if self.bar is not None:
            self.bar.write(line, file=self._out())
        else:
            print(line, file=self._out())

    def finish(self, agent: Any, elapsed: float) -> None:
        if self.bar is not None:
            if self.by_steps:  # the last, unfinished episode's steps count too
                done = agent.step_counter - self.start_steps
                self.bar.update(max(0, min(done, self.bar.total or done) - self.bar.n))
            self.bar.close()
            self.bar = None
        if not self.silent:
            print(f"time:{elapsed:.1f}s   env steps:{agent.step_counter}   episodes:{agent.total_episode}",
                  file=self._out())
