"""The study's sampler and pruner are ``_target_`` nodes: every shorthand (``tuner.sampler=tpe``,
``tuner.pruner=wilcoxon``, ...) resolves to its class with the settings' arguments, a user's own node
builds and runs a study, and a bad node is one line (exit 2)."""

import optuna
import pytest
from optuna.trial import TrialState

from tests.tuner.conftest import TINY, compose_cfg, run_app
from tuner.common.errors import ConfigError
from tuner.config.schema import validate
from tuner.config.untrusted import UntrustedFileError, check_code_refs
from tuner.study.driver import Driver
from tuner.study import study_schema
from tuner.study.optimisers import PRUNERS, SAMPLERS, pruner_node, sampler_node
from tuner.study.settings import make_pruner, make_sampler, tuner_settings

SAMPLER_CLASSES = {"tpe": "TPESampler", "random": "RandomSampler", "cmaes": "CmaEsSampler", "gp": "GPSampler",
                   "grid": "GridSampler", "qmc": "QMCSampler"}
PRUNER_CLASSES = {"median": "MedianPruner", "percentile": "PercentilePruner",
                  "successive_halving": "SuccessiveHalvingPruner", "hyperband": "HyperbandPruner",
                  "threshold": "ThresholdPruner", "wilcoxon": "WilcoxonPruner", "none": "NopPruner"}


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
@pytest.mark.parametrize("name", sorted(SAMPLER_CLASSES))
def test_every_sampler_shorthand_is_its_target(name) -> None:
    assert set(SAMPLERS) == set(SAMPLER_CLASSES)
    # the names the schema checks (tuner/study/study_schema.py, no optuna import) are the table's
    assert tuple(SAMPLERS) == study_schema.SAMPLERS and tuple(PRUNERS) == study_schema.PRUNERS
    s = tuner_settings({"sampler": name, "sampler_seed": 3, "n_startup_trials": 7})
    node = sampler_node(s)
    assert node["_target_"] == f"optuna.samplers.{SAMPLER_CLASSES[name]}" and node["seed"] == 3
    assert node.get("n_startup_trials", 7) == 7
    sampler = make_sampler(s, [])
    assert type(sampler) is getattr(optuna.samplers, SAMPLER_CLASSES[name])
    if name == "tpe":  # what the name always built: a multivariate TPE with the study's start-up trials
        assert sampler._multivariate and sampler._n_startup_trials == 7 and not sampler._group


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
@pytest.mark.parametrize("name", sorted(PRUNER_CLASSES))
def test_every_pruner_shorthand_is_its_target(name) -> None:
    assert set(PRUNERS) == set(PRUNER_CLASSES)
    s = tuner_settings({"pruner": name, "n_seeds": 4, "threshold_lower": 1.0, "wilcoxon_p": 0.2,
                        "n_warmup_steps": 3, "percentile": 40.0})
    assert pruner_node(s)["_target_"] == f"optuna.pruners.{PRUNER_CLASSES[name]}"
    pruner = make_pruner(s)
    assert type(pruner) is getattr(optuna.pruners, PRUNER_CLASSES[name])
    if name == "wilcoxon":
        assert pruner._p_threshold == 0.2 and pruner._n_startup_steps == 3
    if name == "percentile":
        assert pruner._percentile == 40.0 and pruner._n_warmup_steps == 3
    if name == "threshold":  # n_warmup_steps was never passed to it: Optuna's default stays
        assert pruner._lower == 1.0 and pruner._n_warmup_steps == 0


def test_a_user_target_sampler_runs_a_tiny_study(tmp_path) -> None:
    overrides = ["tuner=optuna", "tuner.study_name=own", f"tuner.study_dir={tmp_path}/study", "search=none",
                 "tuner.report_every=1", "tuner.n_trials=2", "tuner.sampler_seed=4", "tuner.enqueue_defaults=false",
                 "tuner.sampler={_target_: optuna.samplers.NSGAIISampler, population_size: 2}",
                 "tuner.pruner={_target_: optuna.pruners.MedianPruner, n_startup_trials: 1}",
                 "+search.values.agent.gamma='interval(0.9, 0.99)'", *TINY]
    cfg = validate(compose_cfg(overrides))
    driver = Driver(cfg, tuner_settings(cfg.tuner), compose_cfg, overrides)
    sampler = driver.study.sampler
    assert type(sampler) is optuna.samplers.NSGAIISampler and sampler._population_size == 2
    assert type(driver.study.pruner) is optuna.pruners.MedianPruner
    driver.run()
    assert [t.state for t in driver.study.trials] == [TrialState.COMPLETE] * 2
    # a trial's saved config names the sampler: read back, Optuna's own classes are data, not code
    check_code_refs({"tuner": {"sampler": {"_target_": "optuna.samplers.NSGAIISampler"}}}, "config.yaml")
    with pytest.raises(UntrustedFileError, match="tuner.sampler._target_"):
        check_code_refs({"tuner": {"sampler": {"_target_": "my_pkg.Sampler"}}}, "config.yaml")


