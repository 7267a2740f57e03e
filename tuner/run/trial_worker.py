"""Body of one trial process (started fresh for every trial by :mod:`tuner.run.launcher`).

The child receives a :class:`~tuner.common.messages.TrialSpec` (its fully resolved configs, one per seed)
and talks to the driver over a pipe with the typed messages of :mod:`tuner.common.messages`: a
:class:`Report` after every ``report_every`` episodes, answered by a :class:`Decision`; then one
:class:`Result` or :class:`Failure`.  It never imports Optuna and never touches the study's storage:
the driver owns the trial.  It leads a process group of its own, so that the driver can kill it
together with whatever it started (pool-network workers).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from typing import Any

import numpy as np

from note_rl.backends import backend_info, backend_names, get_backend
from note_rl.backends.base import export_thread_env

from ..common.messages import Decision, Failure, Report, Result, TrialSpec
from ..logs.results import write_json
from ..logs.wandb_logger import set_process_meta

__all__ = ["main", "aggregate", "standard_error", "SEED_STEP_OFFSET"]

# intermediate steps of seed i are reported as i * SEED_STEP_OFFSET + k, so that the pruner
# compares trials at the same seed and the same report index
SEED_STEP_OFFSET = 10_000

AGGREGATIONS = {"mean": np.mean, "median": np.median, "min": np.min}


def standard_error(values: Any) -> float:
    """The standard error of the mean of ``values``: sample standard deviation / sqrt(n); 0.0 for one
    value (no spread to measure)."""
    data = np.asarray(values, dtype=float)
    return float(np.std(data, ddof=1) / np.sqrt(data.size)) if data.size > 1 else 0.0


def aggregate(values: list[float], how: str) -> float:
    """The seeds' scores combined: ``mean``, ``median``, ``min``, ``q<percent>`` (``q25``: the lower
    quartile, linear interpolation as numpy's percentile) or ``lcb``, the mean less one standard error
    of the mean (sample standard deviation / sqrt(n); one score: itself), a lower confidence bound.  All
    but the mean and median are risk-averse: a config whose seeds disagree scores lower."""
    data = np.asarray(values, dtype=float)
    if how.startswith("q"):
        return float(np.percentile(data, float(how[1:])))
    if how == "lcb":
        return float(np.mean(data)) - standard_error(data)
    return float(AGGREGATIONS[how](data))


def _reporter(conn: Any, offset: int = 0) -> Any:
    def report(step: int, value: float) -> bool:
        conn.send(Report(offset + step, value))
        answer = conn.recv()
        return isinstance(answer, Decision) and answer.prune

    return report


def _result(payload: dict[str, Any]) -> Result:
    return Result(payload["status"], payload.get("value"), payload.get("attrs") or {})


def _run_finder(conn: Any, spec: TrialSpec) -> Result:
    from .finder_child import make_recorder, run_pickled, summarise
    from .train import run_training

    if spec.pickled is not None:  # Python API: a pickled agent
        return _result(run_pickled(spec.pickled, spec.finder, spec.run_dir, _reporter(conn)))
    recorder = make_recorder(spec.finder, _reporter(conn))
    lr_test = spec.finder["kind"] == "lr"
    result = run_training(spec.configs[0], spec.run_dir, callbacks=[recorder], safe_nan=lr_test, evaluation=not lr_test)
    return _result(summarise(recorder, spec.run_dir, {"initial_weights_sha256": result.get("initial_weights_sha256"),
                                                      "env_steps": result["env_steps"]}))


def _run(conn: Any, spec: TrialSpec) -> Result:
    if spec.finder is not None:
        return _run_finder(conn, spec)
    if spec.interleaved and spec.trial is not None and len(spec.configs) > 1:
        from .seed_turns import train_in_turns

        seeds, pruned = train_in_turns(spec, _train_seed, _round_reporter(conn, spec))
    else:
        seeds, pruned = _one_after_another(conn, spec)
    finals = [s["objective"] for s in seeds]
    value = aggregate([f for f in finals if f is not None] or [float("nan")], spec.aggregation)
    attrs = {"seeds": seeds, "env_steps": sum(s["env_steps"] for s in seeds),
             "wall_time_s": sum(s["wall_time_s"] for s in seeds), "cpu_time_s": cpu_seconds()}
    result = Result("pruned" if pruned else "complete", value, attrs)
    if len(spec.configs) > 1:
        write_json(os.path.join(spec.run_dir, "result.json"),
                   {"status": result.status, "value": value, "attrs": attrs, "trial": spec.trial})
    return result


def _round_reporter(conn: Any, spec: TrialSpec) -> Any:
    """What an interleaved trial reports after each round: the seeds' scores combined by the trial's
    aggregation (step = the round), or with instances (Wilcoxon) each seed's score as an instance of
    its own, at step ``seed index * SEED_STEP_OFFSET + round``, paired with the best trial's same seed
    at the same point of training; the decision after the round's last instance holds."""
    report = _reporter(conn)

    def combined(round_: int, scores: dict[int, float]) -> bool:
        return report(round_, aggregate(list(scores.values()), spec.aggregation))

    def instances(round_: int, scores: dict[int, float]) -> bool:
        prune = False
        for i, value in scores.items():
            prune = report(i * SEED_STEP_OFFSET + round_, value)
        return prune

    return instances if spec.instances else combined


