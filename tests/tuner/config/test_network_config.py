"""Networks from config in the tuner (issue 35, item 2): ``agent.network`` / ``network=<option>`` /
an image env preset's ``env.network`` compose, build the agent's encoder, can be searched, and a bad
node is one line naming its key (exit code 2 from the app)."""

from __future__ import annotations

import importlib.util
import warnings

import pytest
from omegaconf import OmegaConf

from tests.tuner.conftest import compose_cfg, run_app
from tuner.common.errors import ConfigError

needs_minigrid = pytest.mark.skipif(importlib.util.find_spec("minigrid") is None, reason="minigrid not installed")


def _validate(overrides, check_env=False):
    from tuner.config.schema import validate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return validate(compose_cfg(overrides), check_env=check_env)


def test_agents_default_to_no_network_and_take_an_option_or_a_node() -> None:
    for agent in ("dqn", "ppo", "a2c", "trpo"):
        assert _validate([f"agent={agent}"]).agent.network is None
    cfg = _validate(["agent=a2c", "network=nature_cnn", "agent.network.features=256"])
    assert OmegaConf.to_container(cfg.agent.network) == {"_target_": "note_rl.agents.nets.NatureCNN", "features": 256,
                                                         "layout": "auto", "normalize_images": True}
    cfg = _validate(["agent=dqn", "agent.network={_target_:note_rl.agents.nets.MinAtarCNN,features:64}"])
    assert cfg.agent.network.features == 64


@pytest.mark.parametrize("overrides,key", [
    (["agent=ppo", "agent.network=3"], "agent.network: expected null or a node with a _target_"),
    (["agent=ppo", "agent.network={_target_:note_rl.agents.nets.MinAtarCNN,features:0}"], "agent.network: MinAtarCNN"),
    (["agent=ppo", "agent.network={_target_:tests.tuner.config.test_network_config.Nothing}"], "agent.network._target_:"),
    (["agent=ppo", "agent.network={_target_:tests.note_rl.agents.test_networks.TinyEncoder,depth:3}"],
     "agent.network.depth: not an argument"),
    (["agent=sac", "network=mlp"], "agent.network:"),
    (["agent=ppo", "network=minatar_cnn", "strategy=pool_network", "strategy.processes=2"], "strategy=pool_network:"),
])
def test_bad_networks_are_one_line_naming_the_key(overrides, key) -> None:
    with pytest.raises(ConfigError) as info:
        _validate(overrides)
    assert str(info.value).startswith(key) and "\n" not in str(info.value), str(info.value)


@needs_minigrid
@pytest.mark.parametrize("overrides,key", [
    (["agent=ppo", "env=minigrid_empty", "network=nature_cnn"], "agent.network: MiniGrid-Empty-5x5-v0: NatureCNN"),
    (["agent=ppo", "env=minigrid_empty", "env.network=null"], "agent.network: MiniGrid-Empty-5x5-v0 has image"),
    (["agent=dqn", "env=cartpole", "network=minatar_cnn"], "agent.network: CartPole-v1: a convolutional network needs"),
    (["agent=dqn", "env=minigrid_empty", "network=mlp"], "agent.network: MiniGrid-Empty-5x5-v0 has image observations"),
])
def test_networks_that_do_not_fit_the_env_are_refused(overrides, key) -> None:
    with pytest.raises(ConfigError) as info:
        _validate(overrides, check_env=True)
    assert str(info.value).startswith(key), str(info.value)


@needs_minigrid
def test_an_image_preset_builds_its_network_and_agent_network_wins() -> None:
    pytest.importorskip("torch")
    from note_rl.agents.nets import MinAtarCNN
    from tuner.run.build import build_agent

    cfg = OmegaConf.to_container(_validate(["agent=ppo", "env=minigrid_empty"], check_env=True), resolve=True)
    agent = build_agent(cfg)
    assert agent.network == MinAtarCNN() and agent.obs_shape == (7, 7, 3) and agent.state_dim is None
    overrides = ["agent=dqn", "env=minigrid_empty", "network=minatar_cnn", "agent.network.features=32"]
    cfg = OmegaConf.to_container(_validate(overrides, check_env=True), resolve=True)
    assert build_agent(cfg).network == MinAtarCNN(features=32)


