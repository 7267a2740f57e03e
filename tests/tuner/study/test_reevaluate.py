"""Held-out re-evaluation at the end of a study and as ``note-tune reevaluate``."""

from __future__ import annotations

import json
from dataclasses import replace

import optuna
import pytest
import yaml

from tests.tuner.conftest import TINY, journal_of, run_app
from tuner.study.reevaluate import (
    HELDOUT_SEED_BASE,
    ReevalSettings,
    check_reeval,
    heldout_seeds,
)
from tuner.common.errors import ConfigError

LUCKY = ["env.module=tests.tuner.lucky_envs", "search=none", "+search.values.env.id='choice(Lucky-v0, Steady-v0)'",
         "tuner.sampler=grid", "tuner.n_trials=2", "tuner.pruner=none", "eval.episodes=2", *TINY,
         "budget.steps=100"]


def test_heldout_seeds_avoid_tuning_seeds() -> None:
    assert heldout_seeds(3, set()) == [HELDOUT_SEED_BASE, HELDOUT_SEED_BASE + 1, HELDOUT_SEED_BASE + 2]
    assert heldout_seeds(2, {HELDOUT_SEED_BASE}) == [HELDOUT_SEED_BASE + 1, HELDOUT_SEED_BASE + 2]
    assert heldout_seeds([7, 8], {0, 1}) == [7, 8]
    with pytest.raises(ConfigError, match=r"^tuner.reevaluate.seeds: seed 1 was a tuning seed"):
        heldout_seeds([5, 1], {0, 1})


@pytest.mark.parametrize("field,value,message", [
    ("top_k", -1, "top_k: must be an integer >= 0"), ("episodes", 0, "episodes: must be an integer > 0"),
    ("timeout", float("nan"), "timeout: must be > 0"), ("seeds", 0, "seeds: must be a count > 0"),
    ("seeds", [1, 1], "seeds: must be distinct"), ("seeds", "x", "seeds: must be a count"),
    ("n_jobs", 0, "n_jobs: must be an integer > 0"), ("model", "last", "model: final or best"),
    ("tie_seeds", -1, "tie_seeds: must be an integer >= 0"), ("keep_start", -1, "keep_start: must be a number"),
    ("keep_start", float("nan"), "keep_start: must be a number"), ("keep_start", True, "keep_start: must be"),
    ("keep_start", "1", "keep_start: must be a number"), ("aggregation", "q75", "aggregation: must be null"),
    ("aggregation", 7, "aggregation: must be null"), ("aggregation", "max", "aggregation: must be null")])
def test_bad_settings_are_one_line(field, value, message) -> None:
    with pytest.raises(ConfigError, match=f"^tuner.reevaluate.{message}"):
        check_reeval(ReevalSettings(**{field: value}))


