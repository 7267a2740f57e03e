"""The study driver: asks Optuna for trials, runs each in a fresh process, tells the outcome.

Design (ask/tell in the driver, the child owns no Optuna trial): the driver asks for a trial,
composes the trial's config from the command's overrides plus the sampled ones, starts a fresh
process (:mod:`tuner.launcher`) and relays the child's intermediate rewards to ``trial.report``;
when ``should_prune()`` says so the child is told to stop and the trial ends PRUNED.  Because the
driver owns every state change, a child that raises, segfaults, is OOM-killed, times out or
produces NaN ends as FAIL with the reason in ``user_attrs["fail_reason"]`` and the study goes on.
The driver writes a heartbeat into its running trials; a re-run or any running driver (each time it
asks for a trial) marks RUNNING trials of a dead driver as FAIL, which is what makes a SIGKILLed study
resumable and lets a surviving driver finish the study.

``n_trials`` counts finished trials (COMPLETE + PRUNED) of the study, whoever ran them, so re-running
a command tops the study up to ``n_trials``; ``max_total_trials`` caps every trial ever created.
Both are checked and the new trial is created under :class:`tuner.storage.StudyLock`, so several
drivers (shells or machines) never exceed them.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Callable

import optuna
from omegaconf import DictConfig, OmegaConf
from optuna.trial import TrialState

from .launcher import TrialProcess, context_for
from .schema import ConfigError, error_line, validate
from .search import distributions, parse_space, to_overrides
from .settings import TunerSettings, make_pruner, make_sampler
from .storage import StudyLock, describe, make_storage
from .supervisor import Supervisor
from .wandb_logger import trial_meta

__all__ = ["Driver", "HEARTBEAT_GRACE_S"]

HEARTBEAT_GRACE_S = 120.0
# a driver records itself on a trial right after asking for it, so a RUNNING trial that still has
# no driver after this long belongs to a driver killed in between
NO_DRIVER_GRACE_S = 15.0
RECHECK_S = 2.0  # seconds between two looks at the study while running trials fill it
OPEN, WAIT, DONE = "open", "wait", "done"
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)

# (overrides) -> composed DictConfig of one trial
Composer = Callable[[list[str]], DictConfig]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Driver:
    """Runs one study until it holds ``n_trials`` finished trials (or a limit stops it).

    :param cfg: the validated config of the command (``tuner=optuna``)
    :param settings: its ``tuner`` node, typed
    :param compose: builds a trial's config from override strings
    :param overrides: the command-line overrides every trial starts from
    """

    def __init__(self, cfg: DictConfig, settings: TunerSettings, compose: Composer,
                 overrides: list[str]) -> None:
        self.cfg, self.s, self.compose, self.overrides = cfg, settings, compose, list(overrides)
        self.study_dir = os.path.abspath(settings.study_dir)
        os.makedirs(os.path.join(self.study_dir, "trials"), exist_ok=True)
        self.space = parse_space(cfg.search, cfg)
        self.storage_desc = describe(settings.storage, self.study_dir)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.lock = StudyLock(settings.storage, self.study_dir, settings.study_name)
        with self.lock:  # drivers starting together must not race on creating tables or the study
            self.storage = make_storage(settings.storage, self.study_dir)
            self.study = optuna.create_study(
                study_name=settings.study_name, storage=self.storage, load_if_exists=True,
                sampler=make_sampler(settings, self.space), pruner=make_pruner(settings),
                direction=settings.direction)
        self.me = f"{socket.gethostname()}:{os.getpid()}"
        self.supervisor = Supervisor(self.study, settings.trial_timeout)
        self.started_here: list[int] = []

    # -- the loop ----------------------------------------------------------------------------
    def run(self, on_change: Callable[[], None] | None = None) -> None:
        """Run trials until the study is full, a limit is hit, or Ctrl-C.

        While running trials (of this or another driver) could still end without counting, the
        driver re-checks every ``RECHECK_S``: it fails trials of dead drivers (:meth:`fail_zombies`)
        and starts new trials when finished + running falls below ``n_trials`` again."""
        with self.lock:
            self.fail_zombies()
        started = time.monotonic()
        sup = self.supervisor
        max_failures = self.s.max_failures if self.s.max_failures is not None else self.s.n_trials
        state, checked = OPEN, 0.0  # OPEN: may start trials; WAIT: running trials decide; DONE: stop asking

        def may_start() -> bool:
            return sup.failures < max_failures and not (self.s.timeout and time.monotonic() - started > self.s.timeout)

        try:
            while True:
                if state == WAIT and time.monotonic() - checked >= RECHECK_S:
                    state = OPEN
                while state == OPEN and len(sup) < self.s.n_jobs and may_start():
                    state, checked = self._start_next(), time.monotonic()
                if not len(sup):
                    if state != WAIT or not may_start():
                        break
                    time.sleep(RECHECK_S)  # only other drivers' trials are running
                else:
                    sup.wait()
                if on_change:
                    on_change()
        except KeyboardInterrupt:
            sup.kill_all("driver interrupted (Ctrl-C)")
            raise

    def _start_next(self) -> str:
        """Create and launch one trial (``OPEN``); ``WAIT`` while running trials fill the study, ``DONE``
        when it needs no more trials."""
        with self.lock:
            self.fail_zombies()  # a driver that died since start-up must not hold its trials forever
            trial, state = self._ask()
        if trial is None:
            return state
        trial.set_user_attr("driver", self.me)
        trial.set_user_attr("heartbeat", time.time())
        run_dir = os.path.join(self.study_dir, "trials", f"{trial.number:04d}")
        trial.set_user_attr("run_dir", run_dir)
        self.started_here.append(trial.number)
        try:
            spec = self._spec(trial, run_dir)
        except Exception as exc:  # noqa: BLE001 - any compose / validation error fails this trial only
            reason = str(exc) if isinstance(exc, ConfigError) else error_line(exc)
            self.supervisor.tell_fail(trial, f"config error: {reason}")
            return OPEN
        backend = spec["configs"][0]["backend"]["name"]
        self.supervisor.launch(trial, TrialProcess(spec, context_for(backend, self.s.preload),
                                                   n_jobs=self.s.n_jobs))
        return OPEN

    def _ask(self) -> tuple[optuna.Trial | None, str]:
        if self.supervisor.grid_exhausted:
            return None, DONE
        trials = self.study.get_trials(deepcopy=False)
        done = sum(t.state in FINISHED for t in trials)
        active = sum(t.state == TrialState.RUNNING for t in trials)
        if done >= self.s.n_trials:
            return None, DONE
        if self.s.max_total_trials is not None and len(trials) >= self.s.max_total_trials:
            return None, DONE
        if done + active >= self.s.n_trials:
            return None, WAIT
        return self.study.ask(distributions(self.space)), OPEN

    def _spec(self, trial: optuna.Trial, run_dir: str) -> dict[str, Any]:
        overrides = to_overrides(trial.params, self.space)
        trial.set_user_attr("overrides", overrides)
        cfg = validate(self.compose(self.overrides + overrides), check_env=False)
        cfg.tuner = {"name": "none"}
        cfg.logger.p = 0
        os.makedirs(run_dir, exist_ok=True)
        OmegaConf.save(cfg, os.path.join(run_dir, "config.yaml"))
        base = OmegaConf.to_container(cfg, resolve=True)
        configs = []
        for i in range(self.s.n_seeds):
            c = OmegaConf.to_container(cfg, resolve=True)
            c["seed"] = int(base["seed"]) + i
            configs.append(c)
        return {"trial": trial.number, "configs": configs, "run_dir": run_dir,
                "report_every": self.s.report_every, "aggregation": self.s.aggregation,
                "memory_mb": self.s.trial_memory_mb,
                "log_path": os.path.join(run_dir, "trial.log"),
                "wandb": trial_meta(self.s.study_name, trial.number, trial.params)}

    # -- liveness ----------------------------------------------------------------------------
    def fail_zombies(self) -> list[int]:
        """Mark RUNNING trials whose driver is gone as FAIL (call under the lock)."""
        failed = []
        host = socket.gethostname()
        for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            reason = self._zombie_reason(t, host)
            if reason is None:
                continue
            try:
                self.storage.set_trial_user_attr(t._trial_id, "fail_reason", reason)
                self.storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
                failed.append(t.number)
            except RuntimeError:  # finished meanwhile by its own driver
                continue
        return failed

    def _zombie_reason(self, t: optuna.trial.FrozenTrial, host: str) -> str | None:
        driver = t.user_attrs.get("driver", "")
        beat = t.user_attrs.get("heartbeat")
        if driver == self.me:
            return None
        d_host, _, d_pid = driver.rpartition(":")
        if d_host == host and d_pid.isdigit() and not _pid_alive(int(d_pid)):
            return f"driver {driver} stopped while the trial was running"
        last = beat if beat is not None else (t.datetime_start.timestamp() if t.datetime_start else None)
        if not driver and last is not None and time.time() - last > NO_DRIVER_GRACE_S:
            return f"its driver stopped before recording itself ({time.time() - last:.0f} s ago)"
        if last is not None and time.time() - last > HEARTBEAT_GRACE_S:
            return f"no heartbeat from driver {driver or '?'} for {time.time() - last:.0f} s"
        return None
