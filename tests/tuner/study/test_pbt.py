"""Population-based training (``tuner=pbt``): exploit / explore worked out by hand, continuing a
checkpoint with new hyperparameters, a real PBT run's lineage, and a SIGKILLed driver resumed."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import optuna
import pytest
import yaml
from omegaconf import OmegaConf
from optuna.trial import TrialState

from tests.tuner.conftest import REPO, compose_cfg, journal_of, run_app
from tuner.config.search import parse_space
from tuner.study.pbt_rules import exploit_explore, initial_population, quantile_size, ranking

SPACE = parse_space({"groups": {}, "values": {"optimizer": {"lr": "tag(log, interval(1e-4, 1e-2))"},
                                              "agent": {"gamma": "choice(0.9, 0.95, 0.98, 0.99)",
                                                        "batch": "int(interval(16, 64))"}}})
PARAMS = [{"optimizer.lr": 1e-4, "agent.gamma": 0.9, "agent.batch": 16},
          {"optimizer.lr": 5e-3, "agent.gamma": 0.99, "agent.batch": 60},
          {"optimizer.lr": 1e-3, "agent.gamma": 0.98, "agent.batch": 32},
          {"optimizer.lr": 2e-4, "agent.gamma": 0.95, "agent.batch": 20}]


def test_the_draws_this_file_works_from() -> None:
    """numpy's generator for seed 7, generation 1, in the order exploit_explore draws (module docstring)."""
    rng = np.random.default_rng([7, 1])
    draws = [rng.integers(2), rng.random(), rng.random(), rng.integers(4), rng.random(),
             rng.integers(2), rng.random(), rng.random(), rng.random(), rng.random()]
    assert draws[0] == 1 and draws[3] == 3 and draws[5] == 1
    assert [round(float(d), 3) for d in draws[1:3] + draws[4:5] + draws[6:]] == \
        [0.112, 0.189, 0.160, 0.502, 0.993, 0.306, 0.326]


def test_exploit_and_explore_by_hand() -> None:
    # scores 10, 40, 30, 20: ranking 1, 2, 3, 0; quantile 0.5 of 4 members: top {1, 2}, bottom {3, 0}
    assert ranking([10, 40, 30, 20]) == [1, 2, 3, 0] and quantile_size(4, 0.5) == 2
    steps = exploit_explore([10, 40, 30, 20], PARAMS, SPACE, seed=7, generation=1, quantile=0.5, resample_p=0.25)
    assert [s.parent for s in steps] == [2, 1, 2, 2]
    # top members go on unchanged
    assert steps[1].params == PARAMS[1] and steps[2].params == PARAMS[2] and not steps[1].changes
    # member 0: integers(2)=1 -> top[1] = member 2 (lr 1e-3, gamma 0.98, batch 32);
    # lr: u=0.112 < 0.5 -> x0.8 = 8e-4; gamma: u=0.189 < resample_p -> resample, integers(4)=3 -> 0.99;
    # batch: u=0.160 -> x0.8 = 25.6 -> 26
    s0 = steps[0]
    assert s0.params["optimizer.lr"] == pytest.approx(8e-4) and s0.params["agent.gamma"] == 0.99
    assert s0.params["agent.batch"] == 26
    assert {k: v[2] for k, v in s0.changes.items()} == {"optimizer.lr": "x0.8", "agent.gamma": "resample",
                                                        "agent.batch": "x0.8"}
    # member 3: integers(2)=1 -> member 2; lr: u=0.502 -> x1.2 = 1.2e-3; gamma: u=0.993 >= 0.25 -> neighbour,
    # v=0.306 < 0.5 -> down: 0.98 -> 0.95; batch: u=0.326 -> x0.8 -> 26
    s3 = steps[3]
    assert s3.params["optimizer.lr"] == pytest.approx(1.2e-3) and s3.params["agent.gamma"] == 0.95
    assert s3.params["agent.batch"] == 26 and s3.changes["agent.gamma"] == (0.98, 0.95, "down")
    # the same inputs give the same decisions (a resumed driver recomputes them)
    again = exploit_explore([10, 40, 30, 20], PARAMS, SPACE, seed=7, generation=1, quantile=0.5)
    assert [(s.parent, s.params) for s in again] == [(s.parent, s.params) for s in steps]


