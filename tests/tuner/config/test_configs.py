"""Every option of every config group composes, validates and builds; bad configs fail clearly."""

import importlib.util
import os

import numpy as np
import pytest
from omegaconf import OmegaConf

from tests.tuner.conftest import CONF_DIR, run_app
from tests.tuner.conftest import compose_cfg as _compose


def compose_cfg(overrides: list[str]):
    """These checks are written against DQN's config (the app's default agent before PPO): DQN
    unless the overrides choose an agent."""
    if not any(o.split("=", 1)[0].lstrip("+~") == "agent" for o in overrides):
        overrides = ["agent=dqn", *overrides]
    return _compose(overrides)
from tuner.common.errors import ConfigError
from tuner.config.schema import validate
from tuner.config.search import parse_space
from tuner.run.build import build_agent, build_optimizer, logger_callbacks, train_kwargs

GROUPS = sorted(d for d in os.listdir(CONF_DIR) if os.path.isdir(os.path.join(CONF_DIR, d)))


def _options(group):
    return sorted(f[:-5] for f in os.listdir(os.path.join(CONF_DIR, group)) if f.endswith(".yaml"))


@pytest.mark.parametrize("group,option", [(g, o) for g in GROUPS for o in _options(g)])
def test_every_option_composes_and_validates(group, option, monkeypatch) -> None:
    if "atari" in option and importlib.util.find_spec("ale_py") is None:
        pytest.skip("the atari extra (ale-py) is not installed")
    overrides = [f"{group}={option}"]
    if group == "strategy" and option in ("mirrored", "multi_worker", "parameter_server"):
        overrides.append("backend=tf")  # tf.distribute strategies; the cluster ones read TF_CONFIG
        monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["h:1"], "ps": ["h:2"]}, "task": {"type": "worker"}}')
    if group == "buffer" and option == "her":
        overrides += ["agent=dqn", "env=bit_flip"]  # relabelling: an off-policy agent on a goal env
    if group == "buffer" and option == "prioritized":
        overrides.append("agent=ppo")
        overrides.append("agent.n_steps=null")  # prioritized PPO trains from the replay buffer
    if group == "search" and option in _options("agent"):
        overrides.append(f"agent={option}")  # an agent's search space tunes that agent's fields
    if group == "hyperparams":  # <agent>_<env>: the preset loads for that pair
        agent, env = option.split("_", 1)
        overrides = [f"agent={agent}", f"env={env}"]
    if group == "env" and option in CONTINUOUS_ENVS:
        overrides.append("agent=sac")
    if group in ("agent", "search") and option in CONTINUOUS_AGENTS:
        overrides.append("env=pendulum")
    if group == "env" and option in DISCRETE_GOAL_ENVS:
        overrides.append("agent=dqn")
    if group == "env" and option in MULTI_AGENT_ENVS:
        overrides.append("agent=maddpg")
    if group in ("agent", "search") and option == "maddpg":
        overrides.append("env=simple_spread")
    if group == "network" and option != "mlp":  # a CNN reads images: 10x10 MinAtar grids, 96x96 CarRacing frames
        overrides += ["agent=ppo", "env=minatar_breakout" if option == "minatar_cnn" else "env.id=CarRacing-v3"]
    if group == "adjuster" and option == "ess":
        overrides.append("buffer=prioritized")  # the ESS is a property of replay priorities
    if group == "buffer" and option == "trajectory":  # pairs of transitions: for a user's agent only
        with pytest.raises(ConfigError, match="trajectory triplets .* the built-in agents do not"):
            validate(compose_cfg(overrides))
        overrides.append("agent._target_=tests.tuner.trl_agent.PairAgent")
    cfg = validate(compose_cfg(overrides))
    # presets are _global_; a network option lands in agent.network (its package)
    assert group == "hyperparams" or OmegaConf.select(cfg, "agent.network" if group == "network" else group) is not None
    parse_space(cfg.search, cfg)


