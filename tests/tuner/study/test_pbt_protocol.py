"""PBT's test stage (``tuner=pbt`` with ``tuner.seeds.test``; tuner/study/pbt_test.py): the winner's schedule
replayed from scratch on test seeds no member trained on, scored by the test stage's evaluation, recorded as
the Optuna protocol records its stage, shown in the report, and not run again by a re-run."""

import json
import os

import optuna
import pytest
import yaml
from optuna.trial import TrialState

from tests.tuner.conftest import TINY, compose_cfg, journal_of, run_app
from tuner.study.pbt import pbt_settings
from tuner.study.reevaluate import HELDOUT_EVAL_SEED

EPISODES = 3


def _args(name, test="2"):
    return ["tuner=pbt", f"tuner.study_name={name}", "search=none",
            "+search.values.optimizer.lr='tag(log, interval(1e-4, 1e-2))'",
            "tuner.population=2", "tuner.generations=2", "tuner.interval=300", "tuner.quantile=0.5",
            "eval.episodes=3", f"tuner.seeds.test={test}", f"tuner.reevaluate.episodes={EPISODES}", *TINY]


def _load(study_dir, name):
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    return optuna.load_study(study_name=name, storage=JournalStorage(JournalFileBackend(journal_of(study_dir))))


def _test_study(study_dir, trial):
    """The test stage's replay study of the answer or config ``trial`` (its own journal in test/<trial>-<digest>/)."""
    (folder,) = [f for f in (study_dir / "test").iterdir() if f.is_dir() and f.name.startswith(f"{trial:04d}-")]
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    storage = JournalStorage(JournalFileBackend(str(folder / "journal.log")))
    (summary,) = optuna.get_all_study_summaries(storage)
    return optuna.load_study(study_name=summary.study_name, storage=storage)


def _read(trial, name):
    with open(os.path.join(trial.user_attrs["run_dir"], name)) as f:
        return json.load(f) if name.endswith(".json") else yaml.safe_load(f)


def _config_seed(trial):
    return _read(trial, "config.yaml")["seed"]


def test_no_test_stage_unless_asked() -> None:
    """tuner=pbt's default is no test stage (tuner=optuna's is 3 seeds); a count or a list is taken."""
    assert pbt_settings(compose_cfg(["tuner=pbt"]).tuner).seeds.test == 0
    assert pbt_settings({"name": "pbt"}).seeds.test == 0
    assert list(pbt_settings(compose_cfg(["tuner=pbt", "tuner.seeds.test=[7,9]"]).tuner).seeds.test) == [7, 9]


