"""The command line's checks before and at the start of the Hydra app (:mod:`tuner.cli.app`).

:func:`_precheck` composes the command line the way ``@hydra.main`` will, so that a bad override,
config dir or search-path folder is one line naming it and exit status 2 (:func:`_fail`) instead of
Hydra's multi-line error; :func:`_protect_secrets` masks credentials once the app has its config.
:func:`_fail` and :func:`_short` are shared with :mod:`tuner.cli.app` and :mod:`tuner.cli.studies`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from ..common.errors import ConfigError, error_line
from ..common.files import CONF_DIR


def _fail(message: str) -> None:
    from ..common.redact import mask_argv_secrets

    print(f"error: {mask_argv_secrets(message)}", file=sys.stderr)
    raise SystemExit(2)


def _short(path: str) -> str:
    """``path`` relative to the working directory when it lies below it (what a user types)."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _protect_secrets(cfg: DictConfig) -> None:
    """Mask credentials (a storage URL's password, ...) in sys.argv and the run dir's Hydra files
    before anything else records them (:mod:`tuner.common.redact`)."""
    from ..common.redact import protect

    hc = HydraConfig.get()
    folders = [hc.runtime.output_dir] + ([hc.sweep.dir] if hc.mode == RunMode.MULTIRUN else [])
    protect(OmegaConf.to_container(cfg, resolve=True), folders)


