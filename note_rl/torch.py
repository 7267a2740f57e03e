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
        jit_compile: bool = False,
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
        :param jit_compile: wrap the loss in ``torch.compile`` (off by default)
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