def test_the_winners_schedule_is_scored_on_test_seeds(tmp_path) -> None:
    out = run_app(_args("proto"), cwd=str(tmp_path))
    study_dir = tmp_path / "studies" / "proto"
    study = _load(study_dir, "proto")
    segments = study.get_trials(states=(TrialState.COMPLETE,))
    assert len(segments) == 4
    trained = {int(s) for t in segments for s in t.user_attrs["tuning_seeds"]} | {_config_seed(t) for t in segments}
    assert trained == {0, 1}
    schedule = yaml.safe_load((study_dir / "pbt_schedule.yaml").read_text())
    final = schedule["schedule"][-1]["trial"]
    test = study.user_attrs["test"]
    seeds = test["seeds"]
    assert seeds == [20000, 20001] and not set(seeds) & trained  # disjoint from every seed a member trained on
    assert test["answer_trial"] == final and study.user_attrs["pbt_answer"] == final

    # one replay per test seed, each segment once, trained on that seed through the winner's schedule
    replay = _test_study(study_dir, final)
    runs = replay.get_trials(states=(TrialState.COMPLETE,))
    by_seed = {}
    for t in runs:
        seed = _config_seed(t)
        assert t.user_attrs["tuning_seeds"] == [seed]
        key = (seed, t.user_attrs["pbt_generation"])
        assert key not in by_seed, f"segment {key} ran twice"
        by_seed[key] = t
    assert set(by_seed) == {(s, g) for s in seeds for g in (0, 1)}
    for (seed, g), t in by_seed.items():
        assert t.params == pytest.approx(schedule["schedule"][g]["params"])
        assert t.user_attrs["init_from"] == (by_seed[(seed, 0)].user_attrs["checkpoint"] if g else None)

    # the recorded scores are the replays' last evaluations: the test stage's episodes on held-out reset seeds
    recorded = study.user_attrs[f"test:{final:04d}"]
    assert recorded["episodes"] == EPISODES and recorded["model"] == "final"
    for seed in seeds:
        result = _read(by_seed[(seed, 1)], "result.json")
        assert result["seed"] == seed and result["config"]["eval"]["seed"] == HELDOUT_EVAL_SEED + 1000 * seed
        assert result["config"]["eval"]["episodes"] == EPISODES and len(result["evaluations"]) == 1
        assert recorded["scores"][str(seed)] == pytest.approx(result["final_eval_mean_return"])
    mean = sum(recorded["scores"].values()) / len(seeds)
    assert test["answer_mean"] == pytest.approx(mean) == recorded["mean"]
    # the starting config (member 0's generation-0 values, the config's own) held constant through both
    # generations, replayed on the same seeds by the same machinery: the protocol's comparison
    start = next(t for t in segments if (t.user_attrs["pbt_member"], t.user_attrs["pbt_generation"]) == (0, 0))
    assert [e["params"] for e in schedule["schedule"]] != [start.params] * 2  # this run's winner copied member 1
    start_runs = _test_study(study_dir, start.number).get_trials(states=(TrialState.COMPLETE,))
    assert sorted((_config_seed(t), t.user_attrs["pbt_generation"]) for t in start_runs) == \
        [(s, g) for s in seeds for g in (0, 1)]
    assert all(t.params == start.params for t in start_runs)
    start_scores = study.user_attrs[f"test:{start.number:04d}"]["scores"]
    assert sorted(start_scores) == ["20000", "20001"]
    start_mean = sum(start_scores.values()) / len(seeds)
    assert test["start_trial"] == start.number and test["start_mean"] == pytest.approx(start_mean)
    diff = mean - start_mean
    assert test["verdict"] == ("the answer ties the starting config (trial 0) on the test seeds" if diff == 0 else
                               f"the answer beats the starting config (trial 0) by {diff:.4g} on the test seeds"
                               if diff > 0 else
                               f"WORSE: the answer scores {-diff:.4g} below the starting config (trial 0) on the test seeds")
    assert "the starting config (member 0's first hyperparameters, held constant) replayed" in out.stdout
    pbt = json.loads((study_dir / "pbt.json").read_text())
    assert pbt["test"]["answer"]["scores"] == recorded["scores"] and pbt["test"]["start"]["scores"] == start_scores
    assert pbt["test"]["answer"]["gap"] == pytest.approx(study.trials[final].value - mean)
    assert "test stage: seeds [20000, 20001]" in out.stdout and "PBT winner's schedule" in out.stdout

    # the report's AutoRL checklist: the test seeds, the answer's tuning score, test mean and gap
    report = (study_dir / "report" / "report.md").read_text()
    assert "test (scoring only) 20000, 20001" in report
    gap = study.trials[final].value - mean
    assert f"answer: trial {final} (PBT winner's schedule): tuning score" in report
    assert f"gap (tuning - test) {gap:.4g}" in report and "--config-name replay_config" in report
    assert f"starting config (trial 0): test mean {start_mean:.4g}; {test['verdict']}" in report

    # a re-run trains no replay again: the stored scores are reused; and with them forgotten (a driver killed
    # before it stored them), the replay study's complete segments are
    n = len(replay.trials)
    assert "replayed from scratch" not in run_app(_args("proto"), cwd=str(tmp_path)).stdout
    study.set_user_attr(f"test:{final:04d}", None)
    again = run_app(_args("proto"), cwd=str(tmp_path))
    assert "test stage: seeds [20000, 20001]" in again.stdout
    assert len(_test_study(study_dir, final).trials) == n
    assert _load(study_dir, "proto").user_attrs[f"test:{final:04d}"]["scores"] == recorded["scores"]


def test_no_start_replay_when_the_winner_is_the_starting_config_or_there_is_none(tmp_path) -> None:
    """A space of one value: every member's schedule is the config's own, so the answer is the starting
    config and nothing is replayed twice; ``tuner.enqueue_defaults=false``: no member began with the
    config's values, so there is no starting config to compare with."""
    same = [a if not a.startswith("+search.values.optimizer.lr") else "+search.values.optimizer.lr='choice(0.0023, 0.0023)'"
            for a in _args("same")]
    out = run_app([*same, "optimizer.lr=0.0023"], cwd=str(tmp_path))
    study_dir = tmp_path / "studies" / "same"
    test = _load(study_dir, "same").user_attrs["test"]
    assert test["start_is_answer"] and test["start_trial"] is None
    assert test["verdict"] == "the answer is the starting config"
    assert [f.name[:4] for f in (study_dir / "test").iterdir() if f.is_dir()] == [f"{test['answer_trial']:04d}"]
    assert "the starting config (member 0" not in out.stdout

    run_app([*_args("nostart"), "tuner.enqueue_defaults=false"], cwd=str(tmp_path))
    test = _load(tmp_path / "studies" / "nostart", "nostart").user_attrs["test"]
    assert not test["start_is_answer"] and test["start_trial"] is None
    assert test["verdict"] == "no starting config to compare with"
    assert len([f for f in (tmp_path / "studies" / "nostart" / "test").iterdir() if f.is_dir()]) == 1


