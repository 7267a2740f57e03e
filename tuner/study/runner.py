"""One trial runner, used by the study driver (``tuner=optuna``), the Hydra sweeper and the finders.

The runner owns the loop: under the study's lock it fails the RUNNING trials of dead drivers and
asks its caller for the next trial, starts each trial in a fresh process (its own process group,
:mod:`tuner.run.launcher`), relays reports to the pruner and tells every outcome
(:class:`~tuner.study.supervisor.Supervisor`).  So zombie handling, several seeds per trial, memory caps,
per-trial timeouts, killing a trial with everything it started, ``max_failures``, a time limit and
Ctrl-C (or SIGTERM: :class:`Terminated`) behave the same whoever runs the study.  Callers decide
*which* trial comes next (:data:`Asker`) and *what* it trains (:data:`Preparer`).

Liveness: the runner writes a heartbeat into its running trials; a RUNNING trial whose driver
process is gone (same host), or whose heartbeat is older than :data:`HEARTBEAT_GRACE_S`, is failed
by whichever runner next asks for a trial, which makes a killed study resumable.
"""

from __future__ import annotations

import math
import os
import socket
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

import optuna
from optuna.trial import TrialState

from note_rl.utils import pid_alive

from ..common.errors import ConfigError, error_line
from ..common.interrupts import Terminated, held, raise_held, sigterm_raises
from ..common.messages import TrialSpec
from ..run.launcher import TrialProcess, context_for
from .attrs import number, seed_list, text
from .supervisor import Supervisor, start_refusal

__all__ = ["TrialRunner", "RunLimits", "ask_within", "Terminated", "OPEN", "WAIT", "DONE", "HEARTBEAT_GRACE_S",
           "NO_DRIVER_GRACE_S", "FINISHED", "runs_spent", "cpu_spent", "cpu_committed", "recorded_cpu",
           "predicted_cpu", "CostOf", "NOT_STARTED", "cpu_refusal"]

HEARTBEAT_GRACE_S = 120.0
# a runner records itself on a trial right after asking for it, so a RUNNING trial that still has
# no driver after this long belongs to a runner killed in between
NO_DRIVER_GRACE_S = 15.0
RECHECK_S = 2.0  # seconds between two looks at the study while others' running trials fill it
OPEN, WAIT, DONE = "open", "wait", "done"
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)

# () -> (state, trial): the next trial (state OPEN), or None with WAIT (running trials may still
# fill the study) or DONE (it needs no more); called under the study's lock
Asker = Callable[[], tuple[str, "optuna.Trial | None"]]
# trial -> what it trains; raising fails that trial ("config error: ...") and the study goes on
Preparer = Callable[["optuna.Trial"], TrialSpec]
# a trial's sampled values -> its estimated cost in seconds (tuner.config.search_cost.trial_seconds over
# the command's config with these values in it); only its ratio between trials is used
CostOf = Callable[[dict[str, Any]], float]
# the user attr of a sampled trial put back to WAITING because its config's predicted CPU did not fit
# tuner.max_cpu_s: {"predicted_cpu_s": ..., "cpu_left_s": ...}; the next ask that has room pops it
NOT_STARTED = "not_started"


@dataclass
class RunLimits:
    """How a runner runs trials.

    :param n_jobs: trial processes at once on this machine
    :param trial_timeout: seconds before a trial is killed and failed
    :param max_failures: stop starting trials after this many failures (``None``: never)
    :param timeout: seconds after which this runner starts no more trials
    :param preload: torch trials fork from a preloading forkserver
    :param blocking: start ``n_jobs`` trials, then wait for all of them before the next batch
    :param heartbeat_grace_s: a RUNNING trial whose heartbeat is older is failed (its driver is gone)
    :param no_driver_grace_s: the same for a trial whose driver never recorded itself on it
    :param stop_if_start_refused: when the starting trial (the command's own config, enqueued as the
        defaults) fails with a ``ConfigError`` (a value only the agent's constructor refuses), start no
        more trials, stop the running ones and raise that error from :meth:`TrialRunner.run`: every
        trial keeping that value would fail the same way
    """

    n_jobs: int = 1
    trial_timeout: float | None = None
    max_failures: int | None = None
    timeout: float | None = None
    preload: bool = True
    blocking: bool = False
    heartbeat_grace_s: float = HEARTBEAT_GRACE_S
    no_driver_grace_s: float = NO_DRIVER_GRACE_S
    stop_if_start_refused: bool = False


