"""A study's ``best_config.yaml`` as a Hydra primary config that takes group overrides.

``note-tune --config-dir studies/<name> --config-name best_config`` re-runs a study's answer.  A flat
dump of the trial's config has no defaults list, so Hydra refused a group override on it
(``logger=none``, ``backend=tf``, ``env=acrobot``: "Could not override ... No match in the defaults
list") while ``budget.steps=1000`` worked.  The file is therefore written as

* a ``defaults:`` list: the app's own (``conf/config.yaml``), entry for entry, each group at the option
  the trial composed (recorded by the driver as the trial's ``choices`` user attribute), with ``_self_``
  moved last so that the study's values win over every group and preset;
* a body: the run settings the app's ``conf/config.yaml`` sets itself (``seed``, ``budget``, ``eval``,
  ...) whole, and for the groups what the trial's config has beyond what that defaults list composes to
  (both as the app validates them, schema defaults filled in): the values the study's command set and
  the ones it tuned (tuned values always, even where they equal a preset's).

The app's ``conf/`` stays in Hydra's search path under ``--config-dir`` (it is the app's config path),
so the groups resolve.  A group override then replaces that group's defaults while the body's values
stay.  The file is composed and validated before it is kept: when it would not give exactly the trial's
validated config
(a key the trial's command deleted, a group added with ``+group=...``), the flat dump is written as
before, with a warning, so that re-running it unchanged always trains what the study trained.
"""

from __future__ import annotations

import copy
import os
import re
import sys
import tempfile
from typing import Any

import yaml

__all__ = ["best_config_body", "compose_primary", "group_choices", "trial_config_body"]

NAME = "best_config"
_INTERPOLATION = re.compile(r"\$\{(\w+)\}")


def group_choices(composed: Any) -> dict[str, Any] | None:
    """The config groups' options of a config composed with ``return_hydra_config=True`` (the app's own
    groups, not Hydra's), removing its ``hydra`` node; ``None`` when it has none."""
    from omegaconf import OmegaConf, open_dict

    if "hydra" not in composed:
        return None
    choices = OmegaConf.select(composed, "hydra.runtime.choices", default=None)
    with open_dict(composed):
        del composed["hydra"]
    if choices is None:
        return None
    return {str(k): v for k, v in OmegaConf.to_container(choices).items() if not str(k).startswith("hydra/")}


def _app_defaults() -> list[Any]:
    """The defaults list of the app's ``conf/config.yaml``."""
    from ..common.files import CONF_DIR

    with open(os.path.join(CONF_DIR, "config.yaml")) as f:
        return list(yaml.safe_load(f)["defaults"])


def _app_settings() -> list[str]:
    """The top-level keys the app's ``conf/config.yaml`` sets itself (``seed``, ``budget``, ``eval``, ...):
    the file sets them whole, so every ``key=value`` override the app takes works on it too, and the
    study's run settings stay when a group is swapped (another env's preset does not change its budget)."""
    from ..common.files import CONF_DIR

    with open(os.path.join(CONF_DIR, "config.yaml")) as f:
        return [k for k in yaml.safe_load(f) if k not in ("defaults", "hydra")]


def _defaults(choices: dict[str, Any]) -> list[Any]:
    """The app's defaults list with each group at ``choices``' option and ``_self_`` last.  An entry
    the app derives from other groups (``search: ${agent}``, ``hyperparams: ${agent}_${env}``) keeps its
    interpolation where it gives the recorded option (so ``agent=...`` on the file still picks the
    agent's own search space and presets), else names the recorded option."""
    out: list[Any] = []
    for entry in _app_defaults():
        if entry == "_self_":
            continue
        if not isinstance(entry, dict) or len(entry) != 1:
            out.append(entry)
            continue
        (key, option), = entry.items()
        group = key.split(" ", 1)[1] if key.startswith("optional ") else key
        if group not in choices:
            out.append(entry)
            continue
        chosen = choices[group]
        if isinstance(option, str) and _INTERPOLATION.search(option):
            derived = _INTERPOLATION.sub(lambda m: str(choices.get(m.group(1))), option)
            out.append({key: option if derived == chosen else chosen})
        else:
            out.append({key: chosen})
    return [*out, "_self_"]


