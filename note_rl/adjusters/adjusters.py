"""The adjusters: a signal, a target and one :class:`~note_rl.adjusters.rule.Rule` per hyperparameter.

* :class:`ESSAdjuster` (``kind="ess"``): signal = EMA of the effective sample size of the
  prioritized-replay weights of the whole buffer (per-segment values are reported in pool mode;
  see the class for why), rules in ESS mode, target ``target_ess`` (``None``: only the batch rule
  runs and the batch follows the ESS).
* :class:`GNSAdjuster` (``kind="gns"``): ``num_samples`` mini-batch gradients of the current batch
  size give both Note_rl's gradient variance and McCandlish et al.'s ``B_simple``; rules in noise
  mode.  ``signal="b_simple"`` (default) uses ``E = B_simple / batch``, the noise-to-signal ratio
  ``E|g_B - G|^2 / |G|^2`` of one mini-batch gradient, with target 1: the batch rule then moves the
  batch to ``B_simple`` (the paper's estimate of the critical batch size) and the other rules react
  to a dimensionless number whose target means the same on every task.  ``signal="variance"`` is
  Note_rl's signal (per-coordinate gradient variance, default target 1e-3); its scale depends on
  the reward scale, the network size and the batch, so a fixed target does not carry over.
* :class:`WindowAdjuster`: Note_rl's ``adjust_window_size``, the number of oldest items to drop
  after ``update_param()`` so that about ``scale * EMA(ESS)`` items of the segment remain.

Each run reports its signals and every hyperparameter it manages through ``on_adjust(logs)``.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from .registry import ORDER, REGISTRY, AdjusterError
from .rule import BATCH, Rule
from .signals import EMA, NoiseAccumulator, NoiseEstimate, ess_from_weights

__all__ = ["Adjuster", "ESSAdjuster", "GNSAdjuster", "WindowAdjuster", "minibatch_noise",
           "DEFAULT_EVERY", "SIGNALS"]

#: default cadence in gradient steps (see BENCHMARKS_adjusters.md for the overhead)
DEFAULT_EVERY = {"ess": 10, "gns": 100}
SIGNALS = {"b_simple": 1.0, "variance": 1e-3}  # GNS signal -> default target


def _check_positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check_alpha(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value <= 1.0:
        raise ValueError(f"smooth_alpha must be within (0, 1], got {value!r}")
    return float(value)


def _pr_buffer(agent: Any) -> Any:
    buffer = agent.buffer
    if buffer is None or not hasattr(buffer, "weights"):
        raise AdjusterError("the ESS needs prioritized replay: set(PR=True)")
    return buffer


def _named(name: str, values: list[float], integer: bool) -> dict[str, float]:
    cast = int if integer else float
    if len(values) == 1:
        return {name: cast(values[0])}
    return {f"{name}/{i}": cast(v) for i, v in enumerate(values)}


class Adjuster:
    """Base class: cadence ``every`` (gradient steps), EMA factor, rules, optional window rule.

    :param every: run every this many gradient steps when set as ``agent.adjuster``
    :param smooth_alpha: EMA factor of the signal (weight of the newest value)
    :param params: ``{name: params_dict}`` for hyperparameter names of :data:`REGISTRY`
    :param window: trim the prioritized buffer after each ``update_param()`` (ESS-based)
    """

    kind = ""
    mode = ""  # "ess" or "noise": which direction column of the registry applies

    def __init__(self, every: int, smooth_alpha: float, params: Mapping[str, Any] | None = None,
                 window: WindowAdjuster | None = None) -> None:
        self.every = _check_positive_int("every", every)
        self.smooth_alpha = _check_alpha(smooth_alpha)
        self.window = window
        self.rules: dict[str, Rule] = {}
        self.active: tuple[str, ...] = ()
        self.runs = 0
        self._pending: dict[str, Any] = {}  # restored states of rules not configured yet
        self.set_params(params or {})

    @property
    def target(self) -> float | None:  # pragma: no cover - defined by subclasses
        raise NotImplementedError

    # -- configuration -----------------------------------------------------------------------
    def set_params(self, params: Mapping[str, Any]) -> None:
        """Set the active rules from ``{name: params_dict or None}``; known rules keep their state."""
        active = []
        for name, p in params.items():
            if name not in REGISTRY:
                raise ValueError(f"{name}_params: unknown hyperparameter; adjustable: {list(ORDER)}")
            if p is None:
                continue
            hp = REGISTRY[name]
            direction = hp.ess_direction if self.mode == "ess" else hp.noise_direction
            if direction is None:
                raise ValueError(f"{name}_params is not used in gradient-noise mode (Note_rl's rule)")
            if name in self.rules:
                self.rules[name].configure(p)
            else:
                self.rules[name] = Rule(name, hp.kind, direction, p, hp.domain, hp.integer)
                if name in self._pending:
                    self.rules[name].load_state_dict(self._pending.pop(name))
            active.append(name)
        self.active = tuple(n for n in ORDER if n in active)
        self._check_target()

    def _check_target(self) -> None:
        if self.target is None:
            needing = [n for n in self.active if REGISTRY[n].kind != BATCH]
            if needing:
                raise ValueError(f"{', '.join(n + '_params' for n in needing)} need a target "
                                 f"(only the batch rule runs without one)")
        elif not isinstance(self.target, (int, float)) or self.target <= 0:
            raise ValueError(f"the target must be a positive number, got {self.target!r}")

    def check(self, agent: Any) -> None:
        """Fail early (at ``train()`` start) if the agent lacks something a rule needs."""
        if agent.buffer is None:
            raise AdjusterError("adjusters run on replay training; this agent trains on rollouts")
        if self.window is not None:
            _pr_buffer(agent)
        for name in self.active:
            REGISTRY[name].get(agent)

    def due(self, batch_counter: int) -> bool:
        return batch_counter % self.every == 0

    # -- running -----------------------------------------------------------------------------
    def measure(self, agent: Any) -> dict[str, float]:  # pragma: no cover - per subclass
        raise NotImplementedError

    def signal(self, logs: Mapping[str, float], agent: Any) -> float | None:  # pragma: no cover
        raise NotImplementedError

    def run(self, agent: Any) -> dict[str, float]:
        """Measure the signal, apply every active rule, report; returns the reported logs."""
        logs = self.measure(agent)
        signal = self.signal(logs, agent) if logs else None
        if signal is not None and math.isfinite(signal) and signal > 0:
            logs.update(self.apply(agent, signal, self.target))
        logs.update(batch_counter=agent.batch_counter, env_steps=agent.step_counter)
        self.runs += 1
        agent._report_adjust(logs)
        return logs

    def apply(self, agent: Any, signal: float, target: float | None) -> dict[str, float]:
        """Apply the active rules in Note_rl's order; returns the new values by name."""
        upper = len(agent.buffer) if agent.buffer is not None else None
        out: dict[str, float] = {}
        for name in self.active:
            hp = REGISTRY[name]
            new = self.rules[name].step(hp.get(agent), signal, target, upper)
            hp.set(agent, new)
            out.update(_named(name, new, hp.integer))
        return out

    # -- description and checkpoints ---------------------------------------------------------
    def spec(self) -> dict[str, Any]:
        """The declarative form that rebuilds this adjuster with :func:`make_adjuster`."""
        out: dict[str, Any] = {"kind": self.kind, "every": self.every, "smooth_alpha": self.smooth_alpha}
        out.update({f"{n}_params": dict(self.rules[n].params) for n in self.active})
        out["window"] = self.window.spec() if self.window is not None else None
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "runs": self.runs,
                "rules": {**self._pending, **{n: r.state_dict() for n, r in self.rules.items()}},
                "window": self.window.state_dict() if self.window is not None else None}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("kind") != self.kind:
            raise ValueError(f"adjuster state of kind {state.get('kind')!r} cannot load into {self.kind!r}")
        self.runs = int(state["runs"])
        for name, rule_state in state["rules"].items():
            if name in self.rules:
                self.rules[name].load_state_dict(rule_state)
            else:  # Note_rl-style calls configure their rules at the first call after a restore
                self._pending[name] = rule_state
        if self.window is not None and state.get("window") is not None:
            self.window.load_state_dict(state["window"])


