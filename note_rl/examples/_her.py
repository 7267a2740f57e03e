"""The ``DDPG_HER`` example classes' one difference from the built-in ``DDPG``: a goal env by default."""

from __future__ import annotations

from typing import Any

from . import GOAL_ENV

#: the built-in DDPG's positional arguments before ``env`` (state_dim, hidden_size, action_dim, gamma, tau)
_BEFORE_ENV = 5


def with_goal_env(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with ``env`` set to :data:`note_rl.examples.GOAL_ENV` unless the call gave one."""
    if len(args) > _BEFORE_ENV or kwargs.get("env") is not None:
        return kwargs
    return {**kwargs, "env": GOAL_ENV}
