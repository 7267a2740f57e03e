"""One declaration per shared study setting (tuner/study/study_schema.py): ``tuner=optuna``, ``tuner=pbt``,
the finders and the Hydra sweeper take the same field (default, check, doc), checked by the same rule
under the key the user typed, and the YAML files they compose hold the same defaults."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import MISSING, fields
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from hydra_plugins.note_optuna_sweeper.config import NoteOptunaSweeperConf
from tests.tuner.conftest import REPO, compose_cfg
from tuner.common.errors import ConfigError
from tuner.finders.config import FinderSettings, _settings as finder_settings
from tuner.study.pbt import PbtSettings, pbt_settings
from tuner.study.settings import TunerSettings, tuner_settings
from tuner.study.study_schema import StudyFiles, StudyPlace, StudySearch, TrialLimits, check_fields

#: the settings classes and the groups of shared settings each is made of
USERS = {TunerSettings: (StudyFiles, TrialLimits, StudySearch), PbtSettings: (StudyFiles, TrialLimits, StudySearch),
         FinderSettings: (StudyFiles, TrialLimits), NoteOptunaSweeperConf: (StudyPlace, TrialLimits, StudySearch)}
#: the shared keys a class gives another default (its doc and check kept): what null means there differs
REDEFAULTED = {(FinderSettings, "n_jobs"): None, (NoteOptunaSweeperConf, "study_name"): None}


def _default(f):
    return f.default_factory() if f.default is MISSING else f.default


def _fields(cls):
    return {f.name: f for f in fields(cls)}


@pytest.mark.parametrize("user", list(USERS), ids=lambda c: c.__name__)
def test_shared_keys_are_the_schemas_fields(user) -> None:
    mine = _fields(user)
    for group in USERS[user]:
        for name, shared in _fields(group).items():
            if (user, name) == (NoteOptunaSweeperConf, "sampler"):
                continue  # a name or the published plugin's node; the chosen name is checked as tuner.sampler
            f = mine[name]
            assert f.metadata.get("check") is shared.metadata["check"] and f.metadata.get("doc") is \
                shared.metadata["doc"], f"{user.__name__}.{name} is declared again"
            assert shared.metadata["doc"], f"{group.__name__}.{name} has no doc"
            assert _default(f) == REDEFAULTED.get((user, name), _default(shared)), (user.__name__, name)


def _sweeper(**values):
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(NoteOptunaSweeperConf), values))


@pytest.mark.parametrize("key, value, words", [
    ("n_jobs", 0, "must be > 0, got 0"), ("trial_timeout", -1.0, "must be > 0"), ("trial_memory_mb", 0, "must be > 0"),
    ("resume", "always", "'always' must be auto or force"), ("study_name", "a/b", "must be a plain name"),
    ("storage", "sqlite:///:memory:", "keeps the study in memory")])
def test_a_shared_key_is_checked_once_under_the_key_typed(key, value, words) -> None:
    node = {"name": "opt_finder", "study_name": "s", key: value}
    for prefix, read in (("tuner", tuner_settings), ("tuner", pbt_settings), ("tuner", finder_settings),
                         ("hydra.sweeper", lambda n: check_fields(_sweeper(**{key: value}), "hydra.sweeper"))):
        with pytest.raises(ConfigError) as err:
            read(dict(node, name="optuna") if read is not finder_settings else node)
        assert str(err.value).startswith(f"{prefix}.{key}: ") and words in str(err.value), (read, str(err.value))


@pytest.mark.parametrize("key, value", [("sampler", "bogus"), ("pruner", "bogus"), ("direction", "up"),
                                        ("n_trials", 0), ("n_seeds", 0), ("aggregation", "q75"), ("percentile", 150.0),
                                        ("report_every", 0), ("max_failures", -1), ("n_warmup_steps", -1),
                                        ("max_runs", 0), ("seed_order", "shuffled")])
def test_search_keys_are_checked_alike_for_tuner_optuna_and_the_sweeper(key, value) -> None:
    with pytest.raises(ConfigError) as tuner:
        tuner_settings({key: value})
    sweeper_conf = _sweeper(**({} if key == "sampler" else {key: value}))
    if key == "sampler":  # given as a name or a node; its name is checked by the same rule
        from hydra_plugins.note_optuna_sweeper.sweeper import NoteOptunaSweeper

        sweeper = NoteOptunaSweeper(sampler=value)
        check = sweeper._check_settings
    else:
        check = lambda: check_fields(sweeper_conf, "hydra.sweeper")
    with pytest.raises(ConfigError) as sweeper:
        check()
    assert str(sweeper.value) == str(tuner.value).replace("tuner.", "hydra.sweeper.", 1)


def test_the_yaml_side_holds_the_schemas_defaults() -> None:
    """conf/tuner/common/*.yaml, which the tuner= options include, agree with the dataclasses, and every
    tuner= study composes them (the keys users type stay where they were)."""
    common = os.path.join(REPO, "conf", "tuner", "common")
    study = yaml.safe_load(Path(common, "study.yaml").read_text())
    driver = {k: v for k, v in yaml.safe_load(Path(common, "driver.yaml").read_text()).items() if k != "defaults"}
    defaults = _fields(TunerSettings)
    for key, value in {**study, **driver}.items():
        if isinstance(value, str) and "${" in value:
            continue  # an interpolation (study_dir: studies/${tuner.study_name})
        assert value == _default(defaults[key]), key
    for option, keys in (("optuna", {**study, **driver}), ("pbt", {**study, **driver}), ("lr_finder", study),
                         ("opt_finder", study), ("parallel_finder", study)):
        composed = compose_cfg([f"tuner={option}"]).tuner
        assert set(keys) <= set(composed), (option, set(keys) - set(composed))
    assert compose_cfg(["tuner=parallel_finder"]).tuner.n_jobs is None  # its own default wins over common/study's


def test_the_sweeper_config_module_stays_light() -> None:
    """Hydra imports every plugin's config at start-up: the shared schema must not pull optuna in."""
    code = ("import sys, hydra_plugins.note_optuna_sweeper.config; "
            "print(sorted(m for m in ('optuna', 'torch', 'sqlalchemy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
                         env=dict(os.environ, PYTHONPATH=REPO))
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr[-2000:]
