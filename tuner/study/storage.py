"""Optuna storages and the cross-driver lock.

* default (``storage: null``): the ``OPTUNA_STORAGE`` environment variable when it is set (so that a
  password need not be on the command line), else Optuna's journal file ``journal.log`` in the study
  dir's parent (``studies/journal.log``), shared by every study whose dir is beside this one, so that
  one optuna-dashboard shows them all and compares them - no server, safe for several processes on one
  machine (Optuna's recommendation over SQLite for parallel work).  A study dir that already holds its
  own ``journal.log`` (a study made before studies shared one) keeps using it.  Precedence: the
  command line, then ``OPTUNA_STORAGE``, then the journal;
* a path ending in ``.log``: a journal file there;
* ``sqlite:///...``: accepted (slower per trial, see BENCHMARKS.md);
* ``postgresql://...``: several machines on one study (``postgresql+psycopg://`` is used when only
  psycopg 3 is installed).

:class:`StudyLock` serialises "count the trials, then ask for a new one" across drivers, so that
``n_trials`` and ``max_total_trials`` hold exactly even with several drivers: a file lock (``flock``)
next to a journal or SQLite file, a PostgreSQL advisory lock for PostgreSQL.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
import time
import zlib
from typing import Any

import optuna

from ..common.errors import ConfigError
from ..common.redact import find_secrets, known_secrets, redact_text

__all__ = ["make_storage", "StudyLock", "describe", "check_storage", "check_journal", "check_regular",
           "existing_ancestor", "in_memory", "journal_path", "default_journal", "own_journal", "shares_journal",
           "repair_journal", "root_cause", "resolve", "storage_key", "ENV_VAR"]

SUPPORTED = "a journal file path, sqlite:///path.db or postgresql://user:pw@host/db"
ENV_VAR = "OPTUNA_STORAGE"  # Optuna's own CLI reads the same variable


def resolve(storage: str | None) -> str | None:
    """The storage to use for a ``tuner.storage`` value: the value when given, else ``$OPTUNA_STORAGE``
    when set, else ``None`` (the default journal).  ``journal`` names the default journal explicitly."""
    if storage in (None, ""):
        return os.environ.get(ENV_VAR) or None
    return storage


def storage_key(storage: str | None) -> str:
    """The key an error about the storage names: ``OPTUNA_STORAGE`` when the storage came from it,
    ``tuner.study_dir`` for the default journal in the study dir."""
    if resolve(storage) in (None, "journal"):
        return "tuner.study_dir"
    return ENV_VAR if storage in (None, "") else "tuner.storage"


def _normalise_url(url: str) -> str:
    if url.startswith("postgresql://"):
        try:
            import psycopg2  # noqa: F401
        except ImportError:
            return "postgresql+psycopg://" + url[len("postgresql://"):]
    return url


JOURNAL = "journal.log"


def journal_path(storage: str | None, study_dir: str) -> str | None:
    """The journal file that ``tuner.storage`` names (the default: :func:`default_journal`);
    ``None`` for a database URL."""
    return _journal_path(storage, study_dir)


def default_journal(study_dir: str) -> str:
    """The default storage of the study in ``study_dir``: the journal shared by the studies beside it,
    ``<parent of study_dir>/journal.log``; or, when the study dir holds a journal of its own (a study
    made before studies shared one), that one, so that the study resumes where it is."""
    own = os.path.join(study_dir, JOURNAL)
    if os.path.lexists(own):
        return own
    return os.path.join(os.path.dirname(os.path.abspath(study_dir)), JOURNAL)


def own_journal(storage: str | None, folder: str) -> str | None:
    """``tuner.storage`` for a study that must not share its journal (a Hydra sweep, whose default
    study name repeats): the setting or ``$OPTUNA_STORAGE`` when given, else ``<folder>/journal.log``."""
    return resolve(storage) or os.path.join(folder, JOURNAL)


def shares_journal(storage: str | None, study_dir: str) -> bool:
    """Whether the study in ``study_dir`` is in the default shared journal (not a file of its own, nor
    a storage the command named)."""
    return resolve(storage) in (None, "", "journal") and \
        os.path.dirname(os.path.abspath(default_journal(study_dir))) != os.path.abspath(study_dir)


def _journal_path(storage: str | None, study_dir: str) -> str | None:
    storage = resolve(storage)
    if storage in (None, "", "journal"):
        return default_journal(study_dir)
    if "://" not in storage:
        return os.path.abspath(storage)
    return None


def check_storage(storage: str | None) -> None:
    """Reject an unusable ``tuner.storage`` (or ``$OPTUNA_STORAGE``) before anything is created
    (message names the key).

    MySQL is refused too: :class:`StudyLock` needs PostgreSQL advisory locks (or a local file)."""
    key, storage = storage_key(storage), resolve(storage)
    if storage in (None, "", "journal"):
        return
    if "://" not in storage:
        check_regular(os.path.abspath(storage), key)
        return
    from sqlalchemy.engine import make_url

    try:
        url = make_url(_normalise_url(storage))
    except Exception:  # noqa: BLE001 - sqlalchemy raises ArgumentError / ValueError for bad URLs
        raise ConfigError(f"{key}: cannot parse {describe_url(storage)!r} (use {SUPPORTED})") from None
    backend = url.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise ConfigError(f"{key}: unsupported storage {backend!r} in {describe_url(storage)} (use {SUPPORTED})")
    if backend == "sqlite" and in_memory(url):  # a study there would be lost when the driver exits
        from urllib.parse import unquote  # sqlite:///:memory: as typed, not as sqlite:///%3Amemory%3A

        raise ConfigError(f"{key}: {unquote(describe_url(storage))!r} keeps the study in memory, lost when this "
                          "process exits; use a file (sqlite:///path.db or a journal path) or postgresql://...")
    if backend == "sqlite":
        folder = os.path.dirname(os.path.abspath(url.database))
        parent = existing_ancestor(folder)
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
            raise ConfigError(f"{key}: cannot create the SQLite file's directory {folder} "
                              f"({parent} is not a writable directory)")
    try:
        url.get_dialect().import_dbapi()
    except Exception as exc:  # noqa: BLE001 - a missing driver module
        raise ConfigError(f"{key}: no database driver for {backend} ({type(exc).__name__}: {exc})") from None


def in_memory(url: Any) -> bool:
    """Whether a SQLite URL (a SQLAlchemy ``URL``) names an in-memory database: ``sqlite://``,
    ``sqlite:///:memory:`` or an SQLite URI with ``:memory:`` / ``mode=memory``."""
    database = url.database or ""
    return database in ("", ":memory:") or database.startswith("file::memory:") or \
        url.query.get("mode") == "memory"