def test_heldout_winner_beats_a_config_lucky_on_its_tuning_seeds(tmp_path) -> None:
    out = run_app(["tuner=optuna", "tuner.study_name=luck", *LUCKY, "tuner.reevaluate.seeds=2",
                   "tuner.reevaluate.episodes=3"], cwd=str(tmp_path))
    study_dir = tmp_path / "studies" / "luck"
    study = optuna.load_study(study_name="luck", storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(journal_of(study_dir))))
    by_env = {t.params["env.id"]: t for t in study.trials}
    assert by_env["Lucky-v0"].value == 100.0 and by_env["Steady-v0"].value == 50.0  # tuning prefers luck
    summary = json.loads((study_dir / "study.json").read_text())
    assert summary["best_trial"] == by_env["Lucky-v0"].number
    re = summary["reevaluation"]
    assert re["seeds"] == [HELDOUT_SEED_BASE, HELDOUT_SEED_BASE + 1] and re["episodes"] == 3
    configs = {c["trial"]: c for c in re["configs"]}
    lucky, steady = configs[by_env["Lucky-v0"].number], configs[by_env["Steady-v0"].number]
    assert lucky["scores"] == {"10000": 0.0, "10001": 0.0} and lucky["gap"] == 100.0
    assert steady["mean"] == 50.0 and steady["std"] == 0.0 and steady["gap"] == 0.0
    assert re["winner"] == by_env["Steady-v0"].number and summary["best_config_source"] == "heldout"
    best = yaml.safe_load((study_dir / "best_config.yaml").read_text())
    assert best["env"]["id"] == "Steady-v0" and {"tuner": "none"} in best["defaults"]  # a plain run's groups
    # the stage's results are in the study (the dashboard shows study user attrs and the note)
    attrs = study.user_attrs
    assert attrs["heldout_winner"] == steady["trial"]
    assert attrs[f"heldout:{lucky['trial']:04d}"]["scores"] == {"10000": 0.0, "10001": 0.0}
    note = study._storage.get_study_system_attrs(study._study_id)  # where optuna-dashboard keeps notes
    assert any("Held-out re-evaluation" in str(v) for k, v in note.items() if k.startswith("dashboard:"))
    assert "held-out winner: trial" in out.stdout and "held-out winner" in out.stdout.splitlines()[-1]
    # each run trained in its own dir on a held-out seed
    result = json.loads((study_dir / "heldout" / f"{steady['trial']:04d}" / "seed_10001" / "result.json").read_text())
    assert result["seed"] == 10001 and len(result["evaluations"]) == 1

    # `note-tune reevaluate`: stored scores are reused, only the new seed trains; a tuning seed is refused
    # (trust_code=true: the trials' configs name the test's own env module, lucky_envs)
    again = run_app(["reevaluate", "study_name=luck", f"study_dir={study_dir}", "seeds=[10001, 10005]",
                     "episodes=3", "aggregation=lcb", "trust_code=true"], cwd=str(tmp_path))
    assert "2 configs x 2 seeds (2 runs to train" in again.stdout
    summary = json.loads((study_dir / "study.json").read_text())
    assert summary["reevaluation"]["seeds"] == [10001, 10005] and summary["reevaluation"]["winner"] == steady["trial"]
    assert summary["reevaluation"]["aggregation"] == "lcb"  # the stage's own; the study scored trials by the mean
    # model=best: each run's best-evaluation weights (chosen on the config's own evaluation seeds,
    # where Lucky pays) scored on the held-out episodes (where it does not); scores of final
    # policies are not reused for it
    best = run_app(["reevaluate", "study_name=luck", f"study_dir={study_dir}", "seeds=[10001]", "episodes=3",
                    "model=best", "trust_code=true"], cwd=str(tmp_path))
    assert "2 configs x 1 seeds (2 runs to train" in best.stdout
    re = json.loads((study_dir / "study.json").read_text())["reevaluation"]
    assert re["model"] == "best" and re["winner"] == steady["trial"]
    for trial, score in ((lucky["trial"], 0.0), (steady["trial"], 50.0)):
        run = json.loads((study_dir / "heldout" / f"{trial:04d}" / "seed_10001" / "result.json").read_text())
        assert run["answer"] == "best" and run["answer_model"] == run["best_eval_model"]
        assert run["test_returns"] == [score] * 3 and run["config"]["eval"]["test_seed"] == 2_000_000 + 1000 * 10001
        assert {c["trial"]: c["scores"] for c in re["configs"]}[trial] == {"10001": score}
    lucky_run = json.loads((study_dir / "heldout" / f"{lucky['trial']:04d}" / "seed_10001" / "result.json").read_text())
    assert max(e["mean"] for e in lucky_run["evaluations"]) == 100.0  # what chose the weights
    before = (study_dir / "study.json").read_bytes()
    bad = run_app(["reevaluate", "study_name=luck", f"study_dir={study_dir}", "seeds=[0]", "trust_code=true"],
                  cwd=str(tmp_path),
                  check=False)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: seeds: seed 0 was a tuning seed; held-out seeds must differ"
    bad = run_app(["reevaluate", "study_name=luck", f"study_dir={study_dir}", "aggregation=max"], cwd=str(tmp_path),
                  check=False)
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error: aggregation: must be null")
    assert len(bad.stderr.strip().splitlines()) == 1
    assert (study_dir / "study.json").read_bytes() == before


def test_configs_tied_on_the_heldout_seeds_race_on_more_seeds(tmp_path) -> None:
    """Fragile and Steady both score 50 on the tuning and the two held-out seeds; the tie is raced
    on the next held-out seed (10002), where Fragile scores 0: Steady wins and the race stops."""
    grid = [a.replace("choice(Lucky-v0, Steady-v0)", "choice(Fragile-v0, Steady-v0)") for a in LUCKY]
    out = run_app(["tuner=optuna", "tuner.study_name=race", *grid, "tuner.reevaluate.seeds=2",
                   "tuner.reevaluate.episodes=2"], cwd=str(tmp_path))
    summary = json.loads((tmp_path / "studies" / "race" / "study.json").read_text())
    re = summary["reevaluation"]
    configs = {c["params"]["env.id"]: c for c in re["configs"]}
    fragile, steady = configs["Fragile-v0"], configs["Steady-v0"]
    assert fragile["mean"] == steady["mean"] == 50.0 and fragile["tuning_value"] == steady["tuning_value"] == 50.0
    assert re["seeds"] == [10000, 10001] and re["tie_seeds"] == [10002]
    assert fragile["scores"]["10002"] == 0.0 and fragile["race_mean"] == 100.0 / 3
    assert steady["scores"]["10002"] == 50.0 and steady["race_mean"] == 50.0
    assert re["winner"] == steady["trial"] and summary["best_config_trial"] == steady["trial"]
    assert "held-out tie: trials" in out.stdout and "race on seed 10002 (2 runs to train" in out.stdout
    assert "configs tied for the best raced on seeds [10002]" in out.stdout


