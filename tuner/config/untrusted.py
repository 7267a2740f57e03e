"""Files read back from disk are data: bounded reads and allow-listed code references.

The command line and the user's own config dirs are trusted, as Hydra trusts them: their ``_target_``
may name any class.  A run dir is not: ``note-tune eval`` / ``play`` / ``reevaluate`` rebuild an agent
from a ``result.json`` or ``config.yaml`` that someone else may have written (a model folder sent by
a colleague, a downloaded study).  Such a config may name only the project's own classes and env
factories (:func:`check_code_refs`), unless the command carries ``trust_code=true``; and every JSON or
YAML file read back is bounded in bytes and nesting depth and refused, not expanded, when it holds
YAML aliases or resolver interpolations (``${oc.env:...}`` would read the environment).

Everything raises :class:`UntrustedFileError` with one line naming the file (and the key).
"""

from __future__ import annotations

import importlib
import json
import os
import re
from typing import Any, Iterable, Iterator

from ..common.files import special_kind

__all__ = ["UntrustedFileError", "read_json", "read_yaml", "check_code_refs", "code_refs", "load_run_config", "walk",
           "restore_secrets", "secret_env_name",
           "MAX_JSON_BYTES", "MAX_YAML_BYTES", "MAX_DEPTH"]

MAX_JSON_BYTES = 256 * 2**20  # a result.json of a long run holds every episode's return: generous
MAX_YAML_BYTES = 4 * 2**20  # a resolved run config is a few KB
MAX_DEPTH = 64  # a run config nests ~5 deep

#: modules whose public classes (their ``__all__``) a read-back config may name with ``_target_``
TARGET_MODULES = ("note_rl.buffers", "note_rl.policy", "note_rl.noise", "note_rl.optim", "note_rl.adjusters",
                  # a study's sampler / pruner node (tuner.sampler: {_target_: optuna.samplers.NSGAIISampler}) is
                  # saved with its trials' configs; Optuna's own classes run no code a file could choose
                  "optuna.samplers", "optuna.pruners")
#: backend modules of the built-in agents (``note_rl.agents.<backend>.<DQN|PPO|...>``, the path configs
#: and saved runs use) and the per-algorithm files behind them (``note_rl.agents.<algo>.<torch|keras>.<Algo>``)
AGENT_BACKENDS = ("torch", "keras", "tf")
AGENT_FILES = ("torch", "keras")
#: env factories (``env.factory``) and env modules (``env.module``) of the project's env presets
ENV_FACTORIES = ("note_rl.agents.maddpg.simple_spread", "note_rl.ma_envs.MatchingGame",
                 "note_rl.goal_envs.BitFlipEnv", "note_rl.goal_envs.PointReachEnv",
                 "note_rl.image_envs.minatar", "note_rl.image_envs.minigrid", "note_rl.image_envs.atari")
#: the built-in network specs (``agent.network`` / ``env.network``); not ``note_rl.agents.nets.Module``,
#: whose ``target`` names a user's class
NETWORK_TARGETS = tuple(f"note_rl.agents.nets.{name}" for name in ("MLP", "ConvEncoder", "NatureCNN", "MinAtarCNN"))
ENV_MODULES = ("note_rl.goal_envs",)

_RESOLVER = re.compile(r"\$\{\s*([^}:]*):")  # ${name:args}: a resolver call (oc.env, oc.decode, ...)
#: the project's own resolvers (:mod:`tuner.config.schema`), pure arithmetic on the config: the only ones allowed
PROJECT_RESOLVERS = ("budget_fraction", "train_freq_fraction", "name_part")
_INTERPOLATION = re.compile(r"\$\{")
MAX_INTERPOLATIONS = 256  # a saved config.yaml has a few (``note_rl.agents.${backend.name}.DQN``)


class UntrustedFileError(ValueError):
    """A file read back from disk is malformed, too large, or names code it may not run."""


