"""The AutoRL protocol (tuner/study/protocol.py): tuning, held-out and test seeds kept apart; the
answer and the starting config scored on test seeds nothing was tuned or chosen on."""

from __future__ import annotations

import glob
import json
import os
import re

import pytest

from tests.tuner.conftest import TINY, run_app
from tuner.common.errors import ConfigError
from tuner.study.protocol import TEST_SEED_BASE, SeedSettings, check_seeds, pick_test_seeds


def test_test_seeds_skip_every_seed_used_before_and_a_listed_one_that_was_is_refused() -> None:
    base = TEST_SEED_BASE
    assert pick_test_seeds(3, set()) == [base, base + 1, base + 2]
    assert pick_test_seeds(2, {base, 5, base + 2}) == [base + 1, base + 3]
    assert pick_test_seeds([7, 8], {0, 1}) == [7, 8]
    with pytest.raises(ConfigError, match=r"^tuner.seeds.test: seed 1 was used to tune or choose"):
        pick_test_seeds([9, 1], {0, 1})
    assert pick_test_seeds(0, set()) == []


@pytest.mark.parametrize("seeds,n_seeds,message", [
    (SeedSettings(tuning=[1, 2], test=[2, 5]), 1, "tuner.seeds.test: seed 2 is a tuning seed"),
    (SeedSettings(tuning=[1, 2, 3]), 2, "tuner.seeds.tuning: 3 seeds, but tuner.n_seeds=2"),
    (SeedSettings(tuning=[1, 1]), 1, "tuner.seeds.tuning: must be distinct seeds"),
    (SeedSettings(tuning=4), 1, "tuner.seeds.tuning: must be a list of seeds or null"),
    (SeedSettings(test=-1), 1, "tuner.seeds.test: must be a count from 0"),
    (SeedSettings(test=[2**40]), 1, "tuner.seeds.test: must be distinct seeds from 0")])
def test_bad_seed_settings_are_one_line(seeds, n_seeds, message) -> None:
    with pytest.raises(ConfigError, match="^" + message.replace(".", r"\.")):
        check_seeds(seeds, n_seeds)
    check_seeds(SeedSettings(tuning=[1, 2, 3], test=[4]), 3)  # n_seeds may also match the list


def _seeds_of(folder: str) -> set[int]:
    return {json.load(open(p))["seed"] for p in glob.glob(os.path.join(folder, "**", "result.json"), recursive=True)
            if "seed" in json.load(open(p))}