def test_the_default_frozen_list_keeps_every_member_s_network_shape_in_sac_s_space() -> None:
    """SAC's space searches gSDE (``agent.use_sde``), which changes the actor: a member that copied a
    gSDE parent's weights and then resampled use_sde could not load them (found by bench_autorl on
    Pendulum: 'module/actor/4' is a (64, 1) array, the agent's weight is (64, 2)); ent_coef 'auto' adds
    the temperature's parameter (then: 'holds 19 parameters, agent has 20').  With the default frozen
    list, explore changes neither; log_std_init follows its condition."""
    from tuner.study.pbt import FROZEN

    space = parse_space(OmegaConf.to_container(compose_cfg(["agent=sac", "env=pendulum"]).search))
    params = [{"optimizer.lr": 1e-3, "agent.gamma": 0.99, "agent.tau": 0.005, "agent.batch": 256,
               "agent.ent_coef": "auto", "agent.hidden_size": "[64, 64]", "agent.use_sde": use_sde,
               "buffer.pool_size": 50000, **({"agent.log_std_init": -3.0} if use_sde else {})}
              for use_sde in (True, False, True, False)]
    for seed in range(20):
        steps = exploit_explore([10, 40, 30, 20], params, space, seed=seed, generation=1, quantile=0.5,
                                resample_p=1.0, frozen=list(FROZEN))
        for step in steps:
            assert step.params["agent.use_sde"] == params[step.parent]["agent.use_sde"]
            assert step.params["agent.ent_coef"] == params[step.parent]["agent.ent_coef"]
            assert step.params["agent.hidden_size"] == params[step.parent]["agent.hidden_size"]
            assert ("agent.log_std_init" in step.params) == step.params["agent.use_sde"]


def test_explore_edges_frozen_and_minimize() -> None:
    # quantile 0.25 of 4: one member each side; minimize: the lowest score is the best
    steps = exploit_explore([10, 40, 30, 20], PARAMS, SPACE, seed=7, generation=1, quantile=0.25,
                            maximize=False, frozen=["agent.batch"])
    assert [s.parent for s in steps] == [0, 0, 2, 3]  # member 1 (40, the worst) copies member 0 (10)
    assert steps[1].params["agent.batch"] == 16 and "agent.batch" not in steps[1].changes
    lr = steps[1].params["optimizer.lr"]  # 1e-4 x 0.8 is clipped to the bound, x 1.2 is 1.2e-4
    assert lr == pytest.approx(1e-4) or lr == pytest.approx(1.2e-4)
    # a neighbour of the first choice is the second; of the last, the one before
    for old in (0.9, 0.99):
        params = [dict(PARAMS[0], **{"agent.gamma": old})] * 2
        for seed in range(10):
            step = exploit_explore([1, 0], params, SPACE, seed=seed, generation=1, quantile=0.5, resample_p=0.0)[1]
            assert step.params["agent.gamma"] == (0.95 if old == 0.9 else 0.98)


def test_initial_population_by_hand() -> None:
    # draws of default_rng([7, 0]): 0.625, 0.897, 0.776, 0.225, 0.300, 0.874, ...
    pop = initial_population(SPACE, 2, seed=7, first={"optimizer.lr": 1e-3})
    # member 0: lr kept (its draw used up), gamma floor(0.897 x 4) = 3 -> 0.99, batch 16 + 0.776 x 48 = 53.2 -> 53
    assert pop[0] == {"optimizer.lr": 1e-3, "agent.gamma": 0.99, "agent.batch": 53}
    # member 1: lr 1e-4 x 100^0.225 = 2.82e-4, gamma floor(0.300 x 4) = 1 -> 0.95, batch 16 + 0.874 x 48 -> 58
    assert pop[1]["optimizer.lr"] == pytest.approx(2.821e-4, rel=1e-3)
    assert pop[1]["agent.gamma"] == 0.95 and pop[1]["agent.batch"] == 58


TINY_DQN = ["agent=dqn", "agent.hidden_size=[16]", "agent.batch=16", "agent.train_freq=4", "agent.num_updates=1",
            "agent.learning_starts=32", "buffer.pool_size=1000", "logger=none"]


