"""The one trial runner shared by studies, the sweeper and the finders: a timed-out trial is killed
with every process it started, dead drivers' trials are failed, messages are typed."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from tests.tuner.conftest import NO_REEVAL, REPO, journal_of
from tuner.common.messages import Decision, Failure, Report, Result, TrialSpec, seed_configs

HANG = ["env.module=tests.tuner.faulty_envs", "env.id=PidHang-v0", "strategy=pool_network",
        "strategy.processes=2", "logger=none", "agent.hidden_size=[16]", "buffer.pool_size=1000"]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"  # a zombie has exited (its parent has not reaped it)
    except OSError:  # gone: no /proc entry, or (ESRCH) it exited between open and read
        return False


def _ids(pid: int) -> tuple[int, int] | None:
    """The process group and session of ``pid`` (``None`` once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after "(comm)": state, ppid, pgrp, session
        return int(fields[2]), int(fields[3])
    except (OSError, IndexError, ValueError):  # OSError: gone before or while read (ESRCH)
        return None


def _pgid(pid: int) -> int | None:
    ids = _ids(pid)
    return None if ids is None else ids[0]


def _members(pgid: int | None = None, sid: int | None = None) -> set[int]:
    """Every live process of process group ``pgid`` (or of session ``sid``)."""
    found = set()
    for name in os.listdir("/proc"):
        ids = _ids(int(name)) if name.isdigit() else None
        if ids is not None and (ids[0] == pgid or ids[1] == sid) and _alive(int(name)):
            found.add(int(name))
    return found


def _launch(args: list[str], tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """``python -m tuner <args>`` in its own session (the test can kill whatever is left), with
    PidHang envs writing their pids into the returned folder; stdout and stderr on one pipe."""
    pids = tmp_path / "pids"
    pids.mkdir()
    env = dict(os.environ, PYTHONPATH=REPO, NOTE_TEST_PID_DIR=str(pids), HYDRA_FULL_ERROR="0")
    proc = subprocess.Popen([sys.executable, "-m", "tuner", *args], cwd=str(tmp_path), env=env,
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, pids


def _trial_group(pids: Path, proc: subprocess.Popen) -> tuple[list[int], set[int]]:
    """Once the trial and its two pool workers have built their envs: their pids, and every process
    of the trial's process group, looked at for a second more so that late starters are counted.
    (The driver's env check builds the env too, in a child that has ended by then.)"""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        groups: dict[int, list[int]] = {}
        for p in pids.iterdir():
            pgid = _pgid(int(p.name)) if _alive(int(p.name)) else None
            if pgid is not None and pgid != proc.pid:
                groups.setdefault(pgid, []).append(int(p.name))
        if groups and max(len(g) for g in groups.values()) >= 3:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"no trial with two pool workers: {proc.communicate(timeout=60)[0][-3000:]}")
    pgid, found = max(groups.items(), key=lambda item: len(item[1]))
    group: set[int] = set()
    for _ in range(5):
        group |= _members(pgid=pgid)
        time.sleep(0.2)
    assert set(found) <= group and pgid in found  # the trial leads the group its workers are in
    return found, group


def _gone(pids: set[int], seconds: float, sid: int | None = None) -> list[int]:
    """Those of ``pids`` (and of session ``sid``: the driver's forkserver and resource tracker,
    every trial) still alive after waiting up to ``seconds`` for them to end."""
    def left() -> list[int]:
        return sorted({p for p in pids if _alive(p)} | (_members(sid=sid) if sid else set()))

    deadline = time.monotonic() + seconds
    while left() and time.monotonic() < deadline:
        time.sleep(0.2)
    return left()


def _kill_leftovers(proc: subprocess.Popen, group: set[int]) -> None:
    for pgid in {proc.pid, *(_pgid(p) for p in group)} - {None}:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _only_trial(tmp_path) -> optuna.trial.FrozenTrial:
    journal = next(tmp_path.rglob("journal.log"))
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
    (summary,) = optuna.get_all_study_summaries(storage)
    (trial,) = optuna.load_study(study_name=summary.study_name, storage=storage).trials
    return trial


@pytest.mark.slow
@pytest.mark.parametrize("front", ["study", "sweeper", "finder"])
def test_timed_out_trial_is_killed_with_its_pool_workers(front, tmp_path) -> None:
    """Every process of the timed-out trial's group ends (the trial, its pool workers, whatever else
    it started), and once the driver exits nothing of its session is left (its forkserver and
    multiprocessing's resource tracker, which the trial's workers share, included)."""
    args = {"study": ["tuner=optuna", *NO_REEVAL, "tuner.n_trials=1", "tuner.trial_timeout=20", "search=none"],
            "sweeper": ["-m", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=1", "hydra.sweeper.trial_timeout=20",
                        "agent.gamma=choice(0.9,0.99)"],
            "finder": ["tuner=opt_finder", "tuner.optimizers=[adam]", "tuner.trial_timeout=20"]}[front]
    proc, pids = _launch([*args, *HANG], tmp_path)
    group: set[int] = set()
    try:
        found, group = _trial_group(pids, proc)
        # (orphaned workers would hold the app's output pipe open: this would time out)
        out, _ = proc.communicate(timeout=240)
        assert front == "finder" or proc.returncode == 0, out[-3000:]
        assert not _gone(group, 10, sid=proc.pid), (found, group)
    finally:
        _kill_leftovers(proc, group)
    trial = _only_trial(tmp_path)
    assert trial.state.name == "FAIL" and trial.user_attrs["fail_reason"].startswith("timeout")


@pytest.mark.slow
def test_a_killed_drivers_trial_ends_with_its_pool_workers(tmp_path) -> None:
    """SIGKILL of the driver (which can clean up nothing): its running trial leads its own process
    group, so nothing signals it; the trial sees its driver gone and ends its group, pool workers
    included, instead of running on as orphans."""
    proc, pids = _launch(["tuner=optuna", *NO_REEVAL, "tuner.n_trials=1", "search=none", *HANG], tmp_path)
    group: set[int] = set()
    try:
        found, group = _trial_group(pids, proc)
        os.killpg(proc.pid, signal.SIGKILL)  # the driver's group only: the trial leads its own
        proc.communicate(timeout=60)
        assert not _gone(group, 20, sid=proc.pid), (found, group)
    finally:
        _kill_leftovers(proc, group)


@pytest.mark.slow
def test_sigterm_to_a_driver_fails_its_trial_and_ends_its_group(tmp_path) -> None:
    """SIGTERM to the driver alone (as ``kill <pid>`` or a job scheduler sends it): the driver kills
    its running trial's process group, fails the trial with that reason, writes the study's outputs
    and exits 143 without a traceback."""
    proc, pids = _launch(["tuner=optuna", *NO_REEVAL, "tuner.n_trials=1", "search=none", *HANG], tmp_path)
    group: set[int] = set()
    try:
        found, group = _trial_group(pids, proc)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 143 and "Traceback" not in out, out[-3000:]
        assert not _gone(group, 10, sid=proc.pid), (found, group)
    finally:
        _kill_leftovers(proc, group)
    trial = _only_trial(tmp_path)
    assert trial.state.name == "FAIL" and trial.user_attrs["fail_reason"] == "driver terminated (SIGTERM)"
    assert next(tmp_path.rglob("study.json")).exists()


def test_finder_fails_the_trials_of_a_dead_driver(tmp_path) -> None:
    """The finders run trials through the same runner as studies: a RUNNING trial left by a killed
    process of this host is failed before new trials start."""
    from note_rl.lr_finder import LRFinder
    from tests.tuner.finders.test_finders import _dqn

    name = "zombie_lr"
    folder = tmp_path / name
    folder.mkdir()
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(journal_of(folder)))
    study = optuna.create_study(study_name=name, storage=storage, direction="maximize")
    ghost = study.ask()
    ghost.set_user_attr("driver", f"{socket.gethostname()}:{2**22 + 7}")  # no such process
    ghost.set_user_attr("heartbeat", time.time())
    import torch

    agent = _dqn("torch")
    agent.optimizer = torch.optim.Adam(agent.param, lr=1e-3)
    LRFinder(agent).find(N=10, per="episode", episodes=12, study_dir=str(folder), study_name=name)
    trials = optuna.load_study(study_name=name, storage=storage).trials
    assert trials[0].state.name == "FAIL" and "stopped while the trial was running" in trials[0].user_attrs["fail_reason"]
    assert trials[1].state.name == "COMPLETE"


def test_messages_are_one_type_each_and_pickle() -> None:
    import pickle

    spec = TrialSpec(trial=3, backend="torch", run_dir="/tmp/x", configs=seed_configs({"seed": 5, "a": 1}, 3))
    assert [c["seed"] for c in spec.configs] == [5, 6, 7]
    for message in (spec, Report(2, 1.5), Decision(True), Result("complete", 2.0, {"k": 1}), Failure("boom", "tb")):
        assert pickle.loads(pickle.dumps(message)) == message
    assert len({type(m) for m in (Report(0, 0.0), Decision(False), Result("pruned", None), Failure("x"))}) == 4
