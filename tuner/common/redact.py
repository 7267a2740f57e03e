"""Keep credentials out of everything the tuner writes or prints: the one redaction layer.

Where secrets come from (:func:`find_secrets`, :func:`env_secrets`, the command line):

* the password of a URL's user info (``postgresql://user:pw@host/db``);
* a URL query parameter whose name says secret (``?password=...``, ``passfile``, ``sslpassword``,
  ``token``, ``api_key``, ... - libpq and SQLAlchemy pass query parameters on to the driver, so
  ``postgresql://user@host/db?password=pw`` connects like the user-info form);
* the value of a config key whose name says secret (``password``, ``token``, ``secret``, ``api_key``);
* the environment variables ``OPTUNA_STORAGE`` (a whole storage URL) and ``PGPASSWORD``.

How they are masked: always whole values, never pieces of other words.

* URLs are rewritten structurally (:func:`redact_url`): the user-info password and the value of every
  secret-named query parameter become ``***``, whether or not the secret was known beforehand;
* a dict value under a secret-named key becomes ``***`` whole (:func:`scrub`);
* in free text a known secret is masked only where it is not part of a longer word (letters, digits,
  underscore; :func:`redact_text`): a password ``ppo`` masks ``agent=ppo`` but leaves ``unsupported``
  and ``ppo_lr`` alone.

Once the config is read, :func:`protect` collects the secrets, remembers them for this process
(:func:`known_secrets`, so every later writer masks them without being handed them), and masks them
in ``sys.argv`` (which wandb records and trial processes inherit) and in the files Hydra saved into
the run dir.  Writers - ``study.json``, ``best_config.yaml``, ``report.md``, wandb configs, summaries
and tables, the sweeper's files, printed storages (:func:`tuner.study.storage.describe`) and error lines -
pass what they write through :func:`scrub` or :func:`redact_text`.

The password need not be on the command line at all: libpq reads ``PGPASSWORD`` and ``~/.pgpass`` (or
the file ``PGPASSFILE`` names), so ``tuner.storage=postgresql://user@host/db`` with either of those set
connects without one; or the whole URL comes from ``OPTUNA_STORAGE`` (:func:`tuner.study.storage.resolve`).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Iterable
from urllib.parse import parse_qsl, unquote

__all__ = ["find_secrets", "scrub", "redact_text", "redact_url", "protect", "remember", "known_secrets",
           "mask_argv_secrets", "env_secrets", "is_secret_key", "MASK"]

MASK = "***"
# a key (config key, query parameter) whose value is a credential: password, db_password, PGPASSWORD,
# sslpassword, passwd, passphrase, passfile, pwd, pass; secret(s), client_secret; token, hf_token,
# access_token (but not max_tokens or tokenizer); api_key, apikey; credential(s); private_key
SECRET_KEY = re.compile(
    r"pass(word|wd|phrase|file)|(^|[^a-z])(pass|pwd)$|secret|(^|[^a-z])(auth_|access_|refresh_|api_|id_)?token$"
    r"|api_?key|credential|private_?key", re.IGNORECASE)
SECRET_ENV = ("OPTUNA_STORAGE", "PGPASSWORD")  # variables that may carry a storage password

# a URL in free text: scheme, then everything up to white space or a quote
_URL = re.compile(r"""[A-Za-z][A-Za-z0-9+.\-]*://[^\s'"<>`]+""")
# the user info of a URL (SQLAlchemy's rule: the user has no ':' or '/', the password runs to the '@')
_USERINFO = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@?#]*):(?P<pw>[^@]*)@")
# one query parameter: ?name=value or &name=value (';' separates too in some drivers' URLs)
_PARAM = re.compile(r"(?P<head>[?&;](?P<name>[^=&;#?]+)=)(?P<value>[^&;#]*)")

_remembered: set[str] = set()  # secrets found earlier in this process (protect, remember)


def is_secret_key(name: str) -> bool:
    """Whether a config key or query parameter named ``name`` holds a credential."""
    return bool(SECRET_KEY.search(name.rsplit(".", 1)[-1]))


def _forms(value: str) -> set[str]:
    """A secret as it may be written: as given and percent-decoded (``p%40ss`` is ``p@ss``)."""
    return {v for v in (value, unquote(value)) if v}


def _url_secrets(text: str) -> set[str]:
    """The user-info password and the secret-named query values of a URL (nothing when not a URL)."""
    if "://" not in text:
        return set()
    found: set[str] = set()
    match = _USERINFO.match(text.strip())
    if match and match.group("pw"):
        found |= _forms(match.group("pw"))
    query = text.split("?", 1)[1] if "?" in text else ""
    for name, value in parse_qsl(query.split("#", 1)[0].replace(";", "&"), keep_blank_values=True):
        if is_secret_key(name) and value:
            found |= _forms(value)
    for m in _PARAM.finditer(text):  # parse_qsl decodes: keep the written (encoded) form too
        if is_secret_key(unquote(m.group("name"))) and m.group("value"):
            found |= _forms(m.group("value"))
    return found