def test_the_answer_is_chosen_on_tuning_and_heldout_seeds_and_scored_on_test_seeds_beside_the_start(tmp_path) -> None:
    """Trial 1 is the starting config (the config's own env, Lucky-v0: it pays 100 on the tuning
    evaluations only); trial 0 is enqueued (Steady-v0, 50 everywhere).  Tuning prefers Lucky; the
    held-out stage picks Steady; the test stage retrains both on seeds nothing used before and says
    the answer beats where the study started.  No run but the test stage's ever trained on a test seed."""
    out = run_app(["tuner=optuna", "tuner.study_name=proto", "env.module=tests.tuner.lucky_envs", "env.id=Lucky-v0",
                   "search=none", "+search.values.env.id='choice(Lucky-v0, Steady-v0)'", "tuner.sampler=random",
                   "tuner.n_trials=2", "tuner.pruner=none", "+tuner.enqueue=[{env.id: Steady-v0}]",
                   "tuner.seeds.tuning=[3]", "tuner.seeds.test=2", "tuner.reevaluate.top_k=2",
                   "tuner.reevaluate.seeds=1", "tuner.reevaluate.episodes=2", "tuner.reevaluate.tie_seeds=0",
                   "eval.episodes=2", *TINY, "budget.steps=100"], cwd=str(tmp_path))
    study_dir = tmp_path / "studies" / "proto"
    summary = json.loads((study_dir / "study.json").read_text())
    trials = {c["params"]["env.id"]: c["trial"] for c in summary["reevaluation"]["configs"]}
    steady, lucky = trials["Steady-v0"], trials["Lucky-v0"]
    assert (steady, lucky) == (0, 1)
    # tuning: every trial trained on the named tuning seed; the best tuning score is luck
    assert _seeds_of(str(study_dir / "trials")) == {3} and summary["best_trial"] == lucky
    assert summary["best_value"] == 100.0
    # held-out (choosing): seed 10000; the winner is Steady
    assert summary["reevaluation"]["seeds"] == [10000] and summary["reevaluation"]["winner"] == steady
    assert _seeds_of(str(study_dir / "heldout")) == {10000}
    # test (scoring only): two new seeds, the answer and the start, nothing chosen there
    test = summary["test"]
    assert test["seeds"] == [TEST_SEED_BASE, TEST_SEED_BASE + 1]
    assert _seeds_of(str(study_dir / "test")) == set(test["seeds"])
    assert sorted(os.listdir(study_dir / "test")) == [f"{steady:04d}", f"{lucky:04d}"]
    assert test["answer"]["trial"] == steady and test["answer"]["mean"] == 50.0 and test["answer"]["gap"] == 0.0
    assert test["start"]["trial"] == lucky and test["start"]["mean"] == 0.0
    assert test["verdict"] == f"the answer beats the starting config (trial {lucky}) by 50 on the test seeds"
    # one answer everywhere: study.json, best_config.yaml, report.md, the printed lines
    answer = summary["answer"]
    assert answer["trial"] == steady == summary["best_config_trial"] and answer["source"] == "heldout"
    assert answer["test_mean"] == 50.0 and answer["start_test_mean"] == 0.0 and answer["best_tuning_trial"] == lucky
    assert "# test mean 50 on seeds [20000, 20001]" in (study_dir / "best_config.yaml").read_text()
    report = (study_dir / "report" / "report.md").read_text()
    line = (f"answer: trial {steady} (held-out winner); tuning score 50; held-out mean 50; test mean 50 on seeds "
            f"[20000, 20001]; best tuning score 100 was trial {lucky}")
    assert f"- {line}" in report and line in out.stdout
    assert "## AutoRL checklist" in report and "tuning 3; held-out (choosing among the top configs) 10000; " \
        "test (scoring only) 20000, 20001" in report
    assert "sampler random, pruner none" in report and "| `env.id` | choice('Lucky-v0', 'Steady-v0') |" in report
    # the stages say what they will train and how long before they start, and count runs as they end
    assert "held-out re-evaluation: 2 configs x 1 seeds (2 runs to train, 2 deterministic episodes each; " \
        in out.stdout
    assert "  [held-out] 2/2 runs done" in out.stdout and "  [test] 4/4 runs done" in out.stdout


