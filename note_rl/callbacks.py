"""Keras-style training callbacks.

The loop calls, in order: ``on_train_begin(logs)``, then per episode ``on_episode_begin(episode,
logs)`` ... ``on_batch_begin(batch, logs)`` / ``on_batch_end(batch, logs)`` around every gradient
step ... ``on_episode_end(episode, logs)``, and finally ``on_train_end(logs)``.  ``episode`` counts
from 0 within the current ``train()`` call; ``batch`` is the agent's global gradient-step counter.
A callback stops training by setting ``agent.stop_training = True`` (the agent is available as
``self.model`` once training starts); the loop checks it before every episode and every batch.

``on_episode_end`` logs always hold ``reward`` (the episode return) and ``loss`` (mean loss of the
episode's gradient steps, ``None`` before training starts), plus ``mean_reward`` (mean of the last
``trial_count`` returns, or of all returns so far), ``env_steps`` and ``total_episode``.
``on_adjust(logs)`` receives, at every adjuster run, the signal and every hyperparameter the
adjuster manages, after the update: ``ess``, ``ess_ema`` (and ``ess/<p>`` per pool segment) or
``noise``, ``noise_ema``, ``tr_sigma``, ``grad_sq``, ``b_simple``, ``noise_ratio``; then ``batch``,
``alpha``, ``lr``, ``eps``, ``freq``, ``tau``, ``gamma``, ``store``, ``weight_decay``, ``beta1``,
``beta2``, ``clip``, ``beta`` (``lr/<i>``, ``eps/<i>`` for lists of optimizers / policies); window
runs report ``window``, ``window_ess``, ``window_ess_ema`` (``/<p>`` per segment).  Every report also
holds ``batch_counter`` and ``env_steps``; the latest values reach ``on_episode_end`` logs as
``adjust/<key>``.  See :mod:`note_rl.adjusters`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

__all__ = ["Callback", "LambdaCallback", "CallbackList"]

HOOKS = (
    "on_train_begin",
    "on_train_end",
    "on_episode_begin",
    "on_episode_end",
    "on_batch_begin",
    "on_batch_end",
    "on_adjust",
)


class Callback:
    """Base class: every hook is a no-op; override the ones you need."""

    model: Any = None

    def set_model(self, model: Any) -> None:
        self.model = model

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_episode_begin(self, episode: int, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_episode_end(self, episode: int, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_adjust(self, logs: dict[str, Any] | None = None) -> None:
        pass


class LambdaCallback(Callback):
    """Build a callback from plain functions; hooks left as ``None`` do nothing.

    Each function takes the same arguments as the hook it replaces, e.g.
    ``LambdaCallback(on_episode_end=lambda episode, logs: print(logs["reward"]))``.
    """

    def __init__(
        self,
        on_train_begin: Callable[..., Any] | None = None,
        on_train_end: Callable[..., Any] | None = None,
        on_episode_begin: Callable[..., Any] | None = None,
        on_episode_end: Callable[..., Any] | None = None,
        on_batch_begin: Callable[..., Any] | None = None,
        on_batch_end: Callable[..., Any] | None = None,
        on_adjust: Callable[..., Any] | None = None,
    ) -> None:
        given = dict(
            on_train_begin=on_train_begin,
            on_train_end=on_train_end,
            on_episode_begin=on_episode_begin,
            on_episode_end=on_episode_end,
            on_batch_begin=on_batch_begin,
            on_batch_end=on_batch_end,
            on_adjust=on_adjust,
        )
        for name, fn in given.items():
            if fn is not None:  # unlike Note_rl, unset hooks stay the inherited no-ops
                setattr(self, name, fn)


class CallbackList:
    """Dispatch each hook to every callback; skips the batch hooks when nobody overrides them."""

    def __init__(self, callbacks: Iterable[Any] = (), model: Any = None) -> None:
        self.callbacks = list(callbacks)
        for i, cb in enumerate(self.callbacks):
            if not isinstance(cb, Callback) and not any(callable(getattr(cb, h, None)) for h in HOOKS):
                raise ValueError(f"train(callbacks=...): item {i} ({type(cb).__name__}) is not a callback; subclass "
                                 "note_rl.Callback or use LambdaCallback(on_episode_end=...)")
        for cb in self.callbacks:
            if hasattr(cb, "set_model"):
                cb.set_model(model)
            else:
                cb.model = model
        # batch hooks run on the hot path: only call those that do something
        self._active = {name: [getattr(cb, name) for cb in self.callbacks if _overrides(cb, name)]
                        for name in HOOKS}

    def __bool__(self) -> bool:
        return bool(self.callbacks)

    def wants(self, hook: str) -> bool:
        return bool(self._active[hook])

    def call(self, hook: str, *args: Any) -> None:
        for fn in self._active[hook]:
            fn(*args)


def _overrides(cb: Any, name: str) -> bool:
    fn = getattr(cb, name, None)
    if fn is None:
        return False
    base = getattr(Callback, name)
    return getattr(fn, "__func__", fn) is not base
