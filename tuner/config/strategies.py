"""The ``strategy`` config node: how a run trains (in-process, a pool of collecting workers, torch DDP
replicas, a tf.distribute strategy), an object named by ``_target_`` (Hydra's convention).

``conf/strategy/ddp.yaml`` is ``{_target_: tuner.config.strategies.DDP, name: ddp, replicas: 2, ...}``.
Each class holds its strategy's settings and the facts the checks and the run need of it (the backend it
needs, whether workers collect, whether replicas train, the ``TF_CONFIG`` jobs of a cluster, the train()
options it passes) and makes its tf.distribute strategy where it has one, through the backend
(:meth:`note_rl.backends.Backend.make_strategy`); no caller compares strategy names.

``name`` stays the strategy's name (``strategy=ddp``, ``strategy.name`` in messages and tests) and is also
the shorthand for the project's classes (:data:`STRATEGIES`, the one table of names), which configs
saved before ``_target_`` hold.  A user's own subclass (``strategy=mirrored
strategy._target_=my_pkg.MyMirrored``) is one of the strategies, its ``name`` the one it inherits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, List, Mapping, Optional

from ..common.errors import ConfigError
from .bounds import CHOICES
from .targets import TargetError, constructor_kwargs, import_target

__all__ = ["StrategyOptions", "Strategy", "Single", "PoolNetwork", "DDP", "TFDistribute", "Mirrored", "MultiWorker",
           "ParameterServer", "STRATEGIES", "TARGETS", "strategy_class", "strategy_of"]


@dataclass
class StrategyOptions:
    """The settings every strategy has (the note_rl train() options it passes, defaults as ``train()``'s),
    declared once for the strategy classes and the config schema (``tuner.config.schema.StrategyConf``).

    :param name: the strategy's name as configs and messages spell it (``strategy=<name>``)
    :param processes: worker processes that collect experience (pool network only)
    :param num_store: collection rounds per pool phase
    :param parallel_store_and_training: pool mode: train on the previous phase's data while workers collect
    :param start_method: how pool workers start (``spawn`` or ``forkserver``)
    :param processes_pr: sampler processes for prioritized mini-batches
    :param processes_her: sampler processes for HER mini-batches
    :param shuffle: uniform mini-batches without replacement
    :param parallel_training_and_save: checkpoints written by a separate process
    """

    name: str = "single"
    processes: int = 1
    num_store: int = 1
    parallel_store_and_training: bool = True
    start_method: str = "spawn"
    processes_pr: Optional[int] = None
    processes_her: Optional[int] = None
    shuffle: bool = False
    parallel_training_and_save: bool = False


@dataclass
class Strategy(StrategyOptions):
    """A way to train a run: its settings (:class:`StrategyOptions`) and, as class attributes, the facts
    about it that the checks and the run read.
    """

    #: the name this class has in :data:`STRATEGIES` (a subclass of the user's keeps its parent's)
    kind: ClassVar[str] = ""
    #: the backend it needs (``None``: every backend)
    backend: ClassVar[Optional[str]] = None
    #: experience collected in worker processes (note_rl's pool network)
    pool: ClassVar[bool] = False
    #: torch DDP: this process is rank 0 of ``replicas`` processes that train together
    replicated: ClassVar[bool] = False
    #: a cluster strategy's ``TF_CONFIG`` jobs (``None``: not a cluster strategy); such a strategy trains
    #: single runs, one per machine
    cluster_jobs: ClassVar[Optional[tuple[str, ...]]] = None
    #: whether a run checkpoint (``checkpoint.every``) holds all of its state: not with workers' envs
    #: or replicas outside this process
    checkpoints: ClassVar[bool] = False

    def train_options(self) -> dict[str, Any]:
        """The ``agent.train`` / ``fit`` keyword arguments this strategy decides (``processes`` only for a
        pool of workers; the other strategies pass ``None``, as they always did)."""
        return dict(pool_network=self.pool, processes=self.processes if self.pool else None,
                    num_store=self.num_store, parallel_store_and_training=self.parallel_store_and_training,
                    start_method=self.start_method, processes_pr=self.processes_pr,
                    processes_her=self.processes_her, shuffle=self.shuffle,
                    parallel_training_and_save=self.parallel_training_and_save)

    def make(self, backend: Mapping[str, Any]) -> Any:
        """The framework's strategy object the agent is built in and trained with
        (``agent.distributed_training(optimizer, strategy, ...)``); ``None`` where there is none."""
        return None

    def replica_count(self, made: Any = None) -> int:
        """How many replicas trained together (``made``: what :meth:`make` returned)."""
        return int(made.num_replicas_in_sync) if made is not None else 1


@dataclass
class Single(Strategy):
    """``strategy=single``: collection and training in the run's process."""

    kind: ClassVar[str] = "single"
    checkpoints: ClassVar[bool] = True


@dataclass
class PoolNetwork(Strategy):
    """``strategy=pool_network``: experience collected in ``processes`` worker processes."""

    kind: ClassVar[str] = "pool_network"
    pool: ClassVar[bool] = True

    name: str = "pool_network"
    processes: int = 2


@dataclass
class DDP(Strategy):
    """``strategy=ddp`` (backend=torch): the run's process is rank 0 of ``replicas`` data-parallel
    replicas over torch.distributed (``comm``: gloo or nccl; ``None``: nccl for agents on a GPU, else gloo)."""

    kind: ClassVar[str] = "ddp"
    backend: ClassVar[Optional[str]] = "torch"
    replicated: ClassVar[bool] = True

    name: str = "ddp"
    replicas: int = 2
    comm: Optional[str] = None

    def replica_count(self, made: Any = None) -> int:
        """``replicas``: rank 0 and the helpers it starts (each ran the whole budget)."""
        return int(self.replicas or 1)


@dataclass
class TFDistribute(Strategy):
    """A tf.distribute strategy (backend=tf), made by the backend before TensorFlow runs anything
    (``logical_cpus`` splits the CPU into that many devices, which must come first).  ``devices`` and
    ``logical_cpus`` are read by ``mirrored``; the cluster strategies read the cluster from ``TF_CONFIG``."""

    backend: ClassVar[Optional[str]] = "tf"

    devices: Optional[List[str]] = None
    logical_cpus: Optional[int] = None

    def make(self, backend: Mapping[str, Any]) -> Any:
        """The tf.distribute strategy called :attr:`kind`, made by ``backend`` (the ``backend`` config node:
        its ``name``, and its ``device`` placing ``mirrored`` where ``devices`` is unset)."""
        from note_rl.backends import get_backend

        return get_backend(backend["name"]).make_strategy(
            self.kind, devices=self.devices or None, logical_cpus=self.logical_cpus or None,
            device=backend.get("device"))


@dataclass
class Mirrored(TFDistribute):
    """``strategy=mirrored``: tf.distribute.MirroredStrategy over the local devices."""

    kind: ClassVar[str] = "mirrored"
    name: str = "mirrored"


@dataclass
class MultiWorker(TFDistribute):
    """``strategy=multi_worker``: tf.distribute.MultiWorkerMirroredStrategy, one run per worker."""

    kind: ClassVar[str] = "multi_worker"
    cluster_jobs: ClassVar[Optional[tuple[str, ...]]] = ("worker",)
    name: str = "multi_worker"


@dataclass
class ParameterServer(TFDistribute):
    """``strategy=parameter_server``: tf.distribute.ParameterServerStrategy, this process the coordinator."""

    kind: ClassVar[str] = "parameter_server"
    cluster_jobs: ClassVar[Optional[tuple[str, ...]]] = ("worker", "ps")
    name: str = "parameter_server"


#: ``strategy.name`` -> its class: the shorthand of configs written before ``_target_``
STRATEGIES: dict[str, type[Strategy]] = {cls.kind: cls for cls in (Single, PoolNetwork, DDP, Mirrored, MultiWorker,
                                                                   ParameterServer)}
assert tuple(STRATEGIES) == CHOICES["strategy.name"]  # one list of names: bounds.py's is what strategy.name may be
#: the ``_target_`` paths of the project's classes (what conf/strategy/*.yaml name)
TARGETS: dict[str, type[Strategy]] = {f"{__name__}.{cls.__name__}": cls for cls in STRATEGIES.values()}


def strategy_class(node: Mapping[str, Any]) -> type[Strategy]:
    """The class a ``strategy`` node names; one ``ConfigError`` line naming the key otherwise.

    The name chose the strategy before ``_target_`` existed, and still does among the project's classes:
    a saved config without ``_target_``, ``strategy.name=pool_network`` on a command line or a search
    over ``strategy.name`` keep training what they trained (a ``_target_`` naming one of
    :data:`TARGETS` is its name's class).  A class of the user's own must be a :class:`Strategy` whose
    ``kind`` is the node's ``name``, so that the checks and messages speak of the same strategy."""
    name = node.get("name") or "single"
    target = node.get("_target_")
    if target is None or target in TARGETS:
        if name not in STRATEGIES:
            raise ConfigError(f"strategy.name: {name!r} is not one of {', '.join(STRATEGIES)}")
        return STRATEGIES[name]
    try:
        cls = import_target(target)
    except TargetError as exc:
        raise ConfigError(f"strategy._target_: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, Strategy) and cls.kind in STRATEGIES):
        raise ConfigError(f"strategy._target_: {target} is not a strategy (a subclass of one of "
                          f"{', '.join(TARGETS)})")
    if cls.kind != name:
        raise ConfigError(f"strategy._target_: {target} is a {cls.kind} strategy, not strategy.name={name} "
                          f"(choose strategy={cls.kind})")
    return cls


def strategy_of(node: Mapping[str, Any]) -> Strategy:
    """The strategy a ``strategy`` node (a config node or a plain dict) describes, built with the node's
    settings its class takes (every strategy option shares one schema, so a node holds the others'
    defaults too)."""
    from omegaconf import OmegaConf

    cls = strategy_class(node)
    values = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else dict(node)
    try:
        return cls(**constructor_kwargs(cls, values))
    except TypeError as exc:  # a user's subclass with a required argument the node lacks
        raise ConfigError(f"strategy: {cls.__name__} refused its settings ({exc})") from None