def test_lower_quantile_objective_and_seed_robust_settings() -> None:
    from tuner.run.trial_worker import aggregate
    from tuner.study.settings import tuner_settings

    # numpy's linear percentile: q25 of five values sits at index 0.25 x 4 = 1
    assert aggregate([40, 0, 20, 10, 30], "q25") == 10.0 and aggregate([0, 10], "q25") == 2.5
    assert aggregate([3, 1, 2], "min") == 1.0 and aggregate([3, 1, 2], "median") == 2.0
    assert tuner_settings({"aggregation": "q10", "pruner": "wilcoxon", "n_seeds": 5}).aggregation == "q10"
    # judged on 2 of 3 seeds at the most: 1/4 < 0.3
    assert tuner_settings({"pruner": "wilcoxon", "n_seeds": 3, "wilcoxon_p": 0.3}).n_seeds == 3
    # in turns every evaluation of every seed is an instance: two seeds can be enough
    assert tuner_settings({"pruner": "wilcoxon", "n_seeds": 2, "seed_order": "interleaved"}).n_seeds == 2
    from tuner.study.settings import wilcoxon_seeds

    assert [wilcoxon_seeds(p) for p in (0.3, 0.25, 0.1, 0.05, 0.01)] == [2, 3, 4, 5, 7]
    assert [wilcoxon_seeds(p) for p in (float("-inf"), 0.0, 1.0, float("nan"))] == [1, 1, 1, 1]  # no endless loop
    for bad, message in (({"aggregation": "q75"}, "tuner.aggregation: 'q75' must be mean, median, min, lcb "),
                         ({"aggregation": "qx"}, "tuner.aggregation: 'qx'"),
                         ({"pruner": "wilcoxon"}, "tuner.pruner: wilcoxon compares a trial with the best one seed by "
                                                  "seed; it needs tuner.n_seeds >= 2"),
                         ({"pruner": "wilcoxon", "n_seeds": 2, "wilcoxon_p": 1.5}, "tuner.wilcoxon_p: must be in (0, 1)"),
                         # a trial of 4 seeds stops, if at all, after 3: all worse give p = 1/8 >= 0.1
                         ({"pruner": "wilcoxon", "n_seeds": 4}, "tuner.pruner: wilcoxon can never prune with 4 seeds at "
                                                                "tuner.wilcoxon_p=0.1 (a trial stops only before a seed it "
                                                                "has not run, so it is judged on 3 at the most, whose "
                                                                "smallest one-sided p-value is 1/2**3 = 0.125); use "
                                                                "tuner.n_seeds >= 5"),
                         ({"pruner": "wilcoxon", "n_seeds": 2, "wilcoxon_p": 0.3}, "tuner.pruner: wilcoxon can never "
                                                                                   "prune with 2 seeds"),
                         ({"seed_order": "shuffled"}, "tuner.seed_order: 'shuffled' must be sequential or interleaved")):
        with pytest.raises(ConfigError, match="^" + re.escape(message)):
            tuner_settings(bad)


def test_wilcoxon_pruner_stops_a_trial_worse_on_every_seed_after_four_seeds(tmp_path) -> None:
    """Trial 0 (Steady-v0) scores 50 on each of 6 seeds; trial 1 (Broke-v0) scores 0.  Each seed's
    score is an instance: after k seeds, all k differences are negative, and the exact one-sided
    Wilcoxon signed-rank p-value is 1 / 2**k: 0.125 after 3 seeds (> 0.1, go on), 0.0625 after 4
    (< 0.1): trial 1 is pruned after its fourth seed and never trains seeds 5 and 6."""
    import optuna

    run_app(["tuner=optuna", "tuner.study_name=wx", "env.module=tests.tuner.lucky_envs", "env.id=Broke-v0",
             "search=none", "+search.values.env.id='choice(Steady-v0, Broke-v0)'", "tuner.sampler=random",
             "tuner.n_trials=2", "tuner.pruner=wilcoxon", "tuner.n_warmup_steps=0", "tuner.n_seeds=6",
             "+tuner.enqueue=[{env.id: Steady-v0}]", "tuner.reevaluate.top_k=0", "tuner.seeds.test=0",
             "eval.episodes=1", *TINY, "budget.steps=40"], cwd=str(tmp_path))
    study = optuna.load_study(study_name="wx", storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(tmp_path / "studies" / "journal.log"))))
    steady, broke = study.trials
    assert steady.params["env.id"] == "Steady-v0" and steady.state.name == "COMPLETE" and steady.value == 50.0
    assert steady.intermediate_values == {i: 50.0 for i in range(6)}  # every instance, the last one too
    assert broke.params["env.id"] == "Broke-v0" and broke.state.name == "PRUNED"
    assert broke.intermediate_values == {i: 0.0 for i in range(4)} and len(broke.user_attrs["seeds"]) == 4


