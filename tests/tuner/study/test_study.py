"""Optuna studies with real subprocess trials on a journal storage."""

import json
import os
import signal

import optuna
import pytest
from optuna.trial import TrialState

from tests.tuner.conftest import NO_REEVAL, TINY, journal_of, run_app

FAULTY = "env.module=tests.tuner.faulty_envs"


def _load(study_dir, name):
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    storage = JournalStorage(JournalFileBackend(journal_of(study_dir)))
    return optuna.load_study(study_name=name, storage=storage)


def _check_table(stdout, params, states):
    """The end-of-study summary table: header, rule, one row per trial (number, state)."""
    lines = stdout.splitlines()
    top = next(i for i, line in enumerate(lines) if line.split() == ["#", "state", "value", "seconds", *params])
    assert set(lines[top + 1].replace(" ", "")) == {"-"}
    rows = {int(r.split()[0]): r.split()[1] for r in lines[top + 2:top + 2 + len(states)]}
    assert rows == states


def test_outcomes_complete_and_each_failure_mode(tmp_path) -> None:
    envs = "choice(CartPole-v1, Crash-v0, Segfault-v0, Hang-v0, NaNReward-v0, Hog-v0)"
    out = run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=outcomes", "search=none", f"+search.values.env.id='{envs}'",
                   FAULTY, "tuner.sampler=grid", "tuner.n_trials=6", "tuner.max_total_trials=6",
                   "tuner.max_failures=10", "tuner.trial_timeout=40", "tuner.trial_memory_mb=1024",
                   "tuner.pruner=none", *TINY], cwd=str(tmp_path))
    study = _load(tmp_path / "studies" / "outcomes", "outcomes")
    by_env = {t.params["env.id"]: t for t in study.trials}
    assert sorted(by_env) == ["CartPole-v1", "Crash-v0", "Hang-v0", "Hog-v0", "NaNReward-v0", "Segfault-v0"]
    assert by_env["CartPole-v1"].state == TrialState.COMPLETE and by_env["CartPole-v1"].value > 0
    reasons = {env: t.user_attrs.get("fail_reason", "") for env, t in by_env.items()}
    assert all(by_env[e].state == TrialState.FAIL for e in reasons if e != "CartPole-v1")
    assert "RuntimeError: the env exploded" in reasons["Crash-v0"]
    assert "SIGSEGV" in reasons["Segfault-v0"]
    assert reasons["Hang-v0"].startswith("timeout")
    assert "non-finite" in reasons["NaNReward-v0"] or "nan" in reasons["NaNReward-v0"].lower()
    assert reasons["Hog-v0"].startswith("MemoryError")  # trial_memory_mb stopped it, the study went on
    summary = json.loads((tmp_path / "studies" / "outcomes" / "study.json").read_text())
    assert (summary["n_complete"], summary["n_failed"], summary["n_pruned"]) == (1, 5, 0)
    assert summary["best_params"] == {"env.id": "CartPole-v1"}
    best_run = by_env["CartPole-v1"].user_attrs["run_dir"]
    result = json.loads(open(os.path.join(best_run, "result.json")).read())
    assert result["env_steps"] == 300 and result["status"] == "complete"
    assert "re-run the answer (trial" in out.stdout
    _check_table(out.stdout, ["env.id"], {t.number: t.state.name for t in study.trials})


def test_pruned_trial_stops_mid_training_and_best_config_reruns(tmp_path) -> None:
    common = ["tuner=optuna", *NO_REEVAL, "tuner.study_name=prune", "search=none",
              "+search.values.agent.gamma='choice(0.9, 0.99)'", "tuner.sampler=grid", *TINY]
    run_app(common + ["tuner.n_trials=2", "tuner.pruner=none"], cwd=str(tmp_path))
    # the same command with more trials resumes the study; a threshold no return can reach prunes
    run_app(common + ["tuner.n_trials=3", "tuner.pruner=threshold", "tuner.threshold_lower=1e9",
                      "tuner.report_every=1"], cwd=str(tmp_path))
    study = _load(tmp_path / "studies" / "prune", "prune")
    states = [t.state for t in study.trials]
    assert states == [TrialState.COMPLETE, TrialState.COMPLETE, TrialState.PRUNED]
    pruned = study.trials[2]
    assert pruned.intermediate_values and pruned.user_attrs["env_steps"] < 300
    study_dir = tmp_path / "studies" / "prune"
    out = run_app(["--config-dir", str(study_dir), "--config-name", "best_config", "budget.steps=200"],
                  cwd=str(tmp_path))
    assert "final mean return" in out.stdout
    best = json.loads((study_dir / "study.json").read_text())
    rerun = list(tmp_path.glob("outputs/*/*/result.json"))
    assert len(rerun) == 1
    cfg = json.loads(rerun[0].read_text())["config"]
    assert cfg["agent"]["gamma"] == best["best_params"]["agent.gamma"]


