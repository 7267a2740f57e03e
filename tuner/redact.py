"""Keep credentials out of everything the tuner writes or prints.

A PostgreSQL storage URL carries its password (``postgresql://user:pw@host/db``), and a config may hold
other credentials (a key named like ``password``, ``token``, ``secret``, ``api_key``).  Once the config is
read, :func:`protect` collects those values and replaces them with ``***`` in this process's
``sys.argv`` (which wandb records for every run, and which trial processes inherit) and in the files
Hydra saved into the run dir (``.hydra/config.yaml``, ``overrides.yaml``, ``hydra.yaml``, a sweep's
``multirun.yaml``); wandb configs go through :func:`scrub` as well.  Outputs show storages with
:func:`tuner.storage.describe`, which hides the password.

The password need not be on the command line at all: libpq reads ``PGPASSWORD`` and ``~/.pgpass`` (or
the file ``PGPASSFILE`` names), so ``tuner.storage=postgresql://user@host/db`` with either of those set
connects without one; or the whole URL comes from ``OPTUNA_STORAGE`` (:func:`tuner.storage.resolve`).
Secrets of those variables are masked like the command line's (:func:`env_secrets`).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Iterable
from urllib.parse import urlsplit

__all__ = ["find_secrets", "scrub", "protect", "mask_argv_secrets", "env_secrets", "MASK"]

MASK = "***"
SECRET_KEY = re.compile(r"pass(word|wd)?$|secret|token|api_?key|credential", re.IGNORECASE)
SECRET_ENV = ("OPTUNA_STORAGE", "PGPASSWORD")  # variables that may carry a storage password


def _url_password(text: str) -> str | None:
    if "://" not in text or "@" not in text:
        return None
    try:
        return urlsplit(text).password or None
    except ValueError:
        return None


def find_secrets(node: Any, key: str = "") -> set[str]:
    """Passwords of URLs anywhere in ``node`` and values of credential-like keys."""
    found: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            found |= find_secrets(v, str(k))
    elif isinstance(node, (list, tuple)):
        for v in node:
            found |= find_secrets(v, key)
    elif isinstance(node, str) and node:
        password = _url_password(node)
        if password:
            found.add(password)
        if SECRET_KEY.search(key) and len(node) >= 4:
            found.add(node)
    return found


def scrub(node: Any, secrets: Iterable[str]) -> Any:
    """``node`` (strings, dicts, lists) with every secret replaced by :data:`MASK`."""
    secrets = sorted(set(secrets), key=len, reverse=True)  # a secret inside a longer one: longest first
    if not secrets:
        return node

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            for s in secrets:
                v = v.replace(s, MASK)
            return v
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(walk(x) for x in v)
        return v

    return walk(node)


def protect(config: dict[str, Any], folders: Iterable[str] = ()) -> set[str]:
    """Find the config's secrets; mask them in ``sys.argv`` and in Hydra's saved files under each of
    ``folders`` (``<folder>/.hydra/*.yaml`` and ``<folder>/multirun.yaml``).  Returns the secrets."""
    secrets = find_secrets(config) | _argv_secrets(sys.argv) | env_secrets()
    if not secrets:
        return secrets
    sys.argv[:] = scrub(list(sys.argv), secrets)
    for folder in folders:
        for path in _hydra_files(folder):
            with open(path) as f:
                text = f.read()
            clean = scrub(text, secrets)
            if clean != text:
                with open(path, "w") as f:
                    f.write(clean)
    return secrets


def mask_argv_secrets(text: str, argv: list[str] | None = None) -> str:
    """``text`` with every secret of the command line (and of :data:`SECRET_ENV`) masked: an error line
    that quotes an override must not print the password in it."""
    secrets = _argv_secrets(sys.argv if argv is None else argv) | env_secrets()
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def env_secrets() -> set[str]:
    """Secrets in the environment variables of :data:`SECRET_ENV` (a storage URL's password, ...)."""
    return find_secrets({name: os.environ.get(name, "") for name in SECRET_ENV})


def _argv_secrets(argv: list[str]) -> set[str]:
    """Secrets in ``key=value`` command-line arguments (values possibly quoted)."""
    found: set[str] = set()
    for arg in argv:
        key, _, value = arg.partition("=")
        found |= find_secrets({key.lstrip("+~"): value.strip("'\"")})
    return found


def _hydra_files(folder: str) -> list[str]:
    out = [os.path.join(folder, "multirun.yaml")]
    saved = os.path.join(folder, ".hydra")
    if os.path.isdir(saved):
        out += [os.path.join(saved, name) for name in sorted(os.listdir(saved)) if name.endswith(".yaml")]
    return [p for p in out if os.path.isfile(p)]