CONTINUOUS_ENVS = ("pendulum", "mountain_car_continuous", "lunar_lander_continuous", "hopper", "half_cheetah", "bipedal_walker",
                   "point_reach")
CONTINUOUS_AGENTS = ("ddpg", "td3", "sac")
MULTI_AGENT_ENVS = ("simple_spread",)
DISCRETE_GOAL_ENVS = ("bit_flip",)


@pytest.mark.parametrize("backend", ["torch", "tf"])
@pytest.mark.parametrize("agent,env", [("dqn", "cartpole"), ("ppo", "cartpole"), ("a2c", "cartpole"),
                                       ("trpo", "cartpole"), ("ppo", "pendulum"), ("a2c", "pendulum"),
                                       ("trpo", "pendulum"), ("acer", "cartpole"),
                                       *[(a, "pendulum") for a in CONTINUOUS_AGENTS], ("maddpg", "simple_spread")])
def test_agents_build_on_each_backend(backend, agent, env) -> None:
    cfg = OmegaConf.to_container(validate(compose_cfg([f"backend={backend}", f"agent={agent}", f"env={env}"])),
                                 resolve=True)
    built = build_agent(cfg)
    assert built.backend_name == backend and built.batch == cfg["agent"]["batch"]
    assert built.gamma is not None and train_kwargs(cfg)["steps"] == cfg["budget"]["steps"]
    if agent in ("ppo", "a2c", "trpo"):  # softmax on CartPole, a Gaussian on Pendulum
        assert built.continuous == (env == "pendulum")
    if agent == "maddpg":  # a team of 3 on MPE; the noise sized from the agent's action dimension
        assert built.MARL and built.n_agents == 3 and np.shape(built.noise.sample()) == (5,)


def test_a2c_config_picks_rmsprop_unless_told_otherwise() -> None:
    cfg = compose_cfg(["agent=a2c"])
    assert (cfg.optimizer.name, cfg.optimizer.rho, cfg.optimizer.eps, cfg.agent.lr) == ("rmsprop", 0.99, 1e-5, 7e-4)
    assert compose_cfg(["agent=a2c", "optimizer=adam"]).optimizer.name == "adam"
    assert compose_cfg(["agent=dqn"]).optimizer.name == "adam"
    built = build_agent(OmegaConf.to_container(validate(cfg), resolve=True))
    assert built.batch is None and (built.n_steps, built.n_envs, built.n_epochs) == (5, 8, 1)


def test_trpo_config_is_sb3_contribs_and_its_presets_are_rl_zoo3s() -> None:
    cfg = compose_cfg(["agent=trpo", "env=acrobot"])  # no preset: sb3-contrib's defaults
    assert (cfg.agent.n_steps, cfg.agent.batch, cfg.agent.lam, cfg.agent.n_critic_updates, cfg.agent.target_kl,
            cfg.agent.cg_max_steps, cfg.agent.cg_damping, cfg.optimizer.name, cfg.optimizer.eps) == \
        (2048, 128, 0.95, 10, 0.01, 15, 0.1, "adam", 1e-5)
    cartpole = compose_cfg(["agent=trpo", "env=cartpole"])
    assert (cartpole.agent.n_envs, cartpole.agent.n_steps, cartpole.agent.batch, cartpole.agent.cg_damping) == \
        (2, 512, 512, 1e-3)
    assert compose_cfg(["agent=trpo", "env=pendulum"]).agent.gamma == 0.9
    built = build_agent(OmegaConf.to_container(validate(cfg), resolve=True))
    assert built.batch == 128 and (built.n_steps, built.n_envs, built.n_epochs, built.target_kl) == (2048, 1, 10, 0.01)