def test_a_run_budget_counts_the_seeds_trials_trained_so_pruning_buys_trials() -> None:
    """``tuner.max_runs`` by hand, 5 seeds a trial, a budget of 12 runs: a complete trial (5 runs) and
    one pruned after 2 seeds (2 runs) leave 5, enough for one more trial; while it runs it holds its
    5, so no other starts (WAIT: pruned early it may leave room); pruned after 3 it leaves 2, less than
    a trial: DONE.  A failed trial costs nothing; without the budget, n_trials decides alone."""
    import optuna
    from optuna.trial import TrialState

    from tuner.study.runner import DONE, OPEN, WAIT, ask_within, runs_spent

    study = optuna.create_study(direction="maximize")
    for seeds, state in ((5, TrialState.COMPLETE), (2, TrialState.PRUNED), (5, TrialState.FAIL)):
        trial = study.ask()
        trial.set_user_attr("tuning_seeds", list(range(5)))
        if state != TrialState.FAIL:
            trial.set_user_attr("seeds", [{"seed": i} for i in range(seeds)])
        study.tell(trial, 1.0 if state == TrialState.COMPLETE else None, state=state)
    assert runs_spent(study.trials) == 7
    state, running = ask_within(study, 100, {}, max_runs=12, runs_per_trial=5)
    assert state == OPEN and running is not None
    assert ask_within(study, 100, {}, max_runs=12, runs_per_trial=5) == (WAIT, None)
    state, extra = ask_within(study, 100, {}, max_runs=17, runs_per_trial=5)  # 7 + 2 x 5 fits 17
    assert state == OPEN
    study.tell(extra, state=TrialState.FAIL)
    running.set_user_attr("seeds", [{"seed": i} for i in range(3)])
    study.tell(running, state=TrialState.PRUNED)
    assert runs_spent(study.trials) == 10
    assert ask_within(study, 100, {}, max_runs=12, runs_per_trial=5) == (DONE, None)
    assert ask_within(study, 100, {}, max_runs=None, runs_per_trial=5)[0] == OPEN
    # stored attrs are data: a record that is not a list falls back to the tuning seeds (5), then to 1
    odd = study.ask()
    odd.set_user_attr("seeds", 7)
    odd.set_user_attr("tuning_seeds", list(range(5)))
    study.tell(odd, 1.0)
    odder = study.ask()
    odder.set_user_attr("seeds", "abc")
    study.tell(odder, 1.0)
    assert runs_spent(study.trials) == 10 + 5 + 1


def test_a_cpu_budget_counts_recorded_cpu_and_estimates_running_trials(monkeypatch) -> None:
    """``tuner.max_cpu_s`` by hand: a complete trial (30 CPU s) and a pruned one (10 s) have spent 40,
    and their median, 20, is what a trial is expected to cost; a failed trial that recorded nothing
    costs nothing, an odd record (a string, NaN, a negative) reads as none.
    A trial starts while the CPU committed plus half the expected cost is below the budget (a new
    trial then ends nearer the budget than stopping would): 40 + 10 is not below 49, it is below 51.
    A running trial commits the larger of its estimate (its wall time since it started times its share
    of the cores: 4 cores, 2 running, 2 each) and the expected 20: just started, two running trials
    commit 40 + 20 + 20 = 80, so a budget of 90 waits; 20 s in they commit 40 + 2 x 20 x 2 = 120.
    Once they have recorded their own CPU (10 and 0), 50 is spent, the median of 30, 10, 10, 0 is 10,
    and a budget of 55 is done (50 + 5), one of 56 is not."""
    import optuna
    from optuna.trial import TrialState

    from tuner.study.runner import DONE, OPEN, WAIT, ask_within, cpu_committed, cpu_spent, why_full

    monkeypatch.setattr("os.cpu_count", lambda: 4)
    study = optuna.create_study(direction="maximize")
    for cpu, state in ((30.0, TrialState.COMPLETE), (10, TrialState.PRUNED), (None, TrialState.FAIL),
                       ("abc", TrialState.COMPLETE), (float("nan"), TrialState.COMPLETE), (-5.0, TrialState.COMPLETE)):
        trial = study.ask()
        if cpu is not None:
            trial.set_user_attr("cpu_time_s", cpu)
        study.tell(trial, None if state != TrialState.COMPLETE else 1.0, state=state)
    assert cpu_spent(study.trials) == 40.0 and cpu_committed(study.trials) == (40.0, 20.0)
    assert why_full(study.trials, 100, None, None, 1, "tuner", 40.0) == (
        "40.0 CPU seconds of trials (tuner.max_cpu_s=40)", "raise tuner.max_cpu_s")
    assert why_full(study.trials, 100, None, None, 1, "tuner", 49.0) == (
        "40.0 CPU seconds of trials (tuner.max_cpu_s=49; the 9.0 left is under half a finished trial's "
        "median, 20.0)", "raise tuner.max_cpu_s")
    assert why_full(study.trials, 100, None, None, 1, "tuner", 51.0) is None
    assert ask_within(study, 100, {}, max_cpu_s=49.0) == (DONE, None)
    state, first = ask_within(study, 100, {}, max_cpu_s=51.0)
    assert state == OPEN
    state, second = ask_within(study, 100, {}, max_cpu_s=1000.0)
    assert state == OPEN
    started = study.trials[first.number].datetime_start.timestamp()
    assert cpu_committed(study.trials, now=started) == (80.0, 20.0)
    assert ask_within(study, 100, {}, max_cpu_s=90.0) == (WAIT, None)
    assert cpu_spent(study.trials, now=started + 20.0) == pytest.approx(40.0 + 2 * 20.0 * 2, abs=1.0)
    assert cpu_committed(study.trials, now=started + 20.0)[0] == pytest.approx(40.0 + 2 * 20.0 * 2, abs=1.0)
    first.set_user_attr("cpu_time_s", 10.0)
    study.tell(first, 1.0)
    second.set_user_attr("cpu_time_s", 0.0)
    study.tell(second, 1.0)
    assert cpu_spent(study.trials) == 50.0 and cpu_committed(study.trials) == (50.0, 10.0)
    assert ask_within(study, 100, {}, max_cpu_s=55.0) == (DONE, None)
    assert ask_within(study, 100, {}, max_cpu_s=56.0)[0] == OPEN
    assert ask_within(study, 100, {}, max_cpu_s=None)[0] == OPEN


