"""Multi-agent RL (``set(MARL=True)``): env checks, joint storage and single-process collection.

Env convention: the PettingZoo *parallel* API, checked by duck typing (PettingZoo itself is not a
dependency): ``env.possible_agents`` (agent names, fixed order), ``reset(seed=...) -> (obs,
infos)``, ``step(actions) -> (obs, rewards, terminations, truncations, infos)``, every value a
dict keyed by agent name, and methods ``env.observation_space(name)`` / ``env.action_space(name)``.
All agents act every step; the episode ends when any agent terminates or truncates, or when the
agent's ``reward_done_func_ma`` returns ``done``.

Training is centralised, as in Note_rl: each step is stored as one joint transition - state and
next state ``(n_agents, *obs_shape)`` (observations stacked in ``possible_agents`` order), action
``(n_agents,)`` or ``(n_agents, act_dim)``, and the scalar ``(r, done)`` returned by
``reward_done_func_ma(rewards, dones)`` (default: sum of rewards, any termination).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .collect import EpisodeCollector
from .settings import offpolicy_only_conflict

__all__ = ["marl_conflict", "check_marl_env", "check_marl_agent", "default_reward_done", "joint_obs",
           "is_discrete_agent", "MultiAgentCollector"]


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


def joint_obs(obs: dict[str, Any], names: Sequence[str]) -> np.ndarray:
    """Stack per-agent observations in ``names`` order into ``(n_agents, *obs_shape)``."""
    arrays = [np.asarray(obs[name], dtype=np.float32) for name in names]
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"MARL=True needs equal observation shapes for all agents, got {sorted(shapes)}")
    return np.stack(arrays)


class MultiAgentCollector(EpisodeCollector):
    """Single-process, off-policy collection from one multi-agent env (one unit = one episode):
    the :class:`~note_rl.core.collect.EpisodeCollector` loop with a joint step.

    Per step: agent ``i`` acts with ``agent.select_action(s_i, i)`` (its ``action(s, i)`` output
    and ``policy[i]`` / ``noise[i]``), the env steps with the dict of actions, the rewards and
    terminations (``possible_agents`` order) go through ``agent.marl_reward_done`` and the joint
    transition is stored; training then runs on the usual cadence."""

    def __init__(self, agent: Any, learner: Any, trainer: Any, settings: Any = None) -> None:
        super().__init__(agent, learner, trainer, settings)
        self.names = list(self.env.possible_agents)

    @classmethod
    def check(cls, agent: Any, settings: Any) -> None:
        """MARL runs off-policy agents in one process on a PettingZoo-parallel-style env."""
        values = {k: getattr(agent, k) for k in ("MARL", "HER", "PR", "PPO", "num_steps")}
        conflict = marl_conflict(values, settings.pool_network, bool(getattr(agent, "n_steps", None)))
        if conflict:
            raise ValueError(f"train(): {conflict}")
        check_marl_env(agent.env)
        check_marl_agent(agent)

    def _reset(self) -> np.ndarray:
        return joint_obs(super()._reset(), self.names)

    def _step(self, state: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, bool, bool]:
        """Act for every agent and step the env: ``(actions, next_state, r, done, episode_end)``;
        the episode ends when any agent terminates or truncates, or ``done`` says so."""
        agent, names = self.agent, self.names
        actions = [agent.select_action(state[i], i) for i in range(len(names))]
        obs, rewards, terms, truncs, _ = self.env.step(dict(zip(names, actions)))
        next_state = joint_obs(obs, names)
        r, done = agent.marl_reward_done([float(rewards[n]) for n in names],
                                         [bool(terms[n]) for n in names])
        end = bool(done) or any(bool(terms[n]) or bool(truncs[n]) for n in names)
        return np.asarray(actions), next_state, float(r), bool(done), end