def existing_ancestor(path: str) -> str:
    """``path`` itself when it exists, else its nearest existing ancestor: where creating ``path``
    (``os.makedirs``) would start, so whether that can work is decided there."""
    path = os.path.abspath(path)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return path


def describe_url(storage: str) -> str:
    """``storage`` with its password hidden, in user info or a query parameter (it may not be a valid
    SQLAlchemy URL: then the text itself is redacted, see :func:`tuner.common.redact.redact_text`)."""
    from sqlalchemy.engine import make_url

    try:
        return redact_text(make_url(storage).render_as_string(hide_password=True))
    except Exception:  # noqa: BLE001
        return redact_text(storage)


def repair_journal(path: str, key: str = "tuner.storage") -> str | None:
    """Make a journal file safe to append to; returns what was repaired (``None``: nothing).

    Why: a crash or a full disk can leave the last record cut off.  Optuna still reads such a file
    (it stops at the partial line), but the next record it appends lands on that line, and from then
    on the journal no longer loads: the whole study is lost.  So before a driver writes, a torn last
    record is removed (or, when only its newline is missing, completed) under Optuna's own journal
    lock, after a copy of the original is kept beside it.  A complete line that is not a JSON record
    means the file is damaged in the middle: a one-line :class:`ConfigError`, nothing changed."""
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        return None
    from optuna.storages.journal import JournalFileSymlinkLock


    lock = JournalFileSymlinkLock(path)
    lock.acquire()
    try:
        with open(path, "rb") as f:
            data = f.read()
        end = _check_records(data, path, key)
        if end == len(data):
            return None
        backup = f"{path}.torn-{time.strftime('%Y%m%d-%H%M%S')}"
        shutil.copy2(path, backup)
        complete = _is_record(data[end:])
        with open(path, "r+b") as f:
            if complete:
                f.seek(0, os.SEEK_END)
                f.write(b"\n")
            else:
                f.truncate(end)
            f.flush()
            os.fsync(f.fileno())
    finally:
        lock.release()
    what = "completed its last record (its newline was missing)" if complete else \
        f"removed a torn last record ({len(data) - end} bytes)"
    return f"journal {path}: {what}; the original is kept as {backup}"