def _one_after_another(conn: Any, spec: TrialSpec) -> tuple[list[dict[str, Any]], bool]:
    """Train the trial's seeds one after another (``tuner.seed_order=sequential``)."""
    from .train import run_training

    seeds: list[dict[str, Any]] = []
    for i, cfg in enumerate(spec.configs):
        # a plain job (no trial: Hydra multirun) has no pruner to report to; with instances (Wilcoxon)
        # the pruner hears each seed's final score, not its learning curve
        reporter = _reporter(conn, i * SEED_STEP_OFFSET) if spec.trial is not None and not spec.instances else None
        res = run_training(cfg, _seed_dir(spec, cfg), reporter, spec.report_every, meta=_seed_meta(spec, cfg, i),
                           interruptible=spec.graceful)
        seeds.append(_summary(res))
        if res["status"] == "pruned":
            return seeds, True
        if spec.instances and spec.trial is not None and res["objective"] is not None:
            # every seed is reported, the last one too: later trials are compared with this one's instances
            prune = _reporter(conn)(i, float(res["objective"]))
            if prune and i + 1 < len(spec.configs):
                return seeds, True  # significantly worse than the best trial on the seeds so far (WilcoxonPruner)
    return seeds, False


def _train_seed(conn: Any, spec: TrialSpec, i: int) -> dict[str, Any]:
    """Seed ``i`` of an interleaved trial, in its own process (:mod:`tuner.run.seed_turns`): each
    report waits for the seed's next turn."""
    from .train import run_training

    if spec.wandb:  # a spawned process starts without the trial process's state
        set_process_meta(spec.wandb)
    default_threads(spec.threads)
    cfg = spec.configs[i]
    res = run_training(cfg, _seed_dir(spec, cfg), _reporter(conn), spec.report_every, meta=_seed_meta(spec, cfg, i))
    return _summary(res)


def _seed_dir(spec: TrialSpec, cfg: dict[str, Any]) -> str:
    return spec.run_dir if len(spec.configs) == 1 else os.path.join(spec.run_dir, f"seed_{cfg['seed']}")


def _summary(res: dict[str, Any]) -> dict[str, Any]:
    """What the trial keeps of one seed's run (``user_attrs["seeds"]``)."""
    return {k: res[k] for k in ("seed", "objective", "final_eval_mean_return", "final_mean_return",
                                "best_mean_return", "env_steps", "gradient_steps", "wall_time_s")}


def cpu_seconds() -> float:
    """CPU seconds this trial process and its waited-for children (pool workers) have used: the
    study report's compute budget (the AutoRL protocol reports CPU time beside wall time)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _seed_meta(spec: TrialSpec, cfg: dict[str, Any], i: int) -> dict[str, Any] | None:
    """The wandb identity of seed ``i`` of the trial (one wandb run per training run)."""
    meta = spec.wandb
    if meta is None or len(spec.configs) == 1:
        return meta
    return {**meta, "name": f"{meta['name']} seed={cfg['seed']}", "seed_index": i}


def _limit_memory(extra_mb: int) -> None:
    """Cap this process's address space at its current size plus ``extra_mb``: a trial that needs
    more gets a MemoryError (reported, trial FAIL) instead of pushing the machine into the OOM killer."""
    import resource

    with open("/proc/self/statm") as f:
        current = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = current + extra_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _cap_gpu_memory(spec: TrialSpec) -> None:
    """Say where this trial runs (its log's first line) and cap a torch trial's share of its GPU's
    memory (``tuner.gpus_per_trial`` below 1: several trials share one GPU)."""
    share = f", memory fraction {spec.gpu_fraction:g}" if spec.gpu_fraction is not None else ""
    print(f"trial {spec.trial}: CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')}{share}", flush=True)
    if spec.gpu_fraction is not None:  # torch caps it; TensorFlow allocates on demand instead
        get_backend(spec.backend).cap_device_memory(float(spec.gpu_fraction))


def default_threads(n: int | None) -> None:
    """Use ``n`` framework threads unless the trial's config says otherwise (``backend.threads``,
    applied later by :func:`tuner.run.build.set_threads`).  A framework already imported (forked from
    the preloading forkserver) is told through its backend; one imported later reads the environment."""
    if not n:
        return
    export_thread_env(n)
    for name in backend_names():
        if sys.modules.get(backend_info(name).framework) is not None:  # imported (None: blocked)
            get_backend(name).set_threads(n)


def _process_start(pid: int) -> str | None:
    """Start time of ``pid`` (field 22 of ``/proc/<pid>/stat``), ``None`` if unknown or gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in "ZX" else fields[19]  # a zombie driver is gone too


