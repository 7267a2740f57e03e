"""n-step transitions (Sutton & Barto 2018, section 7.1) for ``set(num_steps=n)``.

An :class:`NStepAccumulator` turns the one-step stream of one environment into transitions
``(s_t, a_t, s_{t+k}, R, d)`` with ``R = sum_{i<k} gamma**i * r_{t+i}`` and ``k = n`` while the episode
runs.  When the episode *terminates*, every pending start state is flushed with the shorter
remainder (``k < n``) and ``d = 1``, so no reward is lost and nothing crosses an episode boundary.
Note_rl's own n-step bookkeeping kept the first ``next_state`` and ``done`` of each window; this
one stores the state reached after the ``k`` steps.

When the episode is *truncated* (time limit), the pending windows with ``k < n`` are dropped.
Why: such a transition must bootstrap with ``gamma**k * Q(s_{t+k})``, but the five stored fields
(and the custom-agent loss ``__call__(s, a, next_s, r, d)``) cannot say ``k``; the built-in DQN
target uses ``gamma**num_steps`` for every non-terminal item.  Dropping them keeps every stored
transition exact (``k = n`` when ``d = 0``; no bootstrap when ``d = 1``) in single-process and pool
collection alike, at the cost of the last ``n - 1`` start states of a truncated episode.  (Keeping
them would need a sixth "steps" field carried through the buffer, the pool workers and the
learner into the loss.)
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

__all__ = ["NStepAccumulator"]

Transition = tuple[Any, Any, Any, float, float]


class NStepAccumulator:
    """Sliding window over the last ``n`` steps of one environment.

    :param n: number of steps summed into one transition
    :param gamma: discount applied inside the window (1.0 sums raw rewards, as Note_rl does)
    """

    def __init__(self, n: int, gamma: float = 1.0) -> None:
        if n < 1:
            raise ValueError(f"num_steps must be >= 1, got {n}")
        self.n = int(n)
        self.gamma = float(gamma)
        self.window: deque[tuple[Any, Any, float]] = deque()

    def _discounted(self) -> float:
        return float(sum(r * self.gamma**i for i, (_, _, r) in enumerate(self.window)))

    def push(self, state: Any, action: Any, reward: float, next_state: Any, terminated: bool,
             episode_end: bool) -> list[Transition]:
        """Add one step; return the transitions that are complete after it."""
        self.window.append((state, action, float(reward)))
        out: list[Transition] = []
        if len(self.window) == self.n:
            s, a, _ = self.window[0]
            out.append((s, a, next_state, self._discounted(), float(terminated)))
            self.window.popleft()
        if episode_end and not terminated:
            self.window.clear()  # truncated: k < n windows cannot bootstrap with gamma**n (see above)
        elif episode_end:
            while self.window:
                s, a, _ = self.window[0]
                out.append((s, a, next_state, self._discounted(), float(terminated)))
                self.window.popleft()
        return out

    def reset(self) -> None:
        self.window.clear()


def stack_transitions(items: list[Transition]) -> tuple[np.ndarray, ...]:
    """Column-stack a list of transitions into the five field arrays."""
    s, a, s2, r, d = zip(*items)
    return np.asarray(s), np.asarray(a), np.asarray(s2), np.asarray(r), np.asarray(d)
