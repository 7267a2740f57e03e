"""Study settings through the real driver (in-process driver, fresh trial processes, journal storage):
every sampler and pruner, direction, n_seeds + aggregation, timeout, and a surviving driver that fails
a dead driver's trials while it runs."""

import json
import os
import time

import optuna
import pytest
from optuna.trial import TrialState

import tuner.study.driver
from tests.tuner.conftest import TINY, compose_cfg
from tuner.config.schema import validate
from tuner.run.trial_worker import aggregate
from tuner.study.driver import Driver
from tuner.study.outputs import summary_table, write_outputs
from tuner.study.settings import make_pruner, tuner_settings

SAMPLERS = {"tpe": optuna.samplers.TPESampler, "random": optuna.samplers.RandomSampler,
            "cmaes": optuna.samplers.CmaEsSampler, "gp": optuna.samplers.GPSampler,
            "grid": optuna.samplers.GridSampler, "qmc": optuna.samplers.QMCSampler}
PRUNERS = {"median": optuna.pruners.MedianPruner, "percentile": optuna.pruners.PercentilePruner,
           "successive_halving": optuna.pruners.SuccessiveHalvingPruner,
           "hyperband": optuna.pruners.HyperbandPruner, "none": optuna.pruners.NopPruner}


def _driver(tmp_path, overrides):
    overrides = ["tuner=optuna", "tuner.study_name=s", f"tuner.study_dir={tmp_path}/study", "search=none",
                 "tuner.n_startup_trials=1", "tuner.report_every=1", *TINY, *overrides]
    cfg = validate(compose_cfg(overrides))
    return Driver(cfg, tuner_settings(cfg.tuner), compose_cfg, overrides)


@pytest.mark.parametrize("sampler,pruner", [("tpe", "median"), ("random", "percentile"), ("cmaes", "successive_halving"),
                                            ("gp", "hyperband"), ("grid", "none"), ("qmc", "median")])
def test_every_sampler_and_pruner_runs_trials(tmp_path, sampler, pruner) -> None:
    gamma = "choice(0.9, 0.99)" if sampler == "grid" else "interval(0.9, 0.99)"
    driver = _driver(tmp_path, [f"tuner.sampler={sampler}", f"tuner.pruner={pruner}", "tuner.n_trials=2",
                                "tuner.sampler_seed=1", f"+search.values.agent.gamma='{gamma}'"])
    assert type(driver.study.sampler) is SAMPLERS[sampler] and type(driver.study.pruner) is PRUNERS[pruner]
    driver.run()
    trials = driver.study.trials
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2, [t.user_attrs.get("fail_reason") for t in trials]
    assert all(0.9 <= t.params["agent.gamma"] <= 0.99 and t.intermediate_values for t in trials)
    if sampler == "grid":
        assert sorted(t.params["agent.gamma"] for t in trials) == [0.9, 0.99]


@pytest.mark.parametrize("name", sorted(PRUNERS))
def test_pruner_decisions(name) -> None:
    s = tuner_settings({"pruner": name, "n_startup_trials": 1, "n_warmup_steps": 0, "percentile": 50.0})
    study = optuna.create_study(study_name="pruners", direction="maximize", pruner=make_pruner(s))
    assert type(study.pruner) is PRUNERS[name]
    for _ in range(3):  # good trials reporting at steps 0..8
        good = study.ask()
        for step in range(9):
            good.report(100.0, step)
            assert not good.should_prune()
        study.tell(good, 100.0)
    pruned = []
    for _ in range(4):  # trials far below the others
        bad, stop = study.ask(), False
        for step in range(9):
            bad.report(1.0, step)
            stop = bool(bad.should_prune())
            if stop:
                break
        pruned.append(stop)
        study.tell(bad, state=TrialState.PRUNED) if pruned[-1] else study.tell(bad, 1.0)
    if name == "none":
        assert not any(pruned)
    elif name == "hyperband":  # compares trials within a bracket only (bracket = hash of the trial number)
        assert any(pruned)
    else:
        assert all(pruned)


