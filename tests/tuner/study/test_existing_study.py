"""A command that conflicts with an existing study (direction, agent, search space) is one line and
changes nothing in it; study names cannot lead outside the studies folder."""

from __future__ import annotations

import pytest

from tests.tuner.study.test_study_settings import _driver
from tuner.common.errors import ConfigError
from tuner.study.settings import tuner_settings

SPACE = '+search.values.optimizer.lr="tag(log, interval(1e-4, 1e-2))"'


def test_conflicts_with_an_existing_study_are_refused_before_any_change(tmp_path) -> None:
    driver = _driver(tmp_path, ["tuner.n_trials=1", "tuner.pruner=none", "tuner.enqueue_defaults=false", SPACE])
    driver.run()
    journal = tmp_path / "journal.log"  # shared with the studies beside tmp_path/"study"
    before = journal.read_bytes()
    cases = [(['+search.values.optimizer.lr="choice(0.001, 0.01)"'],
              "search.optimizer.lr: study 's' searched it as tag(log, interval(0.0001, 0.01)); this command gives "
              "choice(0.001, 0.01)"),
             ([SPACE, "tuner.direction=minimize"], "tuner.direction: study 's' was created to maximize; it cannot minimize"),
             ([SPACE, "agent=ppo"], "agent: study 's' tunes agent 'dqn', not 'ppo'")]
    for overrides, message in cases:
        with pytest.raises(ConfigError) as info:
            _driver(tmp_path, ["tuner.n_trials=2", *overrides])
        assert str(info.value).startswith(message) and "\n" not in str(info.value)
        assert journal.read_bytes() == before  # not a byte of the study changed
    # the same space again resumes
    again = _driver(tmp_path, ["tuner.n_trials=1", SPACE])
    assert len(again.study.trials) == 1


@pytest.mark.parametrize("name", ["../../x", "a/b", ".hidden", "a\\b"])
def test_study_names_stay_inside_the_studies_folder(name) -> None:
    with pytest.raises(ConfigError, match=r"^tuner.study_name: .* must be a plain name"):
        tuner_settings({"study_name": name})
