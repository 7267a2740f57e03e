"""The default search spaces (conf/search/<agent>.yaml) on every env preset they meet: they parse against
the config, pass the cost guard, and contain the config's own values, so trial 0 of a study (enqueued
from them) is exactly the agent's defaults or the env's rl-zoo3 preset."""

from __future__ import annotations

import warnings

import pytest
from omegaconf import OmegaConf

from tests.tuner.conftest import compose_cfg
from tuner.common.errors import ConfigError
from tuner.config.env_check import env_actions
from tuner.config.schema import validate
from tuner.config.search import default_params, parse_space
from tuner.config.search_cost import check_cost

DISCRETE = ["cartpole", "acrobot", "lunar_lander", "mountain_car"]
CONTINUOUS = ["pendulum", "mountain_car_continuous", "lunar_lander_continuous", "hopper", "half_cheetah"]
COMBOS = [("dqn", e) for e in DISCRETE] + [(a, e) for a in ("ppo", "a2c", "trpo", "acer") for e in DISCRETE + CONTINUOUS] \
    + [(a, e) for a in ("sac", "td3", "ddpg") for e in CONTINUOUS]
# rl-zoo3's / ARLBench's ranges a space must reach (shared/reference/autorl_protocol.md)
REACH = {"ppo": {"agent.gamma": 0.9999, "agent.n_steps": 2048, "agent.entropy_coef": 0.1, "agent.n_epochs": 20},
         "dqn": {"agent.gamma": 0.9999, "agent.update_steps": 5000, "buffer.pool_size": 1000000},
         "sac": {"agent.gamma": 0.9999, "agent.tau": 0.08, "agent.ent_coef": "auto"},
         "td3": {"agent.gamma": 0.9999, "agent.tau": 0.08, "agent.hidden_size": "[400, 300]"},
         "a2c": {"agent.gamma": 0.9999, "agent.n_steps": 2048},
         "acer": {"agent.gamma": 0.9999, "agent.replay_ratio": 8.0, "agent.delta": 2.0, "agent.c": 20.0},
         "trpo": {"agent.gamma": 0.9999, "agent.n_steps": 2048, "agent.target_kl": 0.1, "agent.n_critic_updates": 30}}


@pytest.mark.parametrize("agent,env", COMBOS)
def test_default_space_parses_passes_the_cost_guard_and_holds_the_starting_config(agent, env) -> None:
    cfg = compose_cfg([f"agent={agent}", f"env={env}", "tuner=optuna"])
    actions = env_actions(validate(cfg))  # outside the block below: Box2D's SWIG module warns on import
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a list choice Optuna's storages could not keep would warn
        space = parse_space(cfg.search, cfg, actions)
    assert check_cost(space, cfg, cfg.tuner.max_cost_ratio) <= 100
    searched = [p for p in space if p.distribution is not None]
    start = default_params(space, cfg)
    # a conditional parameter (search.when) counts only where the starting config meets its condition
    outside = {p.name: OmegaConf.select(cfg, p.name) for p in searched if p.name not in start
               and (p.when is None or start.get(p.when[0]) in p.when[1])}
    assert outside == {}, f"the {agent} {env} config's own values must be in its space"
    assert len(searched) >= {"dqn": 6, "ddpg": 7, "sac": 7}.get(agent, 8)
    for name, value in REACH.get(agent, {}).items():
        (d,) = [p.distribution for p in searched if p.name == name]
        assert value in getattr(d, "choices", ()) or getattr(d, "high", None) == value, name
    if agent in ("ppo", "a2c"):  # gSDE where the actions are Box, and nowhere else (search.when's actions=)
        names = {p.name for p in searched}
        gsde = {"agent.use_sde", "agent.sde_sample_freq", "agent.log_std_init"}
        assert gsde <= names if env in CONTINUOUS else not gsde & names


def test_a_conditional_parameter_is_sampled_only_where_its_condition_holds_and_her_envs_keep_her() -> None:
    """DQN's space searches prioritised replay against uniform and buffer.alpha only with the former
    (ARLBench's dqn_cc); a goal env's preset pins buffer=her, so its study never drops relabelling."""
    import optuna

    from tuner.config.search import distributions, suggest_conditional, to_overrides

    cfg = compose_cfg(["agent=dqn", "env=cartpole", "tuner=optuna"])
    space = parse_space(cfg.search, cfg)
    assert "buffer.alpha" not in distributions(space) and "buffer.alpha" in distributions(space, conditional=True)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    seen = set()
    for _ in range(12):
        trial = study.ask(distributions(space))
        suggest_conditional(trial, space)
        overrides = to_overrides(trial.params, space)
        alpha = [o for o in overrides if o.startswith("buffer.alpha=")]
        assert bool(alpha) == (trial.params["buffer"] == "prioritized")
        assert overrides[0] == f"buffer={trial.params['buffer']}"  # the group first: its keys exist after it
        seen.add(trial.params["buffer"])
        study.tell(trial, 0.0)
    assert seen == {"uniform", "prioritized"}
    her = compose_cfg(["agent=dqn", "env=bit_flip", "tuner=optuna"])
    (buffer,) = [p for p in parse_space(her.search, her) if p.name == "buffer"]
    assert buffer.distribution is None and buffer.fixed == "her"


def test_an_actions_condition_is_settled_by_the_envs_actions_and_takes_its_dependants_along() -> None:
    """``when: {x: actions=continuous}`` searches x on a Box env only; a parameter conditional on x goes
    where x goes and is conditional on it there; actions unknown (a config whose env was not checked):
    neither is searched, though both are still checked against the config."""
    search = {"when": {"agent.use_sde": "actions=continuous", "agent.sde_sample_freq": "agent.use_sde=true"},
              "values": {"agent": {"use_sde": "choice(false, true)", "sde_sample_freq": "choice(-1, 8)",
                                   "gamma": "choice(0.9, 0.99)"}}}
    cfg = compose_cfg(["agent=ppo", "env=pendulum"])
    box = {p.name: p.when for p in parse_space(search, cfg, frozenset({"continuous"}))}
    assert box == {"agent.use_sde": None, "agent.sde_sample_freq": ("agent.use_sde", (True,)), "agent.gamma": None}
    for actions in (frozenset({"discrete"}), None):
        assert [p.name for p in parse_space(search, cfg, actions)] == ["agent.gamma"]
    assert env_actions(validate(cfg)) == {"continuous"} and env_actions(validate(compose_cfg(["agent=ppo"]))) == {"discrete"}
    typo = {**search, "values": {"agent": {**search["values"]["agent"], "use_sdee": "choice(false, true)"}},
            "when": {"agent.use_sdee": "actions=continuous"}}
    with pytest.raises(ConfigError, match=r"^search.values.agent.use_sdee: no such config key$"):
        parse_space(typo, cfg, frozenset({"discrete"}))  # not searched here, still a typo
    for cond, match in (("actions=box", "expected 'actions=<kind>"), ("actions", "expected 'actions=<kind>")):
        with pytest.raises(ConfigError, match=rf"^search.when.agent.use_sde: {match}"):
            parse_space({**search, "when": {"agent.use_sde": cond}}, cfg, None)
    deep = {**search, "when": {"agent.use_sde": "agent.gamma=0.99", "agent.sde_sample_freq": "agent.use_sde=true"}}
    with pytest.raises(ConfigError, match="conditions are one level deep"):
        parse_space(deep, cfg, frozenset({"continuous"}))
