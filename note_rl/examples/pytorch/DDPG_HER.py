"""``from Note_rl.examples.pytorch.DDPG_HER import DDPG``: the built-in DDPG on a goal env by default."""

from __future__ import annotations

from typing import Any

from ...agents.torch import DDPG as _DDPG
from .._her import with_goal_env

__all__ = ["DDPG"]


class DDPG(_DDPG):
    """The built-in :class:`~note_rl.agents.torch.DDPG` (same arguments, including Note_rl's
    positional ``DDPG(128, 0.1, 0.98, 0.005[, processes])``) whose ``env`` defaults to
    :data:`note_rl.examples.GOAL_ENV`, so ``set(HER=True)`` trains as the seeds write it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **with_goal_env(args, kwargs))
