"""The finders from a config: ``note-tune tuner=lr_finder|opt_finder|parallel_finder ...``.

Each candidate's config is composed from the command's overrides (plus ``optimizer=<name>`` for
OptFinder, or the candidate's own overrides for ParallelFinder) and trained in a fresh process, one
trial each, in a study of the same storages as ``tuner=optuna``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import optuna
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ..common.errors import ConfigError, error_line
from ..common.messages import TrialSpec
from ..config.schema import validate
from ..logs.results import write_json
from ..study.identity import ATTR, StudyIdentity
from ..study.storage import StudyLock, describe, make_storage
from ..study.study_schema import StudyFiles, TrialLimits, check_fields, redefault
from .lr import LRFinder
from .parallel import summarise_candidates
from .runner import Candidate, CandidateMismatch, failure, run_candidates

__all__ = ["FinderSettings", "run_finder"]

Composer = Callable[[list[str]], DictConfig]


@dataclass
class FinderSettings(TrialLimits, StudyFiles):
    """``tuner=lr_finder|opt_finder|parallel_finder``: the shared study settings
    (:mod:`tuner.study.study_schema`: study_name, storage, resume, study_dir, n_jobs, trial_timeout,
    trial_memory_mb) and the finders' own."""

    # null: the finder's default (opt_finder: 1; parallel_finder: min(candidates, CPU cores))
    n_jobs: Optional[int] = redefault(TrialLimits, "n_jobs", None)
    name: str = "lr_finder"
    episodes: int = 77
    metrics: str = "reward"
    # lr_finder
    N: int = 77
    window_size: int = 7
    start_lr: float = 1e-4
    end_lr: float = 1.0
    per: str = "episode"
    # opt_finder: optimizer config names; parallel_finder: one override list per candidate
    optimizers: list[str] = field(default_factory=lambda: ["adam", "adamw", "adamax", "sgd", "rmsprop"])
    candidates: list[list[str]] = field(default_factory=list)


def _settings(node: Any) -> FinderSettings:
    try:
        plain = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
        s: FinderSettings = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(FinderSettings), plain))
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or "tuner"
        raise ConfigError(f"tuner.{key}: {str(getattr(exc, 'msg', exc)).splitlines()[0]}") from None
    checks = [(s.metrics in ("reward", "loss"), f"tuner.metrics: {s.metrics!r} must be reward or loss"),
              (s.episodes > 0, f"tuner.episodes: must be > 0, got {s.episodes}"),
              (0 < s.start_lr < s.end_lr, f"tuner.start_lr/end_lr: need 0 < start_lr < end_lr, got {s.start_lr}, {s.end_lr}"),
              (s.N > 0, f"tuner.N: must be > 0, got {s.N}"),
              (s.per in ("update", "episode"), f"tuner.per: {s.per!r} must be update or episode"),
              (s.name != "parallel_finder" or len(s.candidates) > 0, "tuner.candidates: parallel_finder needs at least one candidate")]
    check_fields(s, "tuner")  # the shared keys (tuner.n_jobs, tuner.storage, ...) as every study checks them
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)
    return s


def _spec(cfg: DictConfig, episodes: int, finder: dict[str, Any]) -> TrialSpec:
    cfg = cfg.copy()
    cfg.budget.episodes, cfg.budget.steps = episodes, None  # before resolving: ${budget_fraction:...}
    plain = OmegaConf.to_container(cfg, resolve=True)
    plain["tuner"] = {"name": "none"}
    plain["logger"]["p"] = 0
    return TrialSpec(trial=None, backend=plain["backend"]["name"], run_dir="", configs=[plain], finder=finder,
                     report_every=1)


def _candidate(compose: Composer, overrides: list[str], params: dict[str, Any], episodes: int,
               finder: dict[str, Any], extra: list[str] = ()) -> Candidate:
    keys = {o.split("=", 1)[0].lstrip("+~") for o in extra}
    merged = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") not in keys] + list(extra)
    try:
        composed = compose(merged)
    except Exception as exc:  # noqa: BLE001 - Hydra's multi-line composition errors, as one line
        where = f"candidate {' '.join(extra)}: " if extra else ""
        raise ConfigError(f"tuner.candidates: {where}{error_line(exc)}") from None
    cfg = validate(composed, check_env=False)
    return Candidate(params, _spec(cfg, episodes, finder))


