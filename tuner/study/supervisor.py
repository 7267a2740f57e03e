"""Supervise running trial processes: relay their reports to Optuna and tell the outcome.

Shared by the study driver, the finders and the Hydra sweeper.  The supervisor owns every state
change of its trials, so whatever happens to a child (exception, signal, timeout, NaN) the trial
ends COMPLETE, PRUNED or FAIL with ``user_attrs["fail_reason"]``.
"""

from __future__ import annotations

import math
import time
from multiprocessing.connection import wait
from typing import Any, Callable

import optuna
from optuna.trial import TrialState

from ..common.messages import Failure, Report, Result
from ..common.process import exit_reason
from ..run.launcher import TrialProcess

__all__ = ["Supervisor", "HEARTBEAT_EVERY_S"]

HEARTBEAT_EVERY_S = 10.0

# called with (trial, result) after a trial's result was told
ResultHook = Callable[[optuna.Trial, Result], None]


#: how a trial process reports a ConfigError (tuner.run.trial_worker: ``<type>: <first line>``)
CONFIG_ERROR = "ConfigError: "
#: the user attribute that marks a study's starting trial: the config's own values (the agent's defaults
#: or the env's preset), enqueued as trial 0 by tuner.study.driver (``tuner.enqueue_defaults``)
START_MARK = {"enqueued": "defaults"}


def is_start(trial: optuna.Trial | optuna.trial.FrozenTrial) -> bool:
    """Whether ``trial`` is the study's starting trial (:data:`START_MARK`)."""
    return all(trial.user_attrs.get(k) == v for k, v in START_MARK.items())


def start_refusal(trial: optuna.Trial | optuna.trial.FrozenTrial, reason: Any) -> tuple[int, str] | None:
    """``(trial number, the error line)`` when ``reason`` (a ``fail_reason``) is the starting trial's
    ``ConfigError``; ``None`` otherwise."""
    if isinstance(reason, str) and reason.startswith(CONFIG_ERROR) and is_start(trial):
        return trial.number, reason[len(CONFIG_ERROR):]
    return None


class Supervisor:
    """Running trials of one study.

    :param study: the study the trials belong to
    :param trial_timeout: seconds before a child is killed and its trial failed
    :param on_result: called after each told result (e.g. to collect finder data)
    :param quiet: do not print failures
    """

    def __init__(self, study: optuna.Study, trial_timeout: float | None = None,
                 on_result: ResultHook | None = None, quiet: bool = False) -> None:
        self.study = study
        self.trial_timeout = trial_timeout
        self.on_result = on_result
        self.quiet = quiet
        self.running: dict[int, tuple[optuna.Trial, TrialProcess]] = {}
        self.failures = 0
        self.grid_exhausted = False
        # (trial, reason): the starting trial (the command's own config) failed with a ConfigError
        self.start_refused: tuple[int, str] | None = None
        self._last_beat = 0.0

    def __len__(self) -> int:
        return len(self.running)

    def launch(self, trial: optuna.Trial, proc: TrialProcess) -> None:
        self.running[trial.number] = (trial, proc)

    def wait(self, timeout: float = 1.0) -> None:
        """Block until a child has news (or ``timeout``), then handle every child's events."""
        handles = []
        for _, proc in self.running.values():
            handles += [proc.conn, proc.proc.sentinel]
        if handles:
            wait(handles, timeout=timeout)
        for number in list(self.running):
            self._poll(number)
        self._heartbeat()

    def kill_all(self, reason: str) -> None:
        for number in list(self.running):
            self._fail(number, reason)

    # -- events ------------------------------------------------------------------------------
    def _poll(self, number: int) -> None:
        trial, proc = self.running[number]
        for message in proc.events():
            if isinstance(message, Report):
                if not self._report(number, message.step, message.value):
                    return
            elif isinstance(message, Result):
                self._result(number, message)
                return
            elif isinstance(message, Failure):
                self._fail(number, message.message)
                return
        if not proc.alive():
            for message in proc.events():  # a result that raced the exit
                if isinstance(message, Result):
                    self._result(number, message)
                    return
            self._fail(number, exit_reason(proc.proc.exitcode))
        elif self.trial_timeout and proc.elapsed > self.trial_timeout:
            self._fail(number, f"timeout: exceeded trial_timeout={self.trial_timeout:g} s")

    def _report(self, number: int, step: int, value: float) -> bool:
        trial, proc = self.running[number]
        if not math.isfinite(value):
            self._fail(number, f"non-finite intermediate value {value} at step {step}")
            return False
        trial.report(value, step)
        proc.answer(trial.should_prune())
        return True

    def _result(self, number: int, payload: Result) -> None:
        trial, proc = self.running.pop(number)
        proc.close()
        for key, value in payload.attrs.items():
            trial.set_user_attr(key, value)
        value = payload.value
        if payload.status == "pruned":
            self.tell(trial, state=TrialState.PRUNED)
        elif value is None or not math.isfinite(value):
            self.tell_fail(trial, f"non-finite objective value {value}")
            return
        else:
            self.tell(trial, value)
        if self.on_result:
            self.on_result(trial, payload)

    def _fail(self, number: int, reason: str) -> None:
        trial, proc = self.running.pop(number)
        proc.kill()
        proc.close()
        self.tell_fail(trial, reason)

    # -- telling -----------------------------------------------------------------------------
    def tell(self, trial: optuna.Trial, value: float | None = None, state: TrialState | None = None) -> None:
        try:
            self.study.tell(trial, value, state=state)
        except RuntimeError as exc:
            # GridSampler.after_trial calls study.stop() once the grid is used up, which only works
            # inside optimize(); the trial's state is already stored when it raises.
            if "Study.stop" not in str(exc):
                raise
            self.grid_exhausted = True

    def tell_fail(self, trial: optuna.Trial, reason: str) -> None:
        self.start_refused = start_refusal(trial, reason) or self.start_refused
        trial.set_user_attr("fail_reason", reason)
        self.tell(trial, state=TrialState.FAIL)
        self.failures += 1
        if not self.quiet:
            print(f"[trial {trial.number}] FAIL: {reason}", flush=True)

    def _heartbeat(self) -> None:
        now = time.time()
        if now - self._last_beat < HEARTBEAT_EVERY_S:
            return
        self._last_beat = now
        for trial, _ in self.running.values():
            trial.set_user_attr("heartbeat", now)
