"""The settings every kind of study shares, each declared once: its type, default, check and doc.

``tuner=optuna`` (:class:`tuner.study.settings.TunerSettings`), ``tuner=pbt``
(:class:`tuner.study.pbt.PbtSettings`), the finders (:class:`tuner.finders.config.FinderSettings`) and
the Hydra sweeper (:class:`hydra_plugins.note_optuna_sweeper.config.NoteOptunaSweeperConf`) compose their
settings classes from the groups below and add only their own keys.  A key such as ``n_jobs`` or
``trial_timeout`` is a field here, with its check and doc in the field's metadata; :func:`check_fields`
runs the checks of any settings object and names the key as the user typed it (``tuner.n_jobs``,
``hydra.sweeper.n_jobs``).  A class whose key means something more (the sweeper's ``study_name``,
``null``: a default name) takes the field with another default through :func:`redefault`, keeping
its check and doc.

The YAML side: ``conf/tuner/common/study.yaml`` and ``conf/tuner/common/driver.yaml`` hold the same
defaults for the ``tuner=`` options (tests/tuner/study/test_study_schema.py keeps them equal to these).

Hydra imports the sweeper's config module at start-up, so this one imports nothing heavy (no optuna):
the storage check imports it when it runs.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, Callable, Mapping, Optional

from ..common.errors import ConfigError

__all__ = ["SAMPLERS", "PRUNERS", "RESUME_MODES", "StudyPlace", "StudyFiles", "TrialLimits", "StudySearch",
           "setting", "redefault", "check_fields", "check_value", "aggregation_ok", "run_budget_problem"]

SAMPLERS = ("tpe", "random", "cmaes", "gp", "grid", "qmc")
SEED_ORDERS = ("sequential", "interleaved")
PRUNERS = ("median", "percentile", "successive_halving", "hyperband", "threshold", "wilcoxon", "none")
#: an existing study defined differently than the command: auto refuses, force continues it
RESUME_MODES = ("auto", "force")

#: a check: the problem with a value, worded after ``<key>: `` (None: accepted); it may also raise
#: ConfigError itself when the message must name another key (the storage's: $OPTUNA_STORAGE)
Check = Callable[[Any], Optional[str]]


def setting(default: Any = MISSING, *, doc: str, check: Check | None = None,
            factory: Callable[[], Any] | None = None) -> Any:
    """A settings field: its default (or ``factory``), its ``doc`` and its ``check``."""
    meta = {"doc": doc, "check": check}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def redefault(cls: type, name: str, default: Any) -> Any:
    """``cls``'s field ``name`` with another default, its doc and check kept (re-annotate the type in
    the subclass when the new default needs a wider one, e.g. ``Optional[int]`` for ``None``)."""
    base: Field = {f.name: f for f in fields(cls)}[name]
    return field(default=default, metadata=dict(base.metadata))


def check_value(cls: type, name: str, value: Any, prefix: str) -> None:
    """Run the check of ``cls``'s field ``name`` on ``value`` (a value read off another form of the key,
    such as the sweeper's sampler node), naming ``<prefix>.<name>``."""
    check = {f.name: f for f in fields(cls)}[name].metadata.get("check")
    problem = check(value) if check else None
    if problem:
        raise ConfigError(f"{prefix}.{name}: {problem}")


def check_fields(settings: Any, prefix: str) -> None:
    """Run the check of every field of ``settings`` (a dataclass instance), in declaration order;
    the first problem is a :class:`ConfigError` naming ``<prefix>.<key>``."""
    for f in fields(settings):
        check = f.metadata.get("check")
        if check is None:
            continue
        try:
            problem = check(getattr(settings, f.name))
        except ConfigError as exc:  # a check that named its own key (the storage's): say the caller's
            text = str(exc)  # (an error about $OPTUNA_STORAGE keeps naming the variable)
            if prefix == "tuner" or not text.startswith("tuner."):
                raise
            raise ConfigError(f"{prefix}.{f.name}" + text[text.index(":"):]) from None
        if problem:
            raise ConfigError(f"{prefix}.{f.name}: {problem}")


# -- checks --------------------------------------------------------------------------------------

def _one_of(choices: tuple[str, ...]) -> Check:
    return lambda v: None if v in choices else f"{v!r} is not one of {', '.join(choices)}"