def test_direction_minimize_picks_the_lowest_value(tmp_path) -> None:
    driver = _driver(tmp_path, ["tuner.direction=minimize", "tuner.sampler=grid", "tuner.n_trials=3",
                                "+search.values.seed='choice(0, 1, 2)'"])
    driver.run()
    values = {t.number: t.value for t in driver.study.trials}
    assert len(values) == 3 and None not in values.values()
    lowest = min(values, key=values.get)
    summary = write_outputs(driver.study, driver.study_dir, driver.storage_desc)
    assert summary["best_value"] == values[lowest] and summary["best_trial"] == lowest
    assert summary_table(driver.study).splitlines()[2].split()[:2] == [str(lowest), "COMPLETE"]  # best row first


@pytest.mark.parametrize("how", ["mean", "median", "min", "lcb"])
def test_n_seeds_aggregation(tmp_path, how) -> None:
    driver = _driver(tmp_path, ["tuner.n_seeds=2", f"tuner.aggregation={how}", "tuner.n_trials=1",
                                "tuner.pruner=none", "seed=5"])
    driver.run()
    trial = driver.study.trials[0]
    assert trial.state == TrialState.COMPLETE
    result = json.loads(open(os.path.join(trial.user_attrs["run_dir"], "result.json")).read())
    finals = [s["objective"] for s in result["attrs"]["seeds"]]
    per_seed = [json.loads(open(os.path.join(trial.user_attrs["run_dir"], f"seed_{seed}", "result.json")).read())
                for seed in (5, 6)]
    assert finals == [r["objective"] for r in per_seed] and [r["seed"] for r in per_seed] == [5, 6]
    assert finals == [r["final_eval_mean_return"] for r in per_seed]  # the default source: evaluations
    assert trial.value == pytest.approx(aggregate(finals, how)) == result["value"]
    if how == "min":
        assert trial.value == min(finals)
    if how == "lcb":  # two seeds: the mean less |a - b| / 2, the worse seed
        assert trial.value == pytest.approx(min(finals))


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_parallel_trials_share_the_cores_out(tmp_path, backend) -> None:
    """n_jobs trials at once train with cores // n_jobs framework threads each."""
    driver = _driver(tmp_path, [f"backend={backend}", "tuner.n_jobs=2", "tuner.n_trials=2", "tuner.pruner=none",
                                "tuner.sampler=grid", "+search.values.seed='choice(0, 1)'"])
    driver.run()
    for t in driver.study.trials:
        assert t.state == TrialState.COMPLETE, t.user_attrs.get("fail_reason")
        result = json.loads(open(os.path.join(t.user_attrs["run_dir"], "result.json")).read())
        assert result["threads"] == max(1, (os.cpu_count() or 1) // 2)


def test_backend_threads_beats_the_study_default(monkeypatch) -> None:
    import torch

    from tuner.run.build import set_threads
    from tuner.run.trial_worker import default_threads

    for var in ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        monkeypatch.delenv(var, raising=False)
    before = torch.get_num_threads()
    try:
        default_threads(1)  # what a trial of n_jobs=cores gets
        assert torch.get_num_threads() == 1 and os.environ["TF_NUM_INTRAOP_THREADS"] == "1"
        set_threads({"backend": {"name": "torch", "threads": 3}})  # the trial's own config
        assert torch.get_num_threads() == 3 and os.environ["TF_NUM_INTEROP_THREADS"] == "3"
    finally:
        torch.set_num_threads(before)


def test_timeout_stops_starting_trials(tmp_path) -> None:
    driver = _driver(tmp_path, ["env.module=tests.tuner.faulty_envs", "env.id=Slow-v0", "tuner.timeout=0.5",
                                "tuner.n_trials=5", "tuner.pruner=none", "+search.values.agent.gamma='interval(0.9, 0.99)'"])
    started = time.monotonic()
    driver.run()
    assert [t.state for t in driver.study.trials] == [TrialState.COMPLETE]  # the running trial finished
    assert time.monotonic() - started > 0.5


def test_surviving_driver_fails_trials_of_a_silent_driver_while_running(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(tuner.study.driver, "HEARTBEAT_GRACE_S", 3.0)
    driver = _driver(tmp_path, ["tuner.n_trials=2", "tuner.pruner=none", "tuner.sampler=random",
                                "+search.values.agent.gamma='interval(0.9, 0.99)'"])
    ghost = driver.study.ask()  # a trial of a driver on another machine, alive at start-up
    ghost.set_user_attr("driver", "elsewhere:1")
    ghost.set_user_attr("heartbeat", time.time())
    driver.run()
    trials = driver.study.trials
    assert trials[0].state == TrialState.FAIL and "no heartbeat" in trials[0].user_attrs["fail_reason"]
    assert [t.state for t in trials[1:]] == [TrialState.COMPLETE] * 2  # n_trials finished, nothing waits forever


def test_trial_without_a_driver_is_failed_after_a_short_grace(tmp_path, monkeypatch) -> None:
    # a driver killed between study.ask() and recording itself leaves a RUNNING trial with no
    # driver and no heartbeat: it is failed after NO_DRIVER_GRACE_S, not the 120 s heartbeat grace
    monkeypatch.setattr(tuner.study.driver, "NO_DRIVER_GRACE_S", 1.0)
    driver = _driver(tmp_path, ["tuner.n_trials=1", "tuner.pruner=none", "tuner.sampler=random",
                                "+search.values.agent.gamma='interval(0.9, 0.99)'"])
    driver.study.ask()
    driver.run()
    trials = driver.study.trials
    assert trials[0].state == TrialState.FAIL  # with the 120 s heartbeat grace the reason would differ
    assert "stopped before recording itself" in trials[0].user_attrs["fail_reason"]
    assert [t.state for t in trials[1:]] == [TrialState.COMPLETE]


def test_defaults_are_trial_0_and_enqueued_sets_come_first(tmp_path) -> None:
    """Trial 0 of a new study plays the config's own values (optimizer.lr: null -> agent.lr); a
    ``tuner.enqueue`` set runs before it; values outside the space are left to the sampler."""
    space = ['+search.values.optimizer.lr="tag(log, interval(1e-4, 1e-2))"',
             '+search.values.agent.gamma="choice(0.9, 0.95)"']
    driver = _driver(tmp_path, ["tuner.n_trials=2", "tuner.sampler=random", "tuner.pruner=none", *space,
                                "agent.lr=0.003", "tuner.enqueue=[{optimizer.lr: 0.001, agent.gamma: 0.9}]"])
    waiting = driver.study.get_trials(states=(TrialState.WAITING,))
    # the config's gamma (0.99) is outside choice(0.9, 0.95): only lr is fixed for trial 1
    assert [t.system_attrs["fixed_params"] for t in waiting] == [{"optimizer.lr": 0.001, "agent.gamma": 0.9}, {"optimizer.lr": 0.003}]
    driver.run()
    trials = sorted(driver.study.trials, key=lambda t: t.number)
    assert trials[0].params == {"optimizer.lr": 0.001, "agent.gamma": 0.9}
    assert trials[1].params["optimizer.lr"] == 0.003 and trials[1].user_attrs["enqueued"] == "defaults"
    again = _driver(tmp_path, ["tuner.n_trials=2", *space])  # a resumed study enqueues no defaults again
    assert not again.study.get_trials(states=(TrialState.WAITING,))
    with pytest.raises(Exception, match="tuner.enqueue: agent.tau is not a searched parameter"):
        _driver(tmp_path, [*space, "tuner.enqueue=[{agent.tau: 0.1}]"])
