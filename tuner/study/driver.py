"""The study driver: asks Optuna for trials, runs each in a fresh process, tells the outcome.

Design (ask/tell in the driver, the child owns no Optuna trial): the driver asks for a trial,
composes the trial's config from the command's overrides plus the sampled ones, starts a fresh
process (:mod:`tuner.run.launcher`) and relays the child's intermediate rewards to ``trial.report``;
when ``should_prune()`` says so the child is told to stop and the trial ends PRUNED.  Because the
driver owns every state change, a child that raises, segfaults, is OOM-killed, times out or
produces NaN ends as FAIL with the reason in ``user_attrs["fail_reason"]`` and the study goes on.
The driver writes a heartbeat into its running trials; a re-run or any running driver (each time it
asks for a trial) marks RUNNING trials of a dead driver as FAIL, which is what makes a SIGKILLed study
resumable and lets a surviving driver finish the study.

``n_trials`` counts finished trials (COMPLETE + PRUNED) of the study, whoever ran them, so re-running
a command tops the study up to ``n_trials``; ``max_total_trials`` caps every trial ever created.
Both are checked and the new trial is created under :class:`tuner.study.storage.StudyLock`, so several
drivers (shells or machines) never exceed them.  The loop, liveness and process handling are the
trial runner's (:class:`tuner.study.runner.TrialRunner`), shared with the Hydra sweeper and the finders;
this module decides what a trial of a ``tuner=optuna`` study trains.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import optuna
from omegaconf import DictConfig, OmegaConf

from ..common.errors import ConfigError
from ..common.messages import TrialSpec, seed_configs
from ..common.redact import scrub
from ..config.env_check import env_actions
from ..config.schema import name_part, validate
from ..config.search import default_params, distributions, parse_space, suggest_conditional, to_overrides
from ..config.search_cost import check_cost, cost_base, seconds_with
from ..logs.wandb_logger import trial_meta
from .identity import ATTR, StudyIdentity, default_variant, definition
from .runner import (
    HEARTBEAT_GRACE_S,
    NO_DRIVER_GRACE_S,
    RunLimits,
    TrialRunner,
    ask_within,
    why_full,
)
from .best_config import group_choices
from .gpus import GpuPlacer, Placement, visible_gpus
from .optimisers import WILCOXON, is_grid, target_of
from .outputs import record_optimiser
from .supervisor import START_MARK
from .settings import TunerSettings, make_pruner, make_sampler, runs_per_trial
from .storage import (StudyLock, check_journal, describe, journal_path, make_storage, root_cause, shares_journal,
                      storage_key)

__all__ = ["Driver", "HEARTBEAT_GRACE_S"]

# (overrides) -> composed DictConfig of one trial
Composer = Callable[[list[str]], DictConfig]


class Driver:
    """Runs one study until it holds ``n_trials`` finished trials (or a limit stops it).

    :param cfg: the validated config of the command (``tuner=optuna``)
    :param settings: its ``tuner`` node, typed
    :param compose: builds a trial's config from override strings (with Hydra's node, when composed with
        ``return_hydra_config=True``: the groups' options are then recorded on the trial as ``choices``)
    :param overrides: the command-line overrides every trial starts from
    """

    def __init__(self, cfg: DictConfig, settings: TunerSettings, compose: Composer,
                 overrides: list[str]) -> None:
        self.cfg, self.s, self.compose, self.overrides = cfg, settings, compose, list(overrides)
        self.space = parse_space(cfg.search, cfg, env_actions(cfg))  # actions: found when cfg was validated
        check_cost(self.space, cfg, settings.max_cost_ratio)  # before anything is created
        self._cost_of = seconds_with(cost_base(cfg))  # a sampled config's estimate (tuner.max_cpu_s's check)
        self.placer = self._gpus(cfg, settings)  # no GPU for gpus_per_trial: refused before anything is made
        self.identity = self._identity(cfg, settings)  # may give a default-named study its own name
        self.study_dir = os.path.abspath(settings.study_dir)
        journal = journal_path(settings.storage, self.study_dir)
        if journal is not None:  # a file that is not a journal: refused before trials/ or a lock is made
            check_journal(journal, storage_key(settings.storage))
        try:
            os.makedirs(os.path.join(self.study_dir, "trials"), exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"tuner.study_dir: cannot create {self.study_dir} ({exc.strerror or exc})") from None
        self.storage_desc = describe(settings.storage, self.study_dir)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.lock = StudyLock(settings.storage, self.study_dir, settings.study_name)
        try:
            with self.lock:  # drivers starting together must not race on creating tables or the study
                self._open(cfg, settings)
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - no server, wrong password, missing database, ...
            raise ConfigError(f"{storage_key(settings.storage)}: cannot open {self.storage_desc}: "
                              f"{root_cause(exc)}") from None

    def _open(self, cfg: DictConfig, settings: TunerSettings) -> None:
        self.storage = make_storage(settings.storage, self.study_dir)
        sampler, pruner = make_sampler(settings, self.space), make_pruner(settings)
        storage = optuna.storages.get_storage(self.storage)
        try:  # an existing study is loaded without a write (create_study would log a record first)
            storage.get_study_id_from_name(settings.study_name)
            self.study = optuna.load_study(study_name=settings.study_name, storage=storage, sampler=sampler,
                                           pruner=pruner)
            self.identity.check_kept(self.study, shares_journal(settings.storage, self.study_dir), self.storage_desc)
        except KeyError:
            self.identity.check(None)  # new in this storage: the study dir may record another definition
            self.study = optuna.create_study(study_name=settings.study_name, storage=storage, sampler=sampler,
                                             pruner=pruner, direction=settings.direction)
        self._check_existing(cfg, settings)  # before this command changes anything in the study
        self.identity.record(self.study)
        record_optimiser(self.study, settings, "tuner", settings.sampler, settings.n_startup_trials)
        self._enqueue(cfg, settings)

    @staticmethod
    def _gpus(cfg: DictConfig, settings: TunerSettings) -> GpuPlacer | None:
        """The GPU placer of ``tuner.gpus_per_trial`` (:mod:`tuner.study.gpus`), ``None`` without it."""
        if settings.gpus_per_trial is None:
            return None
        if str(cfg.backend.get("device", "auto")) in ("cpu", "mps"):
            raise ConfigError(f"tuner.gpus_per_trial: backend.device={cfg.backend.device} keeps trials off the GPU "
                              f"(use backend.device=auto or cuda)")
        # drivers of one study on one machine (tuner.workers) start their round-robin apart
        return GpuPlacer(visible_gpus(), settings.gpus_per_trial, start=settings.worker * settings.n_jobs)

    def _place(self, trial: optuna.Trial, configs: list[dict]) -> Placement | None:
        """This trial's GPUs, beside this driver's running trials; ``cuda:N`` becomes ``cuda`` (the
        trial sees its own GPUs only)."""
        if self.placer is None:
            return None
        runner = getattr(self, "runner", None)
        running = [Placement(p.spec.gpus, p.spec.gpu_fraction) for _, p in runner.supervisor.running.values()
                   if p.spec.gpus is not None] if runner is not None else []
        placement = self.placer.place(running)
        for c in configs:
            if str(c["backend"].get("device", "auto")).startswith("cuda"):
                c["backend"] = dict(c["backend"], device="cuda")
        trial.set_user_attr("gpus", placement.visible)
        return placement

    def _identity(self, cfg: DictConfig, settings: TunerSettings) -> StudyIdentity:
        """What defines this study (:mod:`tuner.study.identity`), its dir checked before anything is made.
        A default-named study (``<agent>_<env>``) whose recorded definition differs becomes this
        command's own study ``<agent>_<env>-<digest>`` (settings are updated: the app prints them)."""
        searched = {f"search.{'groups' if p.is_group else 'values'}.{p.name}":
                    _show(p.distribution) if p.distribution is not None else p.fixed for p in self.space}
        searched.update({f"search.when.{p.name}": f"{p.when[0]} in {list(p.when[1])}" for p in self.space if p.when})
        defn = definition(cfg, settings.n_seeds, settings.aggregation, searched, settings.seeds.tuning,
                          settings.seed_order)
        variant = default_variant(settings.study_name, settings.study_dir, settings.storage,
                                  f"{cfg.agent.name}_{name_part(cfg.env.id)}", settings.resume, defn)
        if variant is not None:
            settings.study_name, settings.study_dir, why = variant
            print(f"note: {why}", flush=True)
        identity = StudyIdentity(settings.study_name, settings.study_dir, settings.storage, defn, settings.resume)
        identity.check_dir()
        return identity

    def _check_existing(self, cfg: DictConfig, settings: TunerSettings) -> None:
        """An existing study must match the command: its direction, agent and search space
        (a parameter searched differently would fail inside Optuna after a trial was created)."""
        study, name = self.study, settings.study_name
        if study.direction.name.lower() != settings.direction:
            raise ConfigError(f"tuner.direction: study {name!r} was created to {study.direction.name.lower()}; "
                              f"it cannot {settings.direction} (use another tuner.study_name)")
        agent = study.user_attrs.get("agent")
        if agent is None:
            study.set_user_attr("agent", cfg.agent.name)
        elif agent != cfg.agent.name:
            raise ConfigError(f"agent: study {name!r} tunes agent {agent!r}, not {cfg.agent.name!r} "
                              "(use another tuner.study_name)")
        check_search_space(study, self.space, "tuner.study_name")
        self.identity.check(study.user_attrs.get(ATTR))  # the rest of the definition: env, budget, ...

    def _enqueue(self, cfg: DictConfig, settings: TunerSettings) -> None:
        enqueue_known_good(self.study, self.space, cfg, settings.enqueue, settings.enqueue_defaults,
                           settings.sampler, "tuner")

    def run(self, on_change: Callable[[], None] | None = None) -> None:
        """Run trials until the study is full, a limit is hit, or Ctrl-C (see :mod:`tuner.study.runner`)."""
        s = self.s
        self._say_if_full()
        limits = RunLimits(n_jobs=s.n_jobs, trial_timeout=s.trial_timeout,
                           max_failures=s.max_failures if s.max_failures is not None else s.n_trials,
                           timeout=s.timeout, preload=s.preload,
                           heartbeat_grace_s=HEARTBEAT_GRACE_S, no_driver_grace_s=NO_DRIVER_GRACE_S,
                           stop_if_start_refused=True)
        self.runner = TrialRunner(self.study, self.lock, limits)
        self.runner.run(self._ask, self._prepare, on_change)

    def _say_if_full(self) -> None:
        """A command that will start no trial says why in one line (a re-run, or a command chained
        after a finder, on a study already holding ``n_trials`` used to end at once without a word)."""
        full = why_full(self.study.get_trials(deepcopy=False), self.s.n_trials, self.s.max_total_trials,
                        self.s.max_runs, runs_per_trial(self.s), "tuner", self.s.max_cpu_s, self._cost_of)
        if full is None:
            return
        why, fix = full
        print(f"note: study {self.s.study_name!r} already holds {why}: no trial to run; {fix}, or start a new "
              "study with tuner.study_name=<new>", flush=True)

    def _ask(self) -> tuple[str, optuna.Trial | None]:
        return ask_within(self.study, self.s.n_trials, distributions(self.space), self.s.max_total_trials,
                          self.s.max_runs, runs_per_trial(self.s), self.s.max_cpu_s, self._cost_of)

    def _compose_trial(self, trial: optuna.Trial, overrides: list[str]) -> Any:
        """The trial's config: the command's overrides plus ``overrides``, composed; the groups' options
        are recorded on the trial as ``choices`` (the defaults list of best_config.yaml and of PBT's
        replay_config.yaml)."""
        composed = self.compose(self.overrides + overrides)
        choices = group_choices(composed)
        if choices is not None:
            trial.set_user_attr("choices", choices)
        return composed

    def _prepare(self, trial: optuna.Trial) -> TrialSpec:
        """The trial's config (the command's overrides plus the sampled ones), saved in its run dir."""
        run_dir = os.path.join(self.study_dir, "trials", f"{trial.number:04d}")
        trial.set_user_attr("run_dir", run_dir)
        suggest_conditional(trial, self.space)  # e.g. buffer.alpha, in trials that chose buffer=prioritized
        overrides = to_overrides(trial.params, self.space)
        trial.set_user_attr("overrides", overrides)
        cfg = validate(self._compose_trial(trial, overrides), check_env=False)
        cfg.tuner = {"name": "none"}
        cfg.logger.p = 0
        os.makedirs(run_dir, exist_ok=True)
        # secrets stay out of the file: the held-out stage gives them back from the command's config
        OmegaConf.save(OmegaConf.create(scrub(OmegaConf.to_container(cfg), ())), os.path.join(run_dir, "config.yaml"))
        plain = OmegaConf.to_container(cfg, resolve=True)
        tuning = self.s.seeds.tuning
        configs = [dict(plain, seed=int(x)) for x in tuning] if tuning else seed_configs(plain, self.s.n_seeds)
        trial.set_user_attr("tuning_seeds", [c["seed"] for c in configs])  # held-out seeds must avoid them
        placement = self._place(trial, configs)
        return TrialSpec(trial=trial.number, backend=plain["backend"]["name"], run_dir=run_dir,
                         configs=configs, report_every=self.s.report_every,
                         aggregation=self.s.aggregation, memory_mb=self.s.trial_memory_mb,
                         instances=target_of("pruner", self.s.pruner) == WILCOXON,
                         interleaved=self.s.seed_order == "interleaved",
                         log_path=os.path.join(run_dir, "trial.log"),
                         wandb=trial_meta(self.s.study_name, trial.number, trial.params),
                         gpus=placement.visible if placement else None,
                         gpu_fraction=placement.fraction if placement else None)


