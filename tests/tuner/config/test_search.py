"""Search spaces: grammar -> distributions -> FixedTrial values -> Hydra overrides."""

import optuna
import pytest

from tests.tuner.conftest import compose_cfg
from tuner.common.errors import ConfigError
from tuner.config.schema import validate
from tuner.config.search import distributions, parse_space, suggest, to_overrides

SPACE = {
    "groups": {"optimizer": "choice(adam, adamw, sgd)"},
    "values": {"optimizer": {"lr": "tag(log, interval(1e-5, 1e-2))"},
               "agent": {"batch": "choice(32, 64, 128)", "n_epochs": "int(interval(4, 20))",
                         "gamma": "interval(0.9, 0.999)", "train_freq": "range(4, 20, 4)",
                         "hidden_size": "[32,32]", "num_updates": "tag(log, int(interval(1, 64)))"}},
}


def test_distributions_from_the_grammar() -> None:
    d = distributions(parse_space(SPACE))
    assert d["optimizer"] == optuna.distributions.CategoricalDistribution(["adam", "adamw", "sgd"])
    assert d["optimizer.lr"] == optuna.distributions.FloatDistribution(1e-5, 1e-2, log=True)
    assert d["agent.batch"] == optuna.distributions.CategoricalDistribution([32, 64, 128])
    assert d["agent.n_epochs"] == optuna.distributions.IntDistribution(4, 20)
    assert d["agent.gamma"] == optuna.distributions.FloatDistribution(0.9, 0.999)
    assert d["agent.train_freq"] == optuna.distributions.IntDistribution(4, 16, step=4)  # stop excluded
    assert d["agent.num_updates"] == optuna.distributions.IntDistribution(1, 64, log=True)
    assert "agent.hidden_size" not in d  # a plain value is fixed, not searched


def test_fixed_trial_becomes_overrides_groups_first() -> None:
    space = parse_space(SPACE)
    trial = optuna.trial.FixedTrial({"optimizer": "sgd", "optimizer.lr": 0.003, "agent.batch": 64,
                                     "agent.n_epochs": 7, "agent.gamma": 0.95, "agent.train_freq": 8,
                                     "agent.num_updates": 16})
    params = suggest(trial, space)
    overrides = to_overrides(params, space)
    assert overrides[0] == "optimizer=sgd"
    assert set(overrides[1:]) == {"optimizer.lr=0.003", "agent.batch=64", "agent.n_epochs=7",
                                  "agent.gamma=0.95", "agent.train_freq=8", "agent.num_updates=16",
                                  "agent.hidden_size=[32,32]"}
    cfg = validate(compose_cfg(["agent=ppo", *overrides]))  # the overrides compose into a valid config
    assert cfg.optimizer.name == "sgd" and cfg.optimizer.lr == 0.003 and cfg.agent.hidden_size == [32, 32]


def test_space_files_and_command_line_override() -> None:
    cfg = validate(compose_cfg(["agent=ppo", "search.values.optimizer.lr='tag(log, interval(1e-5, 1e-2))'",
                                "+search.groups.optimizer='choice(adam, sgd)'"]))
    d = distributions(parse_space(cfg.search, cfg))
    assert d["optimizer.lr"].low == 1e-5 and d["optimizer.lr"].log
    assert d["optimizer"].choices == ("adam", "sgd")
    assert "agent.lam" in d  # from conf/search/ppo.yaml


@pytest.mark.parametrize("expr", ["interval(2, 1)", "range(5, 1)", "tag(log, interval(0, 1))", "choice(", "glob(*)"])
def test_bad_expressions(expr) -> None:
    with pytest.raises(ConfigError, match="search.agent.gamma"):
        parse_space({"values": {"agent": {"gamma": expr}}})


@pytest.mark.parametrize("group,expected", [
    ("optmizer='choice(adam,sgd)'", "search.groups.optmizer: no config group 'optmizer'"),
    ("optimizer='choice(adam,nadam)'", "search.groups.optimizer: no option 'nadam' in group 'optimizer'"),
    ("optimizer=nadam", "search.groups.optimizer: no option 'nadam'"),
])
def test_group_names_and_options_are_checked(group, expected) -> None:
    with pytest.raises(ConfigError) as info:
        validate(compose_cfg([f"+search.groups.{group}"]))
    assert str(info.value).startswith(expected) and "\n" not in str(info.value)
    cfg = validate(compose_cfg(["+search.groups.optimizer='choice(adam,sgd)'"]))  # real names pass
    assert distributions(parse_space(cfg.search, cfg))["optimizer"].choices == ("adam", "sgd")


def test_group_typo_stops_the_study_before_any_trial(tmp_path) -> None:
    from tests.tuner.conftest import NO_REEVAL, TINY, run_app

    out = run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=typo", '+search.groups.optmizer="choice(adam,sgd)"', *TINY],
                  cwd=str(tmp_path), check=False)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["error: search.groups.optmizer: no config group 'optmizer'"]
    assert not (tmp_path / "studies").exists()  # no journal, no trial left RUNNING


def test_int_hidden_size_in_a_search_space() -> None:
    space = parse_space({"values": {"agent": {"hidden_size": "choice(32, 128)"}}})
    overrides = to_overrides(suggest(optuna.trial.FixedTrial({"agent.hidden_size": 128}), space), space)
    assert overrides == ["agent.hidden_size=128"]
    assert list(validate(compose_cfg(overrides)).agent.hidden_size) == [128]