def test_sqlite_storage_is_accepted(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'tuning.db'}"
    run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=lite", f"tuner.storage='{url}'", "tuner.n_trials=2",
             "tuner.pruner=none", "search=none", "+search.values.agent.gamma='choice(0.9, 0.99)'", *TINY],
            cwd=str(tmp_path))
    study = optuna.load_study(study_name="lite", storage=url)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2
    assert json.loads((tmp_path / "studies" / "lite" / "study.json").read_text())["storage"] == url


def test_tpe_median_study_prints_its_summary_table(tmp_path) -> None:
    out = run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=tpe", "search=none", "tuner.sampler=tpe", "tuner.pruner=median",
                   "tuner.n_startup_trials=1", "tuner.n_warmup_steps=0", "tuner.report_every=1", "tuner.n_trials=3",
                   "+search.values.agent.gamma='interval(0.9, 0.99)'", *TINY], cwd=str(tmp_path))
    study = _load(tmp_path / "studies" / "tpe", "tpe")
    assert sum(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in study.trials) == 3
    assert all(t.intermediate_values for t in study.trials)  # reports reached the median pruner
    _check_table(out.stdout, ["agent.gamma"], {t.number: t.state.name for t in study.trials})


def test_trial_compose_error_fails_only_that_trial(tmp_path) -> None:
    # adjuster=none has no `every`: composing that trial fails, the study goes on with the next one
    out = run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=compose", "search=none", "adjuster=gns",
                   "+search.groups.adjuster='choice(none, gns)'", "+search.values.adjuster.every=5",
                   "tuner.sampler=grid", "tuner.n_trials=2", "tuner.max_total_trials=2", "tuner.pruner=none", *TINY],
                  cwd=str(tmp_path))
    study = _load(tmp_path / "studies" / "compose", "compose")
    by_choice = {t.params["adjuster"]: t for t in study.trials}
    assert by_choice["gns"].state == TrialState.COMPLETE
    failed = by_choice["none"]
    assert failed.state == TrialState.FAIL
    assert failed.user_attrs["fail_reason"].startswith("config error: adjuster.every: no such config key")
    assert "Traceback" not in out.stdout + out.stderr


SAC_TINY = ["agent=sac", "env=pendulum", "agent.hidden_size=[16]", "agent.batch=16", "agent.learning_starts=50",
            "budget.steps=200", "eval.episodes=1", "logger=none", *NO_REEVAL]


def test_a_refused_starting_config_stops_the_study_in_one_line(tmp_path) -> None:
    """``agent.sde_sample_freq=0`` passes the schema and only SAC's constructor refuses it, in the trial
    process.  The starting trial (the command's own config) fails with that ConfigError: the study starts
    no other trial (every one keeping the value would fail alike) and the command ends with one error
    line naming the key, exit 2; the study, its failed trial and study.json are kept."""
    out = run_app(["tuner=optuna", "tuner.study_name=refused", "tuner.n_trials=4", "tuner.n_jobs=1",
                   "agent.sde_sample_freq=0", *SAC_TINY], cwd=str(tmp_path), check=False)
    assert out.returncode == 2, out.stderr[-2000:]
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: agent.sde_sample_freq: SAC(sde_sample_freq=0): -1 (once per training round) or a "
                      "positive number of env steps (the study's starting config, trial 0, was refused: study "
                      "stopped)"]
    assert "Traceback" not in out.stdout + out.stderr
    study = _load(tmp_path / "studies" / "refused", "refused")
    assert [t.state for t in study.trials] == [TrialState.FAIL]
    assert study.trials[0].user_attrs["fail_reason"].startswith("ConfigError: agent.sde_sample_freq: ")
    assert (tmp_path / "studies" / "refused" / "study.json").exists()