@pytest.mark.parametrize("node,message", [
    ({"sampler": "bogus"}, "tuner.sampler: 'bogus' is not one of tpe, random, cmaes, gp, grid, qmc"),
    ({"pruner": "bogus"}, "tuner.pruner: 'bogus' is not one of median, percentile"),
    ({"sampler": {"_target_": "optuna.samplers.Nope"}}, "tuner.sampler._target_: cannot import"),
    ({"sampler": {"_target_": "optuna.pruners.NopPruner"}}, "tuner.sampler._target_: optuna.pruners.NopPruner is not"),
    ({"pruner": {"_target_": "optuna.pruners.MedianPruner", "seed": 1}}, "tuner.pruner.seed: not an argument"),
    ({"sampler": {"seed": 1}}, "tuner.sampler: {'seed': 1} is neither a name"),
])
def test_bad_sampler_or_pruner_names_the_key(node, message) -> None:
    with pytest.raises(ConfigError) as err:
        tuner_settings(node)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_bad_target_is_one_line_exit_2(tmp_path) -> None:
    out = run_app(["tuner=optuna", "tuner.sampler={_target_: optuna.samplers.NoSuchSampler}"], cwd=str(tmp_path),
                  check=False)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert out.stderr.startswith("error: tuner.sampler._target_: cannot import 'optuna.samplers.NoSuchSampler'")
    assert not (tmp_path / "studies").exists()


# -- the adjuster and the loggers ---------------------------------------------------------------
@pytest.mark.parametrize("overrides,cls", [
    (["adjuster=ess", "buffer=prioritized"], "ESSAdjuster"),
    (["adjuster=gns"], "GNSAdjuster"),
    (["adjuster.kind=ess", "buffer=prioritized", "+adjuster.every=5"], "ESSAdjuster"),  # the kind shorthand
    (["adjuster.kind=gns"], "GNSAdjuster"),
    (["adjuster=none"], None),
])
def test_every_adjuster_shorthand_is_its_target(overrides, cls) -> None:
    from omegaconf import OmegaConf

    import note_rl.adjusters
    from tuner.config.adjuster import build_adjuster

    cfg = validate(compose_cfg(["agent=dqn", *TINY, *overrides]))
    node = OmegaConf.to_container(cfg.adjuster, resolve=True)
    adjuster = build_adjuster(node)
    if cls is None:
        assert adjuster is None
        return
    assert type(adjuster) is getattr(note_rl.adjusters, cls)
    if "_target_" in node:  # the group's option names its class
        assert node["_target_"] == f"note_rl.adjusters.{cls}"


def test_a_user_adjuster_class_is_built_from_the_same_form() -> None:
    from omegaconf import OmegaConf

    from tests.tuner.my_adjuster import SlowGNS
    from tuner.config.adjuster import build_adjuster

    cfg = validate(compose_cfg(["agent=dqn", *TINY, "adjuster=gns", "adjuster._target_=tests.tuner.my_adjuster.SlowGNS",
                                "+adjuster.slowdown=3"]))
    adjuster = build_adjuster(OmegaConf.to_container(cfg.adjuster, resolve=True))
    assert type(adjuster) is SlowGNS and adjuster.slowdown == 3 and adjuster.every == 100
    assert adjuster.active == ("batch", "lr")  # <name>_params reach the constructor as params


@pytest.mark.parametrize("overrides,message", [
    (["adjuster=gns", "adjuster._target_=tests.tuner.nowhere.Adjuster"], "adjuster._target_: cannot import"),
    (["adjuster=gns", "adjuster._target_=note_rl.buffers.ReplayBuffer"], "adjuster._target_: ReplayBuffer is not an adjuster"),
    (["adjuster=gns", "+adjuster.tagret_noise=1"], "adjuster: adjuster kind 'gns': unknown keys ['tagret_noise']"),
    (["adjuster=ess"], "adjuster.kind: ess needs buffer=prioritized"),
    (["logger=csv", "+logger.kinds.mine={_target_: tests.tuner.nowhere.Logger}"], "logger.kinds.mine._target_: cannot import"),
    (["logger=csv", "+logger.kinds.mine={_target_: tuner.logs.file_loggers.CsvCallback, every: 3}"],
     "logger.kinds.mine.every: not an argument of tuner.logs.file_loggers.CsvCallback"),
    (["logger=csv", "logger.kinds.csv=[1]"], "logger.kinds.csv: expected true, false or a {_target_: ...} node"),
])
def test_bad_adjuster_or_logger_names_the_key(overrides, message) -> None:
    with pytest.raises(ConfigError) as err:
        validate(compose_cfg(["agent=dqn", *TINY, *overrides]))
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