class ESSAdjuster(Adjuster):
    """ESS mode (Note_rl's ``adjust_batch_size``); see the module docstring.

    Which ESS: the rules use the ESS of the whole buffer, in pool mode too (all segments' weights
    together), as Note_rl's ``adjust_batch_size`` does (its ``compute_ess`` reads the merged
    priority arrays).  That is the distribution the gradient steps draw from: a batch is sampled
    from all segments in proportion to these weights, and the batch, lr, alpha, eps... are single
    values of the one learner, so they follow the one signal that describes their data.  A
    segment's ESS only describes one worker's share; it decides that segment's trim in the window
    rule (:class:`WindowAdjuster`, Note_rl's ``adjust_window_size(p)``) and is reported here as
    ``ess/<p>`` for monitoring, without entering the EMA or the rules.

    :param target_ess: target ESS ``T``; ``None`` lets the batch follow the ESS itself
    """

    kind = "ess"
    mode = "ess"

    def __init__(self, target_ess: float | None = None, every: int = DEFAULT_EVERY["ess"],
                 smooth_alpha: float = 0.2, params: Mapping[str, Any] | None = None,
                 window: WindowAdjuster | None = None) -> None:
        self.target_ess = target_ess
        self.ema = EMA()
        super().__init__(every, smooth_alpha, params, window)

    @property
    def target(self) -> float | None:
        return self.target_ess

    def check(self, agent: Any) -> None:
        super().check(agent)
        _pr_buffer(agent)

    def measure(self, agent: Any) -> dict[str, float]:
        buffer = _pr_buffer(agent)
        ess = ess_from_weights(buffer.weights())
        if ess <= 0:
            return {}
        logs = {"ess": ess, "ess_ema": self.ema.update(ess, self.smooth_alpha)}
        if buffer.n_segments > 1:  # pool mode: one value per process segment as well
            logs.update({f"ess/{p}": ess_from_weights(buffer.weights(p)) for p in range(buffer.n_segments)})
        return logs

    def signal(self, logs: Mapping[str, float], agent: Any) -> float | None:
        return logs["ess_ema"]

    def spec(self) -> dict[str, Any]:
        return {**super().spec(), "target_ess": self.target_ess}

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "ema": self.ema.state_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        super().load_state_dict(state)
        self.ema.load_state_dict(state["ema"])