def ask_within(study: optuna.Study, n_trials: int, distributions: dict[str, Any],
               max_total: int | None = None, max_runs: int | None = None,
               runs_per_trial: int = 1, max_cpu_s: float | None = None,
               cost_of: CostOf | None = None, prefix: str = "tuner") -> tuple[str, optuna.Trial | None]:
    """Ask for a trial while the study holds fewer than ``n_trials`` finished trials (COMPLETE +
    PRUNED, whoever ran them), fewer than ``max_total`` trials in all, with ``max_runs`` while a
    new trial's ``runs_per_trial`` training runs still fit the run budget (:func:`runs_spent` plus
    ``runs_per_trial`` for every running trial), and with ``max_cpu_s`` while a new trial is expected
    to end the study nearer the budget than not starting it would (:func:`cpu_committed`); ``WAIT``
    while running trials could still fill a budget (or, pruned early or cheaper than estimated, leave
    room in it).

    With ``max_cpu_s`` and ``cost_of``, the sampled trial is also judged by its own values: where half
    its :func:`predicted_cpu` does not fit what is left, it goes back to WAITING with a
    :data:`NOT_STARTED` record (and a note naming ``prefix.max_cpu_s``), and no trial starts until it
    fits; Optuna pops it before sampling another, so a resumed study with a larger budget runs it
    first.  A sampled config cannot be un-asked, and sampling again until a cheap one came up would
    bias the study toward cheap configs."""
    trials = study.get_trials(deepcopy=False)
    done = sum(t.state in FINISHED for t in trials)
    active = sum(t.state == TrialState.RUNNING for t in trials)
    full = (WAIT if active else DONE), None
    if done >= n_trials or (max_total is not None and len(trials) >= max_total):
        return DONE, None
    if max_runs is not None and runs_spent(trials) + (active + 1) * runs_per_trial > max_runs:
        return full
    committed = 0.0
    judged = max_cpu_s is not None and cost_of is not None
    if max_cpu_s is not None:
        committed, typical = cpu_committed(trials, cost_of=cost_of)
        if committed + typical / 2 >= max_cpu_s:
            return full
    if done + active >= n_trials:
        return WAIT, None
    if judged and _waiting_too_dear(trials, cost_of, committed, max_cpu_s) is not None:
        return full  # the trial refused before is next out of ask() and still does not fit
    trial = study.ask(distributions)
    if judged:
        guess = predicted_cpu(trials, trial.params, cost_of)
        if guess is not None and committed + guess / 2 >= max_cpu_s:
            left = max(0.0, max_cpu_s - committed)
            trial.set_user_attr(NOT_STARTED, {"predicted_cpu_s": round(guess, 1), "cpu_left_s": round(left, 1)})
            study._storage.set_trial_state_values(trial._trial_id, TrialState.WAITING)
            print(f"note: trial {trial.number} not started: its config is predicted to take {guess:.1f} CPU s and "
                  f"{left:.1f} are left of {prefix}.max_cpu_s={max_cpu_s:g}; it waits in the study (raise "
                  f"{prefix}.max_cpu_s and resume to run it)", flush=True)
            return full
    return OPEN, trial


def predicted_cpu(trials: list[optuna.trial.FrozenTrial], params: dict[str, Any], cost_of: CostOf) -> float | None:
    """The CPU seconds a trial with these sampled values is expected to take: ``cost_of(params)`` times
    the median, over the COMPLETE trials that recorded their CPU, of recorded CPU over ``cost_of`` of
    their values.  The ratio carries what the estimate leaves out (this machine's speed, seeds per
    trial, evaluation episodes), and the estimate what the median trial leaves out: a sampled config's
    own batch, epochs and rollout length (rank correlation 0.94 with measured time, BENCHMARKS.md "A
    run's cost"; within 1.5x for 33 past trials of 34, "Predicting a sampled config's CPU").
    Pruned trials do not calibrate (they stopped before their cost).  None before a trial completes,
    or when ``cost_of`` cannot read the values."""
    ratios = []
    for t in trials:
        cpu = recorded_cpu([t]) if t.state == TrialState.COMPLETE else []
        estimate = _estimate(cost_of, t.params) if cpu else None
        if estimate:
            ratios.append(cpu[0] / estimate)
    own = _estimate(cost_of, params)
    return statistics.median(ratios) * own if ratios and own is not None else None


