"""Config check of ``agent.network`` (networks from config, :mod:`note_rl.agents.nets`): the node names a
network the agent can build, with arguments its class takes, before any run or study starts.

``agent.network`` is ``null`` (the MLP of ``agent.hidden_size`` / ``agent.activation``), a node whose
``_target_`` is one of ``note_rl.agents.nets``' specs (``MLP``, ``ConvEncoder``, ``NatureCNN``,
``MinAtarCNN``), or a user's own module class, built as ``cls(obs_shape, **other_keys)``.
"""

from __future__ import annotations

import inspect
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ..common.errors import ConfigError
from .strategies import strategy_of
from .targets import TargetError, import_target

__all__ = ["check_network", "network_key"]


def network_key(cfg: Any) -> str | None:
    """Where the agent's network comes from: ``agent.network`` when set, else ``env.network`` (an
    image env preset's network) when the agent takes one (its config has a ``network`` key), else ``None``."""
    agent, env = cfg["agent"], cfg["env"]
    if agent.get("network") is not None:
        return "agent.network"
    return "env.network" if "network" in agent and env.get("network") is not None else None


def check_network(cfg: DictConfig) -> None:
    """Raise :class:`ConfigError` naming ``agent.network`` / ``env.network`` (or the key inside it) for a
    node that is not ``null`` or a ``_target_`` node, a spec with bad arguments, a module class that does
    not import or does not take the keys given, or an encoder network with pool-network rollouts."""
    specs = {key: _spec(key, node) for key in ("env.network", "agent.network")
             if (node := OmegaConf.select(cfg, key, default=None)) is not None}
    key = network_key(cfg)
    spec = specs.get(key) if key else None
    if spec is not None and type(spec).__name__ != "MLP" and strategy_of(cfg.strategy).pool \
            and OmegaConf.select(cfg, "agent.n_steps", default=None):
        raise ConfigError(f"strategy={cfg.strategy.name}: rollout workers act with numpy copies of an MLP; "
                          f"{key}={spec!r} acts through the framework (use strategy=single)")


def _spec(key: str, node: Any) -> Any:
    """The spec of the network node at ``key``, or one line naming the key."""
    if not OmegaConf.is_dict(node) or not isinstance(node.get("_target_"), str):
        raise ConfigError(f"{key}: expected null or a node with a _target_ (note_rl.agents.nets.NatureCNN, "
                          f"note_rl.agents.nets.MinAtarCNN, note_rl.agents.nets.MLP or your module class), got {node!r}")
    from note_rl.agents.nets import Module, network_spec  # framework-free

    try:
        spec = network_spec(OmegaConf.to_container(node, resolve=True))
    except ValueError as exc:
        raise ConfigError(f"{key}: {str(exc).removeprefix('network: ')}") from None
    if isinstance(spec, Module):
        _check_module(key, spec)
    return spec


def _check_module(key: str, spec: Any) -> None:
    """A user's module class imports and takes ``(obs_shape, **kwargs)``."""
    try:
        cls = import_target(spec.target)
    except TargetError as exc:
        raise ConfigError(f"{key}._target_: {exc}") from None
    try:
        params = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        return  # no signature to read: the constructor says what it takes
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return
    named = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if not named:
        raise ConfigError(f"{key}._target_: {spec.target} must take the observation shape as its "
                          "first argument")
    for arg in spec.kwargs:
        if arg not in named[1:]:
            raise ConfigError(f"{key}.{arg}: not an argument of {spec.target} "
                              f"(takes {', '.join(named[1:]) or 'only the observation shape'})")
