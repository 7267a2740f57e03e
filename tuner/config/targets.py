"""Config nodes that name a class with ``_target_`` (Hydra's convention): their schema and their
instantiation.

A node such as ``{_target_: note_rl.policy.LinearEpsGreedyPolicy, final_eps: 0.04}`` is built with
``hydra.utils.instantiate``.  For a class the project does not know (a user's own agent, optimizer,
policy), the schema is read off the constructor's signature, so that a misspelled key or a value of
the wrong type still fails at compose time with one line naming the key.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from typing import Any, Iterable, Mapping, Optional

from hydra.utils import get_class, get_method, instantiate

from ..common.errors import ConfigError, first_line

__all__ = ["check_target", "TargetError", "import_target", "signature_schema", "constructor_kwargs", "build",
           "refused_value", "construct", "check_node"]

_SIMPLE = (int, float, bool, str)


class TargetError(ValueError):
    """A ``_target_`` cannot be imported, or a node's keys do not fit its constructor."""


def import_target(path: str) -> Any:
    """The class (or function) a ``_target_`` string names."""
    import logging

    if not isinstance(path, str) or not path:
        raise TargetError(f"expected a dotted class path, got {path!r}")

    getter = get_method if _names_function(path) else get_class  # the other one logs an ERROR line
    # Hydra's getters also log their failure (3 lines on stderr where logging is not set up, as in
    # the subcommands); the TargetError below says it in one
    hydra_log = logging.getLogger("hydra.utils")
    disabled, hydra_log.disabled = hydra_log.disabled, True
    try:
        return getter(path)
    except Exception as exc:  # noqa: BLE001 - Hydra raises ImportError or ValueError with long messages
        cause = str(exc.__cause__ or exc).splitlines()[0]
        raise TargetError(f"cannot import {path!r} ({cause})") from None
    finally:
        hydra_log.disabled = disabled


def _names_function(path: str) -> bool:
    """Whether ``path`` (``pkg.module.name``) names a function: its module imports and the
    attribute is a plain function (anything unclear goes to ``get_class``, which reports it)."""
    import importlib

    module, _, name = path.rpartition(".")
    try:
        return inspect.isfunction(getattr(importlib.import_module(module), name, None))
    except Exception:  # noqa: BLE001 - not importable this way: let Hydra's getter explain
        return False


def _init_of(target: Any) -> Any:
    return target.__init__ if inspect.isclass(target) else target


def _parameters(target: Any) -> tuple[list[inspect.Parameter], bool]:
    """Named parameters of the constructor (``self`` and ``*args`` left out) and whether it takes
    ``**kwargs``."""
    params = list(inspect.signature(_init_of(target)).parameters.values())
    if inspect.isclass(target) and params and params[0].name == "self":
        params = params[1:]
    named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return named, any(p.kind == p.VAR_KEYWORD for p in params)


def _field_type(annotation: Any) -> Any:
    """An OmegaConf-checkable type for an annotation (``Any`` for what OmegaConf cannot check)."""
    if annotation in _SIMPLE:
        return annotation
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and _field_type(rest[0]) is not Any:
            return Optional[_field_type(rest[0])]
    if origin in (list, tuple) and args and all(a in _SIMPLE for a in args if a is not Ellipsis):
        return list[args[0]]
    return Any


def signature_schema(target: Any, base: type, skip: Iterable[str] = (), name: str | None = None) -> type:
    """A dataclass with ``base``'s fields plus one per constructor parameter of ``target`` (typed
    from its annotations where OmegaConf can check the type; required where it has no default).
    Parameters in ``skip`` (those the builder passes itself, e.g. ``env``) are left out."""
    try:
        hints = typing.get_type_hints(_init_of(target))
    except Exception:  # noqa: BLE001 - unresolvable annotations: check no types
        hints = {}
    known = {f.name for f in dataclasses.fields(base)}
    fields = []
    params, _ = _parameters(target)
    for p in params:
        if p.name in known or p.name in skip:
            continue
        kind = _field_type(hints.get(p.name, Any))
        if p.default is p.empty:
            fields.append((p.name, kind, dataclasses.field(default=dataclasses.MISSING)))
        elif isinstance(p.default, (list, tuple, dict)):  # a tuple (torch's betas) becomes a list
            copy = dict if isinstance(p.default, dict) else list
            kind = kind if kind is not Any or isinstance(p.default, dict) else list
            fields.append((p.name, Any if copy is dict else kind,
                           dataclasses.field(default_factory=lambda v=p.default, c=copy: c(v))))
        elif p.default is None or isinstance(p.default, _SIMPLE):
            fields.append((p.name, Optional[kind] if kind is not Any else Any, dataclasses.field(default=p.default)))
        # any other default (an object) cannot be written in a config: the constructor keeps it
    label = name or getattr(target, "__name__", "Target")
    return dataclasses.make_dataclass(f"{label}Conf", fields, bases=(base,))