def test_a_cpu_budget_judges_a_sampled_config_by_its_predicted_cost(tmp_path, capsys) -> None:
    """``tuner.max_cpu_s`` with a cost estimate (``cost_of``; here the value of ``x`` itself): complete
    trials at x 10 and 20 took 20 and 60 CPU s, so a second of estimate costs 2 and 3 there, median 2.5;
    a pruned trial (x 50, 5 s) stopped early and does not calibrate.  Committed: 85 s; the half-trial
    rule (85 + median 20 / 2 = 95) lets a trial start under a budget of 100.  The next config, x 40,
    is predicted at 2.5 x 40 = 100 s: 85 + 50 is not below 100, so it goes back to WAITING with the
    prediction and the 15 s left recorded, a note, the report's table of trials and its checklist say so, and no trial
    starts (DONE: none running).
    Asked again, the same refused trial is next and no new one is created; under a budget of 136 (85 +
    50 below it) that same trial, with its x, starts.  In a journal, as a study's storage is."""
    import optuna
    from optuna.distributions import FloatDistribution
    from optuna.trial import TrialState, create_trial

    from tuner.report.checklist import checklist
    from tuner.report.report import trials_table
    from tuner.study.runner import DONE, NOT_STARTED, OPEN, ask_within, predicted_cpu, why_full

    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(tmp_path / "j.log")))
    study = optuna.create_study(direction="maximize", storage=storage)
    space = {"x": FloatDistribution(1.0, 100.0)}

    def cost_of(params):
        return params["x"]

    assert predicted_cpu(study.trials, {"x": 40.0}, cost_of) is None  # nothing completed yet
    for x, cpu, state in ((10.0, 20.0, TrialState.COMPLETE), (20.0, 60.0, TrialState.COMPLETE),
                          (50.0, 5.0, TrialState.PRUNED)):
        study.add_trial(create_trial(state=state, value=1.0 if state == TrialState.COMPLETE else None,
                                     params={"x": x}, distributions=space, user_attrs={"cpu_time_s": cpu}))
    assert predicted_cpu(study.trials, {"x": 40.0}, cost_of) == pytest.approx(100.0)
    assert predicted_cpu(study.trials, {"y": 40.0}, cost_of) is None  # values the estimate cannot read: none
    study.enqueue_trial({"x": 40.0})
    assert ask_within(study, 100, space, max_cpu_s=100.0, cost_of=cost_of) == (DONE, None)
    refused = study.trials[3]
    assert refused.state == TrialState.WAITING and refused.user_attrs[NOT_STARTED] == {
        "predicted_cpu_s": 100.0, "cpu_left_s": 15.0}
    assert ("note: trial 3 not started: its config is predicted to take 100.0 CPU s and 15.0 are left of "
            "tuner.max_cpu_s=100; it waits in the study (raise tuner.max_cpu_s and resume to run it)"
            in capsys.readouterr().out)
    assert ask_within(study, 100, space, max_cpu_s=100.0, cost_of=cost_of) == (DONE, None)
    assert len(study.trials) == 4 and study.trials[3].state == TrialState.WAITING
    assert why_full(study.trials, 100, None, None, 1, "tuner", 100.0, cost_of) == (
        "85.0 CPU seconds of trials (tuner.max_cpu_s=100; the 15.0 left is under half of waiting trial 3's "
        "predicted 100.0)", "raise tuner.max_cpu_s")
    assert why_full(study.trials, 100, None, None, 1, "tuner", 100.0) is None  # the median rule alone: room
    columns, rows = trials_table(study)  # the report's table of trials says why it waits
    assert dict(zip(columns, rows[3]))["fail_reason"] == "not started: predicted 100.0 CPU s, 15.0 left of the budget"
    assert "CPU in trial processes; trial 3 not started (the config's predicted CPU did not fit what was left)" \
        in "\n".join(checklist(study))
    state, trial = ask_within(study, 100, space, max_cpu_s=136.0, cost_of=cost_of)
    assert state == OPEN and trial.number == 3 and trial.params == {"x": 40.0}
    assert len(study.trials) == 4


