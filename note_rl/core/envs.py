"""Gymnasium helpers: action-space facts, picklable env factories, vectorised envs."""

from __future__ import annotations

import pickle
from typing import Any, Callable

import gymnasium as gym
import numpy as np

__all__ = ["is_discrete", "EnvFactory", "make_vec_env", "step_env"]


def is_discrete(env: Any) -> bool:
    env = env[0] if isinstance(env, (list, tuple)) else env
    return isinstance(getattr(env, "action_space", None), gym.spaces.Discrete)


def step_env(env: Any, action: Any) -> tuple[Any, float, bool, bool]:
    """Step a gymnasium env (5-tuple API); returns ``(next_state, reward, terminated, truncated)``."""
    next_state, reward, terminated, truncated, _ = env.step(action)
    return next_state, float(reward), bool(terminated), bool(truncated)


class EnvFactory:
    """Picklable recipe for fresh copies of an env.

    Registered envs are rebuilt from their ``EnvSpec`` (including ``gym.make`` wrappers); other
    envs are copied by pickling the instance, which is how they reach spawned worker processes.
    """

    def __init__(self, env: Any) -> None:
        spec = getattr(env, "spec", None)
        if spec is not None and _is_plain_make(env):
            self.spec: Any = spec
            self.blob: bytes | None = None
        else:
            self.spec = None
            self.blob = pickle.dumps(env)

    def __call__(self) -> Any:
        if self.spec is not None:
            return gym.make(self.spec)
        return pickle.loads(self.blob)  # noqa: S301 - our own bytes, made in this run


def _is_plain_make(env: Any) -> bool:
    """True when ``env`` is exactly what ``gym.make(env.spec)`` builds (no extra wrappers)."""
    try:
        fresh = gym.make(env.spec)
    except Exception:  # noqa: BLE001 - any failure means: do not trust the spec
        return False
    same = str(fresh) == str(env)
    fresh.close()
    return same


def make_vec_env(factory: Callable[[], Any], n_envs: int) -> gym.vector.SyncVectorEnv:
    """``n_envs`` copies in one process; an ended episode resets within the same step and its last
    observation is reported in ``info["final_obs"]`` (so truncated episodes can bootstrap)."""
    return gym.vector.SyncVectorEnv(
        [factory for _ in range(n_envs)], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )


def action_dtype(env: Any) -> np.dtype:
    space = getattr(env, "action_space", None)
    if isinstance(space, gym.spaces.Discrete):
        return np.dtype(np.int64)
    return np.dtype(np.float32)