def _precheck(argv: list[str], composed: list[Any] | None = None) -> None:
    """Compose the command line the way ``@hydra.main`` will, so that an unknown key, an unknown group
    option or an unparsable override is one line naming it (exit 2) instead of Hydra's multi-line
    error.  In a multirun every value of a sweep over a config group is tried, other sweeps at their
    first value.  Anything else (help, --info, a failure of this check itself) is left to Hydra.

    Why Hydra internals (and the ``hydra-core<1.4`` pin in pyproject.toml): the public API
    (``initialize_config_dir`` + ``compose``) composes overrides, but it cannot (1) parse Hydra's
    own command-line flags as ``@hydra.main`` does (``get_args_parser``), (2) put a ``--config-dir``
    ahead of the app's configs in the search path with ``@hydra.main``'s precedence, or (3) tell
    whether a swept key is a config group (``repository.group_exists``) before Hydra's own launcher
    runs.  Without them the check would differ from what ``@hydra.main`` then does."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.utils import create_automatic_config_search_path, get_args_parser
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    args = get_args_parser().parse_args(argv)  # bad flags / --version: argparse exits as Hydra would
    if args.help or args.hydra_help or args.shell_completion or args.info or \
            getattr(args, "experimental_rerun", None):
        return
    parser = OverridesParser.create()
    parsed = []
    for text in args.overrides:
        try:
            parsed.append(parser.parse_overrides([text])[0])
        except HydraException as exc:
            _fail(f"{text.split('=', 1)[0]}: cannot parse {text!r} ({error_line(exc)})")
    try:
        # only __name__'s package (tuner.cli, as for tuner.cli.app's @hydra.main) matters here
        path = create_automatic_config_search_path(None, __name__, args.config_path or CONF_DIR)
        if args.config_dir is not None:
            from hydra.core.config_search_path import SearchPathQuery

            folder = os.path.abspath(args.config_dir)
            if not os.path.isdir(folder):
                _fail(f"--config-dir: {folder} is not a directory")
            _check_config_dir(folder, args.config_name or "config")
            path.prepend("command-line", f"file://{folder}", anchor=SearchPathQuery(provider="schema"))
        _check_search_path(path, parsed, args.config_name or "config",
                           os.path.realpath(args.config_dir) if args.config_dir else None)
        loader = ConfigLoaderImpl(config_search_path=path)
        for overrides in _variants(parsed, loader, args.multirun):
            cfg = loader.load_configuration(args.config_name or "config", overrides, run_mode=RunMode.RUN)
            if composed is not None:  # tests/test_readme_commands.py checks each one further
                composed.append(cfg)
        _check_output_dir(cfg, args.multirun)
        if not args.multirun and OmegaConf.select(cfg, "tuner.name") == "optuna":
            from ..study.settings import tuner_settings

            tuner_settings(cfg.tuner)
        elif not args.multirun and OmegaConf.select(cfg, "tuner.name") == "pbt":
            from ..study.pbt import pbt_settings

            pbt_settings(cfg.tuner)  # e.g. tuner.storage, before Hydra creates any directory
    except HydraException as exc:
        _fail(error_line(exc))
    except ConfigError as exc:
        _fail(str(exc))
    except SystemExit:
        raise
    except Exception:  # noqa: BLE001 - never worse than Hydra: let it report whatever this is
        return


def _check_output_dir(cfg: DictConfig, multirun: bool) -> None:
    """Hydra's run dir (its sweep dir with ``-m``) can be created: Hydra's own failure to make it is a
    traceback.  A dir whose path Hydra alone can resolve (``${hydra:...}``) is left to Hydra."""
    from hydra.core.utils import setup_globals

    from ..study.storage import existing_ancestor

    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    setup_globals()  # the ${now:...} resolver of the default dirs
    try:
        folder = os.path.abspath(str(OmegaConf.select(cfg, key, throw_on_resolution_failure=True)))
    except Exception:  # noqa: BLE001 - an interpolation only Hydra's own context resolves
        return
    parent = existing_ancestor(folder)
    if not os.path.isdir(parent):
        _fail(f"{key}: cannot create {folder} ({parent} is not a directory)")
    if not os.access(parent, os.W_OK | os.X_OK):
        _fail(f"{key}: cannot create {folder} ({parent} is not writable)")


def _check_config_dir(folder: str, name: str) -> None:
    """A user's config dir: every YAML file in it and in its group folders parses, and its primary config is not one the app's own
    ``conf/`` shadows (Hydra would silently use the app's ``config.yaml`` instead)."""
    _check_yaml_dir(folder, "--config-dir")
    if os.path.exists(os.path.join(folder, f"{name}.yaml")) and os.path.exists(os.path.join(CONF_DIR, f"{name}.yaml")):
        _fail(f"--config-dir: {folder}/{name}.yaml would be ignored (the app's own {name}.yaml comes first); "
              f"rename it and pass --config-name <its name>")


def _check_yaml_dir(folder: str, source: str) -> None:
    """Every YAML file in ``folder`` and in its group folders (not deeper: a study's ``trials/``) is
    a regular file that parses without expanding into a bomb; else one line naming it and ``source``
    (the flag or key that put the folder in Hydra's search path)."""
    import yaml

    from ..config.yaml_check import YamlRefused, check_yaml_file

    for root, dirs, files in os.walk(folder):
        if root != folder:
            dirs[:] = []
        for file in sorted(f for f in files if f.endswith((".yaml", ".yml"))):
            path = os.path.join(root, file)
            try:
                check_yaml_file(path)  # a FIFO or an alias bomb would hang Hydra: refused before it reads
            except YamlRefused as exc:
                _fail(f"{source}: {path} {exc}")
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" line {mark.line + 1}" if mark is not None else ""
                _fail(f"{source}: {path}{where}: {getattr(exc, 'problem', None) or error_line(exc)}")
            except (OSError, UnicodeDecodeError) as exc:
                _fail(f"{source}: cannot read {path} ({exc})")


def _check_search_path(path: Any, parsed: list[Any], name: str, checked: str | None = None) -> None:
    """The user's folders in Hydra's config search path, checked by :func:`_check_yaml_dir` before
    Hydra reads them: ``--config-path`` (and any ``file://`` entry but the app's own ``conf/``) and
    the folders a ``hydra.searchpath=[...]`` override adds; ``checked``: the ``--config-dir``, checked
    already."""
    own, added = os.path.realpath(CONF_DIR), []
    for element in path.get_path():
        if "://" not in element.path or element.path.startswith("file://"):  # a folder, not pkg:// or structured://
            folder = element.path.removeprefix("file://")
            if os.path.isdir(folder) and os.path.realpath(folder) != own:
                if os.path.realpath(folder) != checked:
                    _check_yaml_dir(folder, "--config-path")
                added += _primary_searchpath(os.path.join(folder, f"{name}.yaml"))
    for o in parsed:
        if o.get_key_element().lstrip("+~") == "hydra.searchpath" and not o.is_sweep_override():
            value = o.value()
            added += [str(v) for v in (value if isinstance(value, list) else [value])]
    for entry in added:
        if entry.startswith("file://") and os.path.isdir(entry[len("file://"):]):
            _check_yaml_dir(entry[len("file://"):], "hydra.searchpath")


def _primary_searchpath(file: str) -> list[str]:
    """The ``hydra.searchpath`` a user's primary config sets (read safely: the folder was checked)."""
    from ..config.yaml_check import check_yaml_file

    data = check_yaml_file(file) if os.path.isfile(file) else None
    hydra = data.get("hydra") if isinstance(data, dict) else None
    value = hydra.get("searchpath") if isinstance(hydra, dict) else None
    return [str(v) for v in value] if isinstance(value, list) else []


def _variants(parsed: list[Any], loader: Any, multirun: bool) -> list[list[str]]:
    """Override lists without sweeps: sweeps at their first value, plus one list per other option of a
    config-group sweep (``optimizer=adam,bogus`` checks ``bogus``).  Without -m sweeps stay as given."""
    if not multirun:
        return [[o.input_line for o in parsed]]
    base, extra = [], []
    for i, o in enumerate(parsed):
        if not o.is_sweep_override():
            base.append(o.input_line)
            continue
        try:
            values = list(o.sweep_string_iterator())
        except Exception:  # noqa: BLE001 - interval (or glob) sweeps: their start, or not checked here
            start = getattr(o.value(), "start", None)
            values = [] if start is None else [o._get_value_element_as_str(start)]
        if not values:
            base.append(None)
            continue
        base.append(f"{o.get_key_element()}={values[0]}")
        if loader.repository.group_exists(o.key_or_group):
            extra += [(i, f"{o.get_key_element()}={v}") for v in values[1:]]
    first = [b for b in base if b is not None]
    return [first] + [[v if j == i else b for j, b in enumerate(base) if b is not None] for i, v in extra]
