"""The sweeper: ask Optuna, compose each trial's job config, run it in a fresh process.

Command-line sweep overrides (``key=interval(...)``, ``choice(...)``, ``range(...)``,
``tag(log, ...)``) and ``hydra.sweeper.params`` form the search space (see :mod:`tuner.config.search`);
plain overrides are fixed for every trial.  Trials run through the same trial runner as
``tuner=optuna`` (:class:`tuner.study.runner.TrialRunner`: zombie trials of dead sweepers, ``n_seeds``,
memory caps, timeouts, process groups): non-blocking - up to ``n_jobs`` run at once and each
finished trial frees its slot immediately - and prunable.  The objective is the
job's ``result.json`` value (mean return of the last ``objective.last_k`` episodes).  Trials log
to wandb (offline) unless the command line selects a logger (``hydra.sweeper.logger``).  At the end
``optimization_results.yaml`` (best params and value) is written in the sweep dir, and the study
report (:func:`tuner.report.report.report_study`) in ``<sweep dir>/report/`` (plus a wandb run of
``job_type=study`` when the trials logged to wandb).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

from .config import NoteOptunaSweeperConf

if TYPE_CHECKING:  # Hydra imports every plugin module at start-up: keep this one light
    import optuna

    from tuner.common.messages import TrialSpec
    from tuner.config.search import Param

__all__ = ["NoteOptunaSweeper"]


class NoteOptunaSweeper(Sweeper):
    """Hydra ``Sweeper`` running an Optuna study (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        self.conf: NoteOptunaSweeperConf = OmegaConf.to_object(
            OmegaConf.merge(OmegaConf.structured(NoteOptunaSweeperConf), kwargs))
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self._trial_config: dict[str, Any] | None = None  # a launched trial's config (logger of the report)
        self._base: DictConfig | None = None  # the job config of the fixed overrides (validated)
        self._searched: dict[str, str] = {}  # search.values.<key> -> its sweep expression (the identity)
        self._space_params: list[Any] = []

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.hydra_context = hydra_context
        self.config = config

    # -- search space ------------------------------------------------------------------------
    def _space(self, arguments: list[str]) -> tuple[list["Param"], list[str]]:
        from tuner.config.search import parse_space

        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        values: dict[str, Any] = {}
        fixed: list[str] = []
        for override in parser.parse_overrides(arguments):
            if override.is_sweep_override():
                values[override.get_key_element()] = override.input_line.split("=", 1)[1]
            else:
                fixed.append(override.input_line)
        if self.conf.logger and not any(o.split("=", 1)[0].lstrip("+~") == "logger" for o in fixed):
            fixed.insert(0, f"logger={self.conf.logger}")
        for key, expr in self.conf.params.items():
            values.setdefault(key, expr)
        # held to the job config's keys and the schema's bounds, as tuner=optuna's search is
        self._base = self._job_config(fixed)
        space = parse_space({"values": _nest(values)}, self._base)
        self._space_params = space
        self._searched = {f"search.values.{k}": str(v) for k, v in sorted(values.items())}
        return space, fixed

    def _job_config(self, overrides: list[str]) -> DictConfig:
        """The job config of the sweep's fixed overrides, validated (no env check: no trial yet)."""
        from tuner.config.schema import validate

        job = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        with open_dict(job):
            del job["hydra"]
        return validate(job, check_env=False)

    # -- the sweep ---------------------------------------------------------------------------
    def sweep(self, arguments: list[str]) -> dict[str, Any]:
        import optuna

        from tuner.config.search import distributions
        from tuner.config.search_cost import cost_base, seconds_with
        from tuner.study.outputs import record_optimiser
        from tuner.study.runner import RunLimits, TrialRunner, ask_within, why_full
        from tuner.study.settings import TunerSettings, make_pruner, make_sampler
        from tuner.study.storage import StudyLock, make_storage, own_journal

        from tuner.common.redact import protect

        sweep_dir = os.path.abspath(self.config.hydra.sweep.dir)
        # the task function never runs in this process (trials are fresh processes): mask the storage's
        # password (and the config's credentials) in sys.argv, which wandb records and trial processes
        # inherit, before any trial starts, and remember them for every file and line written below
        protect({"storage": self.conf.storage, "config": OmegaConf.to_container(self.config, resolve=False)},
                [sweep_dir])
        from tuner.common.errors import ConfigError

        try:
            self._check_settings()
            space, fixed = self._space(arguments)
        except ConfigError as exc:  # one line and exit 2, as the app's own checks (not Hydra's trace)
            _refuse(exc)
        # a sweep's journal is its own (not shared with the sweeps beside it): its default name repeats
        self._storage = own_journal(self.conf.storage, sweep_dir)
        made = not os.path.exists(sweep_dir)
        os.makedirs(sweep_dir, exist_ok=True)  # after the checks: a refused sweep leaves no folder
        name = self.conf.study_name or self._default_name(sweep_dir)
        sampler, sampler_seed, startup = sampler_choice(self.conf)
        settings = TunerSettings(sampler=sampler, sampler_seed=sampler_seed,
                                 n_startup_trials=startup, pruner=self.conf.pruner,
                                 n_warmup_steps=self.conf.n_warmup_steps, percentile=self.conf.percentile,
                                 threshold_lower=self.conf.threshold_lower)
        lock = StudyLock(self._storage, sweep_dir, name)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        try:
            with lock:
                storage = make_storage(self._storage, sweep_dir)
                try:  # an existing study is checked before anything is written to its storage
                    self._check_identity(optuna.load_study(study_name=name, storage=storage), sweep_dir)
                except KeyError:  # a new study
                    pass
                study = optuna.create_study(study_name=name, storage=storage, sampler=make_sampler(settings, space),
                                            pruner=make_pruner(settings), direction=self.conf.direction,
                                            load_if_exists=True)
                self._record_identity(study)
                record_optimiser(study, self.conf, "hydra.sweeper", sampler, startup)
                self._enqueue(study, space, sampler)
        except Exception as exc:  # noqa: BLE001 - no server, wrong password, missing database...
            from tuner.study.storage import describe, root_cause

            if made and not os.listdir(sweep_dir):
                os.rmdir(sweep_dir)
            _refuse(exc if isinstance(exc, ConfigError) else
                    f"hydra.sweeper.storage: cannot open {describe(self._storage, sweep_dir)}: {root_cause(exc)}")
        c = self.conf
        limits = RunLimits(n_jobs=c.n_jobs, trial_timeout=c.trial_timeout, preload=c.preload, blocking=c.blocking,
                           max_failures=c.max_failures if c.max_failures is not None else c.n_trials)
        from tuner.study.progress import StudyProgress

        # one line per finished trial off a terminal (a log file, CI), a bar on one
        progress = StudyProgress(study, c.n_trials, max_cpu_s=c.max_cpu_s)
        from tuner.common.interrupts import held, keep, raise_held
        from tuner.report.report import report_study
        from tuner.study.storage import describe

        cost_of = seconds_with(cost_base(self._base))  # a sampled config's estimate (max_cpu_s's check)

        full = why_full(study.get_trials(deepcopy=False), c.n_trials, None, c.max_runs, c.n_seeds, "hydra.sweeper",
                        c.max_cpu_s, cost_of)
        if full is not None:  # a re-run of a finished sweep says why it runs nothing
            print(f"note: study {name!r} already holds {full[0]}: no trial to run; {full[1]}, or sweep into a new "
                  "hydra.sweep.dir", flush=True)
        try:
            TrialRunner(study, lock, limits).run(lambda: ask_within(study, c.n_trials, distributions(space),
                                                                    max_runs=c.max_runs, runs_per_trial=c.n_seeds,
                                                                    max_cpu_s=c.max_cpu_s, cost_of=cost_of,
                                                                    prefix="hydra.sweeper"),
                                                 lambda trial: self._prepare(trial, space, fixed, sweep_dir),
                                                 on_change=progress.update)
        finally:  # also on Ctrl-C / SIGTERM (the runner has killed and failed the running trials)
            progress.close()
            with held():  # a signal now waits until the results and the report are written
                results = self._write_results(study, sweep_dir)
                report_study(study, sweep_dir, describe(self._storage, sweep_dir), self._trial_config)
                keep(f"{sweep_dir}/optimization_results.yaml and the report of the finished trials written")
        raise_held()
        return results

    def _definition(self) -> dict[str, Any]:
        """What defines this sweep's study (:func:`tuner.study.identity.definition`): agent, env,
        backend, budget, objective, seeds per trial and search space."""
        from tuner.study.identity import definition

        return definition(self._base, self.conf.n_seeds, self.conf.aggregation, self._searched,
                          seed_order=self.conf.seed_order)

    def _check_identity(self, study: "optuna.Study", sweep_dir: str) -> None:
        """A resumed study (a shared storage and ``study_name``) must have been made with this sweep's
        definition and search space; another one is refused in one line unless ``hydra.sweeper.resume=force``
        (a parameter searched with another distribution is refused even then)."""
        from tuner.common.errors import ConfigError
        from tuner.study.driver import check_search_space
        from tuner.study.identity import ATTR, StudyIdentity

        check_search_space(study, self._space_params, "hydra.sweeper.study_name")
        identity = StudyIdentity(study.study_name, sweep_dir, self._storage, self._definition(), self.conf.resume)
        try:
            identity.check(study.user_attrs.get(ATTR))
        except ConfigError as exc:  # the message names tuner=optuna's settings: say the sweeper's
            raise ConfigError(str(exc).replace("tuner.study_name", "hydra.sweeper.study_name")
                              .replace("tuner.resume", "hydra.sweeper.resume")) from None

    def _record_identity(self, study: "optuna.Study") -> None:
        """The definition as the study's ``identity`` attribute (checked when the study is resumed)."""
        from tuner.study.identity import ATTR

        defn = self._definition()
        if study.user_attrs.get(ATTR) != defn:
            study.set_user_attr(ATTR, defn)

    def _check_settings(self) -> None:
        """The study settings the sweeper shares with ``tuner=optuna`` are checked by the same rules
        (:func:`tuner.study.study_schema.check_fields`: ``n_jobs > 0``, ``resume`` a mode, ``storage`` as
        ``tuner.storage``: in-memory SQLite, a FIFO or a folder as a journal, an unsupported URL refused),
        named as the sweeper's keys (``hydra.sweeper.n_jobs``); so is the sampler the sweeper's
        ``sampler`` (a name or a node) chooses."""
        from tuner.common.errors import ConfigError
        from tuner.study.settings import TunerSettings
        from tuner.study.study_schema import StudySearch, check_fields, check_value, run_budget_problem

        check_fields(self.conf, "hydra.sweeper")
        problem = run_budget_problem(self.conf.max_runs, self.conf.n_seeds)
        if problem is not None:
            raise ConfigError(f"hydra.sweeper.max_runs: {problem}")
        choice = sampler_choice(self.conf)
        for key, value in zip(("sampler", "sampler_seed", "n_startup_trials"), choice):
            check_value(StudySearch, key, value, "hydra.sweeper")
        check_sampler(TunerSettings(sampler=choice[0], sampler_seed=choice[1], n_startup_trials=choice[2],
                                    pruner=self.conf.pruner, n_warmup_steps=self.conf.n_warmup_steps,
                                    percentile=self.conf.percentile, threshold_lower=self.conf.threshold_lower))

    def _enqueue(self, study: "optuna.Study", space: list["Param"], sampler: Any) -> None:
        """``hydra.sweeper.enqueue`` and the sweep's own values first (:func:`tuner.study.driver.enqueue_known_good`),
        read off the job config of the fixed overrides (:meth:`_job_config`, loaded once in :meth:`_space`)."""
        from tuner.study.driver import enqueue_known_good

        enqueue = OmegaConf.to_container(self.conf.enqueue, resolve=True) if OmegaConf.is_config(self.conf.enqueue) \
            else self.conf.enqueue
        enqueue_known_good(study, space, self._base, enqueue, self.conf.enqueue_defaults, sampler, "hydra.sweeper")

    def _prepare(self, trial: "optuna.Trial", space: list["Param"], fixed: list[str], sweep_dir: str) -> "TrialSpec":
        """The job config of a trial (Hydra's sweep config plus the sampled overrides), validated."""
        from tuner.common.messages import TrialSpec, seed_configs
        from tuner.config.schema import validate
        from tuner.config.search import to_overrides
        from tuner.logs.wandb_logger import trial_meta  # wandb itself is imported only by logging runs

        overrides = fixed + to_overrides(trial.params, space)
        run_dir = os.path.join(sweep_dir, str(trial.number))
        trial.set_user_attr("overrides", overrides)
        trial.set_user_attr("run_dir", run_dir)
        job = self.hydra_context.config_loader.load_sweep_config(self.config, overrides)
        with open_dict(job):
            del job["hydra"]
        cfg = validate(job, check_env=True)
        os.makedirs(run_dir, exist_ok=True)
        OmegaConf.save(cfg, os.path.join(run_dir, "config.yaml"))
        plain = OmegaConf.to_container(cfg, resolve=True)
        plain["logger"]["p"] = 0
        self._trial_config = plain
        c = self.conf
        configs = seed_configs(plain, c.n_seeds)
        trial.set_user_attr("tuning_seeds", [cfg["seed"] for cfg in configs])  # as tuner=optuna's: the report reads them
        return TrialSpec(trial=trial.number, backend=plain["backend"]["name"], run_dir=run_dir,
                         configs=configs, report_every=c.report_every,
                         aggregation=c.aggregation, memory_mb=c.trial_memory_mb,
                         interleaved=c.seed_order == "interleaved",
                         log_path=os.path.join(run_dir, "trial.log"),
                         wandb=trial_meta(trial.study.study_name, trial.number, trial.params))

    def _write_results(self, study: "optuna.Study", sweep_dir: str) -> dict[str, Any]:
        import optuna

        try:
            best = study.best_trial
            results = {"name": "optuna", "best_params": dict(best.params), "best_value": best.value,
                       "best_trial": best.number}
        except ValueError:
            results = {"name": "optuna", "best_params": None, "best_value": None, "best_trial": None}
        counts = {s.name.lower(): sum(t.state == s for t in study.trials) for s in optuna.trial.TrialState}
        results["counts"] = {k: v for k, v in counts.items() if v}
        OmegaConf.save(OmegaConf.create(results), os.path.join(sweep_dir, "optimization_results.yaml"))
        print(f"best {results['best_value']} {results['best_params']} -> {sweep_dir}/optimization_results.yaml")
        best_config = os.path.join(sweep_dir, str(results.get("best_trial")), "config.yaml")
        if results["best_value"] is not None and os.path.exists(best_config):
            from tuner.study.outputs import rerun_command

            # best_config.yaml beside optimization_results.yaml, as a tuner=optuna study writes it
            # (a folder's config.yaml cannot be a --config-name: the app's own one shadows it)
            from tuner.common.redact import redact_text

            with open(best_config) as src, open(os.path.join(sweep_dir, "best_config.yaml"), "w") as dst:
                header = f"# best trial {results['best_trial']} of study {study.study_name}\n"
                dst.write(redact_text(header + src.read()))
            print(f"re-run the best configuration (trial {results['best_trial']}): {rerun_command(sweep_dir)}")
        return results

    def _default_name(self, sweep_dir: str) -> str:
        """``<agent>_<env id>`` of the swept config (tuner=optuna's default study name), else the
        sweep folder's name."""
        try:
            from tuner.config.schema import name_part

            return f"{self.config.agent.name}_{name_part(self.config.env.id)}"
        except Exception:  # noqa: BLE001 - a config without those keys (another app)
            return os.path.basename(sweep_dir)


#: the published hydra-optuna-sweeper's ``sampler._target_`` classes and this sweeper's names for them
_OPTUNA_SAMPLERS = {"TPESampler": "tpe", "RandomSampler": "random", "CmaEsSampler": "cmaes",
                    "GPSampler": "gp", "GridSampler": "grid", "QMCSampler": "qmc"}


def sampler_choice(conf: NoteOptunaSweeperConf) -> tuple[Any, int | None, int]:
    """``(sampler, seed, n_startup_trials)`` from ``hydra.sweeper``: a name; the published plugin's
    ``sampler: {_target_: optuna.samplers.X, seed: ..., n_startup_trials: ...}`` for one of its six
    classes, which maps to this project's name (so such a sweep's study is the one it always was); or any
    other sampler node (``{_target_: optuna.samplers.NSGAIISampler, population_size: 20}``, a class of
    the user's own), passed on as ``tuner.sampler`` takes it and checked as it is."""
    from tuner.common.errors import ConfigError

    sampler = conf.sampler
    if isinstance(sampler, str):
        return sampler, conf.sampler_seed, conf.n_startup_trials
    if not isinstance(sampler, dict) or "_target_" not in sampler:
        raise ConfigError(f"hydra.sweeper.sampler: {sampler!r} is neither a sampler name nor a {{_target_: ...}} node")
    target = str(sampler["_target_"])
    seed = sampler.get("seed")
    if seed is not None and conf.sampler_seed is not None and seed != conf.sampler_seed:
        raise ConfigError(f"hydra.sweeper.sampler.seed={seed} and hydra.sweeper.sampler_seed={conf.sampler_seed}: give one")
    name = _OPTUNA_SAMPLERS.get(target.rsplit(".", 1)[-1]) if target.startswith("optuna.samplers.") else None
    extra = [k for k, v in sampler.items() if k not in ("_target_", "seed", "n_startup_trials") and v is not None]
    if name is None or extra:  # a node of its own: the seed and start-up trials fill in where it takes them
        node = {k: v for k, v in sampler.items() if v is not None}
        return node, seed if seed is not None else conf.sampler_seed, conf.n_startup_trials
    startup = sampler.get("n_startup_trials")
    return name, seed if seed is not None else conf.sampler_seed, startup if startup is not None else conf.n_startup_trials


def check_sampler(settings: Any) -> None:
    """The sampler the sweeper chose builds (imports, is an Optuna sampler, takes the node's keys), in
    one line naming ``hydra.sweeper.sampler``."""
    from tuner.common.errors import ConfigError
    from tuner.study.optimisers import check_optimisers

    try:
        check_optimisers(settings)
    except ConfigError as exc:
        text = str(exc)
        raise ConfigError("hydra.sweeper." + text[len("tuner."):] if text.startswith("tuner.") else text) from None


def _refuse(exc: Exception | str) -> None:
    """One line on stderr (secrets masked) and exit status 2."""
    import sys

    from tuner.common.redact import redact_text

    print(f"error: {redact_text(str(exc))}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