def check_regular(path: str, key: str) -> None:
    """A journal path that exists is a regular file: opening a FIFO (named pipe) blocks until some
    other process writes to it, so a driver, report or dashboard given one hung for ever; a folder
    or a device is no journal either.  Checked with ``stat``, which never opens the file."""
    from ..common.files import special_kind

    try:
        kind = special_kind(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return  # a new journal is created there, or the folder cannot be made (reported where it is made)
    except OSError as exc:
        raise ConfigError(f"{key}: cannot use {path} ({exc.strerror})") from None
    if kind is not None:
        raise ConfigError(f"{key}: {path} is {kind}, not an Optuna journal file")


def check_journal(path: str, key: str = "tuner.storage") -> None:
    """Read-only :func:`repair_journal` check, for a driver to run before it creates anything beside
    the file: a path that is not a regular file (:func:`check_regular`), a file that is not an Optuna
    journal, or one damaged in the middle, is one line."""
    check_regular(path, key)
    if os.path.isfile(path) and os.path.getsize(path) > 0:
        with open(path, "rb") as f:
            _check_records(f.read(), path, key)


def _check_records(data: bytes, path: str, key: str) -> int:
    """Raise a one-line ConfigError unless every complete line of ``data`` is a journal record;
    returns where the complete lines end (a torn last record starts there)."""
    end = data.rfind(b"\n") + 1
    lines = data[:end].splitlines()
    if not _is_record(lines[0] if lines else data):  # its first record shows whether this is a journal
        raise ConfigError(f"{key}: {path} is not an Optuna journal file")
    for number, line in enumerate(lines, start=1):
        if not _is_record(line):
            raise ConfigError(f"{key}: {path} line {number} is not an Optuna journal record (the file is "
                              "damaged; restore it from a backup or remove that line)")
    return end


def _is_record(line: bytes) -> bool:
    """One line of an Optuna journal: a JSON object with an operation code."""
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and isinstance(record.get("op_code"), int)


def make_storage(storage: str | None, study_dir: str) -> Any:
    """An Optuna storage object (or URL) for the ``tuner.storage`` setting; a journal file is
    repaired first when its last record is torn (:func:`repair_journal`)."""
    path = _journal_path(storage, study_dir)
    key, storage = storage_key(storage), resolve(storage)
    if path is not None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        repaired = repair_journal(path, key)
        if repaired:
            print(f"warning: {repaired}", file=sys.stderr, flush=True)
        from optuna.storages.journal import JournalFileBackend, JournalStorage

        return JournalStorage(JournalFileBackend(path))
    if storage.startswith("sqlite:///"):  # like a journal file, its directory is made when missing
        os.makedirs(os.path.dirname(os.path.abspath(storage[len("sqlite:///"):])), exist_ok=True)
    if storage.startswith(("sqlite://", "postgresql", "mysql")):
        return optuna.storages.RDBStorage(_normalise_url(storage), engine_kwargs=_engine_kwargs(storage))
    raise ConfigError(f"{key}: unsupported storage {describe_url(storage)!r} (use {SUPPORTED})")


def _engine_kwargs(url: str) -> dict[str, Any]:
    if url.startswith("sqlite"):
        return {"connect_args": {"timeout": 60}}  # parallel drivers wait instead of "database is locked"
    return {"pool_pre_ping": True}


def root_cause(exc: BaseException) -> str:
    """The first line of the innermost error (Optuna and SQLAlchemy wrap the driver's error), with
    any password of a URL in it masked."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    text = str(getattr(exc, "orig", None) or exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return redact_text(line, find_secrets(line.split()) | known_secrets())


def describe(storage: str | None, study_dir: str) -> str:
    """The storage as a URL-like string with any password hidden, in user info or a query parameter
    (for outputs and logs)."""
    path = _journal_path(storage, study_dir)
    if path is not None:
        return path
    return describe_url(_normalise_url(resolve(storage)))


class StudyLock:
    """Mutual exclusion between all drivers of one study."""

    def __init__(self, storage: str | None, study_dir: str, study_name: str) -> None:
        self.url = None if _journal_path(storage, study_dir) is not None else resolve(storage)
        self.key = zlib.crc32(study_name.encode()) & 0x7FFFFFFF
        if self.url is None:
            self.path = _journal_path(storage, study_dir) + ".driver-lock"  # not Optuna's own ".lock"
        elif self.url.startswith("sqlite:///"):
            self.path = os.path.abspath(self.url[len("sqlite:///"):]) + ".driver-lock"
            self.url = None
        else:
            self.path = None
        self._fd: int | None = None
        self._engine: Any = None
        self._conn: Any = None

    def __enter__(self) -> "StudyLock":
        if self.path is not None:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)  # the storage file's dir may be new
            self._fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        else:
            from sqlalchemy import create_engine, text

            if self._engine is None:
                self._engine = create_engine(_normalise_url(self.url), pool_pre_ping=True)
            self._conn = self._engine.connect()
            self._conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": self.key})
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
        if self._conn is not None:
            from sqlalchemy import text

            self._conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
            self._conn.close()
            self._conn = None
