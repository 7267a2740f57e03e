"""A study's identity: what defines it, recorded when it is made and checked by every command that opens it.

Why: a study's trials are only comparable when they train the same thing the same way.  Without a
record, ``tuner.study_name=other tuner.study_dir=studies/keep`` wrote a second study's outputs over
the first one's, and re-running a study with ``env=acrobot`` (or another backend, budget, objective
or search space) appended trials that scored on another scale beside the old ones.

The definition (:func:`definition`) is a flat mapping of dotted config keys: the agent, env, backend,
budget, objective (with ``tuner.n_seeds`` / ``tuner.aggregation``, which change the score's scale),
the warm start ``init_from`` when one is set (the model's path and SHA-256: every trial starts from
those weights) and the search space, each searched entry as its expression.  It is kept twice:

* in the study dir, ``study_identity.json`` with the study's name and storage (password hidden): a
  dir belongs to one study, so a command naming another study there is refused;
* in the storage, the study's user attribute ``identity``: drivers on several machines (PostgreSQL)
  each check it, whatever their study dir.

A command whose definition differs is refused in one line naming the first differing key, before
anything is written (``tuner.resume=force`` continues deliberately: the new definition is recorded
and the old one kept in the file's ``previous`` list).  A study under the default name
``<agent>_<env>`` in its default dir is the exception: a command that defines another study gets a
study of its own, ``<agent>_<env>-<digest of its definition>``, so the documentation's commands, run one
after another, each tune their own study and re-running any of them resumes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ..common.errors import ConfigError
from ..common.redact import scrub
from .storage import JOURNAL, describe, journal_path
from .study_schema import RESUME_MODES  # declared with the resume setting

__all__ = ["IDENTITY_FILE", "ATTR", "RESUME_MODES", "StudyIdentity", "definition", "storage_text",
           "default_variant", "read_record", "dir_owner", "model_identity"]

IDENTITY_FILE = "study_identity.json"
IDENTITY_LIMIT = 16 * 2**20  # an identity (or a study.json) is a few KB; a study.json holding many trials less than this
ATTR = "identity"  # the study's user attribute (optuna-dashboard shows it on the study page)
HOW = "start a new study with tuner.study_name=<new> or continue deliberately with tuner.resume=force"

# the config keys that define what a trial trains and how it is scored
DEFINING = ("agent.name", "env.id", "env.kwargs", "backend.name", "budget.steps", "budget.episodes",
            "budget.max_updates", "objective.source", "objective.last_k", "objective.criterion")


def definition(cfg: DictConfig, n_seeds: int, aggregation: str, searched: dict[str, str],
               tuning_seeds: Any = None, seed_order: str = "sequential") -> dict[str, Any]:
    """What defines a ``tuner=optuna`` study: :data:`DEFINING` read off ``cfg``, the settings that
    change a trial's score (seeds per trial and their aggregation), the warm start ``init_from`` when
    set (:func:`model_identity`), the seeds' order when interleaved (its trials report another curve to
    the pruner), and ``searched`` (the search space, ``search.values.<key>`` /
    ``search.groups.<group>`` -> its expression)."""
    out: dict[str, Any] = {}
    for key in DEFINING:
        value = OmegaConf.select(cfg, key, default=None)
        value = OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
        out[key] = scrub({key: value}, ())[key]  # env.kwargs.api_token: recorded (file, study attr) masked
    out["tuner.n_seeds"], out["tuner.aggregation"] = n_seeds, aggregation
    init = OmegaConf.select(cfg, "init_from", default=None)
    if init:  # recorded only when set, so studies made before init_from was recorded keep their identity
        out["init_from"] = model_identity(str(init))
    if tuning_seeds:  # recorded only when named, so studies made before tuner.seeds keep their identity
        out["tuner.seeds.tuning"] = [int(x) for x in tuning_seeds]
    if seed_order != "sequential":  # recorded only when interleaved: older studies keep their identity
        out["tuner.seed_order"] = seed_order
    out.update(searched)
    return out


def model_identity(value: str) -> str:
    """The warm start's weights as a study's identity records them: the file's absolute path and its
    SHA-256 (``<path> (sha256 <hex>)``), so that another model, or another file written over the same
    path, defines another study.  A missing file is a one-line ``ConfigError`` naming ``init_from``."""
    from ..config.schema import init_model_path

    path = init_model_path(value)
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise ConfigError(f"init_from: cannot read {path} ({exc.strerror or exc})") from None
    return f"{path} (sha256 {digest.hexdigest()})"


def storage_text(storage: str | None, study_dir: str) -> str:
    """The storage as the identity records it: ``journal.log`` for a journal inside the study dir and
    ``../journal.log`` for the one shared with the studies beside it (so studies moved elsewhere
    together are still the same studies), else the storage without its password
    (:func:`tuner.study.storage.describe` masks it; the mask is dropped too)."""
    path = journal_path(storage, study_dir)
    if path is not None:
        folder = os.path.abspath(study_dir)
        if os.path.dirname(os.path.abspath(path)) == folder:
            return os.path.basename(path)
        if os.path.abspath(path) == os.path.join(os.path.dirname(folder), JOURNAL):
            return f"../{JOURNAL}"
    # without the (masked) password: a URL whose password comes from PGPASSWORD or ~/.pgpass is the same
    return re.sub(r":\*\*\*@", "@", describe(storage, study_dir))


def read_record(study_dir: str) -> dict[str, Any] | None:
    """The study dir's ``study_identity.json`` (``None`` when there is none).  A file that cannot be
    read as one is one line: it is not silently replaced."""
    path = os.path.join(study_dir, IDENTITY_FILE)
    if not os.path.exists(path):
        return None
    from ..config.untrusted import UntrustedFileError, read_json

    try:
        record = read_json(path, limit=IDENTITY_LIMIT)
    except UntrustedFileError as exc:
        raise ConfigError(f"tuner.study_dir: cannot read {path} ({exc}); restore it or remove it to "
                          "let this command record the study again") from None
    if not isinstance(record, dict) or not isinstance(record.get("definition"), dict):
        raise ConfigError(f"tuner.study_dir: {path} is not a study identity (no 'definition')")
    return record


def dir_owner(study_dir: str) -> str | None:
    """The name of the study ``study_dir`` holds, by its records (``None``: none, or unreadable)."""
    try:
        return _owner(study_dir, read_record(study_dir))[0]
    except ConfigError:  # an identity file that is not one names no study
        return None


def _owner(study_dir: str, record: dict[str, Any] | None) -> tuple[str | None, str]:
    """The study that owns ``study_dir`` and the file that says so; studies made before identities
    were recorded are known by their ``study.json``."""
    if record is not None:
        return record.get("study_name"), IDENTITY_FILE
    from ..config.untrusted import UntrustedFileError, read_json

    path = os.path.join(study_dir, "study.json")
    try:
        found = read_json(path, limit=IDENTITY_LIMIT) if os.path.lexists(path) else None
    except UntrustedFileError:
        found = None
    name = found.get("study_name") if isinstance(found, dict) else None
    if name is None:
        return None, ""
    return (name if isinstance(name, str) else None), "study.json"


def differences(recorded: dict[str, Any] | None, current: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(key, recorded value, this command's value)`` for every key whose values differ (a key only
    one side has is compared with ``None``); none when nothing was recorded."""
    if recorded is None:
        return []
    keys = list(current) + [k for k in recorded if k not in current]
    return [(k, recorded.get(k), current.get(k)) for k in keys if recorded.get(k) != current.get(k)]