def test_a_test_seed_a_member_trains_on_is_refused(tmp_path) -> None:
    """Member 1 trains seed 0 + 1: listing it as a test seed ends the command in one line, exit 2,
    before anything trains."""
    out = run_app(_args("clash", test="[20000,1]"), cwd=str(tmp_path), check=False)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert lines == ["error: tuner.seeds.test: seed 1 was used to tune or choose the answer; test seeds must differ"]
    assert not (tmp_path / "studies" / "clash" / "members").exists()


def test_model_best_scores_the_best_evaluation_of_the_whole_replay(tmp_path) -> None:
    """``tuner.reevaluate.model=best``: each replay's last segment starts from the best evaluation of its
    earlier segments, so the weights scored on the held-out episodes are those of the replay's best
    evaluation over the whole schedule, picked on the config's own evaluation episodes."""
    run_app([*_args("best"), "tuner.reevaluate.model=best"], cwd=str(tmp_path))
    study_dir = tmp_path / "studies" / "best"
    study = _load(study_dir, "best")
    final = study.user_attrs["pbt_answer"]
    recorded = study.user_attrs[f"test:{final:04d}"]
    assert recorded["model"] == "best" and sorted(map(int, recorded["scores"])) == [20000, 20001]
    by_seed = {(_config_seed(t), t.user_attrs["pbt_generation"]): t
               for t in _test_study(study_dir, final).get_trials(states=(TrialState.COMPLETE,))}
    for seed in (20000, 20001):
        first, last = _read(by_seed[(seed, 0)], "result.json"), _read(by_seed[(seed, 1)], "result.json")
        carried = os.path.join(by_seed[(seed, 0)].user_attrs["run_dir"], "best_eval_model.npz")
        assert last["best_carried_from"] == carried and "best_so_far" not in last["config"]
        # the evaluations are the members' (on the config's eval seed), several per segment, none on held-out seeds
        assert last["config"]["eval"]["seed"] == first["config"]["eval"]["seed"] != HELDOUT_EVAL_SEED + 1000 * seed
        own = [e["mean"] for e in last["evaluations"]]
        assert len(own) > 1 and len(first["evaluations"]) > 1
        # best over both segments; of equal means the later evaluation's weights
        assert last["best_eval_mean_return"] == max(first["best_eval_mean_return"], *own)
        answer = last["answer_model"]
        if first["best_eval_mean_return"] > max(own):  # no evaluation of the last segment replaced it
            with open(answer, "rb") as a, open(carried, "rb") as b:
                assert a.read() == b.read()
        # the score: the test episodes of those weights, on the held-out reset seeds of the test seed
        assert last["config"]["eval"]["test_seed"] == HELDOUT_EVAL_SEED + 1000 * seed
        assert len(last["test_returns"]) == EPISODES
        assert recorded["scores"][str(seed)] == pytest.approx(last["test_mean_return"])


def test_best_before_takes_the_best_earlier_segment(tmp_path) -> None:
    """The carried best: the highest best evaluation of the earlier segments (a tie: the later one); a
    segment without weights or with a non-finite score is skipped; none at all: nothing is carried."""
    from tuner.study.pbt_test import TestReplayDriver

    driver = TestReplayDriver.__new__(TestReplayDriver)
    driver._run_dir = lambda member, g: str(tmp_path / f"gen_{g}")
    for g, score, weights in [(0, 5.0, True), (1, 7.0, True), (2, 7.0, True), (3, 9.0, False), (4, float("nan"), True)]:
        (tmp_path / f"gen_{g}").mkdir()
        (tmp_path / f"gen_{g}" / "result.json").write_text(json.dumps({"best_eval_mean_return": score}))
        if weights:
            (tmp_path / f"gen_{g}" / "best_eval_model.npz").write_bytes(b"w")
    assert driver._best_before(0, 5) == {"score": 7.0, "model": str(tmp_path / "gen_2" / "best_eval_model.npz")}
    assert driver._best_before(0, 1) == {"score": 5.0, "model": str(tmp_path / "gen_0" / "best_eval_model.npz")}
    assert driver._best_before(0, 0) is None
    # the files are data: a result.json that is not an object, or holds a string score, is skipped
    for g, text in [(5, "[1, 2]"), (6, '{"best_eval_mean_return": "99"}'), (7, "not json")]:
        (tmp_path / f"gen_{g}").mkdir()
        (tmp_path / f"gen_{g}" / "result.json").write_text(text)
        (tmp_path / f"gen_{g}" / "best_eval_model.npz").write_bytes(b"w")
    assert driver._best_before(0, 8) == {"score": 7.0, "model": str(tmp_path / "gen_2" / "best_eval_model.npz")}
