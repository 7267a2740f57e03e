"""PyTorch base class ``RL_pytorch`` (Note_rl's ``from Note_rl.RL_pytorch import RL_pytorch``)."""

from __future__ import annotations

from typing import Any, Callable

from .core.base import RLBase
from .core.settings import TrainSettings

__all__ = ["RL_pytorch"]


class RL_pytorch(RLBase):
    """Subclass it with torch modules: set ``self.param`` (parameters, or one list per
    optimizer), ``self.env``, and define ``action(s)`` and ``__call__(s, a, next_s, r, d)``
    returning the loss tensor.  Then ``set(...)`` and ``train(optimizer, episodes)``.
    """

    backend_name = "torch"

    def train(
        self,
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
        jit_compile: bool | str = False,
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

        :param optimizer: a ``torch.optim`` optimizer, or a list (one per group of ``self.param``)
        :param episodes: number of episodes (``None``: until ``criterion``/``steps``/stop)
        :param jit_compile: wrap the loss in ``torch.compile`` (off by default); a mode name
            (``"reduce-overhead"``: CUDA graphs, as LeanRL) picks torch.compile's mode
        See :class:`note_rl.core.settings.TrainSettings` for the other options.
        """
        settings = TrainSettings(
            pool_network=pool_network, processes=self.default_processes(processes), num_store=num_store,
            window_size=window_size, clearing_freq=clearing_freq, window_size_=window_size_,
            window_size_ppo=window_size_ppo, window_size_pr=window_size_pr,
            jit_compile=jit_compile, random=random, save_data=save_data, callbacks=callbacks,
            p=p, steps=steps, parallel_store_and_training=parallel_store_and_training,
            start_method=start_method, processes_her=processes_her,
            processes_pr=processes_pr, shuffle=shuffle,
            parallel_training_and_save=parallel_training_and_save)
        return self._train(optimizer, episodes, settings)

    def distributed_training(self, optimizer: Any = None, episodes: int | None = None,
                             num_episodes: int | None = None, global_batch_size: int | None = None,
                             backend: str | None = None, **options: Any) -> float | None:
        """``train()`` as one replica of data-parallel training over ``torch.distributed`` (see
        :mod:`note_rl.backends.torch_ddp`): run the same script in every process (``torchrun
        --nproc-per-node N script.py``, or :func:`note_rl.distributed.launch`); each process collects
        from its own env with its own seeds, and every gradient step averages the gradients of all
        replicas, so the weights stay identical everywhere.  The global batch (``batch``, or
        ``global_batch_size``) is split evenly: each replica samples ``batch / N`` items per step.
        Only rank 0 writes checkpoints.  A replica that finishes its episodes first keeps answering
        the others' steps until all have finished.

        :param optimizer: as ``train()``
        :param episodes: this replica's episode budget (``num_episodes``: the seeds' name for it)
        :param global_batch_size: the global batch (sets ``batch``); must be a multiple of N
        :param backend: ``gloo`` or ``nccl`` when this call starts the process group from torchrun's
            environment; default NCCL for an agent on a GPU when there is a GPU per replica (NCCL
            refuses two replicas on one GPU), else gloo (which also carries CUDA tensors)
        :param options: any other ``train()`` option (``steps``, ``p``, ``callbacks``, ...); a
            ``strategy=`` (the Keras agent's ``tf.distribute`` strategy) is refused in one line
        """
        from .backends import torch_ddp

        strategy = options.pop("strategy", None)
        if strategy is None and hasattr(episodes, "num_replicas_in_sync"):  # (optimizer, strategy, episodes)
            strategy = episodes
        if strategy is not None:
            raise ValueError(f"distributed_training(strategy={type(strategy).__name__}): a PyTorch agent trains "
                             "data-parallel over torch.distributed, not tf.distribute strategies; drop strategy= and "
                             "run the script with torchrun --nproc-per-node N (or note_rl.distributed.launch)")
        if episodes is not None and num_episodes is not None and episodes != num_episodes:
            raise ValueError(f"distributed_training(episodes={episodes}, num_episodes={num_episodes}): "
                             "two names for the episode budget; give one")
        episodes = episodes if episodes is not None else num_episodes
        if backend is None:
            backend = torch_ddp.default_backend(self._variables())
        torch_ddp.join_process_group(backend)
        import torch.distributed as dist

        rank, world = dist.get_rank(), dist.get_world_size()
        batch = global_batch_size if global_batch_size is not None else self.batch
        if batch is not None and batch % world:
            raise ValueError(f"distributed_training: batch={batch} does not split evenly over {world} "
                             f"replicas; make it a multiple of {world}")
        kept = {"batch": self.batch, "seed": self.seed, "rank": self.rank}
        if batch is not None:
            self.batch = batch // world
        if self.seed is not None and rank:
            self.apply_seed(self.seed + 10_000 * rank)  # own env, exploration and sampling streams
        self.rank = rank
        try:
            with torch_ddp.replica_group(self):
                return self.train(optimizer, episodes, **options)
        finally:
            self.batch = global_batch_size if global_batch_size is not None else kept["batch"]
            self.seed, self.rank = kept["seed"], kept["rank"]