def run_finder(cfg: DictConfig, compose: Composer, overrides: list[str]) -> dict[str, Any]:
    """Run the finder ``cfg.tuner`` selects; writes ``<name>.json`` (and plots) in the study dir,
    then the study report (``report/``, and the wandb study run with ``logger=wandb``)."""
    s = _settings(cfg.tuner)
    folder = os.path.abspath(s.study_dir)
    identity = StudyIdentity(s.study_name, folder, s.storage, _definition(cfg, s), s.resume)
    identity.check_dir()  # another study's dir: refused before anything is made in it
    os.makedirs(folder, exist_ok=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    direction = "maximize" if s.metrics == "reward" else "minimize"
    # NopPruner: every candidate must train its full budget.  Optuna's default MedianPruner would
    # prune the 6th and later trials of a study (a re-run, or > 5 candidates) that fall below the
    # median, and the finder would count them as failures.
    study = optuna.create_study(study_name=s.study_name, storage=make_storage(s.storage, folder),
                                load_if_exists=True, direction=direction, sampler=optuna.samplers.RandomSampler(),
                                pruner=optuna.pruners.NopPruner())
    identity.check(study.user_attrs.get(ATTR))
    identity.record(study)
    study.set_user_attr("finder", s.name)
    storage_desc = describe(s.storage, folder)
    print(f"{s.name} study {s.study_name!r} in {folder} (storage {storage_desc})", flush=True)
    # the candidates are composed without `tuner=<finder>`, whose defaults choose the logger (wandb):
    # keep the finder's logger unless the command line chose one
    if not any(o.split("=", 1)[0].lstrip("+~") == "logger" for o in overrides):
        overrides = [f"logger={cfg.logger.name}", *overrides]
    runner = {"lr_finder": _lr, "opt_finder": _opt, "parallel_finder": _parallel}[s.name]
    try:
        out = runner(s, study, folder, compose, overrides)
    except CandidateMismatch as exc:  # before any trial was created: the study is unchanged
        raise ConfigError(f"tuner.study_name: {exc}") from None
    except NoCurve as exc:  # the trials ran and are kept; their settings gave no comparison
        _report(study, folder, storage_desc, cfg)
        raise ConfigError(f"tuner.{exc}") from None
    except ConfigError:  # a bad candidate config: nothing ran, nothing to report
        raise
    except KeyboardInterrupt:  # Ctrl-C / SIGTERM: the runner killed and failed the running trials
        _report(study, folder, storage_desc, cfg)  # the finished candidates' report (no <name>.json)
        raise
    except Exception:
        _report(study, folder, storage_desc, cfg)  # e.g. every candidate failed: report.md has the reasons
        raise
    from ..common.redact import scrub

    write_json(os.path.join(folder, f"{s.name}.json"), scrub(out))  # failure reasons may quote a URL
    _report(study, folder, storage_desc, cfg)
    from ..common.interrupts import raise_held

    raise_held()  # a signal held while the report was written ends the command now (130 / 143)
    return out


def _definition(cfg: DictConfig, s: FinderSettings) -> dict[str, Any]:
    """What defines a finder study (see :mod:`tuner.study.identity`): the finder, env and backend, and the
    agent (except for ParallelFinder, whose candidates choose theirs).  Its other settings may change
    between runs: each run compares only its own candidates."""
    defn = {"tuner.name": s.name, "env.id": cfg.env.id, "backend.name": cfg.backend.name}
    if s.name != "parallel_finder":
        defn["agent.name"] = cfg.agent.name
    return defn


def _report(study: Any, folder: str, storage_desc: str, cfg: DictConfig) -> None:
    from ..common.interrupts import held, keep
    from ..report.report import report_study  # matplotlib, and wandb only with logger=wandb

    with held():  # a first Ctrl-C / SIGTERM waits until the report is written
        report_study(study, folder, storage_desc, OmegaConf.to_container(cfg, resolve=True))
        n = len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
        keep(f"the report of {n} complete candidates written to {folder}/report")


def _lr(s: FinderSettings, study: Any, folder: str, compose: Composer, overrides: list[str]) -> dict[str, Any]:
    finder = {"kind": "lr", "start_lr": s.start_lr, "end_lr": s.end_lr, "N": s.N, "window_size": s.window_size,
              "per": s.per, "metrics": s.metrics, "episodes": s.episodes}
    trial = run_candidates(study, folder, [_candidate(compose, overrides, {}, s.episodes, finder)],
                           trial_timeout=s.trial_timeout, user_attrs={"finder": finder}, lock=_lock(s, folder),
                           memory_mb=s.trial_memory_mb)[0]
    if failure(trial):
        raise RuntimeError(f"LR range test failed: {failure(trial)}")
    lr = LRFinder(agent=None)
    lr.study_dir = folder
    try:
        suggestion = lr.load(trial.user_attrs["run_dir"], s.metrics, study, trial.number, finder)
    except ValueError as exc:  # a setting that gives no curve: name it (finder.npz stays for a look)
        raise NoCurve(str(exc)) from None
    # the whole curve: the suggestion may lie among the first lrs (Note_rl skipped 10 by default)
    plots = [lr.plot_reward(n_skip_beginning=0, n_skip_end=0),
             lr.plot_reward_change(n_skip_beginning=0, n_skip_end=0, y_lim=None)] if lr.curve else []
    if lr.step_losses:
        plots.append(lr.plot_loss())
    with open(os.path.join(folder, "lr_range.txt"), "w") as f:
        f.write(suggestion["search_override"] + "\n")
    if suggestion["lr_reached"] < s.end_lr * (1 - 1e-6):
        print(f"note: the lr reached {suggestion['lr_reached']:.3g} of end_lr={s.end_lr:g} before "
              f"tuner.episodes={s.episodes} ran out; raise tuner.episodes to test the whole range", flush=True)
    print(f"suggested lr {suggestion['suggested_lr']:.3g}, interval {suggestion['interval']}\n"
          f"search it next: note-tune tuner=optuna '{suggestion['search_override']}'", flush=True)
    return dict(suggestion, trial=trial.number, plots=plots, lrs=lr.lrs, episode_lrs=lr.episode_lrs,
                normalized_rewards=lr.normalized, losses=lr.step_losses)


def _opt(s: FinderSettings, study: Any, folder: str, compose: Composer, overrides: list[str]) -> dict[str, Any]:
    finder = {"kind": "episodes", "metrics": s.metrics}
    candidates = [_candidate(compose, overrides, {"optimizer": name}, s.episodes, finder, [f"optimizer={name}"])
                  for name in s.optimizers]
    trials = run_candidates(study, folder, candidates, s.n_jobs or 1, s.trial_timeout, {"finder": finder},
                            lock=_lock(s, folder), memory_mb=s.trial_memory_mb)
    logs = _compared(trials, s.metrics)
    table = [{"optimizer": name, "mean_reward": _mean(t.user_attrs.get("rewards")),
              "mean_loss": _mean([v for v in t.user_attrs.get("losses", []) if v is not None]),
              "failed": failure(t)} for name, t in zip(s.optimizers, trials)]
    best = s.optimizers[logs["best_index"]]
    print(f"best optimizer: {best}", flush=True)
    return {"best_optimizer": best, "best_index": logs["best_index"], "best_reward": logs["best_reward"],
            "best_loss": logs["best_loss"], "table": table}


def _parallel(s: FinderSettings, study: Any, folder: str, compose: Composer, overrides: list[str]) -> dict[str, Any]:
    finder = {"kind": "episodes", "metrics": s.metrics}
    candidates = [_candidate(compose, overrides, {"candidate": i, "label": " ".join(extra)}, s.episodes,
                             finder, list(extra)) for i, extra in enumerate(s.candidates)]
    jobs = s.n_jobs or min(len(candidates), os.cpu_count() or 1)
    trials = run_candidates(study, folder, candidates, jobs, s.trial_timeout, {"finder": finder},
                            lock=_lock(s, folder), memory_mb=s.trial_memory_mb)
    # best_config: the best candidate's fully resolved config (what a plain run of it would train)
    logs = _compared(trials, s.metrics, configs=[c.spec.configs[0] for c in candidates])
    logs["best_opt"] = s.candidates[logs["best_index"]]
    print(f"best candidate: {logs['best_index']} {logs['best_opt']}", flush=True)
    return logs


class NoCurve(Exception):
    """The finder's trials ran, but its settings gave nothing to compare (the message names the
    setting, without the ``tuner.`` prefix)."""


def _compared(trials: list[Any], metrics: str, configs: Any = None) -> dict[str, Any]:
    try:
        return summarise_candidates(trials, metrics, configs=configs)
    except ValueError as exc:
        raise NoCurve(str(exc)) from None


def _lock(s: FinderSettings, folder: str) -> StudyLock:
    return StudyLock(s.storage, folder, s.study_name)


def _mean(values: Any) -> float | None:
    values = [v for v in (values or []) if v is not None]
    return float(sum(values) / len(values)) if values else None