def test_time_limit_bounds_the_stage_and_keeps_the_tuning_best(tmp_path) -> None:
    out = run_app(["tuner=optuna", "tuner.study_name=hurry", *LUCKY, "tuner.reevaluate.timeout=0.001"],
                  cwd=str(tmp_path))
    summary = json.loads((tmp_path / "studies" / "hurry" / "study.json").read_text())
    re = summary["reevaluation"]
    assert re["complete"] is False and re["winner"] is None
    assert all(set(c["errors"].values()) == {"not started: time limit"} for c in re["configs"])
    assert summary["best_config_source"] == "tuning" and summary["best_config_trial"] == summary["best_trial"]
    assert "(time limit: incomplete)" in out.stdout and "no config finished every held-out seed" in out.stdout


@pytest.mark.parametrize("how,winner", [("mean", "bold"), ("min", "steady"), ("q25", "steady"), ("median", "bold")])
def test_the_answer_is_chosen_by_the_studys_aggregation(how, winner) -> None:
    """Held-out scores by hand: bold 100, 100, 0 (mean 66.7, median 100, q25 50, min 0) against steady
    60, 60, 60: a study that scores its trials risk-aversely (tuner.aggregation min / q25) chooses its
    answer the same way; mean and median keep the bold config.  A study that recorded no aggregation
    (PBT's, an older one) ranks by the mean."""
    from optuna.distributions import FloatDistribution

    from tuner.study.reevaluate import _Entry, _summary, aggregation_of, format_reevaluation

    study = optuna.create_study(direction="maximize")
    dist = {"x": FloatDistribution(0.0, 1.0)}
    for x in (0.1, 0.2):
        study.add_trial(optuna.trial.create_trial(value=90.0, params={"x": x}, distributions=dist))
    assert aggregation_of(study) == "mean"
    for hostile in ("qxyz", "q90", 7, ["min"]):  # the storage is data: what the setting refuses reads as the mean
        study.set_user_attr("optimiser", {"aggregation": hostile})
        assert aggregation_of(study) == "mean"
    study.set_user_attr("optimiser", ["min"])  # nor a record that is not a mapping at all
    assert aggregation_of(study) == "mean"
    study.set_user_attr("optimiser", {"aggregation": how})
    bold, steady = study.trials
    seeds = [10000, 10001, 10002]
    entries = [_Entry(bold, {}, dict(zip(seeds, (100.0, 100.0, 0.0)))), _Entry(steady, {}, dict.fromkeys(seeds, 60.0))]
    summary = _summary(study, entries, seeds, ReevalSettings(), wall=1.0)
    assert summary["aggregation"] == how
    assert summary["winner"] == {"bold": bold.number, "steady": steady.number}[winner]
    by_trial = {c["trial"]: c for c in summary["configs"]}
    assert by_trial[bold.number]["mean"] == pytest.approx(200.0 / 3)
    assert by_trial[bold.number]["score"] == pytest.approx({"mean": 200.0 / 3, "min": 0.0, "q25": 50.0,
                                                            "median": 100.0}[how])
    table = format_reevaluation(summary)
    assert ("the answer is the best held-out" in table) == (how != "mean")
    assert table.splitlines()[1].count("held-out") == (1 if how == "mean" else 2)  # a column of its own


def test_lcb_is_the_mean_less_one_standard_error() -> None:
    """By hand: 1, 2, 3 have mean 2, sample std 1, standard error 1 / sqrt(3) = 0.57735; one score is
    itself (no spread to measure); equal scores have none."""
    from tuner.run.trial_worker import aggregate
    from tuner.study.study_schema import aggregation_ok

    assert aggregate([1.0, 2.0, 3.0], "lcb") == pytest.approx(2.0 - 0.577350, abs=1e-6)
    assert aggregate([93.7, -121.6], "lcb") == pytest.approx(-121.6)  # two seeds: the mean - |a - b| / 2, the min
    assert aggregate([5.0], "lcb") == 5.0 and aggregate([4.0, 4.0, 4.0], "lcb") == 4.0
    assert aggregation_ok("lcb") and not aggregation_ok("ucb")