def check_search_space(study: optuna.Study, space: list, name_key: str) -> None:
    """Every parameter of ``space`` that the study's trials searched must keep its distribution:
    Optuna refuses another one inside ``ask()``, after a trial was created (a traceback), so this
    is refused first, even with ``resume=force`` (``name_key``: the setting that names a new study)."""
    new = distributions(space, conditional=True)
    for t in study.get_trials(deepcopy=False):
        for key, old in t.distributions.items():
            if key not in new:
                continue
            try:
                optuna.distributions.check_distribution_compatibility(old, new[key])
            except ValueError:
                raise ConfigError(f"search.{key}: study {study.study_name!r} searched it as {_show(old)}; this "
                                  f"command gives {_show(new[key])} (keep the space or use another {name_key})") from None


def _show(d: optuna.distributions.BaseDistribution) -> str:
    if isinstance(d, optuna.distributions.CategoricalDistribution):
        return f"choice({', '.join(map(str, d.choices))})"
    text = f"interval({d.low}, {d.high})"
    if isinstance(d, optuna.distributions.IntDistribution):
        text = f"int({text})"
    return f"tag(log, {text})" if getattr(d, "log", False) else text


def enqueue_known_good(study: optuna.Study, space: list, cfg: DictConfig, enqueue: list | None,
                       enqueue_defaults: bool, sampler: Any, prefix: str) -> None:
    """Known-good trials first: ``enqueue``'s parameter sets, then (a new study only) the config's
    own values as trial 0 (``enqueue_defaults``; not with the grid sampler, which enumerates every
    point itself, so an enqueued one would run twice).  Optuna runs waiting trials before sampling.
    ``prefix`` names the settings in errors (``tuner``, ``hydra.sweeper``)."""
    fresh = not study.trials
    for params in enqueue or []:
        unknown = set(params) - set(distributions(space, conditional=True))
        if unknown:
            raise ConfigError(f"{prefix}.enqueue: {sorted(unknown)[0]} is not a searched parameter")
        study.enqueue_trial(dict(params), user_attrs={"enqueued": f"{prefix}.enqueue"}, skip_if_exists=True)
    if fresh and enqueue_defaults and not is_grid(sampler):
        params = default_params(space, cfg)
        if params:
            study.enqueue_trial(params, user_attrs=dict(START_MARK), skip_if_exists=True)