class GNSAdjuster(Adjuster):
    """Gradient-noise mode (Note_rl's ``adabatch``); see the module docstring.

    :param target_noise: target ``T`` (default 1.0 for ``b_simple``, 1e-3 for ``variance``)
    :param num_samples: mini-batch gradients per measurement (at least 2)
    :param signal: ``"b_simple"`` (``E = B_simple / batch``) or ``"variance"`` (Note_rl's)
    :param seed: seed of the mini-batch sampler (default: the agent's seed + 17)
    """

    kind = "gns"
    mode = "noise"

    def __init__(self, target_noise: float | None = None, num_samples: int = 8,
                 signal: str = "b_simple", every: int = DEFAULT_EVERY["gns"],
                 smooth_alpha: float = 0.2, params: Mapping[str, Any] | None = None,
                 window: WindowAdjuster | None = None, seed: int | None = None) -> None:
        if signal not in SIGNALS:
            raise ValueError(f"signal must be one of {list(SIGNALS)}, got {signal!r}")
        self.signal_name = signal
        self.target_noise = SIGNALS[signal] if target_noise is None else target_noise
        self.num_samples = _check_positive_int("num_samples", num_samples)
        if self.num_samples < 2:
            raise ValueError("num_samples must be at least 2 (a variance needs two gradients)")
        self.seed = seed
        self.rng: np.random.Generator | None = None
        self.noise_ema, self.tr_ema, self.grad_sq_ema = EMA(), EMA(), EMA()
        super().__init__(every, smooth_alpha, params, window)

    @property
    def target(self) -> float | None:
        return self.target_noise

    def _rng(self, agent: Any) -> np.random.Generator:
        if self.rng is None:
            seed = self.seed if self.seed is not None else (None if agent.seed is None else agent.seed + 17)
            self.rng = np.random.default_rng(seed)
        return self.rng

    def measure(self, agent: Any) -> dict[str, float]:
        est = minibatch_noise(agent, agent.batch, self.num_samples, self._rng(agent))
        if est is None:
            return {}
        a = self.smooth_alpha
        tr, g2 = self.tr_ema.update(est.tr_sigma, a), self.grad_sq_ema.update(est.grad_sq, a)
        b_simple = tr / g2 if g2 > 0 else float("nan")  # ratio of the smoothed estimates (paper, app. A)
        return {"noise": est.variance, "noise_ema": self.noise_ema.update(est.variance, a),
                "tr_sigma": est.tr_sigma, "grad_sq": est.grad_sq, "b_simple": b_simple,
                "noise_ratio": b_simple / est.batch}

    def signal(self, logs: Mapping[str, float], agent: Any) -> float | None:
        return logs["noise_ema"] if self.signal_name == "variance" else logs["noise_ratio"]

    def spec(self) -> dict[str, Any]:
        return {**super().spec(), "target_noise": self.target_noise, "num_samples": self.num_samples,
                "signal": self.signal_name}

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "noise_ema": self.noise_ema.state_dict(),
                "tr_ema": self.tr_ema.state_dict(), "grad_sq_ema": self.grad_sq_ema.state_dict(),
                "rng": None if self.rng is None else self.rng.bit_generator.state}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        super().load_state_dict(state)
        self.noise_ema.load_state_dict(state["noise_ema"])
        self.tr_ema.load_state_dict(state["tr_ema"])
        self.grad_sq_ema.load_state_dict(state["grad_sq_ema"])
        if state.get("rng") is not None:
            self.rng = np.random.default_rng()
            self.rng.bit_generator.state = state["rng"]


