"""The loggers a ``logger`` config node selects, each an object named by ``_target_``.

``logger.kinds`` maps a logger's name to ``true`` (``logger=[wandb,csv]`` merges the option configs, so
their maps add up) or to a ``_target_`` node of the user's own (``+logger.kinds.mine={_target_:
my_pkg.MyCallback}``).  ``true`` is the shorthand for the project's logger of that name (:data:`LOGGERS`,
the one table of names); ``console`` prints through Note_rl's ``p`` and builds nothing.  Every logger is
built by :func:`tuner.config.targets.construct` with the arguments its constructor takes of ``cfg`` (the
run's config), ``run_dir``, ``meta`` (the wandb run's name and group) and ``pruned``.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from omegaconf.errors import ValidationError

from ..common.errors import ConfigError
from .bounds import LOGGER_KINDS
from .targets import check_target

__all__ = ["LOGGERS", "CONTEXT", "selected", "logger_node", "check_loggers"]

#: each logger name's class (``None``: printed progress lines only); imported only when selected, so
#: wandb and tensorboardX load only for runs that log there
LOGGERS: dict[str, Optional[str]] = {
    "console": None,
    "wandb": "tuner.logs.wandb_logger.WandbCallback",
    "csv": "tuner.logs.file_loggers.CsvCallback",
    "tensorboard": "tuner.logs.file_loggers.TensorboardCallback",
}
assert tuple(LOGGERS) == LOGGER_KINDS  # one list of names: bounds.py's is what `logger.name` may be
#: what the run hands a logger's constructor, where it takes them by name
CONTEXT = ("cfg", "run_dir", "meta", "pruned")


def selected(logger: Mapping[str, Any] | None) -> list[str]:
    """The loggers ``logger`` selects: every ``kinds`` entry set true or to a node, plus ``name`` (configs
    written before ``kinds`` existed, and the finders' Python-API options); the project's in
    :data:`LOGGERS` order, then the user's own in the config's order."""
    logger = logger or {}
    kinds = dict(logger.get("kinds") or {})
    chosen = [k for k, on in kinds.items() if _on(on)]
    if logger.get("name") not in (None, "none"):
        chosen.append(str(logger["name"]))
    return [k for k in LOGGERS if k in chosen] + [k for k in dict.fromkeys(chosen) if k not in LOGGERS]


def logger_node(logger: Mapping[str, Any], name: str) -> Optional[dict[str, Any]]:
    """The ``_target_`` node of the selected logger ``name``: the user's node, else the shorthand's
    (``None`` for ``console``, which builds nothing)."""
    value = (logger.get("kinds") or {}).get(name)
    if isinstance(value, Mapping):
        return dict(value)
    target = LOGGERS[name]
    return None if target is None else {"_target_": target}


def check_loggers(logger: Mapping[str, Any]) -> None:
    """Each ``logger.kinds`` entry is a known name or a node whose class imports and takes its keys;
    one ``ConfigError`` line naming the key otherwise."""
    for kind, value in (logger.get("kinds") or {}).items():
        key = f"logger.kinds.{kind}"
        if isinstance(value, Mapping):
            if not isinstance(value.get("_target_"), str):
                raise ConfigError(f"{key}: a logger node needs a _target_ (the class it builds)")
            check_target(value, key, skip=CONTEXT)
        elif kind not in LOGGERS:
            raise ConfigError(f"{key}: {kind!r} is not one of {', '.join(LOGGERS)}")
        else:
            try:
                _switch(value)
            except ValidationError:
                raise ConfigError(f"{key}: expected true, false or a {{_target_: ...}} node, got {value!r}") from None


def _switch(value: Any) -> bool:
    """An entry that is not a node as OmegaConf reads a bool (``true``, ``1``, ``"off"``, ...): what a
    ``dict[str, bool]`` schema accepted before an entry could be a node."""
    from omegaconf.nodes import BooleanNode

    return bool(BooleanNode(value=value)._value())


def _on(value: Any) -> bool:
    """Whether a ``kinds`` entry selects its logger (a node does; a value that is no bool, refused by
    :func:`check_loggers`, counts as Python reads it)."""
    if isinstance(value, Mapping):
        return True
    try:
        return _switch(value)
    except ValidationError:
        return bool(value)
