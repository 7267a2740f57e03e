"""Structured-config schema of the tuner app and the checks that run before any training.

Every composed config is merged into these dataclasses (registered in Hydra's ConfigStore as
``schema``): an unknown key or a value of the wrong type fails with the offending key's full path.
Range checks that types cannot express (``batch > 0``, ``gamma`` in ``(0, 1]``, a registered env id,
search bounds with ``low <= high``) follow.  Both raise :class:`ConfigError`, whose message is one
line naming the key; the app prints it and exits with status 2.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

__all__ = ["ConfigError", "Config", "validate", "register", "error_line"]


class ConfigError(ValueError):
    """A configuration value is unknown, mistyped or impossible (message names the key)."""


def error_line(exc: BaseException) -> str:
    """One line for a composition error (Hydra's messages span several lines), naming the key or group."""
    missing, options = getattr(exc, "missing_cfg_file", None), getattr(exc, "options", None)
    if missing and options is not None and "/" in missing:
        group, _, name = missing.rpartition("/")
        return f"{group}: no option {name!r} (available: {', '.join(options)})"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    first = lines[0] if lines else type(exc).__name__
    found = re.match(r"Could not override '([^']+)'", first)
    if found:
        hint = next((line for line in lines[1:] if line.startswith("To append")), "")
        return f"{found.group(1)}: no such config key" + (f" ({hint[0].lower()}{hint[1:]})" if hint else "")
    return first


@dataclass
class BackendConf:
    name: str = "torch"
    threads: Optional[int] = None
    jit_compile: bool = False
    device: str = "auto"  # auto (a GPU when present), cpu, cuda, cuda:N, mps


@dataclass
class ExplorationConf:
    initial_eps: float = 1.0
    final_eps: float = 0.05
    fraction: float = 0.1


@dataclass
class AgentConf:
    name: str = "dqn"
    lr: float = 1e-3
    hidden_size: list[int] = field(default_factory=lambda: [64, 64])
    activation: str = "relu"
    ortho_init: bool = False
    gamma: float = 0.99
    tau: float = 1.0
    loss: str = "mse"
    double: bool = True
    batch: int = 64
    train_freq: int = 1
    num_updates: int = 1
    update_steps: Optional[int] = None
    learning_starts: Optional[int] = None
    num_steps: Optional[int] = None
    exploration: ExplorationConf = field(default_factory=ExplorationConf)
    clip: float = 0.2
    entropy_coef: float = 0.0
    lam: float = 0.95
    n_steps: Optional[int] = None
    n_envs: int = 1
    n_epochs: int = 10
    vf_coef: float = 0.5
    normalize_advantage: bool = True
    max_grad_norm: Optional[float] = None
    linear_decay: bool = False


@dataclass
class BufferConf:
    name: str = "uniform"
    pool_size: int = 100_000
    alpha: float = 0.7
    lambda_: float = 0.5
    beta: Optional[float] = None
    initial_TD: float = 7.0
    initial_ratio: float = 1.0


@dataclass
class StrategyConf:
    name: str = "single"
    processes: int = 1
    num_store: int = 1
    parallel_store_and_training: bool = True
    start_method: str = "spawn"


@dataclass
class EnvConf:
    id: str = "CartPole-v1"
    kwargs: dict[str, Any] = field(default_factory=dict)
    module: Optional[str] = None


@dataclass
class OptimizerConf:
    name: str = "adam"
    lr: Optional[float] = None
    weight_decay: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-7
    momentum: float = 0.0
    rho: float = 0.9


@dataclass
class LoggerConf:
    """``console`` / ``none`` use ``name`` and ``p``; ``wandb`` also reads the fields below."""

    name: str = "console"
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
class ObjectiveConf:
    last_k: int = 20
    criterion: Optional[float] = None


@dataclass
class SearchConf:
    groups: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)


@dataclass
class Config:
    """The whole composed config (``tuner`` and ``adjuster`` are checked by their own code)."""

    backend: BackendConf = field(default_factory=BackendConf)
    agent: AgentConf = field(default_factory=AgentConf)
    buffer: BufferConf = field(default_factory=BufferConf)
    strategy: StrategyConf = field(default_factory=StrategyConf)
    env: EnvConf = field(default_factory=EnvConf)
    optimizer: OptimizerConf = field(default_factory=OptimizerConf)
    adjuster: dict[str, Any] = field(default_factory=lambda: {"kind": "none"})
    logger: LoggerConf = field(default_factory=LoggerConf)
    tuner: dict[str, Any] = field(default_factory=lambda: {"name": "none"})
    search: SearchConf = field(default_factory=SearchConf)
    seed: int = 0
    budget: BudgetConf = field(default_factory=BudgetConf)
    objective: ObjectiveConf = field(default_factory=ObjectiveConf)


