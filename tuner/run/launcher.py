"""Fresh OS processes for trials (and for multirun jobs).

Every trial runs in a new process - never a thread, never a reused worker - so TensorFlow and
PyTorch memory never carries over (tensorflow#50765, optuna#2804).  PyTorch trials are forked from
a ``forkserver`` that has already imported torch (``preload``): each trial is still a brand-new
process, but it skips the ~3 s torch import.  TensorFlow trials use ``spawn`` (TensorFlow is not
fork-safe once imported).
"""

from __future__ import annotations

import dataclasses
import functools
import multiprocessing as mp
import os
import signal
import time
from typing import Any

from note_rl.backends import backend_info
from note_rl.utils import standard_start_method

from ..common.interrupts import start_shielded
from ..common.messages import Decision, TrialSpec
from . import trial_worker

__all__ = ["TrialProcess", "context_for", "free_cores", "multirun_jobs_at_once", "threads_per_trial"]

# what every trial imports besides its backend's own preload list, so that a forked child finds
# it in sys.modules (tuner.cli.app is what the child re-imports as the parent's __main__)
_PRELOAD = ["tuner.cli.app", "tuner.run.trial_worker", "tuner.run.train", "tuner.run.build"]
_forkserver_preload: list[str] | None = None


def context_for(backend: str, preload: bool = True) -> Any:
    """The multiprocessing context for a trial of ``backend``: its backend's start method (a
    forkserver that preloads the backend's modules, or ``spawn``); ``preload=False`` or a platform
    without forkserver falls back to ``spawn``."""
    global _forkserver_preload
    standard_start_method()  # a job of Hydra's joblib launcher runs in a loky worker
    info = backend_info(backend)
    if info.start_method == "forkserver" and preload and "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        wanted = _PRELOAD + list(info.preload)
        if _forkserver_preload is None:  # one forkserver per driver: the first backend's list
            ctx.set_forkserver_preload(wanted)
            _forkserver_preload = wanted
        return ctx
    return mp.get_context("spawn")


def threads_per_trial(n_jobs: int) -> int:
    """Framework threads for each of ``n_jobs`` trials running at once: the cores shared out.

    Why: torch and TensorFlow start one intra-op thread per core in every process, so two trials on
    two cores would run four threads whose barriers wait on each other (measured here: a 64x256x256
    matmul took 8 ms instead of 0.25 ms with two threads and the other core busy).  A trial's own
    ``backend.threads`` takes precedence.  Cores that other work kept busy when this driver started
    its first trial are not counted (:func:`free_cores`, read once per driver so that every trial of
    a study gets the same count: its own trials raise the load average)."""
    return max(1, min((os.cpu_count() or 1) // max(1, int(n_jobs)), _free_at_start()))


def multirun_jobs_at_once(hydra_cfg: Any) -> int:
    """How many jobs of this multirun the Hydra launcher runs at once (``hydra_cfg``: a job's
    ``HydraConfig``), so that they share the cores out (:func:`threads_per_trial`).

    joblib runs ``n_jobs`` at once (negative values counted from the CPU count).  submitit_local
    starts every job of a sweep batch together (all of the sweep's jobs, or
    ``hydra.sweeper.max_batch_size``), each ``tasks_per_node`` times.  The basic launcher runs one
    job after another, and a SLURM job has its node to itself: 1."""
    launcher = hydra_cfg.launcher
    n = launcher.get("n_jobs")
    if n is not None:
        n = int(n)
        return max(1, n if n > 0 else (os.cpu_count() or 1) + 1 + n)
    if str(launcher.get("_target_", "")).endswith("submitit_launcher.LocalLauncher"):
        return _batch_size(hydra_cfg) * max(1, int(launcher.get("tasks_per_node") or 1))
    return 1


def _batch_size(hydra_cfg: Any) -> int:
    """The number of jobs in this job's batch of Hydra's basic sweeper, from the sweep's own
    overrides in ``<sweep dir>/multirun.yaml`` (a job's config holds only its own); 1 when they
    cannot be read (another sweeper, a glob sweep that needs the config loader)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    if not str(hydra_cfg.sweeper.get("_target_", "")).endswith("BasicSweeper"):
        return 1
    try:
        cwd = OmegaConf.select(hydra_cfg, "runtime.cwd", default="")  # a relative sweep dir (hydra.job.chdir)
        master = OmegaConf.load(os.path.join(cwd, str(hydra_cfg.sweep.dir), "multirun.yaml")).hydra
        args = [f"{k}={v}" for k, v in (master.sweeper.get("params") or {}).items()]
        overrides = OverridesParser.create().parse_overrides(args + list(master.overrides.task))
        batches = BasicSweeper.split_arguments(overrides, master.sweeper.get("max_batch_size"))
    except Exception:  # noqa: BLE001 - the count is a thread hint; a job must not fail for it
        return 1
    num = int(hydra_cfg.job.num)
    for batch in batches:
        if num < len(batch):
            return len(batch)
        num -= len(batch)
    return 1


@functools.lru_cache(maxsize=1)
def _free_at_start() -> int:
    return free_cores()


def free_cores() -> int:
    """Cores not busy with other work: the CPU count less the 1-minute load average (rounded), at
    least 1.  A single run's default thread count: with another core-bound process on a 2-core
    machine, 4,000 steps of DQN took 54 s with two torch threads and 24 s with one (BENCHMARKS.md)."""
    cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):  # no load average on this platform
        load = 0.0
    return max(1, cores - int(round(load)))


class TrialProcess:
    """A child running ``target(conn, spec)`` (default :func:`tuner.run.trial_worker.main`), one of
    ``n_jobs`` running at once (see :func:`threads_per_trial`).  The child leads its own process
    group, which :meth:`kill` kills whole (pool-network workers included)."""

    def __init__(self, spec: TrialSpec, ctx: Any, target: Any = None, n_jobs: int = 1) -> None:
        # read by trial_worker.main; the pid lets the trial end itself if the driver is SIGKILLed
        spec = dataclasses.replace(spec, threads=threads_per_trial(n_jobs), driver_pid=os.getpid())
        self.spec = spec
        self.conn, child = ctx.Pipe()
        # not a daemon: a trial may start its own pool-network workers
        self.proc = ctx.Process(target=target or trial_worker.main, args=(child, spec), daemon=False,
                                name=f"trial-{spec.trial}")
        self.started = time.monotonic()
        start_shielded(self.proc)  # the terminal's Ctrl-C is the driver's to handle, not the trial's
        child.close()
        self.pruning = False

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def events(self) -> list[tuple[Any, ...]]:
        """Messages available now (non-blocking)."""
        out = []
        try:
            while self.conn.poll():
                out.append(self.conn.recv())
        except (EOFError, OSError):
            pass
        return out

    def answer(self, prune: bool) -> None:
        try:
            self.conn.send(Decision(prune))
        except (OSError, BrokenPipeError):
            pass

    def kill(self) -> None:
        """SIGKILL the trial's process group (the trial and every process it started), or the
        trial alone if it has not made its group yet."""
        if self.proc.pid is not None:
            try:  # no such group yet (the child has not called setpgid): the kill below suffices
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=10)

    def alive(self) -> bool:
        return self.proc.is_alive()

    def close(self) -> None:
        self.proc.join(timeout=10)
        self.conn.close()