def test_a_searched_field_inside_the_network_composes() -> None:
    """``agent.network.features`` is a search path like any other once a network is set; with the
    ``network`` group searched too, ``when`` keeps it to the options that have the key; a path under a
    null network is refused."""
    from tuner.config.search import parse_space, to_overrides

    base = ["agent=ppo", "network=minatar_cnn"]
    cfg = _validate(base)
    search = {"groups": {"network": "choice(minatar_cnn, mlp)"},
              "values": {"agent": {"network": {"features": "choice(64, 128)"}}},
              "when": {"agent.network.features": "network=minatar_cnn"}}
    space = parse_space(search, cfg)
    trial = to_overrides({"network": "minatar_cnn", "agent.network.features": 64}, space)
    assert trial == ["network=minatar_cnn", "agent.network.features=64"]
    assert _validate(base + trial).agent.network.features == 64
    assert _validate(base + ["network=mlp"]).agent.network._target_ == "note_rl.agents.nets.MLP"
    with pytest.raises(ConfigError, match="search.values.agent.network.features: no such config key"):
        parse_space({"values": {"agent": {"network": {"features": "choice(64, 128)"}}}}, _validate(["agent=ppo"]))


def test_the_app_exits_2_with_one_line(tmp_path) -> None:
    out = run_app(["agent=ppo", "agent.network={_target_:note_rl.agents.nets.NatureCNN,features:-1}"], str(tmp_path),
                  check=False)
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: agent.network:"), out.stderr


def test_saved_runs_may_name_the_built_in_networks_and_image_factories_only() -> None:
    from tuner.config.untrusted import UntrustedFileError, check_code_refs

    check_code_refs({"agent": {"network": {"_target_": "note_rl.agents.nets.MinAtarCNN"}},
                     "env": {"factory": "note_rl.image_envs.minigrid", "network": {"_target_": "note_rl.agents.nets.NatureCNN"}}},
                    "result.json")
    # Module's target names any class: a file read back may not use it (trust_code=true opts in)
    with pytest.raises(UntrustedFileError, match="agent.network._target_"):
        check_code_refs({"agent": {"network": {"_target_": "note_rl.agents.nets.Module", "target": "os.system"}}}, "r")
    with pytest.raises(UntrustedFileError, match="agent.network._target_"):
        check_code_refs({"agent": {"network": {"_target_": "my_pkg.Encoder"}}}, "r")


def test_recorded_frames_become_watchable_uint8() -> None:
    import numpy as np

    from note_rl.core.plots import _rgb8

    frame = _rgb8(np.full((10, 10, 3), 0.5))  # MinAtar renders floats in [0, 1] on a 10x10 grid
    assert frame.dtype == np.uint8 and frame.shape == (160, 160, 3) and frame[0, 0, 0] == 127
    big = np.zeros((400, 600, 3), np.uint8)
    assert _rgb8(big) is big


@needs_minigrid
def test_train_eval_and_play_an_image_model_from_the_command_line(tmp_path) -> None:
    """A CNN agent on an image preset trains, and its saved model evaluates and plays without
    trust_code (the network and the env factory are the project's own); export refuses it in one line."""
    import glob

    run_app(["agent=ppo", "env=minigrid_empty", "budget.steps=200", "agent.n_steps=16", "agent.n_envs=2",
             "agent.batch=16", "agent.n_epochs=1", "eval.episodes=1", "logger=none"], str(tmp_path))
    model = glob.glob(str(tmp_path / "outputs" / "*" / "*" / "model.npz"))[0]
    out = run_app(["eval", f"model={model}", "episodes=1"], str(tmp_path))
    assert "ppo on MiniGrid-Empty-5x5-v0: mean" in out.stdout, out.stdout + out.stderr
    run_app(["play", f"model={model}", f"out={tmp_path / 'episode.gif'}", "max_steps=5"], str(tmp_path))
    assert (tmp_path / "episode.gif").stat().st_size > 0
    out = run_app(["export", f"model={model}"], str(tmp_path), check=False)
    assert out.returncode == 2 and "only MLP networks can be exported" in out.stderr, out.stderr