def test_a_refused_sampled_value_fails_only_its_trial(tmp_path) -> None:
    """The same refusal for a value the search sampled (not the starting config's) fails that trial only."""
    out = run_app(["tuner=optuna", "tuner.study_name=sampled", "search=none", "tuner.sampler=grid",
                   "+search.values.agent.sde_sample_freq='choice(-1, 0)'", "tuner.n_trials=2", "tuner.pruner=none",
                   *SAC_TINY], cwd=str(tmp_path))
    study = _load(tmp_path / "studies" / "sampled", "sampled")
    by_value = {t.params["agent.sde_sample_freq"]: t for t in study.trials}
    assert by_value[-1].state == TrialState.COMPLETE and by_value[0].state == TrialState.FAIL
    assert by_value[0].user_attrs["fail_reason"].startswith("ConfigError: agent.sde_sample_freq: SAC(sde_sample_freq=0)")
    assert out.returncode == 0


def _refused_start(study, reason="ConfigError: agent.sde_sample_freq: SAC(sde_sample_freq=0): no"):
    """Trial 0 as another driver of the study leaves it when the agent's constructor refused the start."""
    from tuner.study.supervisor import START_MARK

    study.enqueue_trial({}, user_attrs=dict(START_MARK))
    trial = study.ask()
    trial.set_user_attr("fail_reason", reason)
    study.tell(trial, state=TrialState.FAIL)


def test_another_drivers_refused_start_stops_this_runner(tmp_path) -> None:
    """With ``tuner.workers`` the starting trial may run in another driver: a runner reads its refusal
    from the storage and stops with the same line, starting nothing; a refusal stored before the runner
    came (an earlier command, then ``tuner.resume=force`` with another value) does not stop it."""
    import pytest
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    from tuner.common.errors import ConfigError
    from tuner.study.runner import DONE, RunLimits, TrialRunner
    from tuner.study.storage import StudyLock

    path = str(tmp_path / "journal.log")
    study = optuna.create_study(study_name="w", storage=JournalStorage(JournalFileBackend(path)))
    lock = StudyLock(path, str(tmp_path), "w")
    asked = []

    def ask():
        asked.append(1)
        return DONE, None

    earlier = TrialRunner(study, lock, RunLimits(stop_if_start_refused=True))
    _refused_start(study)
    with pytest.raises(ConfigError) as err:
        earlier.run(ask, prepare=None)
    assert str(err.value) == ("agent.sde_sample_freq: SAC(sde_sample_freq=0): no (the study's starting config, "
                              "trial 0, was refused: study stopped)")
    assert asked == []
    later = TrialRunner(study, lock, RunLimits(stop_if_start_refused=True))
    later.run(ask, prepare=None)  # the refusal is history for it
    assert asked == [1]
    not_asked = TrialRunner(study, lock, RunLimits())  # PBT and the finders: no stop
    _refused_start(study)
    not_asked.run(ask, prepare=None)
    assert asked == [1, 1]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_asking_fails_the_trial_it_created(tmp_path, monkeypatch, signum) -> None:
    """A signal that lands inside ``ask()`` after the storage created the trial (RUNNING, its number not
    yet known to the runner) waits until the runner has it: the run unwinds and fails it, as it fails a
    launched one, instead of leaving it RUNNING for a later driver's zombie check."""
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    from tuner.common import interrupts
    from tuner.study.runner import OPEN, RunLimits, TrialRunner
    from tuner.study.storage import StudyLock

    monkeypatch.setattr(interrupts, "_state", interrupts._State())  # this process's signal state, fresh
    path = str(tmp_path / "journal.log")
    study = optuna.create_study(study_name="s", storage=JournalStorage(JournalFileBackend(path)))

    def ask():
        trial = study.ask()
        os.kill(os.getpid(), signum)  # its handler runs at the next bytecode: before ask() returns
        return OPEN, trial

    with pytest.raises(KeyboardInterrupt) as err:
        TrialRunner(study, StudyLock(path, str(tmp_path), "s"), RunLimits()).run(ask, prepare=None)
    assert isinstance(err.value, interrupts.Terminated) == (signum == signal.SIGTERM)
    [trial] = study.get_trials()
    assert trial.state == TrialState.FAIL
    assert trial.user_attrs["fail_reason"] == ("driver terminated (SIGTERM)" if signum == signal.SIGTERM
                                               else "driver interrupted (Ctrl-C)")