def _name_or_node(kind: str, names: tuple[str, ...]) -> Check:
    """A shorthand among ``names`` or a ``{_target_: ...}`` node (whether the node builds is checked
    where optuna is imported: :func:`tuner.study.optimisers.check_optimisers`)."""
    def check(v: Any) -> str | None:
        if isinstance(v, str):
            return None if v in names else (f"{v!r} is not one of {', '.join(names)} "
                                            f"(or give a node: tuner.{kind}={{_target_: optuna.{kind}s.<Class>, ...}})")
        if isinstance(v, Mapping) and isinstance(v.get("_target_"), str):
            return None
        return f"{v!r} is neither a name ({', '.join(names)}) nor a {{_target_: ...}} node"
    return check


def _positive(v: Any) -> str | None:
    return None if v is None or v > 0 else f"must be > 0, got {v}"


def _at_least_0(v: Any) -> str | None:
    return None if v is None or v >= 0 else f"must be >= 0, got {v}"


def _positive_bare(v: Any) -> str | None:  # the words these keys' errors have always had
    return None if v is None or v > 0 else "must be > 0"


def _positive_finite(v: Any) -> str | None:
    return None if v is None or (math.isfinite(v) and v > 0) else f"must be a finite number > 0, got {v}"


def _study_name(v: Any) -> str | None:
    if v is None:  # the sweeper's: a default name is chosen
        return None
    if not v:
        return "must not be empty"
    # the study dir is derived from the name: it must stay inside studies/
    if any(c in v for c in "/\\\0") or v.startswith("."):
        return f"{v!r} must be a plain name (no '/', '\\' or leading '.')"
    return None


def _storage(v: Any) -> None:
    """Raises the storage's own one-line error (it names ``$OPTUNA_STORAGE`` when the value came from it)."""
    from .storage import check_storage  # optuna: imported when a study's settings are checked

    check_storage(v)  # before the study dir is created or anything is connected to


def _resume(v: Any) -> str | None:
    return None if v in RESUME_MODES else f"{v!r} must be {' or '.join(RESUME_MODES)}"


def run_budget_problem(max_runs: int | None, runs_per_trial: int) -> str | None:
    """What is wrong with a ``max_runs`` budget for trials of ``runs_per_trial`` seeds (None: nothing),
    worded after ``<key>: ``: a budget below one trial would start none."""
    if max_runs is not None and max_runs < runs_per_trial:
        return f"must hold one trial's {runs_per_trial} seed run(s) at least, got {max_runs}"
    return None


def aggregation_ok(how: str) -> bool:
    """``mean``, ``median``, ``min``, ``lcb`` (the mean less one standard error) or ``q<percent>`` with a
    percent from 0 to 50 (a *lower* quantile)."""
    if how in ("mean", "median", "min", "lcb"):
        return True
    try:
        return how.startswith("q") and 0.0 <= float(how[1:]) <= 50.0 and math.isfinite(float(how[1:]))
    except ValueError:
        return False


def _aggregation(v: Any) -> str | None:
    return None if aggregation_ok(v) else f"{v!r} must be mean, median, min, lcb (the mean less one standard error) or a lower quantile q<percent> (q25)"


# -- the groups ----------------------------------------------------------------------------------

@dataclass
class StudyPlace:
    """Which study: every kind of study has these."""

    study_name: str = setting("study", check=_study_name, doc=(
        "the study's name in its storage (each tuner= option's YAML gives its default, e.g. <agent>_<env>)"))
    storage: Optional[str] = setting(None, check=_storage, doc=(
        "null: Optuna's journal file journal.log in the study dir's parent (studies/journal.log, shared by "
        "the studies there; a Hydra sweep: a journal of its own in its sweep dir); or a journal path, "
        "sqlite:///path.db, postgresql://user:pw@host/db (null also reads $OPTUNA_STORAGE)"))
    resume: str = setting("auto", check=_resume, doc=(
        "an existing study defined differently than the command (tuner/study/identity.py): auto refuses it, "
        "force continues it with the command's definition"))


@dataclass
class StudyFiles(StudyPlace):
    """A study with a folder of its own (``tuner=`` options; a sweep writes to its sweep dir)."""

    study_dir: str = setting("studies/study", doc="where study.json, the report and the trials' run dirs go")


@dataclass
class TrialLimits:
    """How a study's trials run: each in a fresh process, this many at once, each within these bounds."""

    n_jobs: int = setting(1, check=_positive, doc="trial processes at once on this machine")
    trial_timeout: Optional[float] = setting(None, check=_positive_bare, doc=(
        "seconds per trial; the trial is killed and marked FAIL (null: no limit)"))
    trial_memory_mb: Optional[int] = setting(None, check=_positive_bare, doc=(
        "MiB a trial may allocate beyond its start-up size; more raises MemoryError -> FAIL (null: no cap)"))