def _value(key: str, value: Any) -> str:
    if value is None and key == "tuner.seed_order":
        return "sequential"  # not recorded: the order every study made before the key used
    if value is None:
        return "(not searched)" if key.startswith("search.") else "(unset)"
    return value if isinstance(value, str) else json.dumps(value)


def digest(defn: dict[str, Any]) -> str:
    """Six hex digits that name a definition (the suffix of a default study's variant)."""
    return hashlib.sha256(json.dumps(defn, sort_keys=True, default=str).encode()).hexdigest()[:6]


def default_variant(study_name: str, study_dir: str, storage: str | None, base: str, resume: str,
                    defn: dict[str, Any]) -> tuple[str, str, str] | None:
    """``(name, dir, why)`` of this command's own study when it runs under the default name ``base``
    (``<agent>_<env>``) in the default dir ``studies/<base>`` with the default journal, and the study
    recorded there has another definition; ``None`` otherwise (then :class:`StudyIdentity` checks).
    The name is ``<base>-<digest>``: the same command finds the same study again."""
    if study_name != base or resume == "force" or os.path.normpath(study_dir) != os.path.join("studies", base):
        return None
    if storage_text(storage, study_dir) not in (JOURNAL, f"../{JOURNAL}"):  # a named storage: refused, not renamed
        return None
    record = read_record(study_dir)
    if record is None or record.get("study_name") != base:
        return None
    diffs = differences(record["definition"], defn)
    if not diffs:
        return None
    name = f"{base}-{digest(defn)}"
    key, old, new = diffs[0]
    why = (f"study {base!r} was made with {key} {_value(key, old)}, this command has {_value(key, new)}"
           f"{_more(diffs)}: this command tunes its own study {name!r}; continue {base!r} deliberately with "
           f"tuner.resume=force, or name a study with tuner.study_name")
    return name, os.path.join(os.path.dirname(os.path.normpath(study_dir)), name), why


def _more(diffs: list[Any]) -> str:
    return f" (and {len(diffs) - 1} more key{'s' if len(diffs) > 2 else ''})" if len(diffs) > 1 else ""


