"""Rebuild the agent of a run from its saved model: the run dir's ``result.json`` (or ``config.yaml``)
read as data (:mod:`tuner.config.untrusted`: only note_rl's own classes unless ``trust_code``), checked
by the schema, built, and the model's weights loaded into it.

Used by ``note-tune eval`` / ``play`` / ``export`` and by :func:`note_rl.load`; every failure is a
:class:`ModelLoadError` whose message is one line naming the file (``model: ...``).
"""

from __future__ import annotations

import os
from typing import Any

from ..common.errors import first_line

__all__ = ["ModelLoadError", "load_agent", "model_file"]


class ModelLoadError(ValueError):
    """A model or its run config cannot be loaded; the message is the one line to show."""


def model_file(path: str) -> str:
    """The model file ``path`` names: itself (a ``.npz``), or a run dir's ``model.npz``."""
    if not os.path.exists(path):
        raise ModelLoadError(f"model: no such file {path!r}")
    if os.path.isdir(path):
        found = os.path.join(path, "model.npz")
        if not os.path.isfile(found):
            raise ModelLoadError(f"model: {path!r} is a directory without a model.npz (not a run dir)")
        return found
    if not os.path.isfile(path):
        raise ModelLoadError(f"model: {path!r} is not a regular file")
    return path


def load_run_config(model: str, trust_code: bool = False) -> tuple[dict[str, Any], str]:
    """The resolved config of the run that wrote ``model`` and the file it came from (its run dir's
    result.json or config.yaml), checked as data unless ``trust_code``."""
    from ..config.untrusted import UntrustedFileError, load_run_config as load

    try:
        return load(os.path.dirname(os.path.abspath(model)), trust_code=trust_code)
    except UntrustedFileError as exc:
        raise ModelLoadError(f"model: {exc}") from None


def load_agent(model: str, trust_code: bool = False, threads: bool = True,
               device: str | None = None) -> tuple[Any, dict[str, Any]]:
    """The agent of the run that wrote ``model`` (a ``.npz`` beside its ``result.json`` /
    ``config.yaml``), with the model's weights, and the run's config.

    :param trust_code: let the config name classes other than note_rl's own (imports them)
    :param threads: apply the config's ``backend.threads`` (a command; a library call leaves the
        caller's framework settings alone)
    :param device: build on this device instead of the config's ``backend.device``
    """
    from note_rl.core.checkpoint import CheckpointError
    from omegaconf import OmegaConf

    from ..common.errors import ConfigError
    from ..config.envs import make_env
    from ..config.schema import validate
    from .build import build_agent, set_threads

    cfg, source = load_run_config(model, trust_code)
    if device is not None and isinstance(cfg.get("backend"), dict):
        cfg["backend"]["device"] = device
    try:  # the schema's types and ranges (a huge backend.threads, a bad seed) before anything is built
        validate(OmegaConf.create(cfg), check_env=False)
    except ConfigError as exc:
        raise ModelLoadError(f"model: {source}: {first_line(exc)}{_import_hint(exc)}") from None
    if threads:
        set_threads(cfg)
    try:
        make_env(cfg["env"]).close()
    except Exception as exc:  # noqa: BLE001 - gymnasium raises many kinds: unknown id, unknown kwargs...
        raise ModelLoadError(f"model: {source}: env: cannot make {cfg['env'].get('id')!r} "
                             f"({type(exc).__name__}: {first_line(exc)})") from None
    try:
        agent = build_agent(cfg)
    except ConfigError as exc:
        raise ModelLoadError(f"model: {model}: {first_line(exc)}{_import_hint(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - a config that validates but does not build is the file's fault
        raise ModelLoadError(f"model: {source}: cannot rebuild the agent ({type(exc).__name__}: "
                             f"{first_line(exc)})") from None
    try:
        agent.restore_param(model)
    except (CheckpointError, ValueError, KeyError) as exc:
        raise ModelLoadError(f"model: {model} does not load into this agent ({first_line(exc)})") from None
    return agent, cfg


def _import_hint(exc: BaseException) -> str:
    """A user's class whose module is not importable from here (a trusted run of examples/custom_agent
    evaluated without its PYTHONPATH): say where to run it."""
    return " (run it where the run's code imports, e.g. with the run's PYTHONPATH)" if "import" in str(exc) else ""


