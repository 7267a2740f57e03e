"""Structured-config schema of the tuner app and the checks that run before any training.

Every composed config is merged into these dataclasses (registered in Hydra's ConfigStore as
``schema``): an unknown key or a value of the wrong type fails with the offending key's full path.
Range checks that types cannot express (``batch > 0``, ``gamma`` in ``(0, 1]``, a registered env id,
search bounds with ``low <= high``) follow.  Both raise :class:`ConfigError`, whose message is one
line naming the key; the app prints it and exits with status 2.
"""

from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass, field
from typing import Any, List, Optional

from dataclasses import make_dataclass

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from note_rl.core.set_args import SEED_LIMIT  # the training core's seed rule (Keras: < 2**32)
from note_rl.utils import machine_memory_bytes

from ..common.errors import ConfigError
from .agent_confs import AGENT_CONTEXT, BUILTIN_AGENTS, AgentCommon, DQNConf, builtin_target
from .bounds import AT_MOST, CHOICES, NON_NEGATIVE, POSITIVE, UNIT, bound_violation
from .env_check import check_env as check_env_of  # user code (env.module, ...) in a child
from .feature_check import check_features
from .memory import check_replay_memory
from .network_check import check_network
from .strategies import StrategyOptions, strategy_of
from .strategy_check import check_strategy
from .adjuster import adjuster_label, build_adjuster
from .loggers import check_loggers
from .targets import TargetError, check_target, import_target, signature_schema

__all__ = ["Config", "validate", "register", "init_model_path"]


@dataclass
class BackendConf:
    name: str = "torch"
    threads: Optional[int] = None
    jit_compile: Any = False  # true/false, or a torch mode name (checked in _check_jit)
    device: str = "auto"  # auto (a GPU when present), cpu, cuda, cuda:N, mps




@dataclass
class BufferConf:
    """A replay buffer class (``_target_``) and the agent's replay settings (``set()`` arguments:
    ``alpha`` ... ``initial_ratio`` are read by prioritized replay, ``her_k`` by HER; ``frames``
    picks the frame pool for image observations, see docs/core/image-replay.md)."""

    _target_: str = "note_rl.buffers.ReplayBuffer"
    name: str = "uniform"
    pool_size: int = 100_000
    alpha: float = 0.7
    lambda_: float = 0.5
    beta: Optional[float] = None
    initial_TD: float = 7.0
    initial_ratio: float = 1.0
    her_k: int = 4
    # image observations kept once per frame: auto (uint8 images), true (any image), false (dense)
    frames: Any = "auto"


@dataclass
class StrategyConf(StrategyOptions):
    """Every strategy's keys in one node (Hydra merges conf/strategy/*.yaml into it): the options all
    strategies share, declared once in :class:`~tuner.config.strategies.StrategyOptions`, and these."""

    _target_: Optional[str] = None  # tuner.config.strategies' class; None: the one `name` names (older configs)
    # strategy=ddp: data-parallel replicas (processes) over torch.distributed, and their
    # communication backend (gloo or nccl; null: nccl for agents on a GPU, else gloo)
    replicas: int = 1
    comm: Optional[str] = None
    # strategy=mirrored: the devices (null: all local GPUs, else the CPU) and, for tests on a CPU,
    # the CPU split into this many logical devices
    devices: Optional[List[str]] = None
    logical_cpus: Optional[int] = None


@dataclass
class EnvConf:
    """A gymnasium id (``gym.make(id, **kwargs)``), or with ``factory`` a callable's dotted path
    called as ``factory(**kwargs)`` (a PettingZoo parallel env, an unregistered env); ``id`` then
    only names the env in runs and studies.  ``module`` is imported first (it may register envs).
    ``network``: the agent network an image env needs (``agent.network`` wins when set)."""

    id: str = "CartPole-v1"
    kwargs: dict[str, Any] = field(default_factory=dict)
    module: Optional[str] = None
    factory: Optional[str] = None
    network: Any = None  # the network its observations need (images), used where agent.network is null