class StudyIdentity:
    """Checks a command against the identity recorded for its study, and records it.

    :param study_name: the study's name
    :param study_dir: its dir (where ``study_identity.json`` is kept)
    :param storage: the ``tuner.storage`` setting
    :param defn: this command's :func:`definition`
    :param resume: ``auto`` (refuse another definition) or ``force`` (continue with this one)
    """

    def __init__(self, study_name: str, study_dir: str, storage: str | None, defn: dict[str, Any],
                 resume: str = "auto") -> None:
        self.name, self.dir, self.defn, self.resume = study_name, os.path.abspath(study_dir), defn, resume
        self.storage = storage_text(storage, study_dir)
        self.forced: list[tuple[str, Any, Any]] = []

    def check_dir(self) -> None:
        """Before anything is created: the study dir belongs to no other study, and its study was
        recorded with this storage (another storage's study of the same name is another study).
        Another study's dir is refused even with ``tuner.resume=force``: its outputs would be
        overwritten by this study's."""
        record = read_record(self.dir)
        owner, source = _owner(self.dir, record)
        if owner is not None and owner != self.name:
            raise ConfigError(f"tuner.study_dir: {self.dir} holds study {owner!r} (its {source}); study "
                              f"{self.name!r} needs a dir of its own: leave tuner.study_dir unset "
                              f"(studies/{self.name}) or name a new dir")
        if record is not None and record.get("storage") != self.storage and self.resume != "force":
            raise ConfigError(f"tuner.storage: study {self.name!r} in {self.dir} was made with storage "
                              f"{record.get('storage')}, this command has {self.storage}; {HOW}")

    def check_kept(self, study: Any, shared: bool, where: str) -> None:
        """A study found in the shared journal (``shared``, at ``where``) with trials, whose dir holds no
        record of it: the dir was removed, most likely to start afresh, which no longer removes the
        study's trials.  Refused in one line that says how to do either, unless ``tuner.resume=force``."""
        if not shared or self.resume == "force" or _owner(self.dir, read_record(self.dir))[0] == self.name:
            return
        n = len(study.get_trials(deepcopy=False))
        if n:
            raise ConfigError(f"tuner.study_dir: study {self.name!r} has {n} trial{'s' * (n != 1)} in {where} but "
                              f"{self.dir} holds no record of it (removed?); start it afresh with: optuna "
                              f"delete-study --storage {where} --storage-class JournalFileBackend --study-name "
                              f"{self.name}, or continue it with tuner.resume=force")

    def check(self, recorded: dict[str, Any] | None) -> None:
        """This command's definition against the study's: ``recorded`` (its ``identity`` attribute
        in the storage) or, when the storage holds none, the study dir's file.  Raises a one-line
        :class:`ConfigError` naming the first differing key unless ``tuner.resume=force``.  A stored
        record that is not a mapping (a hand-edited storage) is refused as the file's is, unless
        forced: then this command's definition is recorded over it."""
        if recorded is not None and not isinstance(recorded, dict):
            if self.resume != "force":
                raise ConfigError(f"identity: study {self.name!r} holds an identity record that is not one "
                                  f"({type(recorded).__name__}); {HOW}")
            recorded = None
        if recorded is None:
            record = read_record(self.dir)
            recorded = record["definition"] if record and record.get("study_name") == self.name else None
        diffs = differences(recorded, self.defn)
        if diffs and self.resume != "force":
            key, old, new = diffs[0]
            raise ConfigError(f"{key}: study {self.name!r} was made with {_value(key, old)}, this command has "
                              f"{_value(key, new)}{_more(diffs)}; {HOW}")
        self.forced = diffs

    def record(self, study: Any) -> None:
        """Record the definition in the storage and the study dir (after every check passed); a
        forced change says what it changed, and the file keeps the definition it replaced."""
        if self.forced:
            changes = ", ".join(f"{k} {_value(k, old)} -> {_value(k, new)}" for k, old, new in self.forced)
            print(f"warning: tuner.resume=force: study {self.name!r} continues with {changes}",
                  file=sys.stderr, flush=True)
        if study.user_attrs.get(ATTR) != self.defn:
            study.set_user_attr(ATTR, self.defn)
        old = read_record(self.dir)
        if old is not None and old.get("study_name") != self.name:
            return  # check_dir refused this already; never overwrite another study's record
        new = {"study_name": self.name, "storage": self.storage, "definition": self.defn,
               "made": (old or {}).get("made") or time.strftime("%Y-%m-%dT%H:%M:%S"),
               "previous": list((old or {}).get("previous") or [])}
        if old is not None and (old["definition"] != self.defn or old.get("storage") != self.storage):
            new["previous"].append({"storage": old.get("storage"), "definition": old["definition"],
                                    "replaced": time.strftime("%Y-%m-%dT%H:%M:%S")})
        if old == new:
            return  # a plain resume leaves the file as it was
        path = os.path.join(self.dir, IDENTITY_FILE)
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(new, f, indent=2, sort_keys=True, default=str)
            f.write("\n")
        os.replace(tmp, path)  # a killed write never leaves half a record