@dataclass
class StudySearch:
    """How a study that samples its trials searches (``tuner=optuna``, ``tuner=pbt``, the sweeper)."""

    sampler: Any = setting("tpe", check=_name_or_node("sampler", SAMPLERS), doc=(
        "Optuna's sampler: " + ", ".join(SAMPLERS) + ", or a {_target_: optuna.samplers.<Class>, ...} node"))
    sampler_seed: Optional[int] = setting(None, check=_at_least_0, doc="the sampler's seed (null: random)")
    n_startup_trials: int = setting(5, check=_at_least_0, doc=(
        "trials sampled at random before the sampler models (and the median / percentile pruners prune)"))
    pruner: Any = setting("median", check=_name_or_node("pruner", PRUNERS), doc=(
        "Optuna's pruner: " + ", ".join(PRUNERS) + ", or a {_target_: optuna.pruners.<Class>, ...} node"))
    n_warmup_steps: int = setting(2, check=_at_least_0, doc="intermediate reports before a trial can be pruned")
    percentile: float = setting(25.0, check=lambda v: None if 0.0 <= v <= 100.0 else
                                f"must be in [0, 100], got {v}", doc="pruner=percentile's percentile")
    threshold_lower: Optional[float] = setting(None, check=lambda v: None if v is None or math.isfinite(v) else
                                               f"must be a finite number, got {v}",
                                               doc="pruner=threshold's lower bound (required by it)")
    direction: str = setting("maximize", check=lambda v: None if v in ("maximize", "minimize") else
                             f"{v!r} must be maximize or minimize", doc="maximize or minimize the trials' score")
    n_trials: int = setting(20, check=_positive, doc=(
        "finished (complete or pruned) trials the study should reach; re-running the command resumes"))
    max_failures: Optional[int] = setting(None, check=_at_least_0, doc=(
        "stop after this many failed trials (null: n_trials)"))
    # the AutoRL protocol counts a budget in full runs x seeds: a trial pruned after 2 of its 5 seeds
    # used 2 runs, so the 3 it saved go to more trials (n_trials caps them too)
    max_runs: Optional[int] = setting(None, check=_positive_bare, doc=(
        "the study's budget in training runs (null: no cap): every seed a trial trains counts one, a "
        "pruned seed too; a trial starts only if all its seeds fit"))
    # CPU time is the budget the AutoRL protocol compares optimisers at; unlike tuner.timeout it does not
    # stretch with what else the machine runs, and a run that costs more per env step counts more
    max_cpu_s: Optional[float] = setting(None, check=_positive_finite, doc=(
        "the study's budget in CPU seconds of its trial processes (null: no cap): a trial starts while the "
        "CPU committed (running trials estimated, at least the finished trials' median) plus half that "
        "median is below it, and the sampled config's own predicted CPU must fit the same way (else it "
        "waits in the study); the running ones finish"))
    report_every: int = setting(5, check=_positive, doc=(
        "episodes between intermediate reports (pruning points) with objective.source=train"))
    n_seeds: int = setting(1, check=lambda v: None if 0 < v <= 1000 else f"must be from 1 to 1000, got {v}",
                           doc="seeds per trial (seed, seed + 1, ...), aggregated by `aggregation`")
    aggregation: str = setting("mean", check=_aggregation, doc=(
        "mean, median, min, lcb (the mean less one standard error) or a lower quantile q<percent> such as "
        "q25 (min, lcb and q: risk-averse)"))
    # in turns, the pruner reads the trial's aggregate objective after every round instead of one seed's
    # curve at a time, and stops all the trial's seeds at once
    seed_order: str = setting("sequential", check=lambda v: None if v in SEED_ORDERS else
                              f"{v!r} must be sequential or interleaved", doc=(
        "how a trial trains its n_seeds seeds: sequential (one after another) or interleaved (in turns, "
        "each in its own process; after each round of intermediate reports the pruner hears the seeds' "
        "scores combined by `aggregation`)"))
    preload: bool = setting(True, doc=(
        "start torch trials from a forkserver that has imported torch (fresh process per trial, no import cost)"))
    # trial 0 of a new study plays the config's own values of the searched parameters
    enqueue_defaults: bool = setting(True, doc=(
        "a new study's trial 0 uses the config's own values of the searched parameters (not with sampler=grid)"))
    enqueue: Optional[list[dict[str, Any]]] = setting(None, doc=(
        "parameter sets to try first, e.g. [{optimizer.lr: 1e-3, agent.gamma: 0.99}] (Optuna's enqueue_trial)"))