@pytest.mark.parametrize("backend", ["torch", "tf"])
@pytest.mark.parametrize("name", ["adam", "adamw", "adamax", "sgd", "rmsprop"])
def test_every_optimizer_builds(backend, name) -> None:
    cfg = OmegaConf.to_container(validate(compose_cfg([f"backend={backend}", f"optimizer={name}",
                                                       "optimizer.lr=0.005"])), resolve=True)
    opt = build_optimizer(cfg, build_agent(cfg))
    assert opt.__class__.__name__.lower() == name
    agent = build_agent(cfg)
    assert agent.backend.get_hparam(build_optimizer(cfg, agent), "lr") == pytest.approx(0.005)


@pytest.mark.parametrize("agent", ["dqn", "ppo"])
@pytest.mark.parametrize("buffer", ["uniform", "prioritized"])
def test_buffer_options_build_their_replay(agent, buffer) -> None:
    from note_rl.buffers.prioritized import PrioritizedReplayBuffer
    from note_rl.buffers.replay import ReplayBuffer

    rollout_off = ["agent.n_steps=null"] if agent == "ppo" else []  # DQN has no n_steps
    cfg = OmegaConf.to_container(validate(compose_cfg([f"agent={agent}", f"buffer={buffer}", *rollout_off,
                                                       "buffer.pool_size=5000", "buffer.alpha=0.6"])), resolve=True)
    built = build_agent(cfg)
    replay = built.make_buffer()
    assert built.PR is (buffer == "prioritized") and replay.capacity == 5000
    if buffer == "prioritized":
        assert isinstance(replay, PrioritizedReplayBuffer)
        assert (replay.alpha, replay.lambda_, replay.beta, built.initial_TD) == (0.6, 0.5, None, 7.0)
    else:
        assert type(replay) is ReplayBuffer


@pytest.mark.parametrize("strategy", ["single", "pool_network"])
def test_strategy_options_build_train_settings(strategy) -> None:
    from note_rl.core.settings import TrainSettings

    cfg = OmegaConf.to_container(validate(compose_cfg([f"strategy={strategy}"])), resolve=True)
    settings = TrainSettings(**train_kwargs(cfg))
    assert settings.pool_network is (strategy == "pool_network")
    assert settings.processes == (2 if strategy == "pool_network" else None)
    assert (settings.num_store, settings.start_method, settings.parallel_store_and_training) == (1, "spawn", True)
    assert settings.steps == cfg["budget"]["steps"]


@pytest.mark.parametrize("logger,p,callbacks", [("none", 0, []), ("console", 10, []), ("wandb", 10, ["WandbCallback"])])
def test_logger_options_build_their_output(logger, p, callbacks, tmp_path) -> None:
    overrides = [f"logger={logger}"] + (["logger.mode=disabled"] if logger == "wandb" else [])
    cfg = OmegaConf.to_container(validate(compose_cfg(overrides)), resolve=True)
    assert train_kwargs(cfg)["p"] == p
    built = logger_callbacks(cfg, str(tmp_path))
    assert [type(c).__name__ for c in built] == callbacks
    if built:
        assert built[0].opts["project"] == "note-rl-tuner" and not built[0].session.active


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_int_hidden_size_builds_one_hidden_layer(backend) -> None:
    cfg = validate(compose_cfg([f"backend={backend}", "agent.hidden_size=256"]))
    assert list(cfg.agent.hidden_size) == [256]
    built = build_agent(OmegaConf.to_container(cfg, resolve=True))
    assert [tuple(p.shape) for p in built.param] == [(4, 256), (256,), (256, 2), (2,)]
    assert list(validate(compose_cfg(["agent.hidden_size=[8,16]"])).agent.hidden_size) == [8, 16]


@pytest.mark.parametrize("kind", ["ess", "gns"])
def test_adjuster_configs_build_their_adjuster(kind) -> None:
    from note_rl.adjusters import make_adjuster

    cfg = validate(compose_cfg([f"adjuster={kind}", "buffer=prioritized"]))
    adjuster = make_adjuster(OmegaConf.to_container(cfg.adjuster))
    assert adjuster.kind == kind and adjuster.every == cfg.adjuster.every