def _estimate(cost_of: CostOf, params: dict[str, Any]) -> float | None:
    """``cost_of(params)`` when it is a positive finite number (stored values are data: one the
    estimate cannot read gives none)."""
    try:
        value = float(cost_of(dict(params)))
    except Exception:  # noqa: BLE001 - a hand-edited value (a list that is not YAML, a string batch) reads as none
        return None
    return value if math.isfinite(value) and value > 0 else None


def cpu_refusal(t: optuna.trial.FrozenTrial) -> dict[str, Any] | None:
    """The :data:`NOT_STARTED` record of a trial that ``max_cpu_s`` put back to WAITING, else None (a
    trial that started since, or a record that is not a mapping: stored attrs are data)."""
    record = t.user_attrs.get(NOT_STARTED) if t.state == TrialState.WAITING else None
    return record if isinstance(record, dict) else None


def _waiting_too_dear(trials: list[optuna.trial.FrozenTrial], cost_of: CostOf, committed: float,
                      max_cpu_s: float) -> tuple[int, float] | None:
    """``(number, predicted CPU)`` of the trial ``ask()`` would pop next when it was refused for its
    cost before and half its predicted CPU still does not fit; else None."""
    waiting = [t for t in trials if t.state == TrialState.WAITING]
    if not waiting:
        return None
    nxt = min(waiting, key=lambda t: t.number)
    guess = predicted_cpu(trials, nxt.params, cost_of) if cpu_refusal(nxt) is not None else None
    return (nxt.number, guess) if guess is not None and committed + guess / 2 >= max_cpu_s else None


def why_full(trials: list[optuna.trial.FrozenTrial], n_trials: int, max_total: int | None,
             max_runs: int | None, runs_per_trial: int, prefix: str,
             max_cpu_s: float | None = None, cost_of: CostOf | None = None) -> tuple[str, str] | None:
    """Why a study holding ``trials`` starts no trial under these limits, and the setting to raise,
    as ``("13 training runs (tuner.max_runs=14)", "raise tuner.max_runs")``; None when one may start.
    ``prefix`` names the keys as the user typed them (``tuner``, ``hydra.sweeper``)."""
    done = sum(t.state in FINISHED for t in trials)
    if done >= n_trials:
        why = f"{done} finished trial{'s' if done != 1 else ''} ({prefix}.n_trials={n_trials})"
        return why, f"raise {prefix}.n_trials to add trials"
    if max_total is not None and len(trials) >= max_total:
        return f"{len(trials)} trials ({prefix}.max_total_trials={max_total})", f"raise {prefix}.max_total_trials"
    if max_runs is not None:
        spent = runs_spent(trials)
        if spent + runs_per_trial > max_runs:
            return f"{spent} training runs ({prefix}.max_runs={max_runs})", f"raise {prefix}.max_runs"
    if max_cpu_s is not None:
        cpu, typical = cpu_committed(trials, cost_of=cost_of)
        if cpu >= max_cpu_s:
            return (f"{cpu:.1f} CPU seconds of trials ({prefix}.max_cpu_s={max_cpu_s:g})",
                    f"raise {prefix}.max_cpu_s")
        if cpu + typical / 2 >= max_cpu_s:
            return (f"{cpu:.1f} CPU seconds of trials ({prefix}.max_cpu_s={max_cpu_s:g}; the "
                    f"{max_cpu_s - cpu:.1f} left is under half a finished trial's median, {typical:.1f})",
                    f"raise {prefix}.max_cpu_s")
        dear = _waiting_too_dear(trials, cost_of, cpu, max_cpu_s) if cost_of is not None else None
        if dear is not None:
            return (f"{cpu:.1f} CPU seconds of trials ({prefix}.max_cpu_s={max_cpu_s:g}; the {max_cpu_s - cpu:.1f} "
                    f"left is under half of waiting trial {dear[0]}'s predicted {dear[1]:.1f})",
                    f"raise {prefix}.max_cpu_s")
    return None


