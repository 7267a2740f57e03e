"""One generic update rule for every adjusted hyperparameter.

Note_rl pasted the same "EMA of a signal -> target -> clip" formula into thirteen ``adjust_*``
methods, and several copies wrote the old value back.  Here a hyperparameter's rule is data: its
kind, the direction it moves when the signal ``E`` exceeds the target ``T``, its parameters (rate or
scale, bounds, smoothing, alignment) and its state.  With ``d = +1`` or ``-1``:

* ``rate``  (params ``{rate, min, max, smooth=0.2}``):
  ``x_t = x + d * rate * (E / T - 1)``, then ``x <- smooth * x + (1 - smooth) * clip(x_t)`` and a
  final clip (so a value that starts out of bounds is brought inside).  For ``d = -1`` this is
  Note_rl's ``x + rate * (T - E) / T``.
* ``scale`` (params ``{scale, min, max}``): ``x <- clip(x * scale * (E / T) ** d)``.  Integer
  hyperparameters (update frequency, ``num_store``) keep the unrounded value in the rule's state,
  so repeated small factors accumulate instead of being lost to ``int()`` every time.
* ``batch`` (params ``{scale, min, max, align}``): ``b = round(batch * E / T * scale)`` (or
  ``round(E * scale)`` without a target), clipped to ``[min, max]`` and rounded down to a multiple
  of ``align``, but never below the smallest multiple of ``align`` that is ``>= min`` (Note_rl could
  reach 0).  Defaults: ``min = max(1, batch // 2)`` and ``align = batch`` at the first call (kept in
  the state, the user's dict is not modified), ``max`` = current buffer length (at least 1).

  The result always lies in ``[min, max]``: a ``min``/``max``/``align`` triple with no multiple of
  ``align`` inside ``[min, max]`` is rejected by :func:`check_params`.  Only defaults can still
  conflict (e.g. batch 64 on a buffer of 20 items: default ``min`` 32 and ``align`` 64 against
  ``max`` 20); then a default yields to the other bound (the buffer-length ``max`` to an explicit
  ``min``, a default ``min`` to any ``max``), and if no multiple of ``align`` lies in the range the
  batch is left unaligned rather than outside its bounds (Note_rl returned 64 for that buffer).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["Rule", "RATE", "SCALE", "BATCH", "check_params"]

RATE, SCALE, BATCH = "rate", "scale", "batch"
_KEYS = {RATE: ("rate", "min", "max", "smooth"), SCALE: ("scale", "min", "max"),
         BATCH: ("scale", "min", "max", "align")}
_REQUIRED = {RATE: ("rate",), SCALE: (), BATCH: ()}


def check_params(name: str, kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Validate one ``<name>_params`` dict and return a plain copy (defaults filled in)."""
    if not isinstance(params, Mapping):
        raise ValueError(f"{name}_params must be a dict, got {type(params).__name__}")
    params = dict(params)
    unknown = set(params) - set(_KEYS[kind])
    if unknown:
        raise ValueError(f"{name}_params: unknown keys {sorted(unknown)}; "
                         f"{kind}-type parameters take {list(_KEYS[kind])}")
    for key in _REQUIRED[kind]:
        if params.get(key) is None:
            raise ValueError(f"{name}_params needs {key!r}")
    for key, value in params.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError(f"{name}_params[{key!r}] must be a number or None, got {value!r}")
    if kind == RATE:
        params.setdefault("smooth", 0.2)
        if params["smooth"] is None or not 0.0 <= params["smooth"] <= 1.0:
            raise ValueError(f"{name}_params['smooth'] must be within [0, 1]")
    else:
        params["scale"] = 1.0 if params.get("scale") is None else params["scale"]
        if params["scale"] <= 0:
            raise ValueError(f"{name}_params['scale'] must be > 0")
    lo, hi = params.get("min"), params.get("max")
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"{name}_params: min {lo} > max {hi}")
    if kind == BATCH:
        _check_batch(name, params)
    return params


def _check_batch(name: str, params: Mapping[str, Any]) -> None:
    """Reject batch bounds no batch can satisfy (checked once, not discovered mid-training)."""
    for key in ("min", "max"):
        if params.get(key) is not None and params[key] < 1:
            raise ValueError(f"{name}_params[{key!r}] must be >= 1, got {params[key]:g}")
    align = params.get("align")
    if align is None:
        return
    if align < 1 or align != int(align):
        raise ValueError(f"{name}_params['align'] must be an integer >= 1, got {align:g}")
    hi = params.get("max")
    if hi is None:
        return  # the default max is the buffer length, known only while training
    lo = math.ceil(params["min"]) if params.get("min") is not None else 1
    if int(align) * math.ceil(lo / align) > hi:
        raise ValueError(f"{name}_params: no multiple of align={int(align)} in [{lo:g}, {hi:g}]")


def _fmt(x: float | None) -> str:
    return "None" if x is None else f"{x:g}"


