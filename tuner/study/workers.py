"""Several study drivers from one command (``tuner.workers=N``, ``tuner.worker_launcher``).

The command's own driver is worker 0; it starts ``N - 1`` more, each a ``note-tune`` process with
the command's overrides plus ``tuner.worker=<i>`` and the resolved study name, dir and storage.
Nothing new coordinates them: they are several drivers on one storage, as two shells running the
same command are (:mod:`tuner.study.runner`), so the trial cap (``n_trials`` finished trials,
``max_total_trials``), zombie handling, heartbeats and pruning behave exactly as they do there.
A worker only runs trials; the held-out and test stages, ``study.json`` and the report are the
command's, once every worker has ended.  A worker that dies is reported; its running trial is
failed by the next driver that asks for a trial (at once on the same host, after the heartbeat
grace elsewhere) and the others finish the study.

Launchers (each worker still runs every trial in a fresh process of its own):

* ``local``: a plain subprocess on this machine (log: ``<study_dir>/workers/<i>.log``);
* ``submitit_local`` / ``submitit_slurm``: a submitit job (``tuner.worker_resources`` are the
  executor's parameters: ``timeout_min``, ``slurm_partition``, ``gpus_per_node``, ...);
* ``ray``: a Ray actor on the cluster at ``worker_resources.address`` (default: ``auto`` when a
  cluster runs, else a local one), with ``num_cpus`` / ``num_gpus`` per worker.

Across machines the storage must be one every machine reaches: PostgreSQL, or a journal file on a
shared disk (the default journal lives in the study dir).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from ..common.errors import ConfigError
from ..common.process import exit_reason

__all__ = ["worker_argv", "start_workers", "WorkerPool", "run_driver", "check_launcher"]

# overrides the command sets itself on a worker's command line
_OWN = ("tuner.workers", "tuner.worker", "tuner.worker_launcher", "tuner.worker_resources", "tuner.study_name",
        "tuner.study_dir", "tuner.storage", "hydra.run.dir")


def check_launcher(settings: Any) -> None:
    """Refuse, before the study is opened, a launcher whose engine is not installed here."""
    import importlib.util
    import shutil

    if settings.workers <= 1 or settings.worker:
        return
    launcher = settings.worker_launcher
    if launcher.startswith("submitit_") and importlib.util.find_spec("submitit") is None:
        raise ConfigError(f"tuner.worker_launcher: {launcher} needs submitit (pip install 'note-rl-tuner[cluster]')")
    if launcher == "submitit_slurm" and shutil.which("sbatch") is None:
        raise ConfigError("tuner.worker_launcher: submitit_slurm submits with sbatch, which is not on PATH here "
                          "(run the command on a SLURM login node)")
    if launcher == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError("tuner.worker_launcher: ray needs Ray (pip install 'note-rl-tuner[ray]')")


def worker_argv(overrides: list[str], settings: Any, index: int) -> list[str]:
    """The command line of worker ``index``: the command's overrides, the study it joins (name, dir,
    storage as this command resolved them), its number, and a Hydra run dir inside the study dir."""
    kept = [o for o in overrides if o.lstrip("+~").split("=", 1)[0] not in _OWN]
    study_dir = os.path.abspath(settings.study_dir)
    own = [f"tuner.study_name={_quote(settings.study_name)}", f"tuner.study_dir={_quote(study_dir)}",
           f"tuner.worker={index}", f"hydra.run.dir={_quote(os.path.join(study_dir, 'workers', str(index)))}"]
    if settings.storage:
        own.append(f"tuner.storage={_quote(settings.storage)}")
    return [sys.executable, "-m", "tuner", *kept, *own]


def _quote(value: str) -> str:
    """A Hydra override value taken as it is (a URL's ``@`` / ``?`` / ``=``, a path with spaces)."""
    import re

    # Hydra 1.3: a backslash is an escape only before a quote (or the closing one): those are doubled
    text = re.sub(r"(\\*)(')", lambda m: m.group(1) * 2 + "\\'", str(value))
    return "'" + re.sub(r"(\\+)$", lambda m: m.group(1) * 2, text) + "'"


def run_driver(argv: list[str], cwd: str, env: dict[str, str] | None = None) -> int:
    """Run one worker's driver to its end (the body of a submitit job or a Ray task); its exit status
    (negative: killed by that signal)."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, preexec_fn=_die_with_parent if sys.platform == "linux" else None)
    try:
        return proc.wait()
    except BaseException:  # the job was cancelled: the driver ends its trials on SIGTERM
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise


def _die_with_parent() -> None:
    """In the driver's child before it execs: SIGKILL it when the job process that waits on it dies (a
    killed Ray node or SLURM job must not leave its driver running on as an orphan)."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class _Local:
    """A plain subprocess on this machine."""

    stop_grace_s = 30.0  # after SIGTERM, before SIGKILL

    def __init__(self, argv: list[str], cwd: str, env: dict[str, str], log: str) -> None:
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        self.where = f"pid {self.proc.pid} on {socket.gethostname()} (local; log {log})"

    def status(self) -> int | None:
        return self.proc.poll()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # the driver fails its running trials and exits 143
            try:
                self.proc.wait(timeout=self.stop_grace_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()  # reaped: until then its pid looks alive to the zombie check


class _Submitit:
    """A submitit job (``local`` or ``slurm``) running :func:`run_driver`."""

    def __init__(self, cluster: str, argv: list[str], cwd: str, env: dict[str, str], folder: str,
                 resources: dict[str, Any]) -> None:
        try:
            import submitit
        except ImportError:
            raise ConfigError(f"tuner.worker_launcher: submitit_{cluster} needs submitit "
                              f"(pip install 'note-rl-tuner[cluster]')") from None
        executor = submitit.AutoExecutor(folder=folder, cluster=cluster)
        params = {"timeout_min": 24 * 60, **resources}
        try:
            executor.update_parameters(**params)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"tuner.worker_resources: {str(exc).splitlines()[0]}") from None
        self.job = executor.submit(run_driver, argv, cwd, env)
        self.where = f"submitit {cluster} job {self.job.job_id} (log {self.job.paths.stdout})"

    def status(self) -> int | None:
        if not self.job.done():
            return None
        try:
            return int(self.job.result())
        except Exception as exc:  # noqa: BLE001 - the job failed or was killed: its own words
            print(f"  {str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__}", flush=True)
            return 1

    def stop(self) -> None:
        if not self.job.done():
            self.job.cancel(check=False)