def test_a_running_trial_commits_its_own_predicted_cpu(tmp_path) -> None:
    """A running trial counts the CPU its config is predicted to take, not a typical trial's: complete
    trials at x 10 and 20 took 20 and 60 s (2.5 s a unit of estimate, median), a pruned one at x 50 5 s
    (85 s spent; the finished median 20).  Trial 3 (x 40, predicted 100: 85 + 50 is below 200) starts;
    just started, it commits 100, so 185 in all, where the median would have counted 20 (105).  Under a
    budget of 190 the next trial waits for it (185 + 20 / 2 is not below 190); counted at the median, a
    second trial would have started beside the dear one (105 + 10).  Without an estimate
    (``cost_of`` None) the median stands, as before."""
    import optuna
    from optuna.distributions import FloatDistribution
    from optuna.trial import TrialState, create_trial

    from tuner.study.runner import OPEN, WAIT, ask_within, cpu_committed

    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(tmp_path / "j.log")))
    study = optuna.create_study(direction="maximize", storage=storage)
    space = {"x": FloatDistribution(1.0, 100.0)}

    def cost_of(params):
        return params["x"]

    for x, cpu, state in ((10.0, 20.0, TrialState.COMPLETE), (20.0, 60.0, TrialState.COMPLETE),
                          (50.0, 5.0, TrialState.PRUNED)):
        study.add_trial(create_trial(state=state, value=1.0 if state == TrialState.COMPLETE else None,
                                     params={"x": x}, distributions=space, user_attrs={"cpu_time_s": cpu}))
    study.enqueue_trial({"x": 40.0})
    state, dear = ask_within(study, 100, space, max_cpu_s=200.0, cost_of=cost_of)
    assert state == OPEN and dear.params == {"x": 40.0}
    started = study.trials[3].datetime_start.timestamp()
    assert cpu_committed(study.trials, now=started, cost_of=cost_of) == pytest.approx((185.0, 20.0))
    assert cpu_committed(study.trials, now=started) == pytest.approx((105.0, 20.0))
    assert ask_within(study, 100, space, max_cpu_s=190.0, cost_of=cost_of) == (WAIT, None)
    assert len(study.trials) == 4
    assert ask_within(study, 100, space, max_cpu_s=190.0)[0] == OPEN  # no estimate: the median rule