def test_continue_from_keeps_the_new_hyperparameters(tmp_path) -> None:
    """A segment continues its parent's weights, optimizer state, buffer and counters, with its own
    learning rate and settings (restore() alone would bring the saved ones back: ray#62173)."""
    from note_rl.core.checkpoint import read_param
    from tuner.config.schema import validate
    from tuner.run.build import build_agent, build_optimizer
    from tuner.run.train import continue_from, run_training

    first = OmegaConf.to_container(validate(compose_cfg([*TINY_DQN, "budget.steps=200", "optimizer.lr=1e-3"])),
                                   resolve=True)
    res = run_training(dict(first, save_checkpoint=True), str(tmp_path / "a"))
    assert res["checkpoint"] == str(tmp_path / "a" / "checkpoint.npz") and res["env_steps"] == 200
    second = OmegaConf.to_container(validate(compose_cfg([*TINY_DQN, "budget.steps=200", "optimizer.lr=5e-4",
                                                          "agent.batch=32"])), resolve=True)
    agent = build_agent(second)
    optimizer = build_optimizer(second, agent)
    continue_from(agent, optimizer, res["checkpoint"])
    assert agent.backend.get_hparam(optimizer, "lr") == pytest.approx(5e-4)
    assert agent.batch == 32 and agent.step_counter == 200
    saved = read_param(res["checkpoint"])
    for have, want in zip(agent.backend.get_weights(agent.backend.flatten(agent.param)), saved):
        np.testing.assert_array_equal(np.asarray(have), want)
    res2 = run_training(dict(second, continue_from=res["checkpoint"], save_checkpoint=True), str(tmp_path / "b"))
    assert res2["env_steps"] == 400 and res2["continued_from"] == res["checkpoint"]


def test_a_segment_s_schedules_span_the_member_s_whole_training(tmp_path) -> None:
    """DQN's lr falls linearly to 0 over the run (linear_decay).  A segment of 200 env steps that is
    the first half of a 400-step member (``schedule_steps``) ends at half the lr (1 - 200/400), as
    one 400-step run would at step 200; without it the segment ends at 0 (each segment its own run)."""
    from tuner.config.schema import validate
    from tuner.run.build import build_agent, build_optimizer
    from tuner.run.train import run_training

    cfg = OmegaConf.to_container(validate(compose_cfg([*TINY_DQN, "budget.steps=200", "optimizer.lr=1e-3"])),
                                 resolve=True)
    assert cfg["agent"]["linear_decay"] is True
    ends = {}
    for span in (None, 400):
        res = run_training(dict(cfg, save_checkpoint=True, schedule_steps=span), str(tmp_path / str(span)))
        agent = build_agent(cfg)
        optimizer = build_optimizer(cfg, agent)
        agent.restore(res["checkpoint"], optimizer)  # brings back the lr the segment ended at
        ends[span] = agent.backend.get_hparam(optimizer, "lr")
    assert ends[None] == pytest.approx(0.0, abs=1e-12) and ends[400] == pytest.approx(5e-4)


def _study(study_dir, name):
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    return optuna.load_study(study_name=name, storage=JournalStorage(JournalFileBackend(journal_of(study_dir))))


def _args(name, population=3, generations=2, interval=300, env=()):
    return ["tuner=pbt", f"tuner.study_name={name}", "search=none",
            "+search.values.optimizer.lr='tag(log, interval(1e-4, 1e-2))'",
            "+search.values.agent.gamma='choice(0.9, 0.95, 0.98, 0.99)'",
            f"tuner.population={population}", f"tuner.generations={generations}", f"tuner.interval={interval}",
            "tuner.quantile=0.34", "eval.episodes=3", *env, *TINY_DQN]


def _check_lineage(study, population, generations, interval, seed=0):
    """Every (member, generation) has one COMPLETE segment whose parent, params and checkpoint are what
    exploit / explore decide from the stored scores of the generation before."""
    done = {}
    for t in study.get_trials(states=(TrialState.COMPLETE,)):
        key = (t.user_attrs["pbt_member"], t.user_attrs["pbt_generation"])
        assert key not in done, f"segment {key} ran twice"
        done[key] = t
    assert set(done) == {(m, g) for m in range(population) for g in range(generations)}
    for g in range(generations):
        for m in range(population):
            t = done[(m, g)]
            assert t.user_attrs["run_dir"].endswith(os.path.join("members", str(m), f"gen_{g}"))
            assert os.path.exists(t.user_attrs["checkpoint"])
            assert t.user_attrs["env_steps"] == (g + 1) * interval  # the checkpoint's counters continue
            if g == 0:
                assert t.user_attrs["init_from"] is None and t.user_attrs["pbt_parent"] == m
                continue
            parent = done[(t.user_attrs["pbt_parent"], g - 1)]
            assert t.user_attrs["init_from"] == parent.user_attrs["checkpoint"]
            assert t.user_attrs["pbt_parent_trial"] == parent.number
        if g:
            before = [done[(m, g - 1)] for m in range(population)]
            steps = exploit_explore([b.value for b in before], [b.params for b in before], SPACE_STUDY,
                                    seed=seed, generation=g, quantile=0.34)
            assert [s.parent for s in steps] == [done[(m, g)].user_attrs["pbt_parent"] for m in range(population)]
            for s in steps:
                assert done[(s.member, g)].params == pytest.approx(s.params)
            assert sum(s.exploited for s in steps) == 1
    return done


