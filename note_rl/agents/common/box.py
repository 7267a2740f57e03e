"""Acting in a Box action space normalised to ``[-1, 1]``, shared by DDPG, TD3 and SAC.

The agent's env is wrapped with gymnasium's ``RescaleAction`` so the env sees its own bounds, while
the actor (a ``tanh`` output), the exploration noise (added in the normalised scale, as SB3 does,
then clipped to the bounds) and the replay buffer all work in ``[-1, 1]``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from ...core.envs import space_dims
from . import make_env

__all__ = ["BoxActions"]


class BoxActions:
    """Acting in a Box action space normalised to ``[-1, 1]`` (see the module docstring of :mod:`note_rl.agents.common.box`)."""

    #: the action spaces the agent handles (a builder refuses an env with others in one line)
    action_kinds = ("continuous",)

    def _setup_box(self, env: Any, state_dim: int | None, action_dim: int | None) -> tuple[int, int]:
        name = type(self).__name__
        env = make_env(env if env is not None else "Pendulum-v1")
        space = env.action_space
        if not isinstance(space, gym.spaces.Box):
            raise ValueError(f"{name} needs a Box (continuous) action space; the env has {space}")
        if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
            raise ValueError(f"{name} needs finite action bounds; the env has {space}")
        if not (np.all(space.low == -1.0) and np.all(space.high == 1.0)):
            ones = np.ones(space.shape, dtype=space.dtype)
            env = gym.wrappers.RescaleAction(env, -ones, ones)
        self.env = env
        dims = space_dims(env)
        if None in dims:
            raise ValueError(f"{name} needs flat observations and actions; the env has {env.observation_space}, {space}")
        for arg, given, found in (("state_dim", state_dim, dims[0]), ("action_dim", action_dim, dims[1])):
            if given is not None and int(given) != found:
                raise ValueError(f"{name}({arg}={given}): the env has {found}")
        return dims

    def _noise_for(self, index: int | None) -> Any:
        noise = self.noise
        return noise[index or 0] if isinstance(noise, (list, tuple)) else noise

    def explore(self, output: np.ndarray, p: int | None = None, i: int | None = None) -> Any:
        """The action to play: the actor's (sampled) action plus the noise process, if any, clipped
        to ``[-1, 1]`` (the env's bounds after rescaling).

        Before training starts (the first ``learning_starts`` env steps, see ``training_starts``)
        the actor's action is replaced by one drawn uniformly from ``[-1, 1]``, as SB3 and the TD3
        and SAC authors' code do: the first updates then learn from transitions spread over the
        whole action space, not from the narrow band of one untrained actor (rl-zoo3's TD3 preset
        on Pendulum-v1 takes 10,000 such steps).  ``learning_starts=0`` acts with the actor from
        the first step."""
        copy = p if i is None else i
        if self.step_counter < self.training_starts():
            action = self._action_generator().uniform(-1.0, 1.0, self.action_dim).astype(np.float32)
        else:
            action = self.sample_action(np.asarray(output, dtype=np.float32), copy=copy or 0)
        noise = self._noise_for(copy)
        if noise is not None:
            action = action + noise.sample()
        return np.clip(action, -1.0, 1.0).astype(np.float32)

    def sample_action(self, output: np.ndarray, copy: int = 0) -> np.ndarray:
        """The action the policy takes from the network output (deterministic policies: itself);
        ``copy`` is the env copy acting (vectorised or pool collection), for noise kept per copy."""
        return output

    def _action_generator(self) -> np.random.Generator:
        """The generator of the agent's own random actions (warm-up, SAC's samples), from the seed."""
        rng = getattr(self, "_action_rng", None)
        if rng is None:
            rng = self._action_rng = np.random.default_rng(None if self.seed is None else self.seed + 17)
        return rng

    def apply_seed(self, seed: int) -> None:
        super().apply_seed(seed)  # type: ignore[misc]
        self._action_rng = None  # restarts from the new seed

    def greedy_action(self, output: np.ndarray) -> np.ndarray:
        """The action without exploration (evaluation, ``run_agent``)."""
        return np.clip(output, -1.0, 1.0)
