"""Note_rl's adjuster methods on every agent (``RLBase`` inherits :class:`AdjusterMixin`).

Two ways to use adjusters:

* Declarative: ``agent.adjuster = make_adjuster({...})`` (or the dict itself); the loop runs it
  every ``every`` gradient steps.  This is what a config switches on.
* Note_rl style: define ``adjust_func()`` and/or ``window_size_func(p=None)`` on the agent and call
  the methods below from them, with Note_rl's names and parameters::

      def adjust_func(self):
          self.adjust(batch_params=self.batch_params)          # ESS mode, batch follows the ESS

      def window_size_func(self, p=None):
          return self.adjust_window_size(p)

  The loop calls ``adjust_func()`` after each ``update_param()`` of the ``update_steps`` /
  ``update_batches`` cadence and, with ``PR=True``, also after every gradient step once the buffer
  holds ``num_updates * batch`` items (Note_rl's ``pool_size_``; both points, as in Note_rl).  In
  pool mode it is also called once per collection phase, after the workers' data is stored and
  before that phase's training, once the buffer holds ``pool_size_`` items (Note_rl's
  ``prepare()``).
  ``window_size_func(p)`` (pool) / ``window_size_func()`` decides how many of the oldest items of
  each buffer segment to drop after every ``update_param()`` with ``PR=True``.

Every run reports to the callbacks' ``on_adjust(logs)``: during ``train()`` through the call's run
context (:func:`note_rl.core.run_context.current`), which also puts the values in the episode logs.
Unlike Note_rl, the EMAs and the rules' state persist between calls (and in checkpoints), and every
listed hyperparameter really changes.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..callbacks import CallbackList
from ..core.run_context import RunContext, current
from .adjusters import (SIGNALS, Adjuster, ESSAdjuster, GNSAdjuster, WindowAdjuster, _check_alpha,
                        minibatch_noise)
from .registry import REGISTRY
from .signals import ess_from_weights
from .spec import make_adjuster

__all__ = ["AdjusterMixin"]

Params = Mapping[str, Any] | None
# adjusted values the checkpoint's set() section does not hold (batch, alpha, beta, eps,
# update frequency and optimizer hyperparameters are saved with the agent, policy or optimizer)
_NOT_IN_SETTINGS = ("tau", "gamma", "clip")


class AdjusterMixin:
    """Adjuster state and Note_rl's ``compute_ess_from_weights``, ``adjust_window_size``,
    ``adjust_batch_size``, ``adabatch`` and ``adjust`` (see the module docstring)."""

    _adjuster: Adjuster | None = None
    _run: RunContext | None = None  # the running train() call's context (run_context.current)

    def _init_adjusters(self) -> None:
        self._adjuster = None
        self._run = None
        # the objects behind the Note_rl-style methods: their EMAs and rule states persist
        self._note_ess = ESSAdjuster(every=1)
        self._note_gns = GNSAdjuster(signal="variance", every=1)
        self._note_window = WindowAdjuster()
        self._grad_loss: Any = None

    @property
    def _trainer(self) -> RunContext | None:
        """Deprecated name of the running call's context (callbacks written against the old
        ``model._trainer.settings``); use :func:`note_rl.core.run_context.current`."""
        return self._run

    @_trainer.setter
    def _trainer(self, value: RunContext | None) -> None:
        self._run = value

    # -- declarative adjuster ----------------------------------------------------------------
    @property
    def adjuster(self) -> Adjuster | None:
        """The adjuster the loop runs every ``adjuster.every`` gradient steps (``None``: off).

        Accepts an :class:`Adjuster`, a spec dict for :func:`make_adjuster`, or ``None``."""
        return self._adjuster

    @adjuster.setter
    def adjuster(self, value: Adjuster | Mapping[str, Any] | None) -> None:
        if value is None or isinstance(value, Mapping):
            value = make_adjuster(value)
        elif not isinstance(value, Adjuster):
            raise TypeError(f"agent.adjuster must be an Adjuster, a spec dict or None, got {value!r}")
        self._adjuster = value

    # -- Note_rl methods ---------------------------------------------------------------------
    def compute_ess_from_weights(self, weights: Any) -> float:
        """``1 / sum(p ** 2)`` with ``p = weights / sum(weights)``."""
        return ess_from_weights(weights)

    def compute_ess(self, ema_prev: float | None = None, smooth: float = 0.2) -> float:
        """ESS of the whole prioritized buffer, averaged with ``ema_prev`` when given (stateless)."""
        ess = ess_from_weights(self.buffer.weights())
        return ess if ema_prev is None else smooth * ess + (1.0 - smooth) * ema_prev

    def adjust_window_size(self, p: int | None = None, scale: float = 1.0,
                           smooth_alpha: float = 0.2, ema: float | None = None) -> int:
        """Number of oldest items to drop from segment ``p`` (whole buffer if ``None``) so that
        about ``scale * EMA(ESS)`` remain; one EMA per segment, kept between calls.  ``ema``
        (Note_rl 000): a pre-computed EMA of the ESS, used instead of the kept one."""
        return self._note_window.window(self, p, scale, smooth_alpha, ema)

    def adjust_batch_size(self, smooth_alpha: float = 0.2, batch_params: Params = None,
                          target_ess: float | None = None, alpha_params: Params = None,
                          lr_params: Params = None, eps_params: Params = None,
                          freq_params: Params = None, tau_params: Params = None,
                          gamma_params: Params = None, store_params: Params = None,
                          weight_decay_params: Params = None, beta1_params: Params = None,
                          beta2_params: Params = None, clip_params: Params = None,
                          beta_params: Params = None) -> dict[str, float]:
        """ESS mode: EMA of the buffer's ESS, then each given rule (batch first).  Without
        ``target_ess`` only the batch rule may be given.  Returns the reported logs."""
        adj = self._note_ess
        adj.target_ess = target_ess
        adj.smooth_alpha = _check_alpha(smooth_alpha)
        adj.set_params(_collect(locals()))
        return adj.run(self)

    def adabatch(self, num_samples: int, target_noise: float = 1e-3, smooth_alpha: float = 0.2,
                 batch_params: Params = None, alpha_params: Params = None, lr_params: Params = None,
                 eps_params: Params = None, freq_params: Params = None, tau_params: Params = None,
                 gamma_params: Params = None, weight_decay_params: Params = None,
                 beta1_params: Params = None, beta2_params: Params = None,
                 clip_params: Params = None, beta_params: Params = None, jit_compile: bool = True,
                 signal: str = "variance", smooth: float | None = None) -> dict[str, float]:
        """Gradient-noise mode on ``num_samples`` mini-batch gradients of the current batch size;
        ``smooth`` is Note_rl 000's name for ``smooth_alpha``.

        ``signal="variance"`` (default, Note_rl's units for ``target_noise``) or ``"b_simple"``
        (``E = B_simple / batch``, use a target around 1).  ``jit_compile`` is accepted for
        compatibility; gradients go through the backend's own compiled gradient function."""
        adj = self._note_gns
        if signal not in SIGNALS:
            raise ValueError(f"signal must be one of {list(SIGNALS)}, got {signal!r}")
        adj.signal_name, adj.target_noise = signal, target_noise
        adj.num_samples = max(2, int(num_samples))
        adj.smooth_alpha = _check_alpha(smooth_alpha if smooth is None else smooth)
        adj.set_params(_collect(locals()))
        return adj.run(self)

    def estimate_gradient_variance(self, batch_size: int, num_samples: int,
                                   ema_noise: float | None = None, smooth: float = 0.2,
                                   jit_compile: bool = True) -> float:
        """Note_rl's gradient variance (Bessel-corrected), averaged with ``ema_noise`` if given."""
        est = minibatch_noise(self, batch_size, max(2, int(num_samples)), self._note_gns._rng(self))
        if est is None:
            raise ValueError("estimate_gradient_variance: the buffer holds fewer than 2 items")
        return est.variance if ema_noise is None else smooth * est.variance + (1.0 - smooth) * ema_noise

    def adjust(self, target_ess: float | None = None, target_noise: float | None = None,
               num_samples: int | None = None, smooth_alpha: float = 0.2,
               batch_params: Params = None, alpha_params: Params = None, lr_params: Params = None,
               eps_params: Params = None, freq_params: Params = None, tau_params: Params = None,
               gamma_params: Params = None, store_params: Params = None,
               weight_decay_params: Params = None, beta1_params: Params = None,
               beta2_params: Params = None, clip_params: Params = None, beta_params: Params = None,
               jit_compile: bool = True, smooth: float | None = None) -> dict[str, float]:
        """Note_rl's dispatcher: ESS mode unless ``target_noise`` is given, then gradient-noise
        mode with ``num_samples`` gradients (default 8).  ``store_params`` is ESS-only.
        ``smooth`` is Note_rl 000's name for ``smooth_alpha`` (002/003 and V1025 say ``smooth_alpha``)."""
        if smooth is not None:
            smooth_alpha = smooth
        params = _collect(locals())
        if target_noise is None:
            return self.adjust_batch_size(smooth_alpha, target_ess=target_ess,
                                          **{f"{k}_params": v for k, v in params.items()})
        if store_params is not None:
            raise ValueError("store_params is not used in gradient-noise mode (Note_rl's rule)")
        params.pop("store")
        return self.adabatch(num_samples or 8, target_noise, smooth_alpha, jit_compile=jit_compile,
                             **{f"{k}_params": v for k, v in params.items()})

    # -- plumbing ----------------------------------------------------------------------------
    def _report_adjust(self, logs: Mapping[str, float]) -> None:
        """Send one adjuster run's values to ``on_adjust`` (and the episode logs while training)."""
        run = current(self)
        if run is not None:
            run.report_adjust(logs)
        elif getattr(self, "callbacks", None):
            CallbackList(self.callbacks, self).call("on_adjust", dict(logs))

    def _gradient_loss_fn(self) -> Any:
        # one bound method for the agent's lifetime: the TF backend caches compiled gradient
        # functions by the loss function's identity
        if self._grad_loss is None:
            self._grad_loss = self.__call__
        return self._grad_loss

    def adjust_state(self) -> dict[str, Any]:
        """JSON state of every adjuster (saved in full checkpoints)."""
        adj = self._adjuster
        managed = {n for a in (adj, self._note_ess, self._note_gns) if a is not None for n in a.active}
        return {"adjuster": None if adj is None else {"spec": adj.spec(), "state": adj.state_dict()},
                "note_rl": {"ess": self._note_ess.state_dict(), "gns": self._note_gns.state_dict(),
                            "window": self._note_window.state_dict()},
                "values": {n: REGISTRY[n].get(self) for n in _NOT_IN_SETTINGS if n in managed}}

    def load_adjust_state(self, state: Mapping[str, Any]) -> None:
        """Inverse of :meth:`adjust_state`; rebuilds ``agent.adjuster`` from the file if unset."""
        saved = state.get("adjuster")
        if saved is not None:
            if self._adjuster is None:
                self._adjuster = make_adjuster(saved["spec"])
            self._adjuster.load_state_dict(saved["state"])
        for name, values in (state.get("values") or {}).items():
            REGISTRY[name].set(self, values)
        note = state.get("note_rl") or {}
        if note:
            self._note_ess.load_state_dict(note["ess"])
            self._note_gns.load_state_dict(note["gns"])
            self._note_window.load_state_dict(note["window"])


def _collect(args: dict[str, Any]) -> dict[str, Any]:
    """``{name: params}`` from a method's ``locals()`` (the ``<name>_params`` arguments)."""
    return {k[:-len("_params")]: v for k, v in args.items() if k.endswith("_params")}