def test_a_real_study_leaves_a_config_predicted_over_its_cpu_budget_waiting(tmp_path, capsys) -> None:
    """The driver's estimate on real trials (DQN, 300 env steps, [16] network, batch 16): trial 0 makes
    (300 - 32) / 4 = 67 updates, trial 1 (``num_updates=300``) 20,100, which ``trial_seconds`` puts at
    16.12 s against 0.0911 s (177x: 125 us a step, 0.8 ms an update).  Trial 0 completes in c CPU
    seconds (0.1-0.25 here: its process forks from a preloaded server), so under a budget of 2 s the
    half-trial rule (c + c / 2, below 2 for any c under 1.33) lets a trial start, but trial 1 is predicted
    at 177 c, and c + 88.5 c is over 2 for any c above 0.023: it waits, with its prediction, and the
    study ends.  A re-run says why it starts nothing; resumed with a larger budget, the study runs that
    same trial next."""
    from optuna.trial import TrialState

    from tests.tuner.study.test_study_settings import _driver
    from tuner.study.runner import NOT_STARTED

    args = ["tuner.n_trials=2", "tuner.n_jobs=1", "tuner.pruner=none", "tuner.enqueue_defaults=false",
            "tuner.max_cost_ratio=1000", "tuner.trial_timeout=300", "+search.values.agent.num_updates='choice(1, 300)'",
            "tuner.enqueue=[{agent.num_updates: 1}, {agent.num_updates: 300}]"]
    driver = _driver(tmp_path, [*args, "tuner.max_cpu_s=2"])
    driver.run()
    first, second = driver.study.trials
    assert first.state == TrialState.COMPLETE and second.state == TrialState.WAITING
    c = first.user_attrs["cpu_time_s"]
    assert second.params == {"agent.num_updates": 300}
    # stored to 0.1 s
    assert second.user_attrs[NOT_STARTED]["predicted_cpu_s"] == pytest.approx(c * 16.120588 / 0.0911113, abs=0.051)
    assert "note: trial 1 not started: its config is predicted to take" in capsys.readouterr().out
    _driver(tmp_path, [*args, "tuner.max_cpu_s=2"])._say_if_full()
    assert re.search(r"note: study 's' already holds [0-9.]+ CPU seconds of trials \(tuner.max_cpu_s=2; the [0-9.]+ "
                     r"left is under half of waiting trial 1's predicted [0-9.]+\): no trial to run; raise "
                     r"tuner.max_cpu_s", capsys.readouterr().out)
    resumed = _driver(tmp_path, [*args, "tuner.max_cpu_s=1000"])
    resumed.run()
    assert [(t.number, t.state, t.params["agent.num_updates"]) for t in resumed.study.trials] == [
        (0, TrialState.COMPLETE, 1), (1, TrialState.COMPLETE, 300)]


def test_a_cpu_budget_stops_a_real_study_and_the_report_states_it(tmp_path) -> None:
    """A real study with a budget of a millisecond of CPU: its first trial starts (nothing spent yet)
    and, a process that trains 300 env steps, spends more than that, so no second trial starts; the
    progress line and the checklist state the CPU against the budget and a re-run says why it runs
    nothing."""
    import optuna

    args = ["tuner=optuna", "tuner.study_name=cpu", "tuner.n_trials=5", "tuner.n_jobs=1", "tuner.max_cpu_s=0.001",
            "tuner.reevaluate.top_k=0", "tuner.seeds.test=0", *TINY]
    first = run_app(args, cwd=str(tmp_path))
    study = optuna.load_study(study_name="cpu", storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(tmp_path / "studies" / "journal.log"))))
    assert [t.state.name for t in study.trials] == ["COMPLETE"]
    cpu = study.trials[0].user_attrs["cpu_time_s"]
    assert cpu > 0.001
    # the progress line states the CPU spent against the budget
    assert re.search(r"\[study\] 1/5 finished: .* CPU \d+ of 0\.001 s", first.stdout)
    report = (tmp_path / "studies" / "cpu" / "report" / "report.md").read_text()
    assert re.search(r"s CPU in trial processes \(of tuner\.max_cpu_s=0\.001\)", report)
    again = run_app(args, cwd=str(tmp_path))
    assert f"note: study 'cpu' already holds {cpu:.1f} CPU seconds of trials (tuner.max_cpu_s=0.001): no trial to " \
           "run; raise tuner.max_cpu_s" in again.stdout


