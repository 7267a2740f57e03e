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
``agent.adjuster`` (the property also accepts the dict itself).  ``kind`` is a shorthand for the class
(:data:`CLASSES`); ``_target_: note_rl.adjusters.ESSAdjuster`` (or ``GNSAdjuster``) names it as Hydra configs do (``kind``
is then a label), and ``make_adjuster(spec, cls=MyAdjuster)`` builds another :class:`Adjuster` subclass
from the same form (the tuner's ``adjuster._target_``), whose keys are its constructor's arguments.
"""

from __future__ import annotations

import inspect
from typing import Any, Mapping

from .adjusters import Adjuster, ESSAdjuster, GNSAdjuster, WindowAdjuster
from .registry import ORDER

__all__ = ["make_adjuster", "KINDS", "CLASSES"]

#: the class each ``kind`` names (``none``: no adjuster)
CLASSES: dict[str, type[Adjuster]] = {cls.kind: cls for cls in (ESSAdjuster, GNSAdjuster)}
KINDS = ("none", *CLASSES)
#: the ``_target_`` paths of :data:`CLASSES` (the package's, as configs name them)
_OWN: dict[str, type[Adjuster]] = {f"note_rl.adjusters.{cls.__name__}": cls for cls in CLASSES.values()}
#: constructor arguments the declarative form fills itself (from ``<name>_params`` and ``window``)
_FILLED = ("params", "window")


def _plain(obj: Any) -> Any:
    """Plain dicts and lists from any mapping / sequence (e.g. an OmegaConf ``DictConfig``)."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def make_adjuster(spec: Mapping[str, Any] | None, cls: type[Adjuster] | None = None) -> Adjuster | None:
    """Build an adjuster from its declarative form (see the module docstring): of class ``cls`` when
    given (``kind``, if the spec has one, must then be that class's), else of the class ``kind`` names.

    Unknown keys (not an argument of the class's constructor), keys of the other kind and parameter dicts
    with unknown entries raise ``ValueError``, so a typo in a config fails at start-up instead of being ignored.
    """
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise ValueError(f"an adjuster spec must be a dict, got {type(spec).__name__}")
    args = _plain(spec)
    kind = args.pop("kind", None)
    target = args.pop("_target_", None)
    if cls is None and target is not None:
        # only note_rl's own classes by name: a spec may come from a file (a checkpoint), which must not
        # choose code to import; a caller that trusts its config imports the class and passes ``cls``
        cls = _OWN.get(target)
        if cls is None:
            raise ValueError(f"_target_ {target!r}: make_adjuster builds {', '.join(_OWN)} by name; "
                             "pass cls= for another class")
    if cls is None:
        kind = kind or "none"
        if kind not in KINDS:
            raise ValueError(f"adjuster kind must be one of {KINDS}, got {kind!r}")
        if kind == "none":
            return None
        cls = CLASSES[kind]
    elif not (isinstance(cls, type) and issubclass(cls, Adjuster)):
        raise ValueError(f"{getattr(cls, '__qualname__', cls)} is not an adjuster (a subclass of "
                         "note_rl.adjusters.Adjuster)")
    kind = cls.kind or cls.__name__  # with a class, a spec's ``kind`` is a label only (as a config's agent.name is)
    params = {name: args.pop(f"{name}_params") for name in ORDER if f"{name}_params" in args}
    window = _window(args.pop("window", None))
    allowed, any_key = _arguments(cls)
    unknown = set() if any_key else set(args) - allowed
    if unknown:
        raise ValueError(f"adjuster kind {kind!r}: unknown keys {sorted(unknown)}; "
                         f"allowed: {sorted(allowed | {'kind', 'window'})} and <name>_params "
                         f"for {list(ORDER)}")
    args = {k: v for k, v in args.items() if v is not None}  # null in a config means "default"
    return cls(params=params, window=window, **args)


def _arguments(cls: type[Adjuster]) -> tuple[set[str], bool]:
    """The keyword arguments of ``cls``'s constructor that a spec gives by name (the ``<name>_params``
    and ``window`` ones are gathered), and whether it takes ``**kwargs``: the keys a spec may hold."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return named - set(_FILLED), any(p.kind == p.VAR_KEYWORD for p in params)


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
