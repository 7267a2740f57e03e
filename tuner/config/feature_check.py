"""Config checks of component combinations the training core refuses: hindsight relabelling (HER) and
multi-agent teams (MARL) with prioritized replay, on-policy agents, n-step returns or pool-network
collection, and vectorised envs with those.

The rules are the core's own (:func:`note_rl.core.base.her_conflict`,
:func:`note_rl.core.marl.marl_conflict`, :func:`note_rl.core.settings.vec_env_conflict`), which
``set()`` and ``train()`` raise as ``ValueError``; asking them here, before a run or a study starts,
turns a traceback at training time (or a study whose every trial fails) into one line that names the
config key that chose the conflicting side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig

from ..common.errors import ConfigError
from .agent_confs import BUILTIN_ACTION_KINDS, BUILTIN_MULTI_AGENT, BUILTIN_ON_POLICY, BUILTIN_OWN_LOOP, builtin_target
from .strategies import strategy_of
from .targets import TargetError, import_target

__all__ = ["AgentFacts", "agent_facts", "check_features"]


@dataclass(frozen=True)
class AgentFacts:
    """What the checks need to know of ``agent._target_`` (built-ins known without importing a framework)."""

    action_kinds: tuple[str, ...] | None
    multi_agent: bool
    on_policy: bool


def agent_facts(cfg: DictConfig) -> AgentFacts:
    """The action kinds the agent handles, whether it trains a team (multi-agent env) and whether it
    is an on-policy (PPO-like) agent; a user's class says so with ``action_kinds``, ``multi_agent``
    and ``PPO`` class attributes."""
    builtin = builtin_target(cfg.agent._target_)
    if builtin:
        name = builtin[1]
        return AgentFacts(BUILTIN_ACTION_KINDS[name], name in BUILTIN_MULTI_AGENT, name in BUILTIN_ON_POLICY)
    cls = import_target(cfg.agent._target_)
    return AgentFacts(getattr(cls, "action_kinds", None), bool(getattr(cls, "multi_agent", False)),
                      bool(getattr(cls, "PPO", False)))


def check_features(cfg: DictConfig) -> None:
    """Raise :class:`ConfigError` for a combination of buffer, agent, ``agent.num_steps``,
    ``agent.n_envs`` and strategy that training would refuse."""
    from note_rl.core.base import her_conflict
    from note_rl.core.marl import marl_conflict
    from note_rl.core.settings import vec_env_conflict

    try:
        flags = dict(getattr(import_target(cfg.buffer._target_), "flags", {}))
        facts = agent_facts(cfg)
    except TargetError:
        return  # an unimportable _target_ is reported by the checks that import it, with its key
    agent = cfg.agent
    rollout = bool(agent.get("n_steps"))
    values = {**flags, "MARL": facts.multi_agent, "PPO": facts.on_policy, "num_steps": agent.get("num_steps")}
    pool = strategy_of(cfg.strategy).pool  # workers collect: what HER, MARL and vectorised envs conflict with
    builtin = builtin_target(cfg.agent._target_)
    if pool and builtin and builtin[1] in BUILTIN_OWN_LOOP:
        raise ConfigError(f"strategy=pool_network: {builtin[1]} collects and replays in the training process; "
                          "use strategy=single")

    def conflict(v: dict[str, Any], pool_network: bool, on_policy: bool) -> str | None:
        return marl_conflict(v, pool_network, on_policy) or her_conflict(v, pool_network, on_policy)

    message = conflict(values, pool, rollout)
    if message:
        raise ConfigError(f"{_culprit(cfg, values, pool, rollout, conflict)}: {message}")
    n_envs = agent.get("n_envs") if not rollout else None
    message = vec_env_conflict(n_envs or 1, facts.multi_agent, bool(flags.get("HER")), pool)
    if message:
        raise ConfigError(f"agent.n_envs={n_envs}: {message}")


def _culprit(cfg: DictConfig, values: dict[str, Any], pool: bool, rollout: bool, conflict: Any) -> str:
    """The config choice whose removal resolves the conflict: the partner of HER / MARL (n-step
    returns, the strategy, a prioritized buffer) before the buffer or agent that asked for them."""
    if values.get("num_steps") and not conflict({**values, "num_steps": None}, pool, rollout):
        return f"agent.num_steps={values['num_steps']}"
    if pool and not conflict(values, False, rollout):
        return "strategy=pool_network"
    if values.get("MARL") and not conflict({**values, "PR": False, "HER": False}, pool, rollout):
        return f"buffer={cfg.buffer.name}"
    return f"buffer={cfg.buffer.name}" if values.get("HER") else f"agent={cfg.agent.name}"