def test_a_wilcoxon_study_spends_the_runs_its_pruning_saves_on_more_trials(tmp_path) -> None:
    """A budget of 14 runs at 5 seeds a trial is two whole trials.  Trial 0 (Steady-v0, 50 on every
    seed) runs its 5; the Broke-v0 trials (0 on every seed) are pruned by Wilcoxon after 4 seeds
    (p = 1/16 < 0.1), so trial 1 leaves 14 - 9 = 5 runs: trial 2 starts, is pruned after 4 (13 spent),
    and the 1 run left is less than a trial: the study stops at 3 trials of its n_trials=10.  The
    report's checklist states the runs against the budget."""
    import optuna

    # eval.episodes tells the enqueued Broke-v0 trials apart (Optuna skips an enqueued duplicate); it
    # changes no score
    enqueue = ",".join(f"{{env.id: {env}, eval.episodes: {n}}}" for env, n in
                       (("Steady-v0", 1), ("Broke-v0", 1), ("Broke-v0", 2), ("Broke-v0", 3)))
    args = ["tuner=optuna", "tuner.study_name=budget", "env.module=tests.tuner.lucky_envs", "env.id=Broke-v0",
            "search=none", "+search.values.env.id='choice(Steady-v0, Broke-v0)'",
            "+search.values.eval.episodes='choice(1, 2, 3)'", "tuner.sampler=random",
            "tuner.n_trials=10", "tuner.max_runs=14", "tuner.pruner=wilcoxon", "tuner.n_warmup_steps=0",
            "tuner.n_seeds=5", f"+tuner.enqueue=[{enqueue}]",
            "tuner.reevaluate.top_k=0", "tuner.seeds.test=0", *TINY, "budget.steps=40"]
    run_app(args, cwd=str(tmp_path))
    study = optuna.load_study(study_name="budget", storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(tmp_path / "studies" / "journal.log"))))
    ran = [t for t in study.trials if t.state.name != "WAITING"]  # the enqueued ones left over stay queued
    assert [(t.state.name, len(t.user_attrs["seeds"])) for t in ran] == [
        ("COMPLETE", 5), ("PRUNED", 4), ("PRUNED", 4)]
    report = (tmp_path / "studies" / "budget" / "report" / "report.md").read_text()
    assert "3 trials (1 complete, 2 pruned) x 5 seed(s) = up to 15 training runs (13 trained of " \
           "tuner.max_runs=14)" in report
    again = run_app(args, cwd=str(tmp_path))  # the budget is spent: the re-run says so and runs nothing
    assert "note: study 'budget' already holds 13 training runs (tuner.max_runs=14): no trial to run; raise " \
           "tuner.max_runs" in again.stdout
    assert len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED))) == 3


def test_a_pruned_start_that_wins_has_a_test_score_and_no_gap() -> None:
    """The held-out winner can be the starting config after a pruner stopped it (a pruned trial that
    reported nothing has no tuning value): the test stage scores it and leaves the gap empty."""
    import optuna
    from optuna.distributions import FloatDistribution
    from optuna.trial import TrialState, create_trial

    from tuner.study.protocol import _summary, format_test
    from tuner.study.reevaluate import ReevalSettings, _Entry

    study = optuna.create_study(direction="maximize")
    study.add_trial(create_trial(state=TrialState.PRUNED, params={"x": 0.5}, user_attrs={"enqueued": "defaults"},
                                 distributions={"x": FloatDistribution(0.0, 1.0)}))
    entry = _Entry(study.trials[0], {}, {20000: 93.0, 20001: 95.0})
    summary = _summary(study, [entry], [20000, 20001], ReevalSettings(), "heldout", None, 1.0)
    assert summary["answer"]["mean"] == 94.0 and summary["answer"]["gap"] is None
    assert summary["verdict"] == "the answer is the starting config"
    assert "tuning score -; gap (tuning - test) -" in format_test(summary)
