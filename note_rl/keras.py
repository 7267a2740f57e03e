"""Keras/TensorFlow base class ``RL`` (Note_rl's ``from Note_rl.RL import RL``)."""

from __future__ import annotations

from typing import Any, Callable

from .core.base import RLBase
from .core.settings import TrainSettings

__all__ = ["RL", "check_strategy"]


class RL(RLBase):
    """Subclass it with Keras networks: set ``self.param`` (variables, or one list per optimizer),
    ``self.env``, and define ``action(s)`` and ``__call__(s, a, next_s, r, d)`` returning the loss
    as a tensor (called inside ``tf.function``).  Then ``set(...)`` and ``train(...)``.
    """

    backend_name = "tf"

    def train(
        self,
        train_loss: Any = None,
        optimizer: Any = None,
        episodes: int | None = None,
        pool_network: bool = False,
        processes: int | None = None,
        num_store: int = 1,
        window_size: int | float | Callable[..., int] | None = None,
        clearing_freq: int | None = None,
        window_size_: int | None = None,
        window_size_ppo: int | None = None,
        window_size_pr: int | None = None,
        jit_compile: bool = True,
        random: bool = False,
        save_data: bool = True,
        callbacks: list[Any] | None = None,
        p: int | None = None,
        steps: int | None = None,
        parallel_store_and_training: bool = True,
        start_method: str = "spawn",
        processes_her: int | None = None,
        processes_pr: int | None = None,
        shuffle: bool = False,
        parallel_training_and_save: bool = False,
    ) -> float | None:
        """Train for ``episodes`` episodes; returns the mean loss of the last episode that trained.

        :param train_loss: ``tf.keras.metrics.Mean``; reset every episode, returned value source
        :param optimizer: a Keras optimizer, or a list (one per group of ``self.param``)
        :param episodes: number of episodes (``None``: until ``criterion``/``steps``/stop)
        See :class:`note_rl.core.settings.TrainSettings` for the other options.
        """
        settings = TrainSettings(
            train_loss=train_loss, pool_network=pool_network, processes=self.default_processes(processes),
            num_store=num_store, window_size=window_size, clearing_freq=clearing_freq,
            window_size_=window_size_, window_size_ppo=window_size_ppo,
            window_size_pr=window_size_pr, jit_compile=jit_compile, random=random,
            save_data=save_data, callbacks=callbacks, p=p, steps=steps,
            parallel_store_and_training=parallel_store_and_training, start_method=start_method, processes_her=processes_her,
            processes_pr=processes_pr, shuffle=shuffle,
            parallel_training_and_save=parallel_training_and_save)
        return self._train(optimizer, episodes, settings)

    def distributed_training(
        self,
        optimizer: Any = None,
        strategy: Any = None,
        episodes: int | None = None,
        num_episodes: int | None = None,
        train_loss: Any = None,
        global_batch_size: int | None = None,
        pool_network: bool = False,
        processes: int | None = None,
        num_store: int = 1,
        window_size: int | float | Callable[..., int] | None = None,
        clearing_freq: int | None = None,
        window_size_: int | None = None,
        window_size_ppo: int | None = None,
        window_size_pr: int | None = None,
        jit_compile: bool = True,
        random: bool = False,
        save_data: bool = True,
        callbacks: list[Any] | None = None,
        p: int | None = None,
        steps: int | None = None,
        parallel_store_and_training: bool = True,
        start_method: str = "spawn",
        processes_her: int | None = None,
        processes_pr: int | None = None,
        shuffle: bool = False,
        parallel_training_and_save: bool = False,
    ) -> float | None:
        """``train()`` with each gradient step run on every replica of a ``tf.distribute``
        strategy (see :mod:`note_rl.backends.tf_distribute`): the global batch (``batch``, or
        ``global_batch_size``) is split evenly over the replicas and their gradients summed, so an
        update equals a one-device update on the whole batch.  Build the agent and its optimizer
        inside ``with strategy.scope():``, as the seed examples do.

        - ``MirroredStrategy`` (and one-device / default strategies): one process holds every replica.
        - ``MultiWorkerMirroredStrategy``: run the same script in every worker (``TF_CONFIG``); each
          collects from its own env with its own seeds and steps on its share of the global batch;
          agents with one loss term (DQN, PPO, A2C); only the first worker writes checkpoints; a
          worker that dies makes the others raise one :class:`~note_rl.distributed.ReplicaLost` line.
        - ``ParameterServerStrategy``: this process is the coordinator; it collects, and each
          gradient step runs on a worker against the variables on the parameter servers.
        TPU strategies are refused in one line.

        :param optimizer: as ``train()``; Note_rl 001's order ``(global_batch_size, optimizer,
            strategy, episodes)`` is also accepted (an integer first is the global batch size)
        :param strategy: a ``tf.distribute`` strategy of the kinds above
        :param episodes: episode budget; ``num_episodes`` is the seeds' name for it with
            multi-worker strategies
        :param global_batch_size: Note_rl 001's name for the global ``batch`` (``set(batch=...)``)
        The other options are ``train()``'s; ``jit_compile`` applies to acting only when the step
        runs on several replicas.
        """
        if isinstance(optimizer, int) and not isinstance(optimizer, bool):  # 001: global batch first
            if global_batch_size is not None:
                raise ValueError("distributed_training: global_batch_size given twice (first argument and keyword)")
            global_batch_size, optimizer, strategy, episodes, num_episodes = (
                optimizer, strategy, episodes, num_episodes, None)
        check_strategy(self, strategy)
        replicas = strategy.num_replicas_in_sync
        batch = global_batch_size if global_batch_size is not None else self.batch
        if batch is not None and batch % replicas:  # checked before set(): a refused call changes nothing
            raise ValueError(f"distributed_training: batch={batch} does not split evenly over {replicas} "
                             f"replicas; make it a multiple of {replicas}")
        if global_batch_size is not None:
            self.set(batch=global_batch_size)
        if episodes is not None and num_episodes is not None and episodes != num_episodes:
            raise ValueError(f"distributed_training(episodes={episodes}, num_episodes={num_episodes}): "
                             "two names for the episode budget; give one")
        options = {k: v for k, v in locals().items()
                   if k not in ("self", "optimizer", "strategy", "episodes", "num_episodes", "train_loss",
                                "global_batch_size", "replicas", "batch", "__class__")}
        episodes = episodes if episodes is not None else num_episodes
        from .backends.tf_distribute import is_parameter_server, local_replicas

        # one process holds every replica, or (parameter servers) collects and schedules the steps
        if is_parameter_server(strategy) or local_replicas(strategy) == replicas:
            with strategy.scope():
                return self.train(train_loss, optimizer, episodes, **options)
        return self._multi_worker_training(strategy, train_loss, optimizer, episodes, options)

    def _multi_worker_training(self, strategy: Any, train_loss: Any, optimizer: Any, episodes: int | None,
                               options: dict[str, Any]) -> float | None:
        """One worker of a multi-worker strategy: its share of the global batch from its own buffer,
        its own env seeds, weights from the first worker, finished workers shadowing the rest."""
        from .backends.tf_distribute import WorkerSession, broadcast_from_first, local_replicas

        terms = self.update_spec().terms
        if len(terms) != 1:
            raise ValueError(f"distributed_training: {type(strategy).__name__} trains agents whose update is one "
                             f"loss term (DQN, PPO, A2C); {type(self).__name__} has {len(terms)} "
                             f"({', '.join(t.label for t in terms)}); use MirroredStrategy on one machine")
        worker = strategy.cluster_resolver.task_id if strategy.cluster_resolver is not None else 0
        kept = {"batch": self.batch, "seed": self.seed, "rank": self.rank}
        if self.batch is not None:
            self.batch = self.batch * local_replicas(strategy) // strategy.num_replicas_in_sync
        if self.seed is not None and worker:
            self.apply_seed(self.seed + 10_000 * worker)  # own env, exploration and sampling streams
        self.rank = int(worker)
        try:
            with strategy.scope():
                tensors = [v for m in self.backend.modules(self).values() for v in self.backend.module_variables(m)]
                broadcast_from_first(strategy, _unique([*tensors, *self._variables()]))
                with WorkerSession(self):
                    return self.train(train_loss, optimizer, episodes, **options)
        finally:
            self.batch, self.seed, self.rank = kept["batch"], kept["seed"], kept["rank"]