def test_a_signal_while_composing_a_config_stops_the_driver(tmp_path, monkeypatch) -> None:
    """Composing a trial's config is library code: a SIGTERM raised inside it was replaced by
    OmegaConf's cleanup with an AttributeError ("'NoneType' object has no attribute
    '_invalidate_flags_cache'"), which failed the trial as a config error and let a ``tuner.workers``
    worker run on past its SIGTERM until it was killed, its next trial left RUNNING.  The signal now
    waits until ``prepare`` is done; then the run unwinds, asking for nothing more."""
    import time

    from optuna.storages.journal import JournalFileBackend, JournalStorage

    from tuner.common import interrupts
    from tuner.common.errors import ConfigError
    from tuner.study.runner import DONE, OPEN, RunLimits, TrialRunner
    from tuner.study.storage import StudyLock

    monkeypatch.setattr(interrupts, "_state", interrupts._State())
    path = str(tmp_path / "journal.log")
    study = optuna.create_study(study_name="c", storage=JournalStorage(JournalFileBackend(path)))
    asked = []

    def ask():
        asked.append(1)
        return (OPEN, study.ask()) if len(asked) == 1 else (DONE, None)

    def prepare(trial):
        finished = False
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(20):  # the handler runs between these bytecodes unless the signal is held
                time.sleep(0.01)
            finished = True
        finally:
            if not finished:  # a cleanup that fails on a half-built object, as OmegaConf's did
                raise AttributeError("'NoneType' object has no attribute '_invalidate_flags_cache'")
        raise ConfigError("composed (this test launches no trial process)")

    with pytest.raises(interrupts.Terminated):
        TrialRunner(study, StudyLock(path, str(tmp_path), "c"), RunLimits()).run(ask, prepare)
    assert asked == [1]
    [trial] = study.get_trials()
    assert trial.state == TrialState.FAIL
    assert trial.user_attrs["fail_reason"] == "config error: composed (this test launches no trial process)"


def test_running_trials_with_odd_driver_records_are_judged_not_raised_on(tmp_path) -> None:
    """The zombie check every driver runs at start reads the RUNNING trials' ``driver`` and ``heartbeat``
    records as data: one that is not a string / a finite number is no record (a non-string driver used
    to raise AttributeError, a string heartbeat TypeError, so no driver of the study could start), and a
    pid no process can have is not alive."""
    import socket

    from optuna.storages.journal import JournalFileBackend, JournalStorage

    from tuner.study.runner import RunLimits, TrialRunner
    from tuner.study.storage import StudyLock

    path = str(tmp_path / "journal.log")
    study = optuna.create_study(study_name="z", storage=JournalStorage(JournalFileBackend(path)))
    host = socket.gethostname()
    records = [{"driver": 5, "heartbeat": "x"}, {"driver": ["h:1"], "heartbeat": float("nan")},
               {"driver": f"{host}:{10 ** 30}"}, {"driver": f"{host}:0"}, {"driver": f"{host}:{os.getpid()}"}]
    for attrs in records:
        trial = study.ask()
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
    runner = TrialRunner(study, StudyLock(path, str(tmp_path), "z"), RunLimits())
    assert runner.fail_zombies() == [2, 3]  # the others started just now: within their grace
    reasons = [t.user_attrs.get("fail_reason") for t in study.trials]
    assert reasons[2:4] == [f"driver {host}:{10 ** 30} stopped while the trial was running",
                            f"driver {host}:0 stopped while the trial was running"]
    runner.limits.no_driver_grace_s = 0.0  # now the two without a readable driver are past it
    assert runner.fail_zombies() == [0, 1]
    assert study.trials[0].user_attrs["fail_reason"].startswith("its driver stopped before recording itself")
    assert study.trials[4].state == TrialState.RUNNING  # this process: alive


def test_a_refused_start_stops_a_study_with_workers(tmp_path) -> None:
    """``tuner.workers=2``: whichever driver runs the refused starting trial, the command ends in the
    one line, exit 2, and no trial completes (the other driver stops too)."""
    out = run_app(["tuner=optuna", "tuner.study_name=wref", "tuner.n_trials=4", "tuner.n_jobs=1", "tuner.workers=2",
                   "agent.sde_sample_freq=0", *SAC_TINY], cwd=str(tmp_path), check=False)
    assert out.returncode == 2, out.stderr[-2000:]
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: agent.sde_sample_freq: SAC(sde_sample_freq=0): ")
    assert errors[0].endswith("(the study's starting config, trial 0, was refused: study stopped)")
    study = _load(tmp_path / "studies" / "wref", "wref")
    assert study.trials and all(t.state == TrialState.FAIL for t in study.trials)