def _regular_file(path: str, limit: int) -> None:
    """``path`` is a regular file of at most ``limit`` bytes (a FIFO or device would block the read)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise UntrustedFileError(f"{path}: cannot read ({exc.strerror})") from None
    kind = special_kind(info.st_mode)
    if kind is not None:
        raise UntrustedFileError(f"{path}: is {kind}, not a regular file")
    if info.st_size > limit:
        raise UntrustedFileError(f"{path}: {info.st_size} bytes, more than the {limit} a file of this kind may hold")


def _read_text(path: str, limit: int) -> str:
    _regular_file(path, limit)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise UntrustedFileError(f"{path}: cannot read ({exc.strerror})") from None
    if len(data) > limit:  # grew since the stat
        raise UntrustedFileError(f"{path}: more than the {limit} bytes a file of this kind may hold")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UntrustedFileError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _check_depth(node: Any, path: str) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH` (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(node, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise UntrustedFileError(f"{path}: nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def read_json(path: str, limit: int = MAX_JSON_BYTES) -> Any:
    """The JSON value in ``path``, bounded in bytes and depth."""
    text = _read_text(path, limit)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UntrustedFileError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise UntrustedFileError(f"{path}: nested more than {MAX_DEPTH} levels deep") from None
    _check_depth(value, path)
    return value


def read_yaml(path: str, limit: int = MAX_YAML_BYTES) -> Any:
    """The YAML value in ``path`` (plain data: no tags, no anchors or aliases, bounded)."""
    import yaml

    text = _read_text(path, limit)
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                # an alias repeats a node: a few hundred bytes of them expand to gigabytes (a "billion
                # laughs" file); nothing this project writes uses them
                raise UntrustedFileError(f"{path}: YAML anchors and aliases are not accepted in a file read back")
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UntrustedFileError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise UntrustedFileError(f"{path}: nested more than {MAX_DEPTH} levels deep") from None
    _check_depth(value, path)
    return value


def walk(node: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted key, value)`` of every leaf and inner node of a config tree."""
    yield key, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk(v, f"{key}.{k}" if key else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, f"{key}[{i}]")


def code_refs(cfg: Any) -> Iterator[tuple[str, str]]:
    """``(key, dotted path)`` of every reference to code in a config: each ``_target_``, and the
    env's ``factory`` and ``module``."""
    for key, value in walk(cfg):
        if not isinstance(value, dict):
            continue
        if isinstance(value.get("_target_"), str):
            yield (f"{key}._target_" if key else "_target_"), value["_target_"]
        if key == "env":
            for name in ("factory", "module"):
                if isinstance(value.get(name), str) and value[name]:
                    yield f"env.{name}", value[name]


def _builtin(key: str, ref: str) -> bool:
    """Whether ``ref`` (at ``key``) is one of the project's own classes or env factories."""
    if key == "env.factory":
        return ref in ENV_FACTORIES
    if key == "env.module":
        return ref in ENV_MODULES
    if ref.startswith("note_rl.agents.nets."):
        return ref in NETWORK_TARGETS
    if key == "strategy._target_":
        from .strategies import TARGETS  # the project's strategy classes by path (not the module's functions)

        return ref in TARGETS
    module, _, name = ref.rpartition(".")
    agent = re.fullmatch(r"note_rl\.agents\.(?:(\w+)\.)?(\w+)", module)
    if agent:
        from .agent_confs import BUILTIN_AGENTS

        folder, backend = agent.groups()
        if folder is not None:  # note_rl.agents.dqn.torch.DQN: the algorithm's own folder
            return backend in AGENT_FILES and name in BUILTIN_AGENTS and folder == name.lower()
        return backend in AGENT_BACKENDS and name in BUILTIN_AGENTS
    if module in TARGET_MODULES:
        public = getattr(importlib.import_module(module), "__all__", ())  # fixed modules: safe to import
        return name in public
    return False


def _check_interpolations(cfg: Any, path: str) -> None:
    """Refuse resolver calls (``${oc.env:...}`` would read the environment) and interpolations
    that could multiply: at most one per string and :data:`MAX_INTERPOLATIONS` in all (a string of
    two interpolations of a string of two ... doubles at every level)."""
    total = 0
    for key, value in walk(cfg):
        if not isinstance(value, str):
            continue
        if any(name.strip() not in PROJECT_RESOLVERS for name in _RESOLVER.findall(value)):
            raise UntrustedFileError(f"{path}: {key}: resolver interpolations ({value[:40]!r}) are not "
                                     "accepted in a file read back")
        count = len(_INTERPOLATION.findall(value))
        total += count
        if count > 1 or total > MAX_INTERPOLATIONS:
            raise UntrustedFileError(f"{path}: {key}: more interpolations than a saved run config holds")


def check_code_refs(cfg: Any, path: str, trusted: Iterable[str] = ()) -> None:
    """Refuse a resolved config read from ``path`` that names code other than the project's own
    (or than ``trusted``: the references of the command's own, trusted config), and a gymnasium id
    of the ``module:Env`` form (gymnasium would import the module)."""
    allowed = set(trusted)
    env = cfg.get("env") if isinstance(cfg, dict) else None
    if isinstance(env, dict) and isinstance(env.get("id"), str) and ":" in env["id"] and env["id"] not in allowed:
        raise UntrustedFileError(f"{path}: env.id: {env['id']!r} would import module "
                                 f"{env['id'].split(':')[0]!r}; {_OPT_IN}")
    for key, ref in code_refs(cfg):
        if ref not in allowed and not _builtin(key, ref):
            raise UntrustedFileError(f"{path}: {key}: {ref!r} is not one of note_rl's own classes; {_OPT_IN}")


