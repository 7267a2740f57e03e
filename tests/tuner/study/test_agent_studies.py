"""Every built-in agent tunes: a 2-trial study of each on its default env (issue 35, item 6), and every
env preset's default study name is one the tuner accepts.

A PPO Hopper study failed every trial and the HER studies' default names held ``/``; nothing ran a study
per agent, so neither was seen.  The studies run through the tuner's own driver in this process (each
trial still trains in a fresh process, as in any study), with the matrix test's tiny budgets."""

from __future__ import annotations

import warnings

import optuna
import pytest
from optuna.trial import TrialState

from tests.tuner.conftest import NO_REEVAL, compose_cfg, journal_of
from tests.tuner.config.test_agent_env_matrix import AGENTS, ENVS, PER_AGENT
from tuner.config.schema import validate
from tuner.study.driver import Driver
from tuner.study.settings import tuner_settings

# each agent's default env: CartPole for the discrete ones, Pendulum for the Box-only ones, MADDPG's
# multi-agent env, and HER (DQN with the her buffer the goal env picks) on bit flipping
DEFAULT_ENV = {"ddpg": "pendulum", "td3": "pendulum", "sac": "pendulum", "maddpg": "simple_spread"}
CASES = [(agent, DEFAULT_ENV.get(agent, "cartpole")) for agent in AGENTS] + [("dqn", "bit_flip")]
# 2 trials of a few hundred env steps; no intermediate evaluation, one final episode, no loggers
SHRINK = ["tuner=optuna", "tuner.n_trials=2", "tuner.pruner=none", "tuner.sampler_seed=0", *NO_REEVAL,
          "budget.steps=400", "eval.episodes=1", "eval.every=null", "logger=none", "objective.last_k=1"]
# the rollout sizes a space may sample are longer than the budget (a rollout of 2048 x 2 env steps is refused
# against 400): trial 1 samples them from short choices, every other searched key from the agent's own space
SHORT = {"ppo": ["search.values.agent.n_steps='choice(8, 16)'", "search.values.agent.batch='choice(8, 16)'"],
         "trpo": ["search.values.agent.n_steps='choice(8, 16)'", "search.values.agent.batch='choice(8, 16)'"],
         "a2c": ["search.values.agent.n_steps='choice(5, 8)'"],
         "acer": ["search.values.agent.n_steps='choice(5, 10)'", "search.values.agent.n_envs='choice(1, 2)'",
                  "search.values.agent.replay_start='choice(32, 64)'"]}


@pytest.mark.slow
@pytest.mark.parametrize("agent,env", CASES, ids=[f"{a}-{e}" for a, e in CASES])
def test_a_two_trial_study_of_every_agent_completes(agent, env, tmp_path, monkeypatch) -> None:
    """Trial 0 is the config's own values, trial 1 a sample from the agent's search space: both
    COMPLETE with a finite score, under the default study name."""
    monkeypatch.chdir(tmp_path)
    overrides = [f"agent={agent}", f"env={env}", *SHRINK, *PER_AGENT.get(agent, []), *SHORT.get(agent, [])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = validate(compose_cfg(overrides))
    driver = Driver(cfg, tuner_settings(cfg.tuner), compose_cfg, overrides)
    driver.run()
    name = driver.s.study_name
    assert name == cfg.tuner.study_name  # the default name, not a variant of it
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(journal_of(driver.study_dir)))
    study = optuna.load_study(study_name=name, storage=storage)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.COMPLETE], \
        [(t.state, t.user_attrs) for t in study.trials]
    assert all(t.value is not None and t.value == t.value for t in study.trials)


@pytest.mark.parametrize("agent", AGENTS)
def test_every_env_preset_has_a_valid_default_study_name(agent) -> None:
    """``${agent.name}_${name_part:${env.id}}`` for every agent x env preset (composed, not validated:
    the name matters even where the pair is refused) passes the tuner's check (a plain name: no ``/``,
    ``\\``, NUL or leading ``.``) and names one folder under ``studies/``."""
    for env in ENVS:
        cfg = compose_cfg([f"agent={agent}", f"env={env}", "tuner=optuna"])
        name = cfg.tuner.study_name
        assert tuner_settings(cfg.tuner).study_name == name, (agent, env)  # raises ConfigError if refused
        assert name.startswith(f"{cfg.agent.name}_") and cfg.tuner.study_dir == f"studies/{name}", (agent, env)


@pytest.mark.parametrize("agent", ["ppo", "a2c"])
def test_a_study_searches_gsde_where_the_actions_are_box_only(agent, tmp_path, monkeypatch) -> None:
    """The driver settles the default space's ``actions=`` conditions by the env its config checked: on
    Pendulum the study searches gSDE, its resampling period (conditional on it) and the initial log std;
    on CartPole none of them."""
    monkeypatch.chdir(tmp_path)
    gsde = {"agent.use_sde", "agent.sde_sample_freq", "agent.log_std_init"}
    for env, box in (("pendulum", True), ("cartpole", False)):
        overrides = [f"agent={agent}", f"env={env}", "tuner=optuna", "logger=none"]
        cfg = validate(compose_cfg(overrides))
        driver = Driver(cfg, tuner_settings(cfg.tuner), compose_cfg, overrides)
        searched = {p.name: p.when for p in driver.space if p.distribution is not None}
        assert (gsde <= set(searched)) if box else not gsde & set(searched), (agent, env)
        assert searched.get("agent.sde_sample_freq", ("agent.use_sde", (True,))) == ("agent.use_sde", (True,))
