"""The env an ``env`` config names (used by the config checks and by the runs)."""

from __future__ import annotations

import importlib
from typing import Any

from .targets import import_target

__all__ = ["make_env"]


def make_env(env_cfg: dict[str, Any]) -> Any:
    """The env of an ``env`` config: ``factory(**kwargs)`` when a factory is named, else
    ``gym.make(id, **kwargs)`` (discrete observations one-hot encoded)."""
    import gymnasium as gym

    if env_cfg.get("module"):
        importlib.import_module(env_cfg["module"])
    kwargs = env_cfg.get("kwargs") or {}
    if env_cfg.get("factory"):
        return import_target(env_cfg["factory"])(**kwargs)
    from note_rl.core.envs import flat_observations

    return flat_observations(gym.make(env_cfg["id"], **kwargs))
