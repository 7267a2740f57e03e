"""Resuming a SIGKILLed study, and several drivers sharing one study (journal and PostgreSQL)."""

import os
import signal
import subprocess
import sys
import time

import optuna
import pytest
from optuna.trial import TrialState

from tests.tuner.conftest import NO_REEVAL, REPO, TINY, journal_of, run_app
from tests.tuner.postgres import postgres_server, server_binaries

SLOW = ["env.module=tests.tuner.faulty_envs", "env.id=Slow-v0"]


def _journal_study(study_dir, name):
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    return optuna.load_study(study_name=name, storage=JournalStorage(JournalFileBackend(journal_of(study_dir))))


def _start(args, cwd):
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.Popen([sys.executable, "-m", "tuner", *args], cwd=cwd, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_for(predicate, timeout=300.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (KeyError, ValueError, FileNotFoundError):
            pass
        time.sleep(0.3)
    raise AssertionError("condition not reached in time")


def test_sigkill_then_rerun_finishes_with_exactly_n_trials(tmp_path) -> None:
    args = ["tuner=optuna", *NO_REEVAL, "tuner.study_name=kill", "search=none", "tuner.sampler=random",
            "+search.values.agent.gamma='interval(0.9, 0.99)'", "tuner.n_trials=4", "tuner.pruner=none",
            *SLOW, *TINY]
    study_dir = tmp_path / "studies" / "kill"
    proc = _start(args, str(tmp_path))

    def one_done_one_running():
        trials = _journal_study(study_dir, "kill").trials
        states = [t.state for t in trials]
        # the running trial has recorded its driver: the kill lands mid-trial, not between
        # study.ask() and that write (a window covered by test_trial_without_a_driver_...)
        return (TrialState.COMPLETE in states and states[-1] == TrialState.RUNNING
                and "driver" in trials[-1].user_attrs)

    try:
        _wait_for(one_done_one_running)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    killed = [t.number for t in _journal_study(study_dir, "kill").trials if t.state == TrialState.RUNNING]
    assert len(killed) == 1
    run_app(args, cwd=str(tmp_path))
    study = _journal_study(study_dir, "kill")
    states = [t.state for t in study.trials]
    assert states.count(TrialState.COMPLETE) == 4 and TrialState.RUNNING not in states
    zombie = study.trials[killed[0]]
    assert zombie.state == TrialState.FAIL and "stopped" in zombie.user_attrs["fail_reason"]
    assert len(states) == 5


def test_surviving_driver_finishes_when_the_other_is_sigkilled(tmp_path) -> None:
    args = ["tuner=optuna", *NO_REEVAL, "tuner.study_name=survive", "search=none", "tuner.sampler=random",
            "+search.values.agent.gamma='interval(0.9, 0.99)'", "tuner.n_trials=4", "tuner.pruner=none",
            *SLOW, *TINY]
    study_dir = tmp_path / "studies" / "survive"
    victim, survivor = _start(args, str(tmp_path)), _start(args, str(tmp_path))

    def both_running():
        running = [t for t in _journal_study(study_dir, "survive").trials if t.state == TrialState.RUNNING]
        return {t.user_attrs.get("driver", "").rpartition(":")[2] for t in running} >= {str(victim.pid), str(survivor.pid)}

    try:
        _wait_for(both_running)
    finally:
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
    _, err = survivor.communicate(timeout=600)
    assert survivor.returncode == 0, err[-2000:]
    trials = _journal_study(study_dir, "survive").trials
    states = [t.state for t in trials]
    assert states.count(TrialState.COMPLETE) == 4 and TrialState.RUNNING not in states  # exactly n_trials finished
    killed = [t for t in trials if t.state == TrialState.FAIL]
    assert len(killed) == 1 and killed[0].user_attrs["driver"].endswith(f":{victim.pid}")
    assert "stopped while the trial was running" in killed[0].user_attrs["fail_reason"]


def _two_drivers(tmp_path, storage_args, name, machines=False):
    """Two drivers of one study; ``machines``: as on two machines, each in its own working dir (its
    own outputs, studies/ and run dirs) and its own session (process tree)."""
    args = ["tuner=optuna", *NO_REEVAL, f"tuner.study_name={name}", "search=none", "tuner.sampler=random",
            "+search.values.agent.gamma='interval(0.9, 0.99)'", "tuner.n_trials=10", "tuner.max_total_trials=4",
            "tuner.pruner=none", "tuner.n_jobs=2", *storage_args, *SLOW, *TINY]
    cwds = [str(tmp_path)] * 2
    if machines:
        cwds = [str(tmp_path / m) for m in ("machine_a", "machine_b")]
        for d in cwds:
            os.makedirs(d)
    procs = [_start(args, cwd) for cwd in cwds]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-2000:]


def _check_exact(study, study_dir):
    numbers = [t.number for t in study.trials]
    assert sorted(numbers) == [0, 1, 2, 3]
    assert all(t.state == TrialState.COMPLETE for t in study.trials)
    run_dirs = {t.user_attrs["run_dir"] for t in study.trials}
    assert len(run_dirs) == 4 and all(os.path.exists(os.path.join(d, "result.json")) for d in run_dirs)
    drivers = {t.user_attrs["driver"] for t in study.trials}
    assert len(drivers) == 2  # both drivers did work


def test_two_drivers_share_a_journal_study(tmp_path) -> None:
    _two_drivers(tmp_path, [], "shared")
    study_dir = tmp_path / "studies" / "shared"
    _check_exact(_journal_study(study_dir, "shared"), study_dir)


@pytest.mark.skipif(server_binaries() is None, reason="Debian's postgresql package is not installed")
def test_two_drivers_share_a_postgresql_study(tmp_path) -> None:
    with postgres_server() as url:
        _two_drivers(tmp_path, [f"tuner.storage='{url}'"], "pg", machines=True)
        from tuner.study.storage import make_storage

        study = optuna.load_study(study_name="pg", storage=make_storage(url, str(tmp_path)))
        _check_exact(study, tmp_path / "studies" / "pg")
        by_machine = {os.path.relpath(t.user_attrs["run_dir"], str(tmp_path)).split(os.sep)[0] for t in study.trials}
        assert by_machine == {"machine_a", "machine_b"}  # each machine's trials ran in its own dir
