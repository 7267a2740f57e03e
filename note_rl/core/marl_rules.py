"""The rules of multi-agent RL (``set(MARL=True)``): which settings it runs with, which envs and
agents it takes (the PettingZoo parallel API; see :mod:`note_rl.core.marl`), and the default team
reward and done of a joint step.  Framework-free and below both :mod:`note_rl.core.base` and the
multi-agent collector in :mod:`note_rl.core.marl`, which import them from here."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .settings import offpolicy_only_conflict

__all__ = ["marl_conflict", "check_marl_env", "check_marl_agent", "default_reward_done", "is_discrete_agent"]


def marl_conflict(values: dict[str, Any], pool_network: bool = False,
                  rollout: bool = False) -> str | None:
    """Why ``MARL=True`` cannot run with these settings (``None`` when it can).

    HER relabels single-agent goal observations; PR is left out because the priorities would be
    scores of the joint transition that no loss in this library computes yet (untested, so
    refused rather than half supported); PPO / rollout agents collect through vectorised
    single-agent envs; n-step sums and pool workers would need per-agent bookkeeping not built."""
    if not values.get("MARL"):
        return None
    if values.get("HER"):
        return "MARL=True cannot be combined with HER=True"
    return offpolicy_only_conflict("MARL", values, pool_network, rollout)


def _space_shape(space: Any) -> tuple[int, ...] | None:
    shape = getattr(space, "shape", None)
    return None if shape is None else tuple(shape)


def check_marl_env(env: Any) -> None:
    """Raise a one-line ``ValueError`` unless ``env`` follows the PettingZoo parallel API with
    equal observation shapes for all agents (needed to stack them into one joint array)."""
    env = env[0] if isinstance(env, (list, tuple)) else env
    names = getattr(env, "possible_agents", None)
    if not isinstance(names, (list, tuple)) or not names:
        raise ValueError(f"MARL=True needs a PettingZoo-parallel-style env with a non-empty "
                         f"possible_agents list, got {type(env).__name__}")
    for method in ("reset", "step", "observation_space", "action_space"):
        if not callable(getattr(env, method, None)):
            raise ValueError(f"MARL=True needs env.{method}() (PettingZoo parallel API); "
                             f"{type(env).__name__} has none")
    shapes = {name: _space_shape(env.observation_space(name)) for name in names}
    if len(set(shapes.values())) > 1:
        raise ValueError(f"MARL=True needs equal observation shapes for all agents, got {shapes}")


def check_marl_agent(agent: Any) -> None:
    """Raise a one-line ``ValueError`` unless ``agent.action`` takes the agent index
    (``action(s, i)``) and every ``policy`` / ``noise`` list has one entry per agent."""
    import inspect

    try:
        params = inspect.signature(agent.action).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 2 and not any(p.kind == p.VAR_POSITIONAL for p in params):
        raise ValueError(f"MARL=True needs action(s, i) taking the agent index; "
                         f"{type(agent).__name__}.action takes {len(positional)} argument(s)")
    env = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
    n = len(env.possible_agents)
    for name in ("policy", "noise"):
        value = getattr(agent, name)
        if isinstance(value, (list, tuple)) and len(value) != n:
            raise ValueError(f"MARL=True needs one {name} per agent ({n}), got a list of {len(value)}")


def is_discrete_agent(env: Any, i: int) -> bool:
    """Whether agent ``i``'s action space is discrete (``gymnasium.spaces.Discrete``)."""
    import gymnasium as gym

    env = env[0] if isinstance(env, (list, tuple)) else env
    return isinstance(env.action_space(env.possible_agents[i]), gym.spaces.Discrete)


def default_reward_done(rewards: Sequence[float], dones: Sequence[bool]) -> tuple[float, bool]:
    """Scalar reward and done of a joint step when the agent has no ``reward_done_func_ma``:
    the team reward (sum) and whether any agent terminated."""
    return float(np.sum(rewards)), bool(np.any(dones))
