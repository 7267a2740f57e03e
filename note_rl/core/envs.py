"""Gymnasium helpers: action-space facts, picklable env factories, vectorised envs."""

from __future__ import annotations

import io
import pickle
import types
from typing import Any, Callable

import gymnasium as gym
import numpy as np

__all__ = ["is_discrete", "EnvFactory", "make_vec_env", "step_env", "dumps_noting_main", "space_dims"]

_MAIN_NAMES = ("__main__", "__mp_main__")


class _MainProbe(pickle.Pickler):
    """A pickler that notes whether anything it pickles lives in the ``__main__`` module."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.uses_main = False

    def reducer_override(self, obj: Any) -> Any:
        by_reference = isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType))
        module = getattr(obj, "__module__", None) if by_reference else type(obj).__module__
        if module in _MAIN_NAMES:
            self.uses_main = True
        elif isinstance(obj, EnvFactory) and obj.uses_main:
            self.uses_main = True  # its env was pickled on its own, with the same probe
        return NotImplemented  # pickle as usual


def dumps_noting_main(obj: Any) -> tuple[bytes, bool]:
    """``pickle.dumps(obj)`` and whether unpickling it needs the ``__main__`` module (a class,
    function or instance defined in the script that was run)."""
    buffer = io.BytesIO()
    probe = _MainProbe(buffer)
    probe.dump(obj)
    return buffer.getvalue(), probe.uses_main


def is_discrete(env: Any) -> bool:
    env = env[0] if isinstance(env, (list, tuple)) else env
    return isinstance(getattr(env, "action_space", None), gym.spaces.Discrete)


def space_dims(env: Any) -> tuple[int | None, int | None]:
    """``(state_dim, action_dim)`` of a single-agent env, as the built-in agents' constructors take
    them: the size of a flat observation (a goal env's: observation + desired goal, what HER feeds
    the agent), and the number of discrete actions or the size of a flat Box action; ``None``
    where a space has no such size (images, tuples, multi-agent envs)."""
    obs, act = getattr(env, "observation_space", None), getattr(env, "action_space", None)
    state = action = None
    if isinstance(obs, gym.spaces.Dict) and {"observation", "desired_goal"} <= set(obs.spaces):
        state = int(obs["observation"].shape[0] + obs["desired_goal"].shape[0])
    elif isinstance(obs, gym.spaces.Box) and len(obs.shape) == 1:
        state = int(obs.shape[0])
    if isinstance(act, gym.spaces.Discrete):
        action = int(act.n)
    elif isinstance(act, gym.spaces.Box) and len(act.shape) == 1:
        action = int(act.shape[0])
    return state, action


def step_env(env: Any, action: Any) -> tuple[Any, float, bool, bool]:
    """Step a gymnasium env (5-tuple API); returns ``(next_state, reward, terminated, truncated)``."""
    next_state, reward, terminated, truncated, _ = env.step(action)
    return next_state, float(reward), bool(terminated), bool(truncated)


class EnvFactory:
    """Picklable recipe for fresh copies of an env.

    Registered envs are rebuilt from their ``EnvSpec`` (including ``gym.make`` wrappers); other
    envs are copied by pickling the instance, which is how they reach spawned worker processes.
    ``uses_main`` tells whether rebuilding the env needs the ``__main__`` module.
    """

    def __init__(self, env: Any) -> None:
        spec = getattr(env, "spec", None)
        self.uses_main = False
        if spec is not None and _is_plain_make(env):
            self.spec: Any = spec
            self.blob: bytes | None = None
            entry = getattr(spec, "entry_point", None)
            self.uses_main = isinstance(entry, str) and entry.split(":")[0] in _MAIN_NAMES
        else:
            self.spec = None
            self.blob, self.uses_main = dumps_noting_main(env)

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


class OneHotObservation(gym.ObservationWrapper):
    """A ``Discrete(n)`` observation as a one-hot ``float32`` vector of length ``n`` (what an MLP
    can read; FrozenLake, Taxi, CliffWalking)."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        space = env.observation_space
        self.n, self.start = int(space.n), int(space.start)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.n,), np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        out = np.zeros(self.n, np.float32)
        out[int(observation) - self.start] = 1.0
        return out


def flat_observations(env: Any) -> Any:
    """``env`` as the networks read it: a ``Discrete`` observation space one-hot encoded, a ``float64``
    ``Box`` (MuJoCo's) or a flat ``Box`` of another dtype (Atari RAM's ``uint8``) cast to ``float32``
    here, once, so that no MLP meets a double or integer tensor (torch refuses to multiply one with its
    float32 weights); images (``uint8`` / ``bool`` Boxes of 2 or more axes) stay as they are, for the
    encoder of the agent's network to cast (:mod:`note_rl.agents.nets`); others unchanged."""
    space = getattr(env, "observation_space", None)
    if isinstance(space, gym.spaces.Discrete):
        return OneHotObservation(env)
    if isinstance(space, gym.spaces.Box) and (space.dtype == np.float64 or
                                              (len(space.shape) == 1 and space.dtype != np.float32)):
        return gym.wrappers.DtypeObservation(env, np.float32)
    return env


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