def _driver_gone(pid: int, started: str | None) -> bool:
    if started is not None:  # /proc: also tells a reused pid from the driver
        return _process_start(pid) != started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def watch_driver(pid: int, interval: float = 0.5) -> threading.Thread:
    """End this trial, and the process group it leads (pool-network workers), once the driver
    ``pid`` is gone.  A SIGKILLed driver cleans up nothing, and the trial's own group is out of
    reach of a signal sent to the driver's group, so without this it would train on as an orphan."""
    started = _process_start(pid)

    def watch() -> None:
        while not _driver_gone(pid, started):
            time.sleep(interval)
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)
        os._exit(1)

    thread = threading.Thread(target=watch, name="driver-watch", daemon=True)
    thread.start()
    return thread


def prefix_output(prefix: str) -> threading.Thread:
    """Start every line this process writes to stdout or stderr (its pool workers', which inherit the
    descriptors, too) with ``prefix``: parallel multirun jobs share one terminal, and unlabelled lines
    of six jobs cannot be told apart.  Both descriptors are pointed at one pipe whose reader thread
    writes each complete line, prefixed, to the original stdout."""
    out = os.dup(1)
    read, write = os.pipe()
    os.dup2(write, 1)
    os.dup2(write, 2)
    os.close(write)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    label = prefix.encode()

    def pump() -> None:
        pending = b""
        with os.fdopen(read, "rb", buffering=0) as pipe:
            while True:
                chunk = pipe.read(65536)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                if lines:
                    os.write(out, b"".join(label + line + b"\n" for line in lines))
        if pending:
            os.write(out, label + pending + b"\n")

    thread = threading.Thread(target=pump, name="prefix-output", daemon=True)
    thread.start()

    def drain() -> None:  # at exit: close the pipe's write ends so the reader prints the last lines
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        for fd in (1, 2):
            try:
                os.close(fd)
            except OSError:
                pass
        thread.join(timeout=5.0)

    import atexit

    atexit.register(drain)
    return thread


def main(conn: Any, spec: TrialSpec) -> None:
    """Process entry point."""
    try:
        os.setpgid(0, 0)  # lead a process group: the driver kills the trial with its workers
    except OSError:
        pass
    if spec.driver_pid:
        watch_driver(spec.driver_pid)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # as note_rl.backends.tf_backend
    if spec.gpus is not None:  # before any framework initialises CUDA in this process
        os.environ["CUDA_VISIBLE_DEVICES"] = spec.gpus
        if spec.gpu_fraction is not None:
            os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"  # TensorFlow has no memory fraction
    default_threads(spec.threads)
    if spec.log_path:  # keep the driver's terminal clean; the trial's own output goes to its run dir
        os.makedirs(os.path.dirname(spec.log_path), exist_ok=True)
        stream = open(spec.log_path, "a", buffering=1)
        os.dup2(stream.fileno(), 1)
        os.dup2(stream.fileno(), 2)
        sys.stdout = sys.stderr = stream
    elif spec.prefix:
        prefix_output(spec.prefix)
    if spec.wandb:  # every run this trial process trains (finder runs too) is the trial's
        set_process_meta(spec.wandb)
    if spec.gpus is not None:
        _cap_gpu_memory(spec)
    if spec.memory_mb:
        _limit_memory(int(spec.memory_mb))
    if spec.graceful:  # the driver's SIGTERM asks this run to stop at a safe point and save
        from ..common.interrupts import install

        install()
    try:
        conn.send(_run(conn, spec))
    except BaseException as exc:  # noqa: BLE001 - everything is reported to the driver
        message = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        try:
            conn.send(Failure(message, traceback.format_exc()))
        except OSError:
            pass
        raise SystemExit(1) from None