def minibatch_noise(agent: Any, batch: int, num_samples: int, rng: np.random.Generator,
                    ddof: int = 1) -> NoiseEstimate | None:
    """Noise statistics of ``num_samples`` gradients of the agent's replay loss, each on
    ``batch`` items drawn uniformly without replacement from the buffer (``None`` if it holds
    fewer than 2 items).  Gradients are taken, never applied."""
    buffer = agent.buffer
    if buffer is None:
        raise AdjusterError("gradient noise needs a replay buffer")
    slots = buffer.valid_slots()
    n = len(slots)
    if n < 2:
        return None
    size = min(int(batch), n)
    loss_fn = agent._gradient_loss_fn()
    variables = agent.backend.flatten(agent.param)
    ones = np.ones(size, dtype=np.float32) if agent.loss_accepts_weights() else None
    acc = NoiseAccumulator()
    for _ in range(num_samples):
        b = buffer.get(slots[rng.choice(n, size=size, replace=False)])
        arrays = [b.state, b.action, b.next_state, b.reward, b.done]
        if ones is not None:
            arrays.append(ones)
        acc.add(agent.backend.gradient(loss_fn, variables, arrays))
        agent.prioritized_replay.pop()  # TD errors the loss pushed belong to no training step
    return acc.estimate(size, ddof)


class WindowAdjuster:
    """Note_rl's ``adjust_window_size``: drop the oldest items so ``~scale * EMA(ESS)`` remain.

    ``keep = clip(int(EMA(ESS) * scale), 1, n - 1)`` and the window is ``n - keep`` for the ``n``
    items of the segment (or of the whole buffer); one EMA per segment, kept between calls.

    :param scale: multiplies the ESS
    :param smooth_alpha: EMA factor
    """

    def __init__(self, scale: float = 1.0, smooth_alpha: float = 0.2) -> None:
        if not isinstance(scale, (int, float)) or scale <= 0:
            raise ValueError(f"window scale must be > 0, got {scale!r}")
        self.scale = float(scale)
        self.smooth_alpha = _check_alpha(smooth_alpha)
        self.emas: dict[str, EMA] = {}

    def window(self, agent: Any, segment: int | None = None, scale: float | None = None,
               smooth_alpha: float | None = None, ema: float | None = None) -> int:
        """Items to drop from ``segment`` (``None``: the whole buffer); reports ``on_adjust``.
        ``ema``: a pre-computed EMA of the ESS to use instead of this adjuster's own (Note_rl 000)."""
        w = _pr_buffer(agent).weights(segment)
        ess = ess_from_weights(w)
        key = "all" if segment is None else str(segment)
        if ema is None:
            ema = self.emas.setdefault(key, EMA()).update(ess, smooth_alpha or self.smooth_alpha)
        n = len(w)
        window = 0
        if n >= 2:
            keep = min(max(int(ema * (scale or self.scale)), 1), n - 1)
            window = n - keep
        suffix = "" if segment is None else f"/{segment}"
        agent._report_adjust({f"window{suffix}": window, f"window_ess{suffix}": ess,
                              f"window_ess_ema{suffix}": ema, "batch_counter": agent.batch_counter,
                              "env_steps": agent.step_counter})
        return window

    def spec(self) -> dict[str, Any]:
        return {"scale": self.scale, "smooth_alpha": self.smooth_alpha}

    def state_dict(self) -> dict[str, Any]:
        return {k: e.state_dict() for k, e in self.emas.items()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.emas = {k: EMA(v.get("value")) for k, v in state.items()}
