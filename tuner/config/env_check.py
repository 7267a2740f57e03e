"""The env checks of :func:`tuner.config.schema.validate`: ``env.module`` / ``env.factory`` import, the env
exists, its action space suits the agent (single- or multi-agent, discrete or continuous).

Checking means importing and running user code (an env module, an env factory, the env's
constructor).  When the config names such code (``env.module``, ``env.factory``), the checks run in
a fresh child process (``spawn``), so a module that segfaults, aborts or calls ``os._exit`` on import
costs the child, not the driver: the driver reports one line and exits 2.  Plain gymnasium ids are
checked in-process (no user code; no child start-up cost on every command).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import re
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ..common.errors import ConfigError, error_line
from ..common.interrupts import start_shielded
from ..common.process import exit_reason
from .envs import make_env
from .feature_check import agent_facts
from .memory import check_replay_memory
from .targets import import_target

__all__ = ["check_env", "check_here", "env_actions"]

CHILD_TIMEOUT_S = 300.0
_NO_ANSWER = object()  # the child died before sending its verdict
Actions = frozenset[str] | None  # {"discrete"}, {"continuous"}, ... or None: the checks did not look
#: the kinds of action each checked (env, agent) pair has: a search space's ``actions=`` conditions read them
_ACTIONS: dict[str, Actions] = {}


def env_actions(cfg: DictConfig) -> Actions:
    """The kinds of action (``"discrete"``, ``"continuous"``) the config's env has, as the env checks
    found them: from this process's earlier check of the same env and agent, or by running the checks
    now.  None where the checks do not look at actions (an agent that declares no action kinds)."""
    key = _actions_key(cfg)
    return _ACTIONS[key] if key in _ACTIONS else check_env(cfg)


def _actions_key(cfg: DictConfig) -> str:
    env = OmegaConf.to_container(cfg.env, resolve=True)
    return json.dumps([env, str(cfg.agent.get("_target_"))], sort_keys=True, default=str)


def check_env(cfg: DictConfig) -> Actions:
    """Run the env checks, in a child process when the config names user code; the kinds of action
    the env has (see :func:`env_actions`)."""
    kinds = _check_env(cfg)
    _ACTIONS[_actions_key(cfg)] = kinds
    return kinds


def _check_env(cfg: DictConfig) -> Actions:
    if not (cfg.env.module or cfg.env.factory):
        return check_here(cfg)
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, OmegaConf.to_container(cfg, resolve=True)), daemon=True)
    start_shielded(proc)  # a Ctrl-C meanwhile is the driver's (tuner.common.interrupts)
    child.close()
    message: Any = _NO_ANSWER
    try:
        if parent.poll(CHILD_TIMEOUT_S):
            message = parent.recv()
    except (EOFError, OSError):
        pass  # the child died before answering
    proc.join(timeout=10)
    if proc.is_alive():
        proc.kill()
        proc.join()
        raise ConfigError(f"env.module: checking the env took over {CHILD_TIMEOUT_S:.0f} s (importing "
                          f"{cfg.env.module or cfg.env.factory!r} hangs?)")
    if isinstance(message, tuple):  # ("ok", kinds)
        return None if message[1] is None else frozenset(message[1])
    if isinstance(message, str):
        raise ConfigError(message)
    key = "env.module" if cfg.env.module else "env.factory"
    raise ConfigError(f"{key}: checking {cfg.env.module or cfg.env.factory!r} {exit_reason(proc.exitcode)}")


def _child(conn: Any, plain: dict[str, Any]) -> None:
    try:
        kinds = check_here(OmegaConf.create(plain))
        conn.send(("ok", None if kinds is None else sorted(kinds)))
    except ConfigError as exc:
        conn.send(str(exc))
    except BaseException as exc:  # noqa: BLE001 - anything the user's code raises, as one line
        conn.send(f"env.id: cannot check {plain['env'].get('id')!r} ({error_line(exc)})")
    finally:
        conn.close()


def check_here(cfg: DictConfig) -> Actions:
    """The env checks, in this process; the kinds of action the env has (see :func:`env_actions`)."""
    import importlib

    import gymnasium as gym

    if cfg.env.module:
        try:
            importlib.import_module(cfg.env.module)
        except Exception as exc:  # noqa: BLE001 - whatever the user's module raises is one line
            raise ConfigError(f"env.module: cannot import {cfg.env.module!r} "
                              f"({type(exc).__name__}: {error_line(exc)})") from None
    if cfg.env.factory:
        try:
            import_target(cfg.env.factory)
        except Exception as exc:  # noqa: BLE001 - reported in one line
            raise ConfigError(f"env.factory: cannot import {cfg.env.factory!r} ({error_line(exc)})") from None
    elif cfg.env.id not in gym.registry:
        raise ConfigError(f"env.id: unknown gymnasium environment {cfg.env.id!r}")
    return _check_action_space(cfg)


def _make_error_key(cfg: DictConfig, exc: BaseException) -> str:
    """``env.kwargs.<name>`` when the env's constructor refused that keyword argument (the typo is
    there, not in ``env.id``); else ``env.id``."""
    found = re.search(r"unexpected keyword argument '(\w+)'", str(exc))
    kwargs = cfg.env.get("kwargs") or {}
    return f"env.kwargs.{found.group(1)}" if found and found.group(1) in kwargs else "env.id"


def _check_action_space(cfg: DictConfig) -> Actions:
    """The env suits the agent: single- or multi-agent, and actions of a kind the agent handles
    (``Pendulum-v1`` with DQN is one line); the kinds of action it has."""
    import gymnasium as gym

    facts = agent_facts(cfg)
    kinds, multi = facts.action_kinds, facts.multi_agent
    if not kinds and not multi:
        return None
    name = cfg.env.id
    try:
        env = make_env(OmegaConf.to_container(cfg.env, resolve=True))
    except Exception as exc:  # noqa: BLE001 - a missing extra (box2d, mujoco, mpe2) or bad kwargs
        raise ConfigError(f"{_make_error_key(cfg, exc)}: cannot make {name!r} ({error_line(exc)})") from None
    try:
        team = hasattr(env, "possible_agents")
        if team != multi:
            raise ConfigError(f"env.id: {name} is a multi-agent env; {cfg.agent.name} trains one agent "
                              "(agent=maddpg trains teams)" if team else
                              f"env.id: {cfg.agent.name} trains a team on a multi-agent env (PettingZoo "
                              f"parallel API, e.g. env=simple_spread); {name} has one agent")
        spaces = [env.action_space(n) for n in env.possible_agents] if team else [env.action_space]
        observations = None if team else env.observation_space
        if not team and isinstance(env.observation_space, gym.spaces.Dict) and cfg.buffer.name != "her":
            raise ConfigError(f"buffer: {name} is a goal env (dict observations); train it with buffer=her")
        if not team and cfg.buffer.name == "her" and not isinstance(env.observation_space, gym.spaces.Dict):
            raise ConfigError(f"buffer=her: {name} is not a goal env (observations {env.observation_space}, not a "
                              "dict of observation, achieved_goal and desired_goal); relabelling needs one")
        if not team and isinstance(env.observation_space, gym.spaces.Box):
            check_replay_memory(cfg, env.observation_space)  # now that the observations are known
    finally:
        env.close()
    found = set()
    for space in spaces:
        kind = "discrete" if isinstance(space, gym.spaces.Discrete) else \
            "continuous" if isinstance(space, gym.spaces.Box) else type(space).__name__
        if kinds and kind not in kinds:
            raise ConfigError(f"env.id: {name} has {kind} actions ({space}); {cfg.agent.name} "
                              f"supports {' and '.join(kinds)} actions")
        found.add(kind)
    _check_images(cfg, observations)
    return frozenset(found)


def _takes_network(cfg: DictConfig) -> bool:
    """Whether the agent takes a ``network``: its config has the key and its class the argument (a
    config schema may carry the key for an agent class that has no encoder, e.g. ACER)."""
    import inspect

    if "network" not in cfg.agent:
        return False
    try:
        params = inspect.signature(import_target(str(cfg.agent._target_))).parameters
    except Exception:  # noqa: BLE001 - a target that does not import is reported where it is built
        return True
    return "network" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _check_images(cfg: DictConfig, space: Any) -> None:
    """Image observations (a Box of 2 or more axes) need an encoder network: ``agent.network`` or the
    env preset's ``env.network``, for an agent that takes one; a convolutional network needs images
    large enough for its convolutions."""
    import gymnasium as gym
    from note_rl.agents.nets import ConvEncoder, Module, conv_out_shape, network_spec

    from .network_check import network_key

    images = isinstance(space, gym.spaces.Box) and len(space.shape) >= 2
    if images and not _takes_network(cfg):
        raise ConfigError(f"env.id: {cfg.env.id} has image observations {space.shape}; agent={cfg.agent.name} reads "
                          "flat vectors (agents with a network setting read images: dqn, ppo, a2c, trpo)")
    key = network_key(cfg)
    spec = None if key is None else network_spec(OmegaConf.to_container(OmegaConf.select(cfg, key), resolve=True))
    if isinstance(spec, ConvEncoder) and space is not None:
        try:
            conv_out_shape(space.shape, spec)
        except ValueError as exc:
            raise ConfigError(f"{key}: {cfg.env.id}: {exc}") from None
    if not images or isinstance(spec, (ConvEncoder, Module)):
        return
    if spec is not None:  # an MLP node
        raise ConfigError(f"{key}: {cfg.env.id} has image observations {space.shape}; an MLP reads flat vectors "
                          "(network=minatar_cnn or network=nature_cnn)")

    raise ConfigError(f"agent.network: {cfg.env.id} has image observations {space.shape}; give the agent a "
                      "convolutional network (network=minatar_cnn or network=nature_cnn)")


