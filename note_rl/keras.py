"""Keras/TensorFlow base class ``RL`` (Note_rl's ``from Note_rl.RL import RL``)."""

from __future__ import annotations

from typing import Any, Callable

from .core.base import RLBase
from .core.settings import TrainSettings

__all__ = ["RL"]


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
        window_size: int | Callable[..., int] | None = None,
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
    ) -> float | None:
        """Train for ``episodes`` episodes; returns the mean loss of the last episode that trained.

        :param train_loss: ``tf.keras.metrics.Mean``; reset every episode, returned value source
        :param optimizer: a Keras optimizer, or a list (one per group of ``self.param``)
        :param episodes: number of episodes (``None``: until ``criterion``/``steps``/stop)
        See :class:`note_rl.core.settings.TrainSettings` for the other options.
        """
        settings = TrainSettings(
            train_loss=train_loss, pool_network=pool_network, processes=processes,
            num_store=num_store, window_size=window_size, clearing_freq=clearing_freq,
            window_size_=window_size_, window_size_ppo=window_size_ppo,
            window_size_pr=window_size_pr, jit_compile=jit_compile, random=random,
            save_data=save_data, callbacks=callbacks, p=p, steps=steps,
            parallel_store_and_training=parallel_store_and_training, start_method=start_method)
        return self._train(optimizer, episodes, settings)
