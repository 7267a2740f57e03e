"""Typed reads of stored study attributes (tuner/study/attrs.py): a value of the wrong shape reads as
absent, so a hand-edited journal loses that value, not the report or the protocol's stages."""

from __future__ import annotations

import math

import optuna
import pytest

from tuner.study.attrs import integer, mapping, number, seed_list, stage_scores, text, trial_index


@pytest.mark.parametrize("value, expected", [
    ([0, 1, 2], [0, 1, 2]), ([20000], [20000]),
    ([], None), (7, None), ("0,1", None), (["0"], None), ([0, "a"], None), ([True], None), ([1.0], None),
    (None, None), ({"0": 1}, None),
])
def test_seed_list_accepts_only_a_non_empty_list_of_ints(value, expected) -> None:
    assert seed_list(value) == expected


def test_scalar_reads() -> None:
    assert integer(3) == 3 and integer(True) is None and integer(3.0) is None and integer("3") is None
    assert number(3) == 3.0 and number(-1.5) == -1.5 and number(False) is None and number("1") is None
    assert math.isnan(number(float("nan")))  # a stage whose every run failed stores NaN: kept
    assert mapping({"a": 1}) == {"a": 1} and mapping([("a", 1)]) == {} and mapping(None) == {}
    assert text("x") == "x" and text(5) == "" and text(None, "?") == "?"
    # an index into 3 trials: -1 would pick the last trial by Python's indexing, so it is refused
    assert [trial_index(v, 3) for v in (0, 2, 3, -1, "1", True)] == [0, 2, None, None, None, None]


def test_stage_scores_reuses_only_seeds_scored_the_same_way() -> None:
    """A held-out / test stage's stored scores for one config, as a re-run reads them: only with the
    same episodes and model (a record without ``model`` predates it: ``final``), and only the entries
    that are a seed and a number (NaN is a score: the run failed)."""
    record = {"episodes": 5, "model": "best", "scores": {"3": 10.5, "-2": 1, "4": "x", "x": 2.0, "5": True}}
    assert stage_scores(record, 5, "best") == {3: 10.5, -2: 1.0}
    assert stage_scores(record, 10, "best") == {} and stage_scores(record, 5, "final") == {}
    assert stage_scores({"episodes": 5, "scores": {"1": 2.0}}, 5, "final") == {1: 2.0}
    assert math.isnan(stage_scores({"episodes": 5, "scores": {"1": float("nan")}}, 5, "final")[1])
    for odd in ([2], "x", None, {"episodes": 5, "scores": [1.0]}, {"episodes": 5, "scores": "12"}):
        assert stage_scores(odd, 5, "final") == {}


def test_the_protocol_s_seed_reads_skip_a_record_of_the_wrong_shape() -> None:
    """``tuning_seeds`` (what test seeds must avoid), the run budget and the stage's time estimate:
    trial 0's record is read; trial 1's (an int), 2's (strings) and 3's (an int) are not, so they
    count one run each and their seeds come from their configs (none here: no run dir)."""
    from tuner.study.reevaluate import estimate, tuning_seeds
    from tuner.study.runner import runs_spent

    study = optuna.create_study()
    for seeds, wall in (([4, 5], 10.0), (7, "x"), (["4"], [1]), (3, 6.0)):
        trial = study.ask()
        trial.set_user_attr("tuning_seeds", seeds)
        trial.set_user_attr("wall_time_s", wall)
        study.tell(trial, 0.0)
    assert tuning_seeds(study) == {4, 5}
    assert runs_spent(study.trials) == 2 + 1 + 1 + 1
    # per seed: 10 / 2 = 5, 6 / 1 = 6, and the two bad walls fall back to the trials' (tiny) durations;
    # the median of the four is under 6 s, so four runs at 2 jobs (two rounds) take under 12 s
    line = estimate(study, 4, 2)
    assert line.startswith("; ") and line.endswith("at n_jobs=2")
    seconds = line.split("about ")[1].split(" s")[0] if "about" in line else "0"
    assert float(seconds) < 12