# LunarLander PPO, Wilcoxon on seeds in turns, repeat 1 (BENCHMARKS.md, O): the two finalists and the preset
# (trial 0) on held-out seeds 10000 and 10001, as its journal holds them
LUNAR_HELDOUT = {7: (93.70242870840926, -121.60254551288385), 9: (-7.473765166654909, -26.450037588324896),
                 0: (-158.09386691727974, -170.23951813244932)}


@pytest.mark.parametrize("how,winner", [(None, 7), ("mean", 7), ("lcb", 9), ("min", 9)])
def test_the_stage_can_choose_by_an_aggregation_of_its_own(how, winner) -> None:
    """The study scores trials by the mean; ``tuner.reevaluate.aggregation`` overrides that for the
    answer only.  By hand: trial 7's mean -13.95 leads trial 9's -16.96 by 3 points, but its lower
    bound (the mean less |a - b| / 2 = 107.65 on two seeds) is -121.60 against trial 9's -26.45: lcb
    and min choose trial 9, which scored 22.4 on the three test seeds where trial 7 scored -1,206.5.
    Either way the winner leads the preset by far more than one standard error of their differences."""
    from tuner.study.reevaluate import format_reevaluation, selection_of

    s = ReevalSettings(aggregation=how)
    study = optuna.create_study(direction="maximize")
    study.set_user_attr("optimiser", {"aggregation": "mean"})
    assert selection_of(study, s) == (how or "mean")
    summary = _acrobot_summary(1.0, LUNAR_HELDOUT, settings=s)
    assert summary["winner"] == winner and summary["kept_start"] is None
    assert summary["aggregation"] == (how or "mean")
    by_trial = {c["trial"]: c for c in summary["configs"]}
    assert by_trial[7]["mean"] == pytest.approx(-13.95006, abs=1e-4)
    assert by_trial[9]["mean"] == pytest.approx(-16.96190, abs=1e-4)
    if how == "lcb":
        assert by_trial[7]["score"] == pytest.approx(-121.60255, abs=1e-4)
        assert by_trial[9]["score"] == pytest.approx(-26.45004, abs=1e-4)
        assert "the answer is the best held-out lcb over seeds" in format_reevaluation(summary)


def test_a_pruned_starting_config_still_takes_part() -> None:
    """The preset enqueued as trial 0 can be pruned (the median pruner pruned rl-zoo3's
    MountainCarContinuous preset on its second seed at 92.8 in bench_autorl): it is still the study's
    starting point for the held-out and test stages; a failed one is not (it has nothing to retrain from
    but a crash), nor a trial that was not enqueued as the defaults."""
    from optuna.distributions import FloatDistribution
    from optuna.trial import TrialState, create_trial

    from tuner.study.reevaluate import _Entry, _summary, start_trial

    dist = {"x": FloatDistribution(0.0, 1.0)}

    def study_with(state, enqueued="defaults", value=92.8):
        study = optuna.create_study(direction="maximize")
        study.add_trial(create_trial(state=state, value=value if state == TrialState.COMPLETE else None,
                                     params={"x": 0.5}, distributions=dist, intermediate_values={0: value},
                                     user_attrs={"enqueued": enqueued} if enqueued else {}))
        study.add_trial(create_trial(value=93.7, params={"x": 0.1}, distributions=dist))
        return study

    assert start_trial(study_with(TrialState.COMPLETE)).number == 0
    pruned = study_with(TrialState.PRUNED)
    assert start_trial(pruned).number == 0 and start_trial(pruned).state == TrialState.PRUNED
    assert start_trial(study_with(TrialState.FAIL)) is None
    assert start_trial(study_with(TrialState.COMPLETE, enqueued=None)) is None
    # a start without a tuning value (a pruned trial that reported nothing) has no gap, not a crash
    bare = optuna.create_study(direction="maximize")
    bare.add_trial(create_trial(state=TrialState.PRUNED, params={"x": 0.5}, distributions=dist,
                                user_attrs={"enqueued": "defaults"}))
    start = start_trial(bare)
    summary = _summary(bare, [_Entry(start, {}, {10000: 90.0, 10001: 94.0})], [10000, 10001], ReevalSettings(), 1.0)
    assert summary["configs"][0]["gap"] is None and summary["configs"][0]["mean"] == 92.0
    assert summary["winner"] == 0