SPACE_STUDY = parse_space({"groups": {}, "values": {"optimizer": {"lr": "tag(log, interval(1e-4, 1e-2))"},
                                                    "agent": {"gamma": "choice(0.9, 0.95, 0.98, 0.99)"}}})


def test_a_real_pbt_run_records_its_lineage(tmp_path) -> None:
    out = run_app(_args("lineage"), cwd=str(tmp_path))
    assert "winner: member" in out.stdout
    study_dir = tmp_path / "studies" / "lineage"
    study = _study(study_dir, "lineage")
    done = _check_lineage(study, 3, 2, 300)
    # member 0 starts from the config's own values: optimizer.lr null -> agent.lr (DQN's default)
    cfg = compose_cfg(TINY_DQN)
    assert done[(0, 0)].params["optimizer.lr"] == pytest.approx(cfg.agent.lr)
    schedule = yaml.safe_load((study_dir / "pbt_schedule.yaml").read_text())
    winner = schedule["winner"]
    assert [s["generation"] for s in schedule["schedule"]] == [0, 1]
    last = schedule["schedule"][-1]
    assert last["member"] == winner and last["trial"] == done[(winner, 1)].number
    assert schedule["schedule"][0]["member"] == done[(winner, 1)].user_attrs["pbt_parent"]
    from tuner.study.best_config import compose_primary

    # a primary config with a defaults list (group overrides work on it), composing to the winner's config
    best = OmegaConf.create(compose_primary(yaml.safe_load((study_dir / "best_config.yaml").read_text())))
    assert {"tuner": "none"} in yaml.safe_load((study_dir / "best_config.yaml").read_text())["defaults"]
    assert best.optimizer.lr == pytest.approx(done[(winner, 1)].params["optimizer.lr"])
    assert best.tuner.name == "none" and best.budget.steps == 600  # 2 generations x 300 env steps
    # each segment trained its 300 steps as a part of the member's 600: DQN's epsilon decays over 16 % of
    # the member's training (${budget_fraction:0.16} = 96 steps), not of a segment's (48)
    ran = yaml.safe_load((study_dir / "members" / "0" / "gen_1" / "result.json").read_text())["config"]
    assert ran["budget"]["steps"] == 300
    assert ran["agent"]["policy"]["decay_steps"] == 96
    # the same command again: nothing left to run; another population: refused before anything changes
    n = len(study.trials)
    assert "winner: member" in run_app(_args("lineage"), cwd=str(tmp_path)).stdout
    other = run_app(_args("lineage", population=4), cwd=str(tmp_path), check=False)
    assert other.returncode != 0 and "tuner.population" in other.stderr
    assert len(_study(study_dir, "lineage").trials) == n
    # the winner's weights evaluate like any run's (its result.json records a plain config)
    model = os.path.join(done[(winner, 1)].user_attrs["run_dir"], "model.npz")
    assert "mean" in run_app(["eval", f"model={model}", "episodes=2"], cwd=str(tmp_path)).stdout
    # the stretch goal: replay_config.yaml trains one member through the winner's schedule
    run_app(["--config-dir", str(study_dir), "--config-name", "replay_config"], cwd=str(tmp_path))
    replay = _study(study_dir / "replay", "lineage-replay")
    segments = sorted(replay.get_trials(states=(TrialState.COMPLETE,)), key=lambda t: t.user_attrs["pbt_generation"])
    assert [t.params for t in segments] == [s["params"] for s in schedule["schedule"]]
    assert [t.user_attrs["env_steps"] for t in segments] == [300, 600]
    assert segments[1].user_attrs["init_from"] == segments[0].user_attrs["checkpoint"]
    # bench/pbt_order.py reads the study back: in one slot every start order takes the sum of the segments
    order = subprocess.run([sys.executable, os.path.join(REPO, "bench", "pbt_order.py"), "--storage",
                            journal_of(study_dir), "--study", "lineage", "--n-jobs", "1"],
                           capture_output=True, text=True, check=True).stdout
    rows = [line for line in order.splitlines() if line.startswith(("| 0 |", "| 1 |", "| all |"))]
    assert len(rows) == 3 and rows[-1].count("(+0%)") == 3, order


