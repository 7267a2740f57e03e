"""The one trial runner shared by studies, the sweeper and the finders: a timed-out trial is killed
with every process it started, dead drivers' trials are failed, messages are typed."""

import socket
import time

import optuna
import pytest

from tests.tuner.conftest import NO_REEVAL, run_app
from tuner.messages import Decision, Failure, Report, Result, TrialSpec, seed_configs

HANG = ["env.module=tests.tuner.faulty_envs", "env.id=PidHang-v0", "strategy=pool_network",
        "strategy.processes=2", "logger=none", "agent.hidden_size=[16]", "buffer.pool_size=1000"]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"  # a zombie has exited (its parent has not reaped it)
    except FileNotFoundError:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("front", ["study", "sweeper", "finder"])
def test_timed_out_trial_is_killed_with_its_pool_workers(front, tmp_path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    args = {"study": ["tuner=optuna", NO_REEVAL, "tuner.n_trials=1", "tuner.trial_timeout=20", "search=none"],
            "sweeper": ["-m", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=1", "hydra.sweeper.trial_timeout=20",
                        "agent.gamma=choice(0.9,0.99)"],
            "finder": ["tuner=opt_finder", "tuner.optimizers=[adam]", "tuner.trial_timeout=20"]}[front]
    # (orphaned workers would hold the app's output pipes open: the run would hang until this timeout)
    run_app([*args, *HANG], cwd=str(tmp_path), env={"NOTE_TEST_PID_DIR": str(pids)}, check=front != "finder",
            timeout=240)
    found = [int(p.name) for p in pids.iterdir()]
    assert len(found) >= 3  # the trial process and its two pool workers built an env
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in found) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in found if _alive(p)]
    journal = next(tmp_path.rglob("journal.log"))
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
    (summary,) = optuna.get_all_study_summaries(storage)
    (trial,) = optuna.load_study(study_name=summary.study_name, storage=storage).trials
    assert trial.state.name == "FAIL" and trial.user_attrs["fail_reason"].startswith("timeout")


@pytest.mark.slow
def test_a_killed_drivers_trial_ends_with_its_pool_workers(tmp_path) -> None:
    """SIGKILL of the driver (which can clean up nothing): its running trial leads its own process
    group, so nothing signals it; the trial sees its driver gone and ends its group, pool workers
    included, instead of running on as orphans."""
    import os
    import signal
    import subprocess
    import sys

    from tests.tuner.conftest import REPO

    pids = tmp_path / "pids"
    pids.mkdir()
    env = dict(os.environ, PYTHONPATH=REPO, NOTE_TEST_PID_DIR=str(pids))
    driver = subprocess.Popen([sys.executable, "-m", "tuner", "tuner=optuna", NO_REEVAL, "tuner.n_trials=1",
                               "search=none", *HANG], cwd=str(tmp_path), env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while len(list(pids.iterdir())) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        found = [int(p.name) for p in pids.iterdir()]
        assert len(found) >= 3  # the trial process and its two pool workers built an env
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the driver's group only: the trial leads its own
        driver.wait()
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in found) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in found if _alive(p)]


def test_finder_fails_the_trials_of_a_dead_driver(tmp_path) -> None:
    """The finders run trials through the same runner as studies: a RUNNING trial left by a killed
    process of this host is failed before new trials start."""
    from note_rl.lr_finder import LRFinder
    from tests.tuner.test_finders import _dqn

    name = "zombie_lr"
    folder = tmp_path / name
    folder.mkdir()
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(folder / "journal.log")))
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
