"""Declarative form of an adjuster, for configs (a plain dict, e.g. a Hydra ``adjuster`` group).

::

    kind: ess              # none | ess | gns
    every: 10              # run every this many gradient steps (default: 10 ess, 100 gns)
    smooth_alpha: 0.2      # EMA factor of the signal
    target_ess: null       # ess: target ESS (null: only the batch rule, batch follows the ESS)
    # gns only: target_noise (default 1.0 for b_simple, 1e-3 for variance), num_samples (8),
    #           signal: b_simple | variance, seed
    window: {scale: 1.0, smooth_alpha: 0.2}   # optional: ESS-based trim after update_param()
    batch_params: {scale: 1.0, min: null, max: null, align: null}
    lr_params: {rate: 1.0e-4, min: 1.0e-5, max: 1.0e-2, smooth: 0.2}
    freq_params: {scale: 1.0, min: 1, max: 1000}
    # any of: batch alpha lr eps freq tau gamma store weight_decay beta1 beta2 clip beta (_params)

``make_adjuster(spec)`` returns the adjuster (``None`` for ``kind: none``); assign it to
``agent.adjuster`` (the property also accepts the dict itself).
"""

from __future__ import annotations

from typing import Any, Mapping

from .adjusters import Adjuster, ESSAdjuster, GNSAdjuster, WindowAdjuster
from .registry import ORDER

__all__ = ["make_adjuster", "KINDS"]

KINDS = ("none", "ess", "gns")
_ARGS = {"ess": {"every", "smooth_alpha", "target_ess"},
         "gns": {"every", "smooth_alpha", "target_noise", "num_samples", "signal", "seed"}}


def _plain(obj: Any) -> Any:
    """Plain dicts and lists from any mapping / sequence (e.g. an OmegaConf ``DictConfig``)."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def make_adjuster(spec: Mapping[str, Any] | None) -> Adjuster | None:
    """Build an adjuster from its declarative form (see the module docstring).

    Unknown keys, keys of the other kind and parameter dicts with unknown entries raise
    ``ValueError``, so a typo in a config fails at start-up instead of being ignored.
    """
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise ValueError(f"an adjuster spec must be a dict, got {type(spec).__name__}")
    args = _plain(spec)
    kind = args.pop("kind", "none") or "none"
    if kind not in KINDS:
        raise ValueError(f"adjuster kind must be one of {KINDS}, got {kind!r}")
    if kind == "none":
        return None
    params = {name: args.pop(f"{name}_params") for name in ORDER if f"{name}_params" in args}
    window = _window(args.pop("window", None))
    unknown = set(args) - _ARGS[kind]
    if unknown:
        raise ValueError(f"adjuster kind {kind!r}: unknown keys {sorted(unknown)}; "
                         f"allowed: {sorted(_ARGS[kind] | {'kind', 'window'})} and <name>_params "
                         f"for {list(ORDER)}")
    args = {k: v for k, v in args.items() if v is not None}  # null in a config means "default"
    cls = ESSAdjuster if kind == "ess" else GNSAdjuster
    return cls(params=params, window=window, **args)


def _window(spec: Any) -> WindowAdjuster | None:
    if spec is None or spec is False:
        return None
    if spec is True:
        return WindowAdjuster()
    if not isinstance(spec, Mapping):
        raise ValueError(f"adjuster window must be a dict, true or null, got {spec!r}")
    unknown = set(spec) - {"scale", "smooth_alpha"}
    if unknown:
        raise ValueError(f"adjuster window: unknown keys {sorted(unknown)} (scale, smooth_alpha)")
    return WindowAdjuster(**{k: v for k, v in spec.items() if v is not None})
