"""The ``adjuster`` config node: an online adjuster named by ``_target_`` (Hydra's convention), built
from note_rl's declarative form.

``conf/adjuster/ess.yaml`` is ``{_target_: note_rl.adjusters.ESSAdjuster, every: 10, batch_params: ...}``:
the keys are note_rl's adjuster spec (:mod:`note_rl.adjusters.spec`), whose ``<name>_params`` and ``window``
become the constructor's ``params`` and ``window``, so any :class:`note_rl.adjusters.Adjuster` subclass of
the user's own works too.  ``kind: ess | gns | none`` is the shorthand for note_rl's classes that configs
written before ``_target_`` hold (and ``adjuster.kind=ess`` on the command line): both forms build the same
adjuster.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..common.errors import ConfigError
from .targets import TargetError, import_target

__all__ = ["build_adjuster", "adjuster_label"]


def build_adjuster(spec: Mapping[str, Any] | None) -> Any:
    """The adjuster an ``adjuster`` node describes (``None`` for ``kind: none`` or no node); one
    ``ConfigError`` line naming the key when its class does not import or its keys do not fit."""
    from note_rl.adjusters import make_adjuster  # numpy only

    spec = dict(spec or {})
    target = spec.pop("_target_", None)
    try:
        cls = import_target(target) if target is not None else None
    except TargetError as exc:
        raise ConfigError(f"adjuster._target_: {exc}") from None
    try:
        return make_adjuster(spec, cls=cls)
    except (ValueError, TypeError) as exc:
        key = "adjuster._target_" if cls is not None and "not an adjuster" in str(exc) else "adjuster"
        raise ConfigError(f"{key}: {str(exc).splitlines()[0]}") from None


def adjuster_label(adjuster: Any) -> str:
    """How messages name a built adjuster: its shorthand (``ess``, ``gns``), else its class."""
    return getattr(adjuster, "kind", "") or type(adjuster).__name__
