"""The rules of hindsight experience replay (``set(HER=True)``): which settings it runs with and
which envs it takes.  Framework-free and below both :mod:`note_rl.core.base` (``set()`` checks
the flags) and :mod:`note_rl.core.collect` (the HER collector checks the agent and its env), so
neither of those imports the other for them."""

from __future__ import annotations

from typing import Any

from ..buffers.her import GOAL_KEYS
from .settings import offpolicy_only_conflict

__all__ = ["GOAL_KEYS", "her_conflict", "check_her_env"]


def her_conflict(values: dict[str, Any], pool_network: bool = False,
                 rollout: bool = False) -> str | None:
    """Why ``HER=True`` cannot run with these settings (``None`` when it can).

    HER relabels whole episodes stored in one process: priorities (PR) would belong to the stored
    goal, not the relabelled one; on-policy PPO must not learn from relabelled (off-policy) goals;
    n-step sums mix rewards of the original goal; pool workers would need per-worker episode
    staging, which is not built."""
    if not values.get("HER"):
        return None
    return offpolicy_only_conflict("HER", values, pool_network, rollout)


def check_her_env(env: Any) -> None:
    """Raise ``ValueError`` unless ``env`` is a goal env with a gymnasium ``Dict`` observation
    space holding ``observation``, ``achieved_goal`` and ``desired_goal``."""
    import gymnasium as gym

    env = env[0] if isinstance(env, (list, tuple)) else env
    space = getattr(env, "observation_space", None)
    if not isinstance(space, gym.spaces.Dict) or not set(GOAL_KEYS) <= set(space.spaces):
        raise ValueError(f"HER=True needs a goal env whose observation space is a gymnasium Dict "
                         f"with keys {GOAL_KEYS}, got {space!r}")