def _unique(variables: list[Any]) -> list[Any]:
    seen: set[int] = set()
    return [v for v in variables if not (id(v) in seen or seen.add(id(v)))]


def check_strategy(agent: Any, strategy: Any) -> None:
    """One-line errors for what ``distributed_training`` cannot run: no ``tf.distribute`` strategy, a
    TPU strategy (Mirrored, MultiWorkerMirrored and ParameterServer strategies run), or an agent
    whose variables were created outside the strategy's scope."""
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.Strategy):
        raise ValueError(f"distributed_training(strategy={strategy!r}): pass a tf.distribute strategy, "
                         "e.g. tf.distribute.MirroredStrategy()")
    kind = type(strategy).__name__
    if "TPU" in kind:
        raise NotImplementedError(f"distributed_training: {kind} is not supported; MirroredStrategy, "
                                  "MultiWorkerMirroredStrategy and ParameterServerStrategy are")
    variables = agent._variables()
    if variables and not _in_scope(strategy, variables[0]):
        raise ValueError(f"distributed_training: the agent's variables were created outside "
                         f"{kind}.scope(); build the agent and its optimizer inside "
                         "`with strategy.scope():`")


def _in_scope(strategy: Any, variable: Any) -> bool:
    inner = getattr(variable, "value", variable)  # a Keras 3 Variable wraps the tf.Variable
    try:
        return bool(strategy.extended.variable_created_in_scope(inner))
    except AttributeError:  # a plain variable, made under no strategy
        return False