def compose_primary(doc: dict[str, Any]) -> dict[str, Any]:
    """What Hydra composes from ``doc`` as the primary config ``best_config`` under ``--config-dir``
    (the app's ``conf/`` behind it), without the ``hydra`` node and without resolving interpolations."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.utils import create_automatic_config_search_path
    from hydra.core.config_search_path import SearchPathQuery
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    from ..common.files import CONF_DIR
    from ..config.schema import register

    register()
    with tempfile.TemporaryDirectory(prefix="best_config-") as folder:
        with open(os.path.join(folder, f"{NAME}.yaml"), "w") as f:
            f.write(_yaml(doc))
        path = create_automatic_config_search_path(None, __name__, CONF_DIR)
        path.prepend("command-line", f"file://{folder}", anchor=SearchPathQuery(provider="schema"))
        cfg = ConfigLoaderImpl(config_search_path=path).load_configuration(NAME, [], run_mode=RunMode.RUN)
    out = OmegaConf.to_container(cfg, resolve=False)
    out.pop("hydra", None)
    return out


def _validated(plain: dict[str, Any]) -> dict[str, Any]:
    """``plain`` as the app validates it before a run (schema defaults filled in, interpolations kept):
    what a re-run trains, so the body leaves out what validation fills in the same way."""
    from omegaconf import OmegaConf

    from ..config.schema import validate

    return OmegaConf.to_container(validate(OmegaConf.create(plain), check_env=False), resolve=False)


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same type (``1``, ``1.0`` and ``True`` differ in a config)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _difference(want: dict[str, Any], have: dict[str, Any]) -> dict[str, Any]:
    """The part of ``want`` that merging onto ``have`` needs to give ``want`` (lists whole)."""
    out = {}
    for key, value in want.items():
        if key not in have:
            out[key] = value
        elif isinstance(value, dict) and isinstance(have[key], dict) and value:
            sub = _difference(value, have[key])
            if sub:
                out[key] = sub
        elif not _same(value, have[key]):
            out[key] = value
    return out


def _put(body: dict[str, Any], plain: dict[str, Any], dotted: str) -> None:
    """``plain``'s value at ``dotted`` into ``body`` (a tuned value stays in the file even where it
    equals the groups' default: another env's preset must not replace it)."""
    keys = dotted.split(".")
    node: Any = plain
    for k in keys:
        if not isinstance(node, dict) or k not in node:
            return
        node = node[k]
    target = body
    for k in keys[:-1]:
        nxt = target.get(k)
        if not isinstance(nxt, dict):
            nxt = target[k] = {}
        target = nxt
    target[keys[-1]] = copy.deepcopy(node)


def best_config_body(plain: dict[str, Any], choices: dict[str, Any] | None, tuned: list[str] = ()) -> str:
    """The YAML of ``best_config.yaml`` (without its header) for the trial config ``plain`` (unresolved,
    secrets masked): a defaults list and the values beyond it when ``choices`` (the trial's group options)
    are known and the file composes back to ``plain``; else ``plain`` itself, flat, as files of studies
    made before choices were recorded.  ``tuned``: dotted keys of the tuned values (kept in the body)."""
    flat = _yaml(plain)
    if not choices:
        return flat
    try:
        defaults = _defaults(choices)
        body = _difference(plain, _validated(compose_primary({"defaults": defaults})))
        for key in [*_app_settings(), *tuned]:
            _put(body, plain, key)
        body = {k: body[k] for k in plain if k in body}  # the trial config's order
        doc = {"defaults": defaults, **body}
        if not _same(_validated(compose_primary(doc)), _validated(plain)):
            raise ValueError("its defaults list does not compose to the trial's config")
    except Exception as exc:  # noqa: BLE001 - the flat file re-runs the same config; only group overrides are lost
        print(f"warning: best_config.yaml written without a defaults list (config-group overrides on it will be "
              f"refused): {type(exc).__name__}: {exc}", file=sys.stderr)
        return flat
    return (f"# the study's groups (an override such as env=acrobot or logger=none replaces one), then its own values\n"
            f"{_yaml({'defaults': defaults})}{_yaml(body) if body else ''}")


def trial_config_body(plain: dict[str, Any], trial: Any, tuner: str) -> str:
    """:func:`best_config_body` for a study's trial: its recorded group options (``choices``, with the
    ``tuner`` group at ``tuner``: ``none`` for a plain run, ``pbt`` for a replay) and its searched values
    (the keys of its ``overrides`` that are not groups)."""
    choices = trial.user_attrs.get("choices")
    choices = dict(choices, tuner=tuner) if isinstance(choices, dict) else None
    tuned = [str(o).split("=", 1)[0] for o in trial.user_attrs.get("overrides") or []]
    return best_config_body(plain, choices, [k for k in tuned if k not in (choices or {})])


def _yaml(doc: dict[str, Any]) -> str:
    """``doc`` as OmegaConf writes it (strings that Hydra would read as numbers or booleans quoted)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_yaml(OmegaConf.create(doc))
