"""Build the training objects a validated config describes (agent, optimizer, train arguments).

Works on plain dicts (the driver sends each trial its fully resolved config); objects named with
``_target_`` are built with ``hydra.utils.instantiate`` (:mod:`tuner.config.targets`).
"""

from __future__ import annotations

from typing import Any

from note_rl.backends import get_backend

from ..common.errors import ConfigError
from ..config.adjuster import build_adjuster
from ..config.agent_confs import AGENT_SETTINGS
from ..config.envs import make_env
from ..config.schema import check_agent_backend
from ..config.loggers import logger_node
from ..config.strategies import strategy_of
from ..config.targets import build, construct, import_target
from ..logs.metrics import logger_kinds

__all__ = ["build_agent", "build_optimizer", "train_kwargs", "logger_callbacks", "set_threads", "attach_adjuster",
           "agent_class"]


def set_threads(cfg: dict[str, Any]) -> None:
    """Apply ``backend.threads`` before the framework starts its thread pools (the config's value
    beats a study's default)."""
    threads = cfg["backend"].get("threads")
    if threads:
        get_backend(cfg["backend"]["name"]).set_threads(int(threads))


def _spaces(env: Any) -> dict[str, Any]:
    """``state_dim`` / ``action_dim`` where the env has them (what the built-in agents' constructors
    take; others find the env itself in ``env``)."""
    from note_rl.core.envs import space_dims

    return {k: v for k, v in zip(("state_dim", "action_dim"), space_dims(env)) if v is not None}


def _action_kind(env: Any) -> str:
    import gymnasium as gym

    return "discrete" if isinstance(env.action_space, gym.spaces.Discrete) else "continuous"


def agent_class(cfg: dict[str, Any]) -> Any:
    """The class ``agent._target_`` names; it must belong to ``backend.name``."""
    return check_agent_backend(cfg["agent"]["_target_"], cfg["backend"]["name"]) or \
        import_target(cfg["agent"]["_target_"])


def build_agent(cfg: dict[str, Any]) -> Any:
    """The agent ``cfg['agent']`` names with ``_target_`` (built through Hydra with its constructor
    arguments, plus the env, its dimensions, the seed and the device where it takes them),
    configured with ``set()`` from the agent's settings and the buffer config."""
    a, buf, seed = cfg["agent"], cfg["buffer"], int(cfg["seed"])
    cls = agent_class(cfg)
    env = make_env(cfg["env"])
    supported = getattr(cls, "action_kinds", None)
    if supported and not hasattr(env, "possible_agents") and _action_kind(env) not in supported:
        raise ConfigError(f"env.id: {cfg['env']['id']} has {_action_kind(env)} actions; "
                          f"{cls.__name__} supports {' and '.join(supported)} actions")
    context = dict(env=env, seed=seed, device=cfg["backend"]["device"], **_spaces(env))
    network = cfg["env"].get("network") if a.get("network") is None and "network" in a else a.get("network")
    if network is not None:
        from note_rl.agents.nets import network_spec

        # a spec object, not a _target_ node: Hydra would build a user's module class itself, without
        # the observation shape the agent gives it; an image env preset's network where the agent has none
        a = {**a, "network": network_spec(network)}
    # n_envs is a constructor argument of the rollout agents and a set() setting of the others
    by_set = "n_envs" in a and not _takes(cls, "n_envs")
    agent = build(a, drop=(*AGENT_SETTINGS, "name", "lr", *(["n_envs"] if by_set else [])), key="agent", **context)
    settings = {k: a.get(k) for k in AGENT_SETTINGS if k in a and k not in ("policy", "noise")}
    if by_set:
        settings["n_envs"] = a["n_envs"]
    noise = a.get("noise")
    action_dim = context.get("action_dim", getattr(agent, "action_dim", None))
    if noise is not None and "size" not in noise and action_dim is not None:
        noise = {**noise, "size": action_dim}  # one sample per action dimension
    agent.set(policy=_object(a.get("policy")), noise=_object(noise), pool_size=buf["pool_size"],
              buffer=import_target(buf["_target_"]), alpha=buf["alpha"], lambda_=buf["lambda_"],
              beta=buf["beta"], initial_TD=buf["initial_TD"], initial_ratio=buf["initial_ratio"],
              her_k=buf.get("her_k", 4), trial_count=cfg["objective"]["last_k"],
              criterion=cfg["objective"]["criterion"], seed=seed, **settings)
    agent.replay_frames = buf.get("frames", "auto")  # read by the buffer's for_agent (note_rl.buffers.frames)
    return agent