@pytest.mark.parametrize("overrides,classes", [
    (["logger=[console,csv]"], ["CsvCallback"]),
    (["logger=[wandb,csv,tensorboard]"], ["WandbCallback", "CsvCallback", "TensorboardCallback"]),
    (["logger=console"], []),
    (["logger=none"], []),
    # a logger of the user's own beside the project's: built with the run's config and dir
    (["logger=csv", "+logger.kinds.mine={_target_: tests.tuner.my_adjuster.RecordingLogger, label: x}"],
     ["CsvCallback", "RecordingLogger"]),
])
def test_every_logger_shorthand_is_its_target(tmp_path, overrides, classes) -> None:
    pytest.importorskip("tensorboardX")
    from omegaconf import OmegaConf

    from tuner.config.loggers import LOGGERS, logger_node
    from tuner.run.build import logger_callbacks

    cfg = OmegaConf.to_container(validate(compose_cfg(["agent=dqn", *TINY, *overrides])), resolve=True)
    callbacks = logger_callbacks(cfg, str(tmp_path))
    assert [type(c).__name__ for c in callbacks] == classes
    for name in cfg["logger"]["kinds"]:
        if name in LOGGERS and LOGGERS[name]:
            assert logger_node(cfg["logger"], name) == {"_target_": LOGGERS[name]}
    if "RecordingLogger" in classes:
        assert callbacks[-1].run_dir == str(tmp_path) and callbacks[-1].label == "x" and callbacks[-1].cfg is cfg


def test_saved_configs_may_name_note_rls_adjusters_only() -> None:
    """A run dir's config now names its adjuster's class: read back (eval, resume, reevaluate), note_rl's
    own are data; a user's class needs trust_code=true, as a user's agent does."""
    check_code_refs({"adjuster": {"_target_": "note_rl.adjusters.ESSAdjuster", "kind": "ess"}}, "config.yaml")
    with pytest.raises(UntrustedFileError, match="adjuster._target_"):
        check_code_refs({"adjuster": {"_target_": "tests.tuner.my_adjuster.SlowGNS"}}, "config.yaml")
    with pytest.raises(UntrustedFileError, match="logger.kinds.mine._target_"):
        check_code_refs({"logger": {"kinds": {"mine": {"_target_": "tests.tuner.my_adjuster.RecordingLogger"}}}},
                        "config.yaml")


# -- values only a constructor refuses ----------------------------------------------------------
def test_a_constructor_refusal_names_the_argument_key() -> None:
    from tuner.config.targets import refused_value

    node = {"_target_": "x.SAC", "sde_sample_freq": 0, "gamma": 0.99}
    # note_rl's form Class(argument=value): why, with the argument among the node's keys
    assert refused_value("agent", node, ValueError("SAC(sde_sample_freq=0): -1 or a positive number\nmore")) == \
        "agent.sde_sample_freq: SAC(sde_sample_freq=0): -1 or a positive number"
    # an argument the node does not have (the builder passed it), or no argument named: the node's key
    assert refused_value("agent", node, ValueError("SAC(action_dim=3): the env has 1")) == \
        "agent: SAC(action_dim=3): the env has 1"
    assert refused_value("agent", node, ValueError("SAC needs finite action bounds")) == \
        "agent: SAC needs finite action bounds"


def test_build_turns_a_constructor_value_error_into_a_config_error() -> None:
    from hydra.errors import InstantiationException

    from tuner.config.targets import build

    node = {"_target_": "fractions.Fraction", "numerator": "bogus"}  # its constructor raises ValueError
    with pytest.raises(ConfigError) as err:
        build(node, key="agent.policy")
    assert str(err.value) == "agent.policy: Invalid literal for Fraction: 'bogus'"
    with pytest.raises(InstantiationException):  # no key given: Hydra's own error, as before
        build(node)


def test_a_value_only_the_agent_refuses_is_one_line_exit_2(tmp_path) -> None:
    """``SAC(sde_sample_freq=0)`` passes the schema (an int) and is refused by SAC's constructor: one line
    naming the key, exit 2, and no run dir left behind (it was Hydra's three-line error, exit 1)."""
    run_dir = tmp_path / "run"
    out = run_app(["agent=sac", "env=pendulum", "agent.sde_sample_freq=0", "budget.steps=200", "logger=none",
                   f"hydra.run.dir={run_dir}"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "error: agent.sde_sample_freq: SAC(sde_sample_freq=0): -1 (once per training round) or a positive number "
        "of env steps"]
    assert not run_dir.exists()