ACROBOT_HELDOUT = {  # a 20-minute Acrobot PPO study's held-out stage (BENCHMARKS.md): seeds 10000-10002
    58: (-78.75, -78.85, -89.45), 73: (-80.4, -81.0, -88.2), 0: (-111.8, -83.95, -84.1)}


def _acrobot_summary(keep: float, scores: dict[int, tuple[float, ...]] = ACROBOT_HELDOUT,
                     direction: str = "maximize", settings: ReevalSettings | None = None) -> dict:
    from optuna.distributions import FloatDistribution
    from optuna.trial import create_trial

    from tuner.study.reevaluate import _Entry, _summary

    study = optuna.create_study(direction=direction)
    dist = {"x": FloatDistribution(0.0, 100.0)}
    for number in range(max(scores) + 1):
        study.add_trial(create_trial(value=-80.0, params={"x": float(number)}, distributions=dist,
                                     user_attrs={"enqueued": "defaults"} if number == 0 else {}))
    seeds = [10000, 10001, 10002][:len(next(iter(scores.values())))]
    entries = [_Entry(study.trials[n], {}, dict(zip(seeds, v))) for n, v in scores.items()]
    settings = ReevalSettings(keep_start=keep) if settings is None else replace(settings, keep_start=keep)
    return _summary(study, entries, seeds, settings, wall=1.0)


def test_the_start_stays_the_answer_unless_a_config_leads_by_more_than_one_standard_error() -> None:
    """By hand, trial 58 against the start (trial 0) on the same three seeds: differences 33.05, 5.1,
    -5.35; mean (the lead) 10.9333; sample std sqrt((22.1167^2 + 5.8333^2 + 16.2833^2) / 2) = 19.8537,
    standard error 19.8537 / sqrt(3) = 11.4625 > 10.9333: the start stays the answer.  On 10 test seeds
    trial 58 scored -109.7 against the start's -82.9."""
    from tuner.study.reevaluate import format_reevaluation

    summary = _acrobot_summary(1.0)
    kept = summary["kept_start"]
    assert summary["winner"] == 0 and kept["candidate"] == 58 and kept["start"] == 0
    assert kept["lead"] == pytest.approx(10.93333, abs=1e-4) and kept["se"] == pytest.approx(11.46241, abs=1e-4)
    assert "trial 58's lead of 10.93 is within 1 standard error" in format_reevaluation(summary).splitlines()[-1]
    # a smaller margin, or none, lets the lead through: the best held-out mean wins as before
    for keep in (0.9, 0.0):
        summary = _acrobot_summary(keep)
        assert summary["winner"] == 58 and summary["kept_start"] is None
        assert "the starting config" not in format_reevaluation(summary)


def test_a_consistent_lead_replaces_the_start_and_direction_is_respected() -> None:
    # differences 10, 11, 12: lead 11, standard error 1 / sqrt(3) = 0.577: the candidate wins
    assert _acrobot_summary(1.0, {1: (90.0, 91.0, 92.0), 0: (80.0, 80.0, 80.0)})["winner"] == 1
    # minimising (a cost): the same numbers make the start the better one: no rule to apply
    low = _acrobot_summary(1.0, {1: (90.0, 91.0, 92.0), 0: (80.0, 80.0, 80.0)}, direction="minimize")
    assert low["winner"] == 0 and low["kept_start"] is None
    # minimising, a noisy lower cost: differences -20, +5, +1 (lead 4.67, se 7.75): the start stays
    noisy = _acrobot_summary(1.0, {1: (60.0, 85.0, 81.0), 0: (80.0, 80.0, 80.0)}, direction="minimize")
    assert noisy["winner"] == 0 and noisy["kept_start"]["lead"] == pytest.approx(14.0 / 3)


def test_the_rule_leaves_ties_and_single_seeds_alone() -> None:
    # equal scores tie (the tie race decides, as between any tied configs); one seed has no spread
    tie = _acrobot_summary(1.0, {1: (50.0, 50.0, 50.0), 0: (50.0, 50.0, 50.0)})
    assert tie["kept_start"] is None and tie["winner"] == 0  # equal after any race: the lower trial number
    one = _acrobot_summary(1.0, {1: (91.0,), 0: (80.0,)})
    assert one["winner"] == 1 and one["kept_start"] is None