CHOICES = {
    "backend.name": ("torch", "tf"),
    "agent.name": ("dqn", "ppo"),
    "agent.activation": ("relu", "tanh"),
    "agent.loss": ("mse", "huber"),
    "buffer.name": ("uniform", "prioritized"),
    "strategy.name": ("single", "pool_network"),
    "strategy.start_method": ("spawn", "forkserver"),
    "optimizer.name": ("adam", "adamw", "adamax", "sgd", "rmsprop"),
    "logger.name": ("none", "console", "wandb"),
    "logger.mode": ("offline", "online", "disabled"),
}
POSITIVE = ("agent.batch", "agent.train_freq", "agent.num_updates", "agent.update_steps",
            "agent.num_steps", "agent.n_steps", "agent.n_envs", "agent.n_epochs", "buffer.pool_size",
            "strategy.processes", "strategy.num_store", "budget.steps", "budget.episodes",
            "budget.max_updates", "objective.last_k", "optimizer.lr", "agent.lr", "agent.clip",
            "logger.log_every", "logger.gif_max_steps", "logger.init_timeout")
UNIT = {"agent.gamma": (0.0, 1.0, False), "agent.tau": (0.0, 1.0, False),
        "agent.lam": (0.0, 1.0, True), "buffer.lambda_": (0.0, 1.0, True),
        "optimizer.beta1": (0.0, 1.0, True), "optimizer.beta2": (0.0, 1.0, True),
        "agent.exploration.initial_eps": (0.0, 1.0, True), "agent.exploration.final_eps": (0.0, 1.0, True),
        "agent.exploration.fraction": (0.0, 1.0, True)}
NON_NEGATIVE = ("agent.learning_starts", "agent.entropy_coef", "agent.vf_coef", "buffer.alpha",
                "buffer.beta", "optimizer.weight_decay", "optimizer.eps", "optimizer.momentum",
                "agent.max_grad_norm")


def register() -> None:
    """Store the schema in Hydra's ConfigStore (name ``schema``) for tools that compose against it."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name="schema", node=Config)


def _hidden_size(cfg: DictConfig) -> DictConfig:
    """``agent.hidden_size=256`` means one hidden layer of 256 units (``[256]``), as in ``DQN(4, 128, 2)``."""
    value = OmegaConf.select(cfg, "agent.hidden_size", default=None)
    if OmegaConf.is_list(value) or value is None:
        return cfg
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"agent.hidden_size: expected an int (one layer) or a list of ints, got {value!r}")
    cfg = copy.deepcopy(cfg)
    cfg.agent.hidden_size = [value]
    return cfg


def _typed(cfg: DictConfig) -> DictConfig:
    schema = OmegaConf.structured(Config)
    try:
        return OmegaConf.merge(schema, cfg)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or "config"
        msg = str(getattr(exc, "msg", exc)).splitlines()[0]
        raise ConfigError(f"{key}: {msg}") from None


def _check_ranges(cfg: DictConfig) -> None:
    for key, options in CHOICES.items():
        value = OmegaConf.select(cfg, key)
        if value not in options:
            raise ConfigError(f"{key}: {value!r} is not one of {', '.join(options)}")
    for key in POSITIVE:
        value = OmegaConf.select(cfg, key)
        if value is not None and value <= 0:
            raise ConfigError(f"{key}: must be > 0, got {value}")
    for key, (low, high, closed_low) in UNIT.items():
        value = OmegaConf.select(cfg, key)
        if value is not None and not ((low <= value if closed_low else low < value) and value <= high):
            bracket = "[" if closed_low else "("
            raise ConfigError(f"{key}: must be in {bracket}{low}, {high}], got {value}")
    for key in NON_NEGATIVE:
        value = OmegaConf.select(cfg, key)
        if value is not None and value < 0:
            raise ConfigError(f"{key}: must be >= 0, got {value}")
    if any(h <= 0 for h in cfg.agent.hidden_size) or not cfg.agent.hidden_size:
        raise ConfigError(f"agent.hidden_size: needs positive layer sizes, got {list(cfg.agent.hidden_size)}")
    if cfg.buffer.name == "prioritized" and cfg.agent.name == "ppo" and cfg.agent.n_steps:
        raise ConfigError("buffer: prioritized replay needs agent.n_steps=null (Note_rl-style PPO)")
    if cfg.budget.steps is None and cfg.budget.episodes is None:
        raise ConfigError("budget: set budget.steps or budget.episodes")
    _check_adjuster(cfg)


def _check_adjuster(cfg: DictConfig) -> None:
    from note_rl.adjusters import make_adjuster  # numpy only

    spec = OmegaConf.to_container(cfg.adjuster, resolve=True)
    try:
        make_adjuster(spec)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"adjuster: {str(exc).splitlines()[0]}") from None
    if spec.get("kind") == "ess" and cfg.buffer.name != "prioritized":
        raise ConfigError("adjuster.kind: ess needs buffer=prioritized (the ESS of replay priorities)")


def _check_env(cfg: DictConfig) -> None:
    import importlib

    import gymnasium as gym

    if cfg.env.module:
        try:
            importlib.import_module(cfg.env.module)
        except ImportError as exc:
            raise ConfigError(f"env.module: cannot import {cfg.env.module!r} ({exc})") from None
    if cfg.env.id not in gym.registry:
        raise ConfigError(f"env.id: unknown gymnasium environment {cfg.env.id!r}")


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


def validate(cfg: DictConfig, check_env: bool = True) -> DictConfig:
    """Typed, range-checked copy of ``cfg`` (raises :class:`ConfigError`)."""
    typed = _typed(_hidden_size(cfg))
    _check_ranges(typed)
    _check_device(typed)
    if check_env:
        _check_env(typed)
    from .search import parse_space

    parse_space(typed.search, typed)  # low > high, bad grammar, unknown paths
    return typed