def runs_spent(trials: list[optuna.trial.FrozenTrial]) -> int:
    """Training runs the finished trials used: each seed a trial trained counts one, a seed stopped
    by the pruner included (``user_attrs["seeds"]``; a trial pruned by Wilcoxon after 3 of 5 seeds
    counts 3).  Failed trials do not count (``tuner.max_failures`` bounds them)."""
    return sum(_seed_count(t) for t in trials if t.state in FINISHED)


def cpu_spent(trials: list[optuna.trial.FrozenTrial], now: float | None = None) -> float:
    """CPU seconds the trials have used, as the report's AutoRL checklist counts them: each trial's
    recorded ``cpu_time_s`` (its process and the pool workers it waited for; a failed trial killed
    before recording counts none), and for a RUNNING trial an estimate until it records its own: the
    wall time since it started times its share of the machine's cores (what ``backend.threads=null``
    gives each of the trials running at once).  The estimate errs high, so a budget waits for a
    running trial's own figure rather than starting a trial that would not have fit."""
    now = time.time() if now is None else now
    running = [t for t in trials if t.state == TrialState.RUNNING and t.datetime_start is not None]
    return sum(recorded_cpu(trials)) + sum(_running_estimates(running, now))


def _running_estimates(running: list[optuna.trial.FrozenTrial], now: float) -> list[float]:
    """Each running trial's CPU so far, estimated: the wall time since it started times its share of
    the machine's cores among ``running`` (0 for one not started yet)."""
    share = max(1, (os.cpu_count() or 1) // max(1, len(running)))
    return [max(0.0, now - t.datetime_start.timestamp()) * share if t.datetime_start is not None else 0.0
            for t in running]


def cpu_committed(trials: list[optuna.trial.FrozenTrial], now: float | None = None,
                  cost_of: CostOf | None = None) -> tuple[float, float]:
    """The CPU seconds the trials will have used once the running ones end, and a typical trial's
    cost: the median ``cpu_time_s`` of the finished (COMPLETE, PRUNED) trials that recorded one (0
    with none yet).  A running trial counts the larger of its :func:`cpu_spent` estimate and what it
    is expected to cost in all: its config's :func:`predicted_cpu` where ``cost_of`` gives one (a dear
    config started near the end of the budget is not counted as a typical one, which let the other
    job start a trial too: 1.19x the budget once, BENCHMARKS.md), else that median.

    ``tuner.max_cpu_s`` starts a trial while ``committed + typical / 2`` is below the budget: a new
    trial then ends the study nearer the budget than stopping would, so two methods given the same
    budget spend it within about half a trial each way, where "below the budget so far" let every job
    start one more trial at its very end (1.65x the budget once, BENCHMARKS.md)."""
    now = time.time() if now is None else now
    finished = recorded_cpu([t for t in trials if t.state in FINISHED])
    typical = statistics.median(finished) if finished else 0.0
    running = [t for t in trials if t.state == TrialState.RUNNING]
    committed = sum(recorded_cpu([t for t in trials if t.state != TrialState.RUNNING]))
    for t, guess in zip(running, _running_estimates(running, now)):
        own = recorded_cpu([t])  # recorded just before its result is told: past estimating
        expected = predicted_cpu(trials, t.params, cost_of) if cost_of is not None and not own else None
        committed += max(own[0] if own else guess, typical if expected is None else expected)
    return committed, typical


def recorded_cpu(trials: list[optuna.trial.FrozenTrial]) -> list[float]:
    """The ``cpu_time_s`` the trials recorded, one per trial that did.  Stored attrs are data: a value
    that is not a finite number >= 0 (a hand-edited journal) counts as none."""
    return [c for c in (number(t.user_attrs.get("cpu_time_s")) for t in trials)
            if c is not None and math.isfinite(c) and c >= 0]


def _seed_count(t: optuna.trial.FrozenTrial) -> int:
    """The seeds a trial trained: its ``seeds`` record, else its ``tuning_seeds``, else 1.  Stored
    attrs are data: a value that is not a non-empty list (a hand-edited journal) falls through."""
    record, tuning = t.user_attrs.get("seeds"), seed_list(t.user_attrs.get("tuning_seeds"))
    if isinstance(record, list) and record:
        return len(record)
    return len(tuning) if tuning is not None else 1


class TrialRunner:
    """Runs the trials of one study until its caller has no more (see the module docstring).

    :param study: the study
    :param lock: the study's lock (:class:`tuner.study.storage.StudyLock`), shared by every runner of it
    :param limits: how trials run
    :param on_result: called with ``(trial, Result)`` after each told result
    :param quiet: do not print failures
    """

    def __init__(self, study: optuna.Study, lock: Any, limits: RunLimits,
                 on_result: Callable[..., None] | None = None, quiet: bool = False) -> None:
        self.study, self.lock, self.limits = study, lock, limits
        self.supervisor = Supervisor(study, limits.trial_timeout, on_result, quiet)
        self.me = f"{socket.gethostname()}:{os.getpid()}"
        self.started_here: list[int] = []
        self._refusal_checked = float("-inf")
        self.created = time.time()

    @property
    def failures(self) -> int:
        return self.supervisor.failures

    # -- the loop ----------------------------------------------------------------------------
    def run(self, ask: Asker, prepare: Preparer, on_change: Callable[[], None] | None = None) -> None:
        """Start trials while ``ask`` gives them (at most ``n_jobs`` at once) and wait for them.

        While running trials (of this or another runner) could still end without counting, the
        runner re-checks every ``RECHECK_S``: it fails dead drivers' trials and starts new ones."""
        with self.lock:
            self.fail_zombies()
        started = time.monotonic()
        sup, limits = self.supervisor, self.limits

        def may_start() -> bool:
            if self._start_refused() is not None:
                return False
            if limits.max_failures is not None and sup.failures >= limits.max_failures:
                return False
            return not (limits.timeout and time.monotonic() - started > limits.timeout)

        try:
            with sigterm_raises():  # SIGTERM unwinds like Ctrl-C (tuner.common.interrupts)
                self._loop(ask, prepare, on_change, may_start)
        except KeyboardInterrupt as exc:
            reason = "driver terminated (SIGTERM)" if isinstance(exc, Terminated) else "driver interrupted (Ctrl-C)"
            sup.kill_all(reason)
            self._fail_unlaunched(reason)
            raise
        refused = self._start_refused()
        if refused is not None:
            raise ConfigError(refused)

    def _start_refused(self) -> str | None:
        """The one-line error that stops the study (``stop_if_start_refused``): the starting trial's
        ``ConfigError``, e.g. ``agent.sde_sample_freq: SAC(sde_sample_freq=0): ...``, whichever driver
        of the study ran it (another one's is read from the storage, every ``RECHECK_S``)."""
        if not self.limits.stop_if_start_refused:
            return None
        found = self.supervisor.start_refused or self._stored_refusal()
        if found is None:
            return None
        number, reason = found
        return f"{reason} (the study's starting config, trial {number}, was refused: study stopped)"

    def _stored_refusal(self) -> tuple[int, str] | None:
        """The starting trial's ``ConfigError`` as the storage holds it (another driver of a
        ``tuner.workers`` study ran it while this runner was there; one failed before, by an earlier
        command, is history: ``tuner.resume=force`` may have changed the refused value); remembered."""
        now = time.monotonic()
        if now - self._refusal_checked < RECHECK_S:
            return None
        self._refusal_checked = now
        for t in self.study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
            found = start_refusal(t, t.user_attrs.get("fail_reason"))
            ended = t.datetime_complete.timestamp() if t.datetime_complete else float("-inf")
            if found is not None and ended >= self.created:
                self.supervisor.start_refused = found
                return found
        return None

    def _fail_unlaunched(self, reason: str) -> None:
        """Fail the trials this runner asked for but had not launched yet when it was interrupted
        (composing the config, starting the process): left RUNNING, they would wait for the next
        driver's zombie check."""
        for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            if t.number in self.started_here and t.user_attrs.get("driver") in (self.me, None):
                try:
                    self.study._storage.set_trial_user_attr(t._trial_id, "fail_reason", reason)
                    self.study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
                except RuntimeError:  # finished meanwhile
                    continue

    def _loop(self, ask: Asker, prepare: Preparer, on_change: Callable[[], None] | None,
              may_start: Callable[[], bool]) -> None:
        """:meth:`run`'s loop: start trials while ``may_start()``, wait for news, repeat."""
        sup, limits = self.supervisor, self.limits
        state, checked = OPEN, 0.0
        while True:
            while limits.blocking and len(sup):  # batch mode: the whole batch first
                sup.wait()
            if state == WAIT and time.monotonic() - checked >= RECHECK_S:
                state = OPEN
            while state == OPEN and len(sup) < limits.n_jobs and may_start():
                state, checked = self._start_next(ask, prepare), time.monotonic()
            if not len(sup):
                if state != WAIT or not may_start():
                    break
                time.sleep(RECHECK_S)  # only other runners' trials are running
            else:
                sup.wait()
            if self._start_refused() is not None and len(sup):  # the others would fail the same way
                sup.kill_all("study stopped: its starting config was refused")
            if on_change:
                on_change()

    def _start_next(self, ask: Asker, prepare: Preparer) -> str:
        """Ask for a trial and launch it.  A first SIGINT / SIGTERM waits until the trial is known here
        (in ``started_here``, then launched or failed), then unwinds :meth:`run`, which fails it: raised
        inside ``ask()`` it would leave the new trial RUNNING and unknown, and raised inside ``prepare``
        (Hydra composing the config) OmegaConf's cleanup could replace it with an ordinary error, which
        failed the trial as a config error and let the driver run on past its SIGTERM."""
        with self.lock:
            self.fail_zombies()  # a runner that died since start-up must not hold its trials forever
            if self.supervisor.grid_exhausted:
                return DONE
            with held():
                state, trial = ask()
                if trial is not None:
                    self.started_here.append(trial.number)  # what _fail_unlaunched fails if interrupted
            raise_held()
        if trial is None:
            return state
        with held():
            self._launch(trial, prepare)
        raise_held()
        return OPEN

    def _launch(self, trial: optuna.Trial, prepare: Preparer) -> None:
        """Record this driver on ``trial``, compose its config and start its process; a compose or
        validation error fails this trial only."""
        trial.set_user_attr("driver", self.me)
        trial.set_user_attr("heartbeat", time.time())
        try:
            spec = prepare(trial)
        except Exception as exc:  # noqa: BLE001 - any compose / validation error fails this trial only
            reason = str(exc) if isinstance(exc, ConfigError) else error_line(exc)
            self.supervisor.tell_fail(trial, f"config error: {reason}")
            return
        self.supervisor.launch(trial, TrialProcess(spec, context_for(spec.backend, self.limits.preload),
                                                   n_jobs=self.limits.n_jobs))

    # -- liveness ----------------------------------------------------------------------------
    def fail_zombies(self) -> list[int]:
        """Mark RUNNING trials whose driver is gone as FAIL (call under the lock)."""
        failed = []
        host = socket.gethostname()
        storage = self.study._storage
        for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            reason = self._zombie_reason(t, host)
            if reason is None:
                continue
            try:
                storage.set_trial_user_attr(t._trial_id, "fail_reason", reason)
                storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
                failed.append(t.number)
            except RuntimeError:  # finished meanwhile by its own driver
                continue
        return failed

    def _zombie_reason(self, t: optuna.trial.FrozenTrial, host: str) -> str | None:
        driver = text(t.user_attrs.get("driver"))  # stored attrs are data: an odd record is no driver
        beat = number(t.user_attrs.get("heartbeat"))
        beat = beat if beat is not None and math.isfinite(beat) else None
        if driver == self.me:
            return None
        d_host, _, d_pid = driver.rpartition(":")
        if d_host == host and d_pid.isdigit() and not pid_alive(int(d_pid)):
            return f"driver {driver} stopped while the trial was running"
        last = beat if beat is not None else (t.datetime_start.timestamp() if t.datetime_start else None)
        if not driver and last is not None and time.time() - last > self.limits.no_driver_grace_s:
            return f"its driver stopped before recording itself ({time.time() - last:.0f} s ago)"
        if last is not None and time.time() - last > self.limits.heartbeat_grace_s:
            return f"no heartbeat from driver {driver or '?'} for {time.time() - last:.0f} s"
        return None