def test_sigkilled_driver_resumes_without_losing_or_repeating_a_segment(tmp_path) -> None:
    args = _args("killed", generations=3, env=["env.module=tests.tuner.faulty_envs", "env.id=Slow-v0"])
    study_dir = tmp_path / "studies" / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "tuner", *args], cwd=str(tmp_path), start_new_session=True,
                            env=dict(os.environ, PYTHONPATH=REPO), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)

    def mid_generation_1():
        trials = _study(study_dir, "killed").trials
        gen0 = [t for t in trials if t.user_attrs.get("pbt_generation") == 0 and t.state == TrialState.COMPLETE]
        running = [t for t in trials if t.state == TrialState.RUNNING and "driver" in t.user_attrs]
        return len(gen0) == 3 and any(t.user_attrs["pbt_generation"] == 1 for t in running)

    deadline = time.monotonic() + 300
    try:
        while True:
            try:
                if mid_generation_1():
                    break
            except (KeyError, ValueError, FileNotFoundError):
                pass
            assert proc.poll() is None, proc.stderr.read()[-2000:]
            assert time.monotonic() < deadline, "generation 1 never started"
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    before = _study(study_dir, "killed").trials
    killed = [t.number for t in before if t.state == TrialState.RUNNING]
    complete_before = {t.number: (t.user_attrs["pbt_member"], t.user_attrs["pbt_generation"])
                       for t in before if t.state == TrialState.COMPLETE}
    assert killed and len(complete_before) >= 3  # generation 0, maybe some of generation 1
    run_app(args, cwd=str(tmp_path))
    study = _study(study_dir, "killed")
    done = _check_lineage(study, 3, 3, 300)
    # what was COMPLETE before the kill is what the study still uses: not run again
    for number, key in complete_before.items():
        assert done[key].number == number
    states = {t.number: t.state for t in study.trials}
    for number in killed:
        assert states[number] == TrialState.FAIL
        assert "stopped" in study.trials[number].user_attrs["fail_reason"]
    assert TrialState.RUNNING not in states.values()
    assert len(study.trials) == 9 + len(killed)


