"""Plain training jobs in fresh processes: Hydra multirun jobs and held-out re-evaluation runs."""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any, Callable

from ..common.interrupts import Terminated
from ..common.messages import Failure, Report, Result, TrialSpec
from ..common.process import exit_reason
from ..run.launcher import TrialProcess, context_for

__all__ = ["run_in_fresh_process", "Job", "run_jobs"]


@dataclass
class Job:
    """One training run: its resolved config and run dir; after :func:`run_jobs`, its ``result``
    (the run's ``result.json`` content) or ``error`` (one line).  ``log_path`` receives the run's
    output (``None``: the driver's terminal)."""

    cfg: dict[str, Any]
    run_dir: str
    log_path: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    graceful: bool = False  # on Ctrl-C / SIGTERM: stop and save (a multirun job), not just killed
    prefix: str | None = None  # each output line of the job starts with it (parallel multirun jobs)


def run_in_fresh_process(cfg: dict[str, Any], run_dir: str, ctx: Any, concurrent: int = 1,
                         prefix: str | None = None) -> dict[str, Any]:
    """Train ``cfg`` in a new process and return its ``result.json`` content; ``concurrent``: how
    many such jobs run at once (a parallel Hydra launcher's ``n_jobs``), which share the cores;
    ``prefix``: the label its output lines start with."""
    job = Job(cfg, run_dir, graceful=True, prefix=prefix)
    run_jobs([job], ctx=ctx, threads_for=concurrent)
    if job.result is None:
        raise RuntimeError(f"training job failed: {job.error}")
    return job.result


def run_jobs(jobs: list[Job], n_jobs: int = 1, deadline: float | None = None, ctx: Any = None,
             job_timeout: float | None = None, memory_mb: int | None = None,
             threads_for: int | None = None, on_done: Callable[[Job], None] | None = None) -> None:
    """Train every job, each in its own fresh process, at most ``n_jobs`` at once, filling in
    ``result`` or ``error``.  Past ``deadline`` (a ``time.monotonic()`` value) running jobs are
    killed and jobs not started are left with ``error="not started: time limit"``.  Each job gets
    ``cores // threads_for`` framework threads (default: ``cores // n_jobs``); ``on_done`` is
    called with each job as it ends (progress lines)."""
    pending: list[Job] = list(jobs)
    running: dict[int, tuple[Job, TrialProcess]] = {}
    try:
        _run_loop(pending, running, n_jobs, deadline, ctx, job_timeout, memory_mb, threads_for, on_done)
    except BaseException as exc:
        # Ctrl-C / SIGTERM (tuner.common.interrupts) or an error of the driver: no job outlives it; each
        # running job's process group is killed (its pool workers too), none is left orphaned
        reason = "interrupted (SIGTERM)" if isinstance(exc, Terminated) else \
            "interrupted (Ctrl-C)" if isinstance(exc, KeyboardInterrupt) else f"driver error: {type(exc).__name__}"
        if isinstance(exc, KeyboardInterrupt):  # multirun jobs save what they trained first
            _stop_gracefully([(job, proc) for job, proc in running.values() if job.graceful])
        for job, proc in running.values():
            proc.kill()
            proc.close()
            if job.result is None and job.error is None:
                job.error = reason
        for job in pending:
            job.error = f"not started: {reason}"
        raise


def _run_loop(pending: list[Job], running: dict[int, tuple[Job, TrialProcess]], n_jobs: int,
              deadline: float | None, ctx: Any, job_timeout: float | None, memory_mb: int | None,
              threads_for: int | None, on_done: Callable[[Job], None] | None = None) -> None:
    """:func:`run_jobs`' loop: start jobs, wait for news, collect the ended ones."""
    while pending or running:
        over = deadline is not None and time.monotonic() > deadline
        while pending and len(running) < max(1, n_jobs) and not over:
            job = pending.pop(0)
            spec = TrialSpec(trial=None, backend=job.cfg["backend"]["name"], run_dir=job.run_dir,
                             configs=[job.cfg], report_every=10 ** 9, memory_mb=memory_mb,
                             log_path=job.log_path, graceful=job.graceful, prefix=job.prefix)
            os.makedirs(job.run_dir, exist_ok=True)
            running[id(job)] = (job, TrialProcess(spec, ctx or context_for(spec.backend),
                                                  n_jobs=threads_for or n_jobs))
        if over:
            for job in pending:
                job.error = "not started: time limit"
            pending.clear()
        handles = [h for _, p in running.values() for h in (p.conn, p.proc.sentinel)]
        if handles:
            wait(handles, timeout=1.0)
        for key, (job, proc) in list(running.items()):
            timed_out = job_timeout is not None and proc.elapsed > job_timeout
            if _poll(job, proc) or over or timed_out:
                if job.result is None and job.error is None:
                    job.error = "killed: time limit" if over or timed_out else exit_reason(proc.proc.exitcode)
                proc.kill()
                proc.close()
                del running[key]
                if on_done is not None:
                    on_done(job)


#: seconds a stopped job may take to save its model and result.json before its group is killed
GRACE_S = 60.0


def _stop_gracefully(jobs: list[tuple[Job, TrialProcess]]) -> None:
    """Ask each job to stop (SIGTERM to its leading process: the run stops at its next env step and
    saves, :func:`tuner.run.train.run_training` with ``interruptible``) and collect the result it
    reports, waiting at most :data:`GRACE_S`; a job that does not answer in time is killed with the
    rest.  A second Ctrl-C meanwhile ends the driver at once (:mod:`tuner.common.interrupts`), and
    the jobs, which watch their driver, end their groups."""
    from ..common.interrupts import keep

    for _, proc in jobs:
        if proc.alive() and proc.proc.pid is not None:
            os.kill(proc.proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    waiting = list(jobs)
    while waiting and time.monotonic() < deadline:
        wait([h for _, p in waiting for h in (p.conn, p.proc.sentinel)], timeout=1.0)
        waiting = [(job, proc) for job, proc in waiting if not _poll(job, proc)]
    for job, _ in jobs:
        if job.result is not None and job.result.get("interrupted"):
            keep(f"{job.run_dir}: model.npz and result.json (\"interrupted\": true) kept")


def _poll(job: Job, proc: TrialProcess) -> bool:
    """Handle the job's messages; True once it ended (result, failure or exit)."""
    alive = proc.alive()
    for message in proc.events():
        if isinstance(message, Result):
            with open(os.path.join(job.run_dir, "result.json")) as f:
                job.result = json.load(f)
            return True
        if isinstance(message, Failure):
            job.error = message.message
            return True
        if isinstance(message, Report):
            proc.answer(False)  # no pruner here: go on
    return not alive