class _Ray:
    """A Ray actor that runs :func:`run_driver` on whichever node Ray gives it."""

    def __init__(self, argv: list[str], cwd: str, env: dict[str, str], resources: dict[str, Any]) -> None:
        ray = _ray(resources)
        options = {k: resources[k] for k in ("num_cpus", "num_gpus", "resources") if k in resources}
        options.setdefault("num_cpus", 1)
        # the actor imports this module: the Ray worker finds it where this command does
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        path = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        self.ray = ray
        self.actor = ray.remote(_RayDriver).options(max_restarts=0, runtime_env={"env_vars": {"PYTHONPATH": path}},
                                                   **options).remote()
        wait_s = float(resources.get("start_timeout", 300))
        try:
            host, ip, pid = ray.get(self.actor.where.remote(), timeout=wait_s)
        except ray.exceptions.GetTimeoutError:
            ray.kill(self.actor)
            raise ConfigError(f"tuner.worker_resources: no Ray node gave a worker {options} within {wait_s:g} s "
                              f"(cluster resources: {ray.cluster_resources()})") from None
        self.ref = self.actor.run.remote(argv, cwd, env)
        self.where = f"Ray actor on node {ip} ({host}, pid {pid})"

    def status(self) -> int | None:
        ready, _ = self.ray.wait([self.ref], timeout=0)
        if not ready:
            return None
        try:
            return int(self.ray.get(self.ref))
        except Exception as exc:  # noqa: BLE001 - the actor or its node died
            print(f"  {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
                  flush=True)
            return 1

    def stop(self) -> None:
        try:
            self.ray.kill(self.actor)
        except Exception:  # noqa: BLE001 - gone already
            pass


class _RayDriver:
    """The actor body (a plain class: :func:`ray.remote` wraps it where Ray is installed)."""

    def where(self) -> tuple[str, str, int]:
        import ray

        return socket.gethostname(), ray.util.get_node_ip_address(), os.getpid()

    def run(self, argv: list[str], cwd: str, env: dict[str, str]) -> int:
        return run_driver(argv, cwd, env)


def _ray(resources: dict[str, Any]) -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("tuner.worker_launcher: ray needs Ray (pip install 'note-rl-tuner[ray]')") from None
    if not ray.is_initialized():
        address = resources.get("address") or os.environ.get("RAY_ADDRESS")
        ray.init(address=address, include_dashboard=False, log_to_driver=True, ignore_reinit_error=True)
    return ray


class WorkerPool:
    """The workers a command started; :meth:`poll` reports the ones that ended."""

    def __init__(self) -> None:
        self.workers: dict[int, Any] = {}
        self.ended: dict[int, int] = {}

    def poll(self) -> None:
        """Say which workers ended since the last look (a dead one in one line: the others go on)."""
        for i, w in self.workers.items():
            if i in self.ended:
                continue
            rc = w.status()
            if rc is None:
                continue
            self.ended[i] = rc
            if rc == 0:
                print(f"worker {i} finished", flush=True)
            else:
                print(f"worker {i} died: {exit_reason(rc) if rc < 0 else f'exit status {rc}'}; the other drivers "
                      f"finish the study (its running trial fails as a dead driver's)", flush=True)

    def wait(self, every: float = 1.0) -> None:
        while len(self.ended) < len(self.workers):
            self.poll()
            if len(self.ended) < len(self.workers):
                time.sleep(every)

    def stop(self) -> None:
        for i, w in self.workers.items():
            if i not in self.ended:
                w.stop()

    @property
    def dead(self) -> list[int]:
        return [i for i, rc in self.ended.items() if rc != 0]


def start_workers(settings: Any, overrides: list[str], cwd: str) -> WorkerPool:
    """Start workers 1 .. ``settings.workers - 1`` with ``settings.worker_launcher`` and print where
    each runs."""
    pool = WorkerPool()
    folder = os.path.join(os.path.abspath(settings.study_dir), "workers")
    os.makedirs(folder, exist_ok=True)
    env = dict(os.environ)
    launcher, resources = settings.worker_launcher, dict(settings.worker_resources or {})
    try:
        for i in range(1, settings.workers):
            argv = worker_argv(overrides, settings, i)
            if launcher == "local":
                w: Any = _Local(argv, cwd, env, os.path.join(folder, f"{i}.log"))
            elif launcher.startswith("submitit_"):
                w = _Submitit(launcher.split("_", 1)[1], argv, cwd, env, os.path.join(folder, "submitit"), resources)
            else:
                w = _Ray(argv, cwd, env, resources)
            pool.workers[i] = w
            print(f"worker {i}: {w.where}", flush=True)
    except BaseException:
        pool.stop()
        raise
    return pool