@dataclass
class OptimizerCommon:
    """Every optimizer config: the optimizer (``_target_``: a :mod:`note_rl.optim` spec, built for
    either backend, or a framework optimizer class), a name, and ``lr`` (``None``: ``agent.lr``)."""

    _target_: str = "note_rl.optim.Adam"
    name: str = "adam"
    lr: Optional[float] = None


@dataclass
class LoggerConf:
    """``console`` / ``none`` use ``name`` and ``p``; ``wandb`` also reads the fields below; ``csv`` and
    ``tensorboard`` read ``log_every`` and ``dir``.  ``kinds`` maps each selected logger to true:
    ``logger=[wandb,csv]`` merges both configs, so their maps add up (``logger.kinds.csv=true`` adds one)."""

    name: str = "console"
    # name -> true (the project's logger of that name) or a {_target_: ...} node (tuner/config/loggers.py)
    kinds: dict[str, Any] = field(default_factory=dict)
    p: int = 10
    project: str = "note-rl-tuner"
    entity: Optional[str] = None
    mode: str = "offline"  # offline (default: no internet here), online, disabled
    log_every: int = 1  # episodes between two history rows
    tags: list[str] = field(default_factory=list)
    dir: Optional[str] = None  # null: the run dir (a trial's dir in a study)
    log_model: bool = True  # the best checkpoint as a "model" artifact
    log_gif: bool = False  # the animated agent (GIF) as an artifact
    gif_max_steps: int = 500
    init_timeout: float = 90.0


@dataclass
class BudgetConf:
    steps: Optional[int] = 50_000
    episodes: Optional[int] = None
    max_updates: Optional[int] = None


@dataclass
class EvalConf:
    """Evaluation episodes (see :mod:`note_rl.evaluation`); ``every=None``: five per run."""

    every: Optional[int] = None
    episodes: int = 5
    seed: int = 1_000_000
    answer: str = "final"     # the run's answer: its final weights, or "best": the best evaluation's
    test_episodes: int = 0    # after training, the answer plays this many more episodes (0: none)
    test_seed: int = 1_500_000


@dataclass
class CheckpointConf:
    """Periodic run checkpoints (:mod:`tuner.run.checkpoints`): ``<run dir>/checkpoint/`` at the end
    of the first episode after every ``every`` env steps (``None``: none); ``buffer``: include the
    replay buffer (without it a resumed run refills an empty buffer and differs from an uninterrupted one)."""

    every: Optional[int] = None
    buffer: bool = True


@dataclass
class ObjectiveConf:
    source: str = "eval"
    last_k: int = 20
    criterion: Optional[float] = None


@dataclass
class SearchConf:
    groups: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    # conditional parameters: {parameter: "<other parameter>=<value>[,<value>...]"} (tuner/config/search.py)
    when: dict[str, str] = field(default_factory=dict)


@dataclass
class ConfigBase:
    """The composed config besides ``agent`` and ``optimizer``, whose schemas depend on their
    ``_target_`` (see :func:`config_schema`); ``tuner`` and ``adjuster`` are checked by their own code."""

    backend: BackendConf = field(default_factory=BackendConf)
    buffer: BufferConf = field(default_factory=BufferConf)
    strategy: StrategyConf = field(default_factory=StrategyConf)
    env: EnvConf = field(default_factory=EnvConf)
    # a _target_ node (conf/adjuster/*.yaml) or the kind shorthand; empty: none (a default kind would be
    # merged into every _target_ node)
    adjuster: dict[str, Any] = field(default_factory=dict)
    logger: LoggerConf = field(default_factory=LoggerConf)
    tuner: dict[str, Any] = field(default_factory=lambda: {"name": "none"})
    search: SearchConf = field(default_factory=SearchConf)
    seed: int = 0
    budget: BudgetConf = field(default_factory=BudgetConf)
    eval: EvalConf = field(default_factory=EvalConf)
    objective: ObjectiveConf = field(default_factory=ObjectiveConf)
    checkpoint: CheckpointConf = field(default_factory=CheckpointConf)
    resume: Optional[str] = None     # a run dir whose checkpoint this command continues (tuner.run.checkpoints)
    init_from: Optional[str] = None  # a model.npz (or a run dir) whose weights every run starts from