def constructor_kwargs(target: Any, values: Mapping[str, Any], context: Mapping[str, Any] = ()) -> dict[str, Any]:
    """The entries of ``values`` and ``context`` that ``target``'s constructor takes by name
    (everything, when it takes ``**kwargs``)."""
    params, var_kw = _parameters(target)
    names = {p.name for p in params}
    out = {k: v for k, v in values.items() if not k.startswith("_") and (var_kw or k in names)}
    out.update({k: v for k, v in dict(context).items() if k in names})
    return out


def build(node: Mapping[str, Any], drop: Iterable[str] = (), partial: bool = False, key: str | None = None,
          **context: Any) -> Any:
    """Instantiate a ``_target_`` node through Hydra, leaving out the keys in ``drop`` (settings
    that are not constructor arguments) and passing the ``context`` objects the constructor takes.

    Given the node's config ``key`` (``agent``), a value the constructor itself refuses with a
    ``ValueError`` (one no schema can check, such as ``SAC(sde_sample_freq=0)``) is a one-line
    :class:`ConfigError` naming ``key.<argument>`` instead of Hydra's three-line instantiation error."""
    from hydra.errors import InstantiationException

    target = import_target(node["_target_"])
    values = {k: v for k, v in node.items() if k not in set(drop)}
    kwargs = constructor_kwargs(target, values, context)
    try:
        return instantiate({"_target_": node["_target_"], **({"_partial_": True} if partial else {})},
                           **kwargs)
    except InstantiationException as exc:
        refused = exc.__cause__
        if key is None or not isinstance(refused, ValueError):
            raise
        raise ConfigError(refused_value(key, node, refused)) from refused


def refused_value(key: str, node: Mapping[str, Any], exc: BaseException) -> str:
    """One line for a constructor's refusal of the node at ``key``: ``key.<argument>: <message>`` where the
    message follows note_rl's ``Class(argument=value): why`` and the argument is one of the node's keys,
    else ``key: <message>``."""
    message = first_line(exc)
    named = re.match(r"\w+\((\w+)=", message)
    arg = named.group(1) if named and named.group(1) in node else None
    return f"{key}.{arg}: {message}" if arg else f"{key}: {message}"


def construct(node: Mapping[str, Any], **context: Any) -> Any:
    """``node``'s class called with the node's arguments and the ``context`` ones its constructor takes
    (a node's own key wins).  Unlike :func:`build`, the arguments reach the constructor as plain dicts and
    lists, not OmegaConf containers (a library such as Optuna copies and type-checks them); nested
    ``_target_`` nodes among them are built by Hydra first."""
    target = import_target(node["_target_"])
    args = instantiate({k: v for k, v in node.items() if not k.startswith("_")}, _convert_="all")
    context = {k: v for k, v in context.items() if k not in args}
    return target(**constructor_kwargs(target, args, context))


def check_node(node: Mapping[str, Any], key: str, skip: Iterable[str] = ()) -> None:
    """Raise :class:`TargetError` naming ``key.<name>`` when a nested ``_target_`` node (a policy,
    a noise process) has a key its constructor does not take, or lacks a required one."""
    target = import_target(node["_target_"])
    params, var_kw = _parameters(target)
    names = {p.name for p in params}
    for k in node:
        if not k.startswith("_") and not var_kw and k not in names:
            raise TargetError(f"{key}.{k}: not an argument of {node['_target_']} "
                              f"(takes {', '.join(sorted(names)) or 'none'})")
    for p in params:
        if p.default is p.empty and p.name not in node and p.name not in set(skip):
            raise TargetError(f"{key}.{p.name}: missing (a required argument of {node['_target_']})")


def check_target(node: Mapping[str, Any], key: str, skip: Iterable[str] = (), base: type | None = None,
                 what: str = "") -> None:
    """The config check of a ``_target_`` node at ``key``: its class imports (and, given ``base``, is a
    subclass of it: else "is not ``what``") and takes the node's keys (:func:`check_node`); one
    :class:`ConfigError` line naming the key otherwise."""
    try:
        cls = import_target(node["_target_"])
        if base is not None and not (isinstance(cls, type) and issubclass(cls, base)):
            raise TargetError(f"{node['_target_']} is not {what}")
    except TargetError as exc:
        raise ConfigError(f"{key}._target_: {exc}") from None
    try:
        check_node(node, key, skip=skip)
    except TargetError as exc:
        raise ConfigError(str(exc)) from None
