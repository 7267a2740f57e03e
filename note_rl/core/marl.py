"""Multi-agent RL (``set(MARL=True)``): joint storage and single-process collection; the env checks
and the other rules are in :mod:`note_rl.core.marl_rules` (re-exported here).

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
from .marl_rules import (check_marl_agent, check_marl_env, default_reward_done, is_discrete_agent,
                         marl_conflict)

__all__ = ["marl_conflict", "check_marl_env", "check_marl_agent", "default_reward_done", "joint_obs",
           "is_discrete_agent", "MultiAgentCollector"]


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

    def __init__(self, agent: Any, learner: Any, run: Any, settings: Any = None) -> None:
        super().__init__(agent, learner, run, settings)
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
