"""PBT's held-out stage (``tuner=pbt`` with ``tuner.reevaluate.top_k``; tuner/study/pbt_heldout.py): the best
members' schedules and the starting config held constant, replayed on held-out seeds; the answer chosen there
(with the one-standard-error rule), followed by pbt_schedule.yaml and the test stage, and reused by a re-run."""

import json
import math
from types import SimpleNamespace

import numpy as np
import optuna
import pytest
import yaml
from optuna.trial import TrialState

from tests.tuner.conftest import run_app
from tests.tuner.study.test_pbt_protocol import _args, _config_seed, _load, _read
from tuner.study.pbt import HELDOUT_CHOICE, PARENT, PbtDriver
from tuner.study.pbt_heldout import _candidates
from tuner.study.reevaluate import _Entry, _summary, ReevalSettings


def _segment(number, value, lr, parent):
    return SimpleNamespace(number=number, value=value, params={"optimizer.lr": lr}, user_attrs={PARENT: parent})


def _population():
    """4 members x 2 generations, by hand.  Generation 0: members 0-3 at lr 1e-3 (member 0: the starting
    config), 2e-3, 3e-3, 4e-3.  Then member 2 copied member 1 and moved lr to 2.4e-3, member 3 copied member 1
    and kept its lr (so member 3's schedule is member 1's); members 0 and 1 went on."""
    done = {(0, 0): _segment(0, -100, 1e-3, 0), (1, 0): _segment(1, -50, 2e-3, 1),
            (2, 0): _segment(2, -300, 3e-3, 2), (3, 0): _segment(3, -400, 4e-3, 3),
            (0, 1): _segment(4, -90, 1e-3, 0), (1, 1): _segment(5, -60, 2e-3, 1),
            (2, 1): _segment(6, -40, 2.4e-3, 1), (3, 1): _segment(7, -55, 2e-3, 1)}
    return done


def _driver(top_k, enqueue_defaults=True):
    pbt = SimpleNamespace(population=4, direction="maximize", enqueue_defaults=enqueue_defaults,
                          reevaluate=SimpleNamespace(top_k=top_k))
    return SimpleNamespace(pbt=pbt)


@pytest.mark.parametrize("top_k, expected, start", [
    # ranked by generation 1: member 2 (-40), 3 (-55), 1 (-60: member 3's schedule, skipped), 0 (-90)
    (2, [("member 2", [2e-3, 2.4e-3]), ("member 3", [2e-3, 2e-3]), ("the starting config", [1e-3, 1e-3])], 0),
    # member 0 never copied: its schedule is the starting config held constant, so no extra replay
    (4, [("member 2", [2e-3, 2.4e-3]), ("member 3", [2e-3, 2e-3]), ("member 0", [1e-3, 1e-3])], 4),
])
def test_candidates_by_hand(top_k, expected, start) -> None:
    candidates, start_trial = _candidates(_driver(top_k), _population(), 1)
    got = [(what, [p["optimizer.lr"] for p in plan]) for _, plan, what in candidates]
    assert [(w.split("'s")[0].split(" (")[0], lrs) for w, lrs in got] == expected
    assert start_trial == start
    assert [e.trial.number for e, _, _ in candidates][-1] == start


def test_no_starting_config_without_enqueued_defaults() -> None:
    candidates, start = _candidates(_driver(2, enqueue_defaults=False), _population(), 1)
    assert start is None and len(candidates) == 2


def _entry(number, scores):
    return _Entry(SimpleNamespace(number=number, value=0.0, params={}, user_attrs={}), {},
                  scores=dict(enumerate(scores, 10000)))


def test_the_one_standard_error_rule_keeps_the_pbt_start() -> None:
    """The start is the trial the PBT stage names (PBT segments carry no enqueued-defaults mark)."""
    study = optuna.create_study(direction="maximize")
    s = ReevalSettings(top_k=2, seeds=2, keep_start=1.0)
    # a steady lead: differences 10 and 5, lead 7.5 > one standard error std([10, 5]) / sqrt(2) = 2.5
    summary = _summary(study, [_entry(6, [-90, -95]), _entry(0, [-100, -100])], [10000, 10001], s, 1.0, start=0)
    assert summary["winner"] == 6 and summary["kept_start"] is None
    assert [c["start"] for c in summary["configs"]] == [False, True]
    # a lead of 2.5 resting on one seed: differences 40 and -35, standard error 37.5: the start stays
    summary = _summary(study, [_entry(6, [-60, -135]), _entry(0, [-100, -100])], [10000, 10001], s, 1.0, start=0)
    se = float(np.std([40, -35], ddof=1)) / math.sqrt(2)
    assert summary["winner"] == 0 and summary["kept_start"]["lead"] == pytest.approx(2.5)
    assert summary["kept_start"]["se"] == pytest.approx(se) == pytest.approx(37.5)


