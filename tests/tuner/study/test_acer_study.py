"""ACER in the tuner: its config (baselines' defaults with RMSprop), discrete and Box envs, the refusals of
HER and of the pool strategy in one line, a build in each backend, and a 2-trial study over its default search space."""

from __future__ import annotations

import optuna
import pytest
from omegaconf import OmegaConf
from optuna.trial import TrialState

from tests.tuner.conftest import NO_REEVAL, compose_cfg, run_app
from tuner.common.errors import ConfigError
from tuner.config.schema import validate
from tuner.run.build import build_agent


def test_acer_config_is_baselines_and_builds() -> None:
    cfg = compose_cfg(["agent=acer", "env=acrobot"])
    a = cfg.agent
    assert (a.n_steps, a.n_envs, a.replay_ratio, a.buffer_size, a.replay_start, a.c, a.delta, a.alpha, a.q_coef,
            a.ent_coef, a.max_grad_norm, a.trust_region) == (20, 4, 4.0, 50_000, 10_000, 10.0, 1.0, 0.99, 0.5,
                                                             0.01, 10.0, True)
    assert (cfg.optimizer.name, cfg.optimizer.rho, cfg.optimizer.eps, a.lr) == ("rmsprop", 0.99, 1e-5, 7e-4)
    assert compose_cfg(["agent=acer", "optimizer=adam"]).optimizer.name == "adam"
    built = build_agent(OmegaConf.to_container(validate(cfg), resolve=True))
    assert type(built).__name__ == "ACER" and (built.n_steps, built.n_envs, built.c) == (20, 4, 10.0)
    box = build_agent(OmegaConf.to_container(validate(compose_cfg(["agent=acer", "env=pendulum"])), resolve=True))
    assert box.continuous and box.std.tolist() == pytest.approx([0.6]) and box.sdn_samples == 5


@pytest.mark.parametrize("overrides,key", [(["env=bit_flip"], "buffer"), (["strategy=pool_network"], "strategy")])
def test_what_acer_cannot_run_is_refused_in_one_line(overrides, key) -> None:
    with pytest.raises(ConfigError) as err:
        validate(compose_cfg(["agent=acer", *overrides]))
    line = str(err.value)
    assert "\n" not in line and line.startswith(key), line


@pytest.mark.slow
def test_a_two_trial_acer_study_runs(tmp_path) -> None:
    """Two trials sampled from conf/search/acer.yaml (trial 0: the config's own values) on CartPole,
    1,200 env steps each with replay from 200 transitions on."""
    run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=acer", "tuner.n_trials=2", "agent=acer", "env=cartpole",
             "budget.steps=1200", "agent.replay_start=200", "eval.episodes=1", "logger=none"], cwd=str(tmp_path))
    study = optuna.load_study(study_name="acer", storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(tmp_path / "studies" / "journal.log"))))
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.COMPLETE]
    assert all(t.value is not None and t.value > 0 for t in study.trials)
    assert study.trials[0].params != study.trials[1].params