def test_agent_lr_is_used_when_optimizer_lr_is_null() -> None:
    cfg = OmegaConf.to_container(validate(compose_cfg([])), resolve=True)
    agent = build_agent(cfg)
    assert agent.backend.get_hparam(build_optimizer(cfg, agent), "lr") == pytest.approx(2.3e-3)


@pytest.mark.parametrize("override,key", [
    ("agent.batch=0", "agent.batch"),
    ("optimizer.lr=-1", "optimizer.lr"),
    ("agent.gamma=1.5", "agent.gamma"),
    ("agent.gamma=0", "agent.gamma"),
    ("agent.batch=abc", "agent.batch"),
    ("+agent.bacth=3", "agent.bacth"),
    ("env.id=NoSuchEnv-v0", "env.id"),
    ("agent.loss=l1", "agent.loss"),
    ("search.values.optimizer.lr='interval(0.1, 0.01)'", "search.optimizer.lr"),
    ("+search.values.agent.nope='choice(1,2)'", "search.values.agent.nope"),
    ("adjuster=ess", "adjuster.kind"),
    ("adjuster=gns|+adjuster.evry=3", "adjuster"),
    ("agent.hidden_size=abc", "agent.hidden_size"),
    ("agent.hidden_size=0", "agent.hidden_size"),
    ("+search.groups.optmizer='choice(adam,sgd)'", "search.groups.optmizer: no config group 'optmizer'"),
    ("+search.groups.optimizer='choice(adam,nadam)'", "search.groups.optimizer: no option 'nadam'"),
])
def test_bad_values_name_the_key(override, key) -> None:
    with pytest.raises(ConfigError) as info:
        validate(compose_cfg(override.split("|")))
    message = str(info.value)
    assert message.startswith(key) and "\n" not in message