def find_secrets(node: Any, key: str = "") -> set[str]:
    """Every secret in ``node`` (dicts, lists, strings): passwords and secret query values of URLs,
    and the whole values of secret-named keys."""
    found: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            found |= find_secrets(v, str(k))
    elif isinstance(node, (list, tuple, set)):
        for v in node:
            found |= find_secrets(v, key)
    elif isinstance(node, str) and node:
        found |= _url_secrets(node)
        if key and is_secret_key(key):
            found |= _forms(node)
    elif key and is_secret_key(key) and isinstance(node, (int, float)) and not isinstance(node, bool):
        found.add(str(node))  # a numeric password (YAML reads 123456 as an int)
    return found


def redact_url(url: str) -> str:
    """``url`` with its user-info password and every secret-named query value replaced by :data:`MASK`
    (structurally: the rest of the URL is left as it is)."""
    match = _USERINFO.match(url)
    if match and match.group("pw"):
        url = f"{match.group('head')}:{MASK}@{url[match.end():]}"
    if "?" in url:
        base, query = url.split("?", 1)
        query = _PARAM.sub(_mask_param, "?" + query)[1:]
        url = f"{base}?{query}"
    return url


def _mask_param(m: re.Match[str]) -> str:
    if m.group("value") and is_secret_key(unquote(m.group("name"))):
        return m.group("head") + MASK
    return m.group(0)


def _pattern(secrets: Iterable[str]) -> re.Pattern[str] | None:
    """One regex for all ``secrets``, each only as a whole word: not preceded or followed by a letter,
    digit or underscore, so that a short password does not cut into identifiers and words (longest
    first, so that a secret inside a longer one does not leave a piece of it behind)."""
    words = sorted({s for s in secrets if s and s != MASK}, key=len, reverse=True)
    if not words:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, words)) + r")(?!\w)")


def redact_text(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with its URLs rewritten by :func:`redact_url` and every secret (default: the
    :func:`known_secrets` of this process) masked where it stands as a whole word."""
    return _redact(text, _pattern(known_secrets() if secrets is None else secrets))


def _redact(text: str, pattern: re.Pattern[str] | None) -> str:
    if "://" in text:
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    return pattern.sub(MASK, text) if pattern is not None else text


def scrub(node: Any, secrets: Iterable[str] | None = None) -> Any:
    """``node`` (strings, dicts, lists) with the values of secret-named keys masked whole and every
    string passed through :func:`redact_text` (default secrets: :func:`known_secrets`)."""
    pattern = _pattern(known_secrets() if secrets is None else secrets)

    def walk(v: Any, key: str = "") -> Any:
        if key and is_secret_key(key) and v not in (None, "") and not isinstance(v, (bool, dict, list, tuple)):
            return MASK
        if isinstance(v, str):
            return _redact(v, pattern)
        if isinstance(v, dict):
            return {k: walk(x, str(k)) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(walk(x, key) for x in v)
        return v

    return walk(node)


def remember(secrets: Iterable[str]) -> None:
    """Add ``secrets`` to the ones every later :func:`scrub` / :func:`redact_text` of this process masks."""
    _remembered.update(s for s in secrets if s and s != MASK)


def known_secrets() -> set[str]:
    """The secrets of this process: remembered ones, the command line's and the environment's."""
    return _remembered | _argv_secrets(sys.argv) | env_secrets()


def protect(config: dict[str, Any], folders: Iterable[str] = ()) -> set[str]:
    """Find the config's secrets and remember them; mask them in ``sys.argv`` and in Hydra's saved
    files under each of ``folders`` (``<folder>/.hydra/*.yaml`` and ``<folder>/multirun.yaml``).
    Returns the secrets."""
    secrets = find_secrets(config) | known_secrets()
    remember(secrets)
    sys.argv[:] = scrub(list(sys.argv), secrets)  # URLs are rewritten even when no secret was found
    for folder in folders:
        for path in _hydra_files(folder):
            with open(path) as f:
                text = f.read()
            clean = redact_text(text, secrets)
            if clean != text:
                with open(path, "w") as f:
                    f.write(clean)
    return secrets


def mask_argv_secrets(text: str, argv: list[str] | None = None) -> str:
    """``text`` with every secret of the command line (and of :data:`SECRET_ENV`, and remembered ones)
    masked: an error line that quotes an override must not print the password in it."""
    return redact_text(text, _argv_secrets(sys.argv if argv is None else argv) | known_secrets())


def env_secrets() -> set[str]:
    """Secrets in the environment variables of :data:`SECRET_ENV` (a storage URL's password, ...)."""
    found = _url_secrets(os.environ.get("OPTUNA_STORAGE", ""))
    return found | _forms(os.environ.get("PGPASSWORD", ""))


def _argv_secrets(argv: list[str]) -> set[str]:
    """Secrets in ``key=value`` command-line arguments (values possibly quoted)."""
    found: set[str] = set()
    for arg in argv:
        key, _, value = arg.partition("=")
        found |= find_secrets({key.lstrip("+~"): value.strip("'\"")})
    return found - {MASK}


def _hydra_files(folder: str) -> list[str]:
    out = [os.path.join(folder, "multirun.yaml")]
    saved = os.path.join(folder, ".hydra")
    if os.path.isdir(saved):
        out += [os.path.join(saved, name) for name in sorted(os.listdir(saved)) if name.endswith(".yaml")]
    return [p for p in out if os.path.isfile(p)]