def test_failing_segments_stop_the_study_with_one_line(tmp_path) -> None:
    """A segment that fails is run again; after tuner.max_failures (default: population) failures the
    driver stops, says so in one line (exit 2) and leaves each failure's reason in the study."""
    args = _args("crash", env=["env.module=tests.tuner.faulty_envs", "env.id=Crash-v0"])
    out = run_app(args, cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and "3 segments failed" in out.stderr and "the same command resumes" in out.stderr
    trials = _study(tmp_path / "studies" / "crash", "crash").trials
    assert len(trials) == 3 and all(t.state == TrialState.FAIL for t in trials)
    assert all("exploded" in t.user_attrs["fail_reason"] for t in trials)


def test_segments_queued_by_a_killed_driver_are_used_once(tmp_path) -> None:
    """A driver killed between enqueue_trial() and ask() leaves a WAITING segment; the next driver uses
    it (its params are the plan's) and never queues a second one for the same segment."""
    from tuner.study.pbt import PbtDriver, pbt_settings

    overrides = ["tuner=pbt", f"tuner.study_dir={tmp_path / 'queued'}", "tuner.study_name=queued", "search=none",
                 "+search.values.agent.gamma='choice(0.9, 0.95, 0.98, 0.99)'", "tuner.population=3", *TINY_DQN]
    cfg = compose_cfg(overrides)
    from tuner.config.schema import validate

    cfg = validate(cfg)
    driver = PbtDriver(cfg, pbt_settings(cfg.tuner), lambda extra: compose_cfg(extra), overrides)
    plan = driver.plan(0, {})
    driver.study.enqueue_trial(plan[1].params, user_attrs={"pbt_member": 1, "pbt_generation": 0, "pbt_parent": 1})
    first = driver._ask()[1]  # member 0 is next, but the stale member-1 segment comes out of the queue first
    assert (first.user_attrs["pbt_member"], first.params) == (1, plan[1].params)
    second = driver._ask()[1]
    assert (second.user_attrs["pbt_member"], second.params) == (0, plan[0].params)
    third = driver._ask()[1]
    assert third.user_attrs["pbt_member"] == 2
    states = [t.state for t in driver.study.trials]
    assert states == [TrialState.RUNNING] * 3 and driver._ask() == ("wait", None)


def test_a_generation_starts_its_dearest_segments_first(tmp_path) -> None:
    """A generation waits for its slowest member, so its segments start dearest first: DQN at
    train_freq 1 makes 16x the gradient updates of train_freq 16 in the same interval (ties: the
    lowest member first)."""
    from tuner.config.schema import validate
    from tuner.study.pbt import PbtDriver, pbt_settings
    from tuner.study.pbt_rules import Step

    overrides = ["tuner=pbt", f"tuner.study_dir={tmp_path / 'dear'}", "tuner.study_name=dear", "search=none",
                 "+search.values.agent.train_freq='choice(1, 4, 16)'", "tuner.population=6", "tuner.interval=1032",
                 *TINY_DQN]
    cfg = validate(compose_cfg(overrides))
    driver = PbtDriver(cfg, pbt_settings(cfg.tuner), lambda extra: compose_cfg(extra), overrides)
    steps = [Step(m, m, {"agent.train_freq": f}) for m, f in enumerate([16, 1, 4, 1])]
    # (1032 - 32 learning starts) / train_freq updates: 62.5, 1000, 250, 1000
    assert [driver.dearest(steps, todo).member for todo in ([0, 1, 2, 3], [0, 2, 3], [0, 2], [0])] == [1, 3, 2, 0]
    plan = driver.plan(0, {})
    freqs = [step.params["agent.train_freq"] for step in plan]
    assert len(set(freqs)) > 1, freqs  # the draws this test works from: not all alike
    expected = sorted(range(6), key=lambda m: (freqs[m], m))  # fewest env steps per update first
    asked = [driver._ask()[1].user_attrs["pbt_member"] for _ in range(6)]
    assert asked == expected, (freqs, asked)


def test_conditional_parameters_follow_their_condition() -> None:
    """A member holds buffer.alpha only under buffer=prioritized (search.when): explore samples it when
    the buffer becomes prioritized and drops it when it stops being; initial members hold it likewise."""
    space = parse_space({"groups": {"buffer": "choice(uniform, prioritized)"}, "when": {"buffer.alpha": "buffer=prioritized"},
                         "values": {"optimizer": {"lr": "tag(log, interval(1e-4, 1e-2))"},
                                    "buffer": {"alpha": "interval(0.01, 1.0)"}}})
    for member in initial_population(space, 6, seed=3):
        assert ("buffer.alpha" in member) == (member["buffer"] == "prioritized")
    uniform = {"buffer": "uniform", "optimizer.lr": 1e-3}
    # two choices and resample_p=0: the only neighbour of uniform is prioritized
    step = exploit_explore([1, 0], [uniform, uniform], space, seed=0, generation=1, quantile=0.5, resample_p=0.0)[1]
    assert step.params["buffer"] == "prioritized" and 0.01 <= step.params["buffer.alpha"] <= 1.0
    assert step.changes["buffer.alpha"][2] == "sampled"
    prioritized = {"buffer": "prioritized", "optimizer.lr": 1e-3, "buffer.alpha": 0.5}
    step = exploit_explore([1, 0], [prioritized] * 2, space, seed=0, generation=1, quantile=0.5, resample_p=0.0)[1]
    assert step.params["buffer"] == "uniform" and "buffer.alpha" not in step.params
    assert step.changes["buffer.alpha"] == (0.5, None, "dropped")
    # frozen (as the driver freezes every config group): the buffer stays, alpha is perturbed
    step = exploit_explore([1, 0], [prioritized] * 2, space, seed=0, generation=1, quantile=0.5, frozen=["buffer"])[1]
    assert step.params["buffer"] == "prioritized" and step.params["buffer.alpha"] in (pytest.approx(0.4), pytest.approx(0.6))


@pytest.mark.parametrize("text,reason", [
    # a hostile file: PyYAML's tag for calling a function; read as data, it is refused, nothing runs
    ('interval: 100\nschedule: !!python/object/apply:os.system ["touch PWNED"]\n', "could not determine a constructor"),
    ("interval: 100\nschedule: []\n", "no schedule entries with params"),
    ("schedule: [{params: {agent.gamma: 0.9}}]\n", "'interval'"),
])
def test_a_bad_replay_schedule_is_one_line_and_runs_nothing(tmp_path, text, reason) -> None:
    from tuner.common.errors import ConfigError
    from tuner.study.pbt import pbt_settings

    schedule = tmp_path / "pbt_schedule.yaml"
    schedule.write_text(text)
    with pytest.raises(ConfigError) as err:
        pbt_settings({"replay": str(schedule)})
    message = str(err.value)
    assert message.startswith(f"tuner.replay: {schedule} is not a readable pbt_schedule.yaml (")
    assert reason in message and "\n" not in message
    assert not (tmp_path / "PWNED").exists() and not os.path.exists("PWNED")


def test_a_hand_edited_pbt_journal_loses_only_its_odd_records(tmp_path, capsys) -> None:
    """Stored segment records are data: a member / generation that is not a count makes that trial no
    segment (PBT runs it again), a parent that is not a member with a segment the generation before
    reads as the segment's own member, a checkpoint or run dir that is not a path is no file (a missing
    parent checkpoint is the one-line refusal it always was; no ``./config.yaml`` is read for ""), and
    an odd ``pbt`` settings record checks nothing and is written anew."""
    from tuner.common.errors import ConfigError
    from tuner.config.schema import validate
    from tuner.study.pbt import PbtDriver, lineage, parent_of, pbt_settings, segment_key

    overrides = ["tuner=pbt", f"tuner.study_dir={tmp_path / 'odd'}", "tuner.study_name=odd", "search=none",
                 "+search.values.agent.gamma='choice(0.9, 0.95, 0.98, 0.99)'", "tuner.population=2",
                 "tuner.generations=2", "tuner.quantile=0.5", *TINY_DQN]
    cfg = validate(compose_cfg(overrides))

    def driver() -> PbtDriver:
        return PbtDriver(cfg, pbt_settings(cfg.tuner), lambda extra: compose_cfg(extra), overrides)

    first = driver()
    study = first.study
    segment = lambda t: {"pbt_member": t[0], "pbt_generation": t[1], "pbt_parent": t[2]}  # noqa: E731
    # generation 0 of both members, generation 1 of member 0 (whose parent record is odd), and a trial whose
    # member record is a string: scores 1, 2, 3 and 9
    records = [(segment((0, 0, 0)), 1.0), (segment((1, 0, 1)), 2.0), (segment((0, 1, "x")), 3.0),
               (segment(("1", 1, 1)), 9.0)]
    for attrs, value in records:
        trial = study.ask()
        for key, v in {**attrs, "run_dir": 5, "checkpoint": [1]}.items():
            trial.set_user_attr(key, v)
        study.tell(trial, value)
    study.set_user_attr("pbt", ["population"])  # was: TypeError on resume (old["population"])
    again = driver()  # the odd settings record checks nothing and is replaced
    assert again.study.user_attrs["pbt"]["population"] == 2
    done = again.segments()
    assert sorted(done) == [(0, 0), (0, 1), (1, 0)]  # trial 3 ("1") is no segment
    trials = again.study.trials
    assert segment_key(trials[3]) is None and parent_of(trials[2], (0, 1), done) == 0
    assert [s["member"] for s in lineage(done, 0, 1)] == [0, 0]
    # member 1's generation 1 runs (again: the odd trial held it), from its parent's checkpoint, which no
    # segment records as a path
    state, trial = again._ask()
    assert (state, segment_key(trial)) == ("open", (1, 1))
    with pytest.raises(ConfigError, match=r"checkpoint of generation 0 is missing: $"):
        again._prepare(trial)
    again.study.tell(trial, 4.0)  # as if it had run
    capsys.readouterr()
    summary = again.write_outputs()
    assert summary["winner"] == 1 and summary["winner_checkpoint"] is None
    assert [s["parent"] for s in summary["segments"]] == [0, 1, 0, 1]
    assert not (tmp_path / "odd" / "best_config.yaml").exists()  # its run dir record names no config.yaml
    assert yaml.safe_load((tmp_path / "odd" / "pbt_schedule.yaml").read_text())["winner"] == 1