def agent_schema(target: str) -> type:
    """The structured config of an agent class: the built-in DQN / PPO schemas, or one read off the
    class's constructor (a user's own agent)."""
    builtin = builtin_target(target)
    if builtin:
        return BUILTIN_AGENTS[builtin[1]]  # known without importing a framework
    cls = import_target(target)
    schema = signature_schema(cls, AgentCommon, skip=AGENT_CONTEXT)
    name = getattr(cls, "__name__", "agent").lower()  # runs and studies are named after the agent
    return make_dataclass(schema.__name__, [("name", str, field(default=name))], bases=(schema,))


def optimizer_schema(target: str) -> type:
    """The structured config of an optimizer: a :mod:`note_rl.optim` spec's fields, or the
    constructor arguments of a framework optimizer class (``params`` excluded)."""
    return signature_schema(import_target(target), OptimizerCommon, skip=("params",))


def config_schema(agent: type, optimizer: type) -> type:
    """The whole config's dataclass with these agent and optimizer schemas."""
    return make_dataclass("Config", [("agent", agent, field(default_factory=agent)),
                                     ("optimizer", optimizer, field(default_factory=optimizer))],
                          bases=(ConfigBase,))


#: the default config's schema (DQN, Adam), stored in Hydra's ConfigStore by :func:`register`
Config = config_schema(DQNConf, optimizer_schema("note_rl.optim.Adam"))


_ABSENT = object()


def _budget_fraction(fraction: float, *, _root_: DictConfig) -> int:
    """``${budget_fraction:0.16}``: 16 % of ``budget.steps`` (10,000 without a step budget), at least 1
    (rl-zoo's ``exploration_fraction``)."""
    steps = OmegaConf.select(_root_, "budget.steps") or 10_000
    return max(1, int(float(fraction) * steps))


def _train_freq_fraction(fraction: float, *, _root_: DictConfig) -> int:
    """``${train_freq_fraction:0.5}``: half of ``agent.train_freq``, at least 1, so that gradient steps
    per env step stay the same when a study or an override changes ``train_freq`` (rl-zoo3's DQN
    sampler ties ``gradient_steps`` to ``train_freq`` the same way)."""
    every = OmegaConf.select(_root_, "agent.train_freq") or 1
    return max(1, int(float(fraction) * every))


def name_part(text: str) -> str:
    """``text`` usable inside a study name (a plain name: no ``/``, so it is one folder under
    ``studies/``): every character but letters, digits, ``.``, ``_`` and ``-`` becomes ``-``
    (``note_rl/BitFlip-v0`` -> ``note_rl-BitFlip-v0``).  ``${name_part:${env.id}}`` in a config."""
    import re

    return re.sub(r"[^A-Za-z0-9._-]", "-", str(text))


OmegaConf.register_new_resolver("name_part", name_part, replace=True)
OmegaConf.register_new_resolver("budget_fraction", _budget_fraction, replace=True)
OmegaConf.register_new_resolver("train_freq_fraction", _train_freq_fraction, replace=True)