def test_bad_config_exits_before_training_with_one_line(tmp_path) -> None:
    out = run_app(["agent.batch=0"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["error: agent.batch: must be > 0, got 0"]
    assert not (tmp_path / "outputs").exists()  # Hydra's run dir (.hydra/, an empty log) is removed again
    (tmp_path / "outputs" / "mine").mkdir(parents=True)
    out = run_app(["agent=dqn", "env=pendulum"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and "dqn supports discrete actions" in out.stderr
    assert [p.name for p in (tmp_path / "outputs").iterdir()] == ["mine"]  # what was there stays
    out = run_app(["tuner=optuna", "tuner.sampler=bogus"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and out.stderr.strip().startswith("error: tuner.sampler")
    assert not (tmp_path / "studies").exists()


@pytest.mark.parametrize("storage", ["redis://x", "mysql://u:secret@db/optuna", "sqlite://"])
def test_bad_storage_is_one_line_and_creates_nothing(tmp_path, storage) -> None:
    out = run_app(["tuner=optuna", f"tuner.storage='{storage}'", "logger=none"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: tuner.storage:") and "secret" not in lines[0]
    assert list(tmp_path.iterdir()) == []  # no study dir, no Hydra run dir


def test_supported_storages_pass_the_check(tmp_path) -> None:
    from tuner.study.storage import check_storage

    for storage in (None, str(tmp_path / "j.log"), f"sqlite:///{tmp_path}/t.db", "postgresql://u:pw@h/db"):
        check_storage(storage)
    with pytest.raises(ConfigError, match="^tuner.storage"):
        check_storage("redis://x")


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_missing_device_is_one_line_exit_2(backend, tmp_path) -> None:
    out = run_app([f"backend={backend}", "backend.device=cuda"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: backend.device: cuda requested"), lines
    assert not list(tmp_path.glob("outputs/*/*/result.json"))
    with pytest.raises(ConfigError, match="^backend.device: unknown device 'gpu'"):
        validate(compose_cfg(["backend.device=gpu"]))


def test_agent_of_another_backend_is_one_line() -> None:
    with pytest.raises(ConfigError, match="^agent._target_: note_rl.agents.tf.DQN is an agent of another backend"):
        validate(compose_cfg(["agent._target_=note_rl.agents.tf.DQN"]))  # backend=torch
    assert validate(compose_cfg(["backend=tf"])).agent._target_ == "note_rl.agents.tf.DQN"


def test_config_objects_are_built_from_their_targets() -> None:
    """Policy, buffer and optimizer nodes are instantiated from ``_target_``: a framework optimizer
    class works as well as a note_rl.optim spec, a buffer class picks the replay storage."""
    from note_rl.buffers import HerReplayBuffer, PrioritizedReplayBuffer
    from note_rl.policy import LinearEpsGreedyPolicy

    cfg = OmegaConf.to_container(validate(compose_cfg(["buffer=prioritized", "budget.steps=1000",
                                                       "agent.policy.final_eps=0.1"])), resolve=True)
    agent = build_agent(cfg)
    assert isinstance(agent.policy, LinearEpsGreedyPolicy) and agent.policy.final_eps == 0.1
    assert agent.policy.decay_steps == 160  # ${budget_fraction:0.16} of budget.steps
    assert agent.PR and isinstance(agent.make_buffer(), PrioritizedReplayBuffer)

    nadam = ["optimizer=sgd", "optimizer._target_=torch.optim.NAdam", "~optimizer.momentum",
             "+optimizer.momentum_decay=0.005"]  # sgd.yaml's keys minus momentum: lr, weight_decay
    cfg = OmegaConf.to_container(validate(compose_cfg(nadam)), resolve=True)
    opt = build_optimizer(cfg, build_agent(cfg))
    assert type(opt).__name__ == "NAdam" and opt.defaults["momentum_decay"] == 0.005
    assert opt.defaults["lr"] == pytest.approx(2.3e-3)  # optimizer.lr null: the agent's lr
    with pytest.raises(ConfigError, match="^optimizer.beta1: Key 'beta1' not in"):
        validate(compose_cfg(["optimizer._target_=torch.optim.NAdam"]))  # NAdam takes betas, not beta1

    noise = ["+agent.noise._target_=note_rl.noise.OrnsteinUhlenbeckProcess", "+agent.noise.theta=0.15",
             "+agent.noise.sigma=0.2"]
    agent = build_agent(OmegaConf.to_container(validate(compose_cfg(noise)), resolve=True))
    assert type(agent.noise).__name__ == "OrnsteinUhlenbeckProcess" and agent.noise.theta == 0.15
    with pytest.raises(ConfigError, match="^agent.noise.theta: missing"):  # theta has no default (Note_rl)
        validate(compose_cfg(noise[:1]))

    her = ["env=bit_flip", "env.kwargs.n_bits=4"]
    agent = build_agent(OmegaConf.to_container(validate(compose_cfg(her)), resolve=True))
    assert agent.HER and isinstance(agent.make_buffer(), HerReplayBuffer) and agent.state_dim == 8


@pytest.mark.parametrize("preset", _options("hyperparams"))
def test_hyperparams_presets_reach_the_agent(preset) -> None:
    """``agent=<a> env=<e>`` loads conf/hyperparams/<a>_<e>.yaml over the agent's defaults (and the
    command line still wins); the agent builds on that env."""
    agent, env = preset.split("_", 1)
    data = OmegaConf.load(os.path.join(CONF_DIR, "hyperparams", f"{preset}.yaml"))
    cfg = validate(compose_cfg([f"agent={agent}", f"env={env}", "backend=torch"]))
    for key, value in data.get("agent", {}).items():
        if key not in ("policy", "noise"):
            assert cfg.agent[key] == value, key
    assert cfg.budget.steps == data.budget.steps
    built = build_agent(OmegaConf.to_container(cfg, resolve=True))
    assert built.gamma is not None and built.batch == cfg.agent.batch
    if "noise" in data.get("agent", {}):
        assert type(built.noise).__name__ == data.agent.noise._target_.rsplit(".", 1)[1]
        assert np.shape(built.noise.sample()) == (built.action_dim,)
    assert compose_cfg([f"agent={agent}", f"env={env}", "agent.lr=0.123"]).agent.lr == 0.123


@pytest.mark.parametrize("overrides,eps", [
    (["agent=ppo"], 1e-5), (["agent=ppo", "env=pendulum"], 1e-5),  # SB3's Adam for PPO
    (["agent=ppo", "optimizer.eps=1e-6"], 1e-6),  # the command line wins
    (["agent=ppo", "optimizer=adamw"], 1e-7), (["agent=dqn"], 1e-7), (["agent=ppo", "optimizer=sgd"], None)])
def test_agent_optimizer_presets(overrides, eps) -> None:
    """``hyperparams/optimizer/<agent>_<optimizer>.yaml`` sets that agent's values of that optimizer
    only: another optimizer (SGD has no eps) composes and validates as it is."""
    cfg = validate(compose_cfg(overrides))
    assert cfg.optimizer.get("eps") == eps


def test_sac_pendulum_preset_is_rl_zoo_s() -> None:
    cfg = compose_cfg(["agent=sac", "env=pendulum"])
    assert (cfg.agent.lr, cfg.budget.steps, cfg.agent.hidden_size, cfg.env.id) == (1e-3, 20000, [256, 256], "Pendulum-v1")
    assert compose_cfg(["agent=sac"]).agent.lr == 3e-4  # no preset for sac + cartpole: the agent's defaults


@pytest.mark.parametrize("agent,env,kind", [("dqn", "pendulum", "continuous"), ("sac", "cartpole", "discrete"),
                                            ("td3", "acrobot", "discrete")])
def test_agent_and_env_action_kinds_must_match(agent, env, kind) -> None:
    with pytest.raises(ConfigError) as info:
        validate(compose_cfg([f"agent={agent}", f"env={env}"]))
    assert str(info.value).startswith("env.id: ") and f"has {kind} actions" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("agent,env,message", [
    ("dqn", "simple_spread", "env.id: simple_spread_v3 is a multi-agent env; dqn trains one agent"),
    ("maddpg", "cartpole", "env.id: maddpg trains a team on a multi-agent env"),
])
def test_single_and_multi_agent_envs_must_match_the_agent(agent, env, message) -> None:
    with pytest.raises(ConfigError) as info:
        validate(compose_cfg([f"agent={agent}", f"env={env}"]))
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_env_factory_builds_discrete_mpe_and_bad_factories_are_one_line() -> None:
    cfg = validate(compose_cfg(["agent=maddpg", "env=simple_spread", "env.kwargs.continuous=false"]))
    agent = build_agent(OmegaConf.to_container(cfg, resolve=True))
    assert agent.discrete and agent.action_dim == 5
    with pytest.raises(ConfigError, match=r"^env.factory: cannot import 'nowhere.env'"):
        validate(compose_cfg(["agent=maddpg", "env=simple_spread", "env.factory=nowhere.env"]))


def test_goal_env_preset_brings_her_and_plain_buffers_are_refused() -> None:
    cfg = validate(compose_cfg(["agent=ddpg", "env=point_reach"]))
    assert cfg.buffer.name == "her" and cfg.agent.tau == 0.05  # the env's choice and the ddpg preset
    agent = build_agent(OmegaConf.to_container(cfg, resolve=True))
    assert agent.HER and (agent.state_dim, agent.action_dim) == (4, 2)
    with pytest.raises(ConfigError, match=r"^buffer: note_rl/PointReach-v0 is a goal env .*buffer=her$"):
        validate(compose_cfg(["agent=ddpg", "env=point_reach", "buffer=uniform"]))


def test_discrete_observation_env_builds_with_one_hot_states() -> None:
    cfg = validate(compose_cfg(["env.id=FrozenLake-v1", "+env.kwargs.is_slippery=false"]))
    agent = build_agent(OmegaConf.to_container(cfg, resolve=True))
    assert agent.state_dim == 16 and agent.env.observation_space.shape == (16,)


def test_seed_train_options_and_trajectory_buffer_from_config(tmp_path) -> None:
    """Note_rl's train() options are strategy settings, TRL is buffer=trajectory for a user's agent."""
    from tests.tuner import trl_agent
    from tuner.run.train import run_training

    cfg = OmegaConf.to_container(validate(compose_cfg([
        "agent=dqn", "buffer=trajectory", "agent._target_=tests.tuner.trl_agent.PairAgent", "agent.batch=8",
        "agent.train_freq=1", "agent.num_updates=1", "agent.learning_starts=60", "budget.steps=300",
        "strategy.parallel_training_and_save=true", "logger=none"])), resolve=True)
    assert train_kwargs(cfg)["parallel_training_and_save"] is True and train_kwargs(cfg)["shuffle"] is False
    trl_agent.SHAPES.clear()
    result = run_training(cfg, str(tmp_path))
    assert result["env_steps"] == 300 and set(trl_agent.SHAPES) == {(8, 2, 4)}
    uniform = OmegaConf.to_container(validate(compose_cfg(["strategy.shuffle=true", "strategy.processes_pr=2"])),
                                     resolve=True)
    assert train_kwargs(uniform)["shuffle"] is True and train_kwargs(uniform)["processes_pr"] == 2
    with pytest.raises(ConfigError, match="strategy.shuffle: true is for buffer=uniform"):
        validate(compose_cfg(["strategy.shuffle=true", "buffer=prioritized", "agent=ppo", "agent.n_steps=null"]))
    with pytest.raises(ConfigError, match="strategy.processes_her: must be > 0"):
        validate(compose_cfg(["strategy.processes_her=0"]))


@pytest.mark.parametrize("agent,expected", [("dqn", 4), ("sac", 4), ("ppo", 4)])
def test_agent_n_envs_reaches_the_agent(agent, expected) -> None:
    """``agent.n_envs``: a constructor argument of the rollout agents, a ``set()`` setting of the
    off-policy ones (vectorised replay collection); either way the agent ends with it."""
    base = [f"agent={agent}", *(["env=pendulum"] if agent == "sac" else [])]
    built = build_agent(OmegaConf.to_container(validate(compose_cfg([*base, "agent.n_envs=4"])), resolve=True))
    assert built.n_envs == expected
    default = build_agent(OmegaConf.to_container(validate(compose_cfg(base)), resolve=True))
    assert default.n_envs == (8 if agent == "ppo" else 1)


@pytest.mark.parametrize("env,name", [("bit_flip", "dqn_note_rl-BitFlip-v0"), ("point_reach", "dqn_note_rl-PointReach-v0"),
                                      ("cartpole", "dqn_CartPole-v1")])
def test_default_study_names_are_plain_names_for_every_env(env, name) -> None:
    """An env id with a namespace (``note_rl/BitFlip-v0``) made the default study name contain ``/``,
    which tuner.study_name refuses: every HER study, and the printed "tune this agent" command, failed."""
    from tuner.study.settings import tuner_settings

    agent = "ddpg" if env == "point_reach" else "dqn"
    cfg = compose_cfg([f"agent={agent}", f"env={env}", "tuner=optuna"])
    assert cfg.tuner.study_name == name.replace("dqn", agent, 1) and cfg.tuner.study_dir == f"studies/{cfg.tuner.study_name}"
    assert tuner_settings(cfg.tuner).study_name == cfg.tuner.study_name