def test_a_tie_keeps_the_start() -> None:
    """Equal held-out means (a saturated return) keep the starting config whatever the trial numbers say."""
    study = optuna.create_study(direction="maximize")
    s = ReevalSettings(top_k=2, seeds=2, keep_start=1.0)
    tied = _summary(study, [_entry(3, [500, 500]), _entry(9, [500, 500])], [10000, 10001], s, 1.0, start=9)
    assert tied["winner"] == 9
    ahead = _summary(study, [_entry(3, [500, 480]), _entry(9, [400, 380])], [10000, 10001], s, 1.0, start=9)
    assert ahead["winner"] == 3


def test_a_stored_choice_is_data() -> None:
    """The answer follows the stored choice only for the last complete generation, and only when it names a
    segment of it (or the starting config's first segment)."""
    done = _population()
    driver = SimpleNamespace(pbt=SimpleNamespace(population=4, enqueue_defaults=True),
                             study=SimpleNamespace(user_attrs={}))
    choice = lambda attr: (driver.study.user_attrs.update({HELDOUT_CHOICE: attr}),  # noqa: E731
                           PbtDriver._heldout_choice(driver, done, 1))[1]
    assert choice({"generation": 1, "winner": 7}) == 3
    assert choice({"generation": 1, "winner": 0}) == "start"
    assert choice({"generation": 0, "winner": 7}) is None  # chosen before the population trained on
    assert choice({"generation": 1, "winner": 2}) is None  # not a segment of generation 1
    assert choice({"generation": 1, "winner": "7"}) is None and choice([1, 7]) is None
    driver.pbt.enqueue_defaults = False
    assert choice({"generation": 1, "winner": 0}) is None


def _heldout_study(study_dir, trial):
    """The held-out stage's replay study of candidate ``trial`` (heldout/<trial>-<digest>/journal.log)."""
    (folder,) = [f for f in (study_dir / "heldout").iterdir() if f.is_dir() and f.name.startswith(f"{trial:04d}-")]
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    storage = JournalStorage(JournalFileBackend(str(folder / "journal.log")))
    (summary,) = optuna.get_all_study_summaries(storage)
    return optuna.load_study(study_name=summary.study_name, storage=storage)