def register() -> None:
    """Store the schema in Hydra's ConfigStore (name ``schema``) for tools that compose against it."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name="schema", node=Config)


def _hidden_size(cfg: DictConfig) -> DictConfig:
    """``agent.hidden_size=256`` means one hidden layer of 256 units (``[256]``), as in ``DQN(4, 128, 2)``."""
    value = OmegaConf.select(cfg, "agent.hidden_size", default=None)
    if value is None:
        return cfg
    if OmegaConf.is_list(value):
        if not all(isinstance(h, int) and not isinstance(h, bool) for h in value):
            raise ConfigError(f"agent.hidden_size: expected a list of layer sizes (ints), got "
                              f"{OmegaConf.to_container(value)!r}")
        return cfg
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"agent.hidden_size: expected an int (one layer) or a list of ints, got {value!r}")
    cfg = copy.deepcopy(cfg)
    cfg.agent.hidden_size = [value]
    return cfg


def _target_of(cfg: DictConfig, group: str) -> str:
    try:
        target = OmegaConf.select(cfg, f"{group}._target_", throw_on_missing=True)
    except OmegaConfBaseException as exc:
        raise ConfigError(f"{group}._target_: {str(getattr(exc, 'msg', exc)).splitlines()[0]}") from None
    if not isinstance(target, str) or not target:
        raise ConfigError(f"{group}._target_: missing (the class this {group} config builds)")
    return target


def _typed(cfg: DictConfig) -> DictConfig:
    # the agent's class path interpolates backend.name (note_rl.agents.${backend.name}.DQN): a bad
    # name is named as itself, not as the agent._target_ it breaks
    name = OmegaConf.select(cfg, "backend.name", throw_on_resolution_failure=False)
    if name not in CHOICES["backend.name"]:
        raise ConfigError(f"backend.name: {bound_violation('backend.name', name)}")
    schemas = {}
    for group, make in (("agent", agent_schema), ("optimizer", optimizer_schema)):
        try:
            schemas[group] = make(_target_of(cfg, group))
        except TargetError as exc:
            raise ConfigError(f"{group}._target_: {exc}") from None
    try:
        typed = OmegaConf.merge(OmegaConf.structured(config_schema(**schemas)), cfg)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or "config"
        msg = str(getattr(exc, "msg", exc)).splitlines()[0]
        raise ConfigError(f"{key}: {msg}") from None
    _check_booleans(cfg, typed)
    missing = sorted(OmegaConf.missing_keys(typed))
    if missing:
        group = missing[0].split(".")[0]
        raise ConfigError(f"{missing[0]}: missing (a required argument of {_target_of(typed, group)})")
    return typed


def _check_booleans(raw: DictConfig, typed: DictConfig) -> None:
    """A boolean setting given as a number must be 0 or 1: OmegaConf turns any integer into a bool
    (``agent.double=9223372036854775808`` became ``True``)."""
    stack = [("", typed)]
    while stack:
        prefix, node = stack.pop()
        for key in node.keys():
            path = f"{prefix}{key}"
            value = OmegaConf.select(typed, path, throw_on_resolution_failure=False)
            if OmegaConf.is_dict(value):
                stack.append((path + ".", value))
            elif isinstance(value, bool):
                given = OmegaConf.select(raw, path, default=None, throw_on_resolution_failure=False)
                if isinstance(given, (int, float)) and not isinstance(given, bool) and given not in (0, 1):
                    raise ConfigError(f"{path}: must be true or false, got {given}")


def check_agent_backend(target: str, backend: str) -> Any:
    """The agent class ``target`` names, which must subclass ``backend``'s base class (``RL_pytorch``
    for torch, ``RL`` for tf); built-in targets are checked without importing a framework."""
    from note_rl.backends import backend_info

    builtin = builtin_target(target)
    if builtin:
        if builtin[0] not in (backend, backend_info(backend).agents.rsplit(".", 1)[1]):
            raise ConfigError(f"agent._target_: {target} is an agent of another backend than backend={backend}")
        return None
    try:
        cls, base = import_target(target), import_target(backend_info(backend).base_class)
    except TargetError as exc:
        raise ConfigError(f"agent._target_: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ConfigError(f"agent._target_: {target} is not a {backend_info(backend).base_class} subclass, "
                          f"which backend={backend} trains (pick the agent's backend)")
    return cls


def _check_targets(cfg: DictConfig) -> None:
    """The buffer class imports; nested ``_target_`` nodes (the agent's policy and noise) fit their
    constructors."""
    import inspect

    try:
        buffer = import_target(str(cfg.buffer._target_))
    except TargetError as exc:
        raise ConfigError(f"buffer._target_: {exc}") from None
    if not inspect.isclass(buffer):
        raise ConfigError(f"buffer._target_: {cfg.buffer._target_!r} is not a class")
    for key in ("agent.policy", "agent.noise"):
        node = OmegaConf.select(cfg, key)
        if node is None:
            continue
        if not OmegaConf.is_dict(node) or "_target_" not in node:
            raise ConfigError(f"{key}: expected a node with a _target_ (or null), got {node!r}")
        check_target(OmegaConf.to_container(node, resolve=True), key)


#: no setting is larger: a budget or a count of 2**53 is already beyond any run, and numbers past it
#: overflow numpy's int64 counters or lose integer precision as floats (``budget.steps=1e30``)
MAX_MAGNITUDE = 2**53


def _check_finite(node: Any, path: str = "") -> None:
    """Every number in the config is finite (``optimizer.lr=nan`` would train on NaN weights) and
    at most :data:`MAX_MAGNITUDE` in size."""
    if isinstance(node, dict):
        for key, value in node.items():
            _check_finite(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _check_finite(value, f"{path}[{i}]")
    elif isinstance(node, float) and not math.isfinite(node):
        raise ConfigError(f"{path}: must be a finite number, got {node}")
    elif isinstance(node, (int, float)) and not isinstance(node, bool) and abs(node) > MAX_MAGNITUDE:
        raise ConfigError(f"{path}: {node:.4g} is beyond any setting's range (at most 2**53 in size)")


def _check_memory(cfg: DictConfig, observation_space: Any = None) -> None:
    """Refuse, before anything is allocated, a replay buffer or networks that cannot fit in this
    machine's memory: the buffer as :func:`tuner.config.memory.check_replay_memory` estimates it
    (a lower bound here; the env check repeats it with the env's observation space), the networks
    as a lower bound (weights, gradients and two Adam slots)."""
    check_replay_memory(cfg, observation_space)
    limit = machine_memory_bytes()
    hidden = OmegaConf.select(cfg, "agent.hidden_size")
    if OmegaConf.is_list(hidden) and hidden:
        sizes = [int(h) for h in hidden]
        params = sizes[0] + sum(a * b for a, b in zip(sizes, sizes[1:])) + sizes[-1]
        if params * 4 * 4 > limit:  # weights, gradients and two Adam slots
            raise ConfigError(f"agent.hidden_size: {list(sizes)} makes at least {params:.3g} parameters "
                              f"({params * 16 / 2**30:.0f} GiB with gradients and optimizer state); this machine "
                              f"has {limit / 2**30:.0f} GiB")


def _check_ranges(cfg: DictConfig) -> None:
    _check_finite(OmegaConf.to_container(cfg, resolve=True))
    _check_memory(cfg)
    for key in dict.fromkeys([*CHOICES, *POSITIVE, *UNIT, *NON_NEGATIVE, *AT_MOST]):
        value = OmegaConf.select(cfg, key, default=_ABSENT)
        problem = None if value is _ABSENT else bound_violation(key, value)
        if problem:
            raise ConfigError(f"{key}: {problem}")
    hidden = OmegaConf.select(cfg, "agent.hidden_size")
    if OmegaConf.is_list(hidden) and (not hidden or any(h <= 0 for h in hidden)):
        raise ConfigError(f"agent.hidden_size: needs positive layer sizes, got {list(hidden)}")
    if cfg.buffer.name == "trajectory" and str(OmegaConf.select(cfg, "agent._target_") or "").startswith("note_rl.agents."):
        raise ConfigError("buffer: trajectory triplets (TRL) need an agent whose loss reads pairs of transitions; "
                          "the built-in agents do not (use your own agent's _target_)")
    if cfg.strategy.shuffle and cfg.buffer.name != "uniform":
        raise ConfigError(f"strategy.shuffle: true is for buffer=uniform, not buffer={cfg.buffer.name}")
    if cfg.buffer.name == "prioritized" and OmegaConf.select(cfg, "agent.n_steps"):
        raise ConfigError("buffer: prioritized replay needs agent.n_steps=null (Note_rl-style PPO)")
    _check_checkpoint(cfg)
    if cfg.budget.steps is None and cfg.budget.episodes is None:
        raise ConfigError("budget: set budget.steps or budget.episodes")
    _check_rollout_budget(cfg)
    _check_adjuster(cfg)
    _check_loggers(cfg)
    n_seeds = OmegaConf.select(cfg, "tuner.n_seeds", default=1)
    if isinstance(n_seeds, int) and isinstance(cfg.seed, int) and cfg.seed + n_seeds > SEED_LIMIT:
        # a trial trains seeds seed .. seed + n_seeds - 1 (tuner.common.messages.seed_configs)
        raise ConfigError(f"seed: {cfg.seed} + tuner.n_seeds={n_seeds} trains seeds past {SEED_LIMIT - 1}")


def _check_checkpoint(cfg: DictConfig) -> None:
    """``checkpoint.every`` > 0, with ``strategy=single``.  (``init_from`` is checked by the command
    that trains, :func:`init_model_path`: a config read back to evaluate or resume a warm-started run
    does not need its source weights any more.)"""
    every = OmegaConf.select(cfg, "checkpoint.every")
    if every is not None and every <= 0:
        raise ConfigError(f"checkpoint.every: must be > 0 (env steps between checkpoints) or null, got {every}")
    if every is not None and not strategy_of(cfg.strategy).checkpoints:
        raise ConfigError(f"checkpoint.every: run checkpoints are taken with strategy=single, not "
                          f"strategy={cfg.strategy.name} (its workers' envs and replicas are not in them)")


def init_model_path(value: str) -> str:
    """The weights file ``init_from`` names: a ``.npz`` file, or a run dir's ``model.npz``; a
    ``ConfigError`` naming ``init_from`` otherwise."""
    path = os.path.abspath(os.path.expanduser(str(value)))
    if os.path.isdir(path):
        found = os.path.join(path, "model.npz")
        if not os.path.isfile(found):
            raise ConfigError(f"init_from: {value} is a directory without a model.npz (not a run dir)")
        return found
    if not os.path.exists(path):
        raise ConfigError(f"init_from: no such file {value}")
    if not os.path.isfile(path):
        raise ConfigError(f"init_from: {value} is not a regular file")
    return path


def _check_loggers(cfg: DictConfig) -> None:
    """``logger.kinds`` names known loggers or nodes that build; ``tensorboard`` has its writer (an extra) installed."""
    import importlib.util

    check_loggers(OmegaConf.to_container(cfg.logger, resolve=True))
    if (cfg.logger.kinds.get("tensorboard") or cfg.logger.name == "tensorboard") and \
            importlib.util.find_spec("tensorboardX") is None:
        raise ConfigError("logger: tensorboard needs tensorboardX, which is not installed: pip install "
                          "'note-rl-tuner[tensorboard]' (in a checkout: pip install -e '.[tensorboard]')")


def _check_rollout_budget(cfg: DictConfig) -> None:
    """An on-policy agent's first rollout (``n_steps`` from each of ``n_envs`` envs) fits in
    ``budget.steps``: the loop checks the budget only between rollouts, so a longer one ran past it
    and the run trained on more steps than it was given."""
    n_steps, steps = OmegaConf.select(cfg, "agent.n_steps"), cfg.budget.steps
    if not n_steps or steps is None:
        return
    n_envs = OmegaConf.select(cfg, "agent.n_envs") or 1
    if n_steps * n_envs > steps:
        raise ConfigError(f"agent.n_steps: one rollout (agent.n_steps={n_steps} x agent.n_envs={n_envs} = "
                          f"{n_steps * n_envs} env steps) is longer than budget.steps={steps}; lower "
                          f"agent.n_steps or agent.n_envs, or raise budget.steps")


def _check_adjuster(cfg: DictConfig) -> None:
    """The adjuster builds (:func:`tuner.config.adjuster.build_adjuster`), an ESS one has replay priorities
    to measure, and the agent trains from replay."""
    from note_rl.adjusters import ESSAdjuster  # numpy only

    adjuster = build_adjuster(OmegaConf.to_container(cfg.adjuster, resolve=True))
    if adjuster is None:
        return
    label = adjuster_label(adjuster)
    if isinstance(adjuster, ESSAdjuster) and cfg.buffer.name != "prioritized":
        raise ConfigError(f"adjuster.kind: {label} needs buffer=prioritized (the ESS of replay priorities)")
    rollout = OmegaConf.select(cfg, "agent.n_steps")
    if rollout:
        hint = " (agent.n_steps=null trains PPO Note_rl-style, from the replay buffer)" if cfg.agent.name == "ppo" else ""
        raise ConfigError(f"adjuster={label}: adjusters tune replay training; agent={cfg.agent.name} with "
                          f"agent.n_steps={rollout} trains on rollouts{hint}")


def _check_normalize(cfg: DictConfig) -> None:
    """``agent.normalize``: null, a boolean or a mapping of :class:`note_rl.normalize.Normalizer`
    arguments (checked by building one; numpy only), and not with HER, MARL or a pool of workers."""
    from note_rl.normalize import make_normalizer

    value = OmegaConf.select(cfg, "agent.normalize")
    if isinstance(value, DictConfig):
        value = OmegaConf.to_container(value, resolve=True)
    try:
        made = make_normalizer(value, None)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"agent.normalize: {str(exc).split(': ', 1)[-1]}") from None
    if made is None:
        return
    her = "Her" in str(OmegaConf.select(cfg, "buffer._target_") or "")
    if her or strategy_of(cfg.strategy).pool:
        raise ConfigError("agent.normalize: runs with in-process collection only (not with buffer=her or "
                          "strategy=pool_network)")


def _check_jit(cfg: DictConfig) -> None:
    """``backend.jit_compile``: true / false, or on torch a mode name (``cudagraph``: the whole
    gradient step as one CUDA graph; ``reduce-overhead``, ...)."""
    from note_rl.backends.base import check_jit_compile

    try:
        check_jit_compile(cfg.backend.jit_compile, cfg.backend.name)
    except ValueError as exc:
        raise ConfigError(f"backend.jit_compile: {str(exc).split(': ', 1)[-1]}") from None


def _check_device(cfg: DictConfig) -> None:
    """``backend.device`` names a device; one other than auto / cpu must exist here (asking the
    backend imports its framework, so only then)."""
    from note_rl.backends import DeviceError, get_backend
    from note_rl.backends.base import check_device_name

    device = cfg.backend.device
    try:
        check_device_name(device)
        if device not in ("auto", "cpu"):
            get_backend(cfg.backend.name).resolve_device(device)
    except DeviceError as exc:
        raise ConfigError(f"backend.device: {exc}") from None


def _check_framework(name: str) -> None:
    """The chosen backend's framework is installed (each is an extra: ``[torch]``, ``[tf]``)."""
    from note_rl.backends import backend_names, missing_framework

    message = missing_framework(name)
    if message is not None:
        usable = [other for other in backend_names() if other != name and missing_framework(other) is None]
        raise ConfigError(f"backend: {message}" + (f"; backend={usable[0]} is installed" if usable else ""))


def validate(cfg: DictConfig, check_env: bool = True) -> DictConfig:
    """Typed, range-checked copy of ``cfg`` (raises :class:`ConfigError`)."""
    try:
        return _validate(cfg, check_env)
    except OmegaConfBaseException as exc:  # e.g. seed=${seed}: an interpolation that cannot resolve
        key = getattr(exc, "full_key", None) or "config"
        raise ConfigError(f"{key}: {str(getattr(exc, 'msg', exc)).splitlines()[0]}") from None


def _validate(cfg: DictConfig, check_env: bool) -> DictConfig:
    typed = _typed(_hidden_size(cfg))
    _check_ranges(typed)
    _check_normalize(typed)
    _check_framework(typed.backend.name)
    check_strategy(typed)
    check_features(typed)
    check_network(typed)
    check_agent_backend(typed.agent._target_, typed.backend.name)
    _check_targets(typed)
    _check_jit(typed)
    _check_device(typed)
    actions = check_env_of(typed) if check_env else None
    from .search import parse_space  # optuna: imported by the commands that check a search space

    parse_space(typed.search, typed, actions)  # low > high, bad grammar, unknown paths
    return typed