def _takes(cls: Any, name: str) -> bool:
    import inspect

    try:
        return name in inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False


def _object(node: dict[str, Any] | None) -> Any:
    return None if node is None else build(node)


def build_optimizer(cfg: dict[str, Any], agent: Any) -> Any:
    """The optimizer(s) of ``cfg['optimizer']`` for the agent, built by its backend: one optimizer
    for each set of parameter groups that always step together (:func:`note_rl.update.shared_groups`),
    so DQN and PPO get one optimizer and an actor-critic with separate losses one per group (a dict
    by group name).  ``lr: null`` takes the agent's ``lr``."""
    from note_rl.optim import OptimizerSpec
    from note_rl.update import shared_groups

    o = dict(cfg["optimizer"])
    o["lr"] = o["lr"] if o["lr"] is not None else cfg["agent"]["lr"]
    is_spec = issubclass(import_target(o["_target_"]), OptimizerSpec)
    recipe = build(o, drop=("name",), partial=not is_spec)
    spec = agent.update_spec()
    flat = agent.backend.flatten
    by_group: dict[str, Any] = {}
    for names in shared_groups(spec):
        opt = agent.backend.build_optimizer(recipe, [v for n in names for v in flat(spec.group(n).params)])
        by_group.update({n: opt for n in names})
    distinct = {id(opt): opt for opt in by_group.values()}
    return next(iter(distinct.values())) if len(distinct) == 1 else by_group


def train_kwargs(cfg: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments of ``agent.train`` (besides optimizer, episodes and callbacks): the strategy's
    options (:meth:`tuner.config.strategies.Strategy.train_options`) and the run's."""
    logger = cfg["logger"]
    return dict(strategy_of(cfg["strategy"]).train_options(), jit_compile=cfg["backend"]["jit_compile"],
                steps=cfg["budget"]["steps"], p=logger.get("p", 0) if logger_kinds(logger) else 0)


def logger_callbacks(cfg: dict[str, Any], run_dir: str | None, meta: dict[str, Any] | None = None,
                     pruned: Any = None) -> list[Any]:
    """Callbacks of the loggers ``cfg['logger']`` selects (:func:`tuner.logs.metrics.logger_kinds`), each
    built from its ``_target_`` (:mod:`tuner.config.loggers`: ``wandb`` is a
    :class:`tuner.logs.wandb_logger.WandbCallback`, wandb imported only then, ``meta`` naming the run;
    ``csv`` / ``tensorboard`` the :mod:`tuner.logs.file_loggers` callbacks; a node of the user's own its
    class) with the ``cfg``, ``run_dir``, ``meta`` and ``pruned`` its constructor takes; ``console`` /
    ``none`` print through ``p`` only."""
    context = {"cfg": cfg, "run_dir": run_dir, "meta": meta, "pruned": pruned}
    nodes = [logger_node(cfg["logger"], name) for name in logger_kinds(cfg["logger"])]
    return [construct(node, **context) for node in nodes if node is not None]


def attach_adjuster(agent: Any, cfg: dict[str, Any]) -> None:
    """The adjuster of ``cfg['adjuster']`` (its ``_target_``, or the ``kind`` shorthand of older configs),
    attached to the agent; none for ``kind: none``."""
    adjuster = build_adjuster(cfg.get("adjuster"))
    if adjuster is not None:
        agent.adjuster = adjuster