def test_the_answer_is_chosen_on_heldout_seeds(tmp_path) -> None:
    args = [*_args("held", test="2"), "tuner.population=4", "tuner.reevaluate.top_k=2", "tuner.reevaluate.seeds=2"]
    out = run_app(args, cwd=str(tmp_path))
    study_dir = tmp_path / "studies" / "held"
    study = _load(study_dir, "held")
    segments = {(t.user_attrs["pbt_member"], t.user_attrs["pbt_generation"]): t
                for t in study.get_trials(states=(TrialState.COMPLETE,))}
    last = [segments[(m, 1)] for m in range(4)]
    ranked = sorted(range(4), key=lambda m: (-last[m].value, m))
    summary = study.user_attrs
    seeds = summary["heldout_seeds"]
    assert seeds == [10000, 10001]  # none a member trained on (0-3)

    # every candidate's replay: each held-out seed, each generation once, through its schedule
    start = segments[(0, 0)]
    recorded = {int(k[len("heldout:"):]): v for k, v in summary.items() if k.startswith("heldout:")}
    assert len(recorded) in (2, 3)
    for trial, scores in recorded.items():
        runs = _heldout_study(study_dir, trial).get_trials(states=(TrialState.COMPLETE,))
        assert sorted((_config_seed(t), t.user_attrs["pbt_generation"]) for t in runs) == \
            [(s, g) for s in seeds for g in (0, 1)]
        for t in runs:
            if t.user_attrs["pbt_generation"] == 1:
                result = _read(t, "result.json")
                assert scores["scores"][str(result["seed"])] == pytest.approx(result["final_eval_mean_return"])
        if trial == start.number:
            assert all(t.params == start.params for t in runs)
    top = [last[m].number for m in ranked[:2]]
    assert set(top) <= set(recorded) and set(recorded) - set(top) <= {start.number}

    # the choice, by hand from the recorded scores: the best mean, unless its lead over the starting config
    # is within one standard error of their per-seed differences
    means = {t: sum(v["scores"].values()) / 2 for t, v in recorded.items()}
    best = max(sorted(means), key=lambda t: means[t])
    # the starting config is member 0's own replay when its schedule stayed constant and it made the top 2
    zero = segments[(0, 1)]
    constant = zero.user_attrs["pbt_parent"] == 0 and zero.params == start.params
    start_trial = zero.number if constant and zero.number in top else start.number
    assert start_trial in recorded
    expected = start_trial if means[start_trial] == means[best] else best  # a tie keeps the start
    if best != start_trial and means[best] > means[start_trial]:
        d = [recorded[best]["scores"][str(s)] - recorded[start_trial]["scores"][str(s)] for s in seeds]
        se = abs(d[0] - d[1]) / 2  # std of two values (ddof 1) / sqrt(2)
        if means[best] - means[start_trial] <= se:
            expected = start_trial
    assert summary["heldout_winner"] == expected
    assert summary[HELDOUT_CHOICE] == {"generation": 1, "winner": expected}

    # pbt_schedule.yaml, pbt.json and the test stage follow the held-out answer
    doc = yaml.safe_load((study_dir / "pbt_schedule.yaml").read_text())
    assert doc["chosen_by"] == "held-out seeds"
    if expected == start.number:
        assert [e["params"] for e in doc["schedule"]] == [start.params] * 2
    else:
        member = next(m for m in range(4) if last[m].number == expected)
        assert doc["winner"] == member and doc["schedule"][-1]["trial"] == expected
    assert summary["test"]["answer_trial"] == expected
    pbt = json.loads((study_dir / "pbt.json").read_text())
    assert pbt["chosen_by"] == "held-out seeds" and pbt["test"]["answer"]["heldout_mean"] == pytest.approx(means[expected])
    assert "held-out re-evaluation: seeds [10000, 10001]" in out.stdout and "answer (held-out seeds)" in out.stdout
    report = (study_dir / "report" / "report.md").read_text()
    assert "held-out (choosing among the top configs) 10000, 10001" in report
    assert f"answer: trial {expected} (PBT winner's schedule): tuning score" in report
    assert f"held-out mean {means[expected]:.4g}, test mean" in report

    # a re-run replays nothing again; with the stored scores forgotten (a driver killed before it stored
    # them), the replay studies' complete segments are reused and nothing trains twice
    again = run_app(args, cwd=str(tmp_path))
    assert "replayed from scratch" not in again.stdout and "held-out winner: trial" in again.stdout
    assert _load(study_dir, "held").user_attrs["heldout_winner"] == expected
    counts = {t: len(_heldout_study(study_dir, t).trials) for t in recorded}
    for t in recorded:
        study.set_user_attr(f"heldout:{t:04d}", None)
    study.set_user_attr(HELDOUT_CHOICE, None)
    run_app(args, cwd=str(tmp_path))
    assert {t: len(_heldout_study(study_dir, t).trials) for t in recorded} == counts
    after = _load(study_dir, "held").user_attrs
    assert after["heldout_winner"] == expected and after[HELDOUT_CHOICE] == {"generation": 1, "winner": expected}
    assert {t: after[f"heldout:{t:04d}"]["scores"] for t in recorded} == {t: v["scores"] for t, v in recorded.items()}


def test_off_by_default(tmp_path) -> None:
    run_app(_args("plain", test="0"), cwd=str(tmp_path))
    study_dir = tmp_path / "studies" / "plain"
    assert not (study_dir / "heldout").exists()
    assert yaml.safe_load((study_dir / "pbt_schedule.yaml").read_text())["chosen_by"] == "score"
    assert "heldout_winner" not in _load(study_dir, "plain").user_attrs