class Rule:
    """Update rule of one hyperparameter (see the module docstring for the formulas).

    :param name: hyperparameter name (``lr``, ``batch``, ...), used in messages
    :param kind: ``"rate"``, ``"scale"`` or ``"batch"``
    :param direction: ``+1`` if the value should rise when the signal exceeds the target, else ``-1``
    :param params: the ``<name>_params`` dict
    :param domain: hard bounds of the hyperparameter itself (e.g. ``[0, 1]`` for ``eps``)
    :param integer: the applied value is an integer (at least 1)
    """

    def __init__(self, name: str, kind: str, direction: int, params: Mapping[str, Any],
                 domain: tuple[float, float] = (-math.inf, math.inf), integer: bool = False) -> None:
        if kind not in _KEYS:
            raise ValueError(f"unknown rule kind {kind!r}")
        if direction not in (1, -1):
            raise ValueError("direction must be +1 or -1")
        self.name, self.kind, self.direction = name, kind, direction
        self.domain, self.integer = domain, integer
        self.params = self._checked(params)
        self.state: dict[str, Any] = {}

    def configure(self, params: Mapping[str, Any]) -> None:
        """Replace the parameters, keeping the state."""
        self.params = self._checked(params)

    def _checked(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """:func:`check_params`, plus: some value of the hyperparameter's range (an integer for
        integer hyperparameters) lies in ``[min, max]``, so clipping never has to break a bound."""
        checked = check_params(self.name, self.kind, params)
        lo, hi = checked.get("min"), checked.get("max")
        lo_d = self.domain[0] if lo is None else max(lo, self.domain[0])
        hi_d = self.domain[1] if hi is None else min(hi, self.domain[1])
        if self.integer:
            lo_d = max(math.ceil(lo_d), 1) if math.isfinite(lo_d) else 1
            hi_d = math.floor(hi_d) if math.isfinite(hi_d) else hi_d
        if lo_d > hi_d:
            kind = "integer" if self.integer else "value"
            raise ValueError(f"{self.name}_params: no {kind} in [{_fmt(lo)}, {_fmt(hi)}] within the "
                             f"range of {self.name} [{_fmt(self.domain[0])}, {_fmt(self.domain[1])}]")
        return checked

    # -- the update --------------------------------------------------------------------------
    def step(self, values: Sequence[float], signal: float, target: float | None,
             upper: float | None = None) -> list[float]:
        """New values for ``values`` (one per optimizer / policy) given signal ``E`` and target ``T``.

        ``upper`` is the default ``max`` of the batch rule (the buffer length).
        """
        if self.kind == BATCH:
            return [self._batch(int(values[0]), signal, target, upper)]
        if target is None:
            raise ValueError(f"{self.name}: a {self.kind}-type rule needs a target")
        if target == 0:
            raise ValueError(f"{self.name}: the target must not be 0")
        if self.kind == RATE:
            return self._rate(np.asarray(values, dtype=np.float64), signal / target)
        return self._scale(values, signal / target)

    def bounds(self) -> tuple[float, float]:
        """User bounds intersected with the hyperparameter's domain."""
        lo = self.params.get("min")
        hi = self.params.get("max")
        lo = self.domain[0] if lo is None else max(lo, self.domain[0])
        hi = self.domain[1] if hi is None else min(hi, self.domain[1])
        return lo, max(lo, hi)

    def _rate(self, x: np.ndarray, ratio: float) -> list[float]:
        lo, hi = self.bounds()
        goal = x + self.direction * self.params["rate"] * (ratio - 1.0)
        s = self.params["smooth"]
        new = np.clip(s * x + (1.0 - s) * np.clip(goal, lo, hi), lo, hi)
        return [float(v) for v in new]

    def _scale(self, values: Sequence[float], ratio: float) -> list[float]:
        if ratio <= 0 or not math.isfinite(ratio):
            return [float(v) for v in values]  # no usable signal: keep the value
        lo, hi = self.bounds()
        if self.integer:
            # integral bounds: round() of a value inside them cannot leave them
            lo = float(max(math.ceil(lo), 1)) if math.isfinite(lo) else 1.0
            hi = max(lo, float(math.floor(hi)) if math.isfinite(hi) else hi)
        cont = self._continuous(values)
        new = [min(max(c * self.params["scale"] * ratio ** self.direction, lo), hi) for c in cont]
        self.state["value"] = new
        return [float(round(v)) for v in new] if self.integer else new

    def _continuous(self, values: Sequence[float]) -> list[float]:
        """The unrounded values kept in the state, unless someone changed the applied ones."""
        kept = self.state.get("value")
        if (self.integer and kept is not None and len(kept) == len(values)
                and all(round(k) == round(v) for k, v in zip(kept, values))):
            return [float(k) for k in kept]
        return [float(v) for v in values]

    def _batch(self, batch: int, signal: float, target: float | None, upper: float | None) -> int:
        scale = self.params["scale"]
        if target is None:
            b = round(signal * scale)
        else:
            if target == 0:
                raise ValueError("batch: the target must not be 0")
            b = round(batch * signal / target * scale)
        lo, hi, align = self._batch_bounds(batch, upper)
        b = min(max(b, lo), hi)
        first = align * math.ceil(lo / align)  # smallest multiple of align >= min
        if first > hi:
            # only defaults can get here (check_params rejects such explicit triples): the
            # bounds matter more than the alignment, which is a speed nicety
            return int(b)
        # floor(b / align) * align <= b <= hi, and first >= lo: the result stays in [lo, hi]
        return int(max(align * (b // align), first))

    def _batch_bounds(self, batch: int, upper: float | None) -> tuple[int, float, int]:
        """Integer ``(min, max, align)`` of the batch rule with ``min <= max`` (see the module
        docstring for which default yields when the defaults conflict)."""
        user_lo, user_hi = self.params.get("min"), self.params.get("max")
        lo = user_lo if user_lo is not None else self.state.setdefault("min", max(1, batch // 2))
        align = self.params.get("align")
        if align is None:
            align = self.state.setdefault("align", batch)
        if user_hi is not None:
            hi: float = user_hi
        elif upper is not None:
            # Note_rl's max(1, len(buffer)); an explicit min is a promise the buffer length does not break
            hi = max(1, upper, user_lo if user_lo is not None else 1)
        else:
            hi = math.inf
        lo = max(1, math.ceil(lo))
        if math.isfinite(hi):
            hi = max(1, math.floor(hi))
            lo = min(lo, hi)  # a default min (batch // 2) yields to the max
        return lo, hi, max(1, int(align))

    # -- checkpoints -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return dict(self.state)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.state = dict(state)