_OPT_IN = "a file read back runs no code it names (add trust_code=true if you trust the file and its author)"


def load_run_config(folder: str, trust_code: bool = False, trusted: Iterable[str] = (),
                    name: str | None = None, secrets_from: Any = None) -> tuple[dict[str, Any], str]:
    """The resolved config of the run whose dir is ``folder`` (from its ``result.json``, else its
    ``config.yaml``; only the file ``name`` when given) and the file it came from; checked with
    :func:`check_code_refs` unless ``trust_code``.  Secrets masked when the file was written are
    given back by :func:`restore_secrets` (from ``secrets_from``, the live command's config, or the
    environment)."""
    result = os.path.join(folder, "result.json")
    source, cfg = result, None
    if os.path.lexists(result) and name in (None, "result.json"):
        data = read_json(result)
        cfg = data.get("config") if isinstance(data, dict) else None
        if not isinstance(cfg, dict):
            raise UntrustedFileError(f"{result}: config: missing (not a result.json written by a run)")
    else:
        source = os.path.join(folder, "config.yaml")
        if not os.path.lexists(source):
            raise UntrustedFileError(f"no result.json or config.yaml beside {folder}{os.sep} to rebuild the agent from")
        cfg = read_yaml(source)
        if not isinstance(cfg, dict):
            raise UntrustedFileError(f"{source}: not a run config (a mapping)")
    if trust_code:
        return restore_secrets(_resolved(cfg, source), source, secrets_from), source
    _check_interpolations(cfg, source)
    cfg = _resolved(cfg, source)
    check_code_refs(cfg, source, trusted)
    return restore_secrets(cfg, source, secrets_from), source


#: sections a rebuilt run never uses (where to log, how the study ran): a secret there may stay masked
_UNUSED_WHEN_REBUILT = ("logger", "tuner", "hydra")


def secret_env_name(key: str) -> str:
    """The environment variable that gives back the secret a run dir masked under ``key``
    (``env.kwargs.api_token`` -> ``NOTE_SECRET_ENV_KWARGS_API_TOKEN``)."""
    return "NOTE_SECRET_" + re.sub(r"[^A-Za-z0-9]+", "_", key).strip("_").upper()


def restore_secrets(cfg: dict[str, Any], source: str, given: Any = None) -> dict[str, Any]:
    """``cfg`` with every value that its writer masked (a secret-named key, see
    :func:`tuner.common.redact.scrub`) given back: from the same key of ``given`` (the config of the
    command reading the file back, e.g. a study's held-out stage), else from the environment variable
    :func:`secret_env_name` names.  A secret that neither gives back is refused with one line, unless
    it sits where a rebuilt run never looks (:data:`_UNUSED_WHEN_REBUILT`): files never hold a secret,
    so a run that needs one cannot be rebuilt without being handed it again."""
    from ..common.redact import MASK, is_secret_key

    def fill(node: Any, path: str) -> Any:
        if isinstance(node, dict):
            return {k: fill(v, f"{path}.{k}" if path else str(k)) for k, v in node.items()}
        if isinstance(node, list):
            return [fill(v, f"{path}[{i}]") for i, v in enumerate(node)]
        if node != MASK or not is_secret_key(re.sub(r"\[\d+\]$", "", path)):
            return node
        value = _lookup(given, path)
        if value is not None and value != MASK:
            return value
        env = os.environ.get(secret_env_name(path))
        if env:
            return env
        if path.split(".", 1)[0].split("[", 1)[0] in _UNUSED_WHEN_REBUILT:
            return node
        raise UntrustedFileError(f"{source}: {path}: a secret, not saved with the run; "
                                 f"give it in the environment variable {secret_env_name(path)}")

    return fill(cfg, "")


def _lookup(node: Any, path: str) -> Any:
    """The value at dotted ``path`` (``a.b[0].c``) of ``node``, or None."""
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("[") and isinstance(node, list) and int(part[1:-1]) < len(node):
            node = node[int(part[1:-1])]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node


def _resolved(cfg: dict[str, Any], source: str) -> dict[str, Any]:
    """``cfg`` with its node interpolations (``${backend.name}``) resolved."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from . import schema  # noqa: F401 - registers the project's resolvers

    try:
        return OmegaConf.to_container(OmegaConf.create(cfg), resolve=True)  # type: ignore[return-value]
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or "config"
        raise UntrustedFileError(f"{source}: {key}: {str(getattr(exc, 'msg', exc)).splitlines()[0]}") from None
