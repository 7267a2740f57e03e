"""Every built-in agent on every env preset, in both backends: a few hundred env steps where the pair
is accepted, one line naming the key where it is refused.  PPO and A2C crashed on every MuJoCo preset
(float64 observations) and nothing tried the pair; this matrix would have.  Runs in-process (one
``run_training`` per accepted pair, budgets shrunk), so the whole matrix costs minutes, not a
subprocess per case."""

from __future__ import annotations

import importlib.util
import math
import os
import warnings

import pytest
from omegaconf import OmegaConf

from tests.tuner.conftest import compose_cfg
from tuner.common.errors import ConfigError

AGENTS = [os.path.splitext(f)[0] for f in sorted(os.listdir(os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                                                         "conf", "agent")))]
ENVS = [os.path.splitext(f)[0] for f in sorted(os.listdir(os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                                                       "conf", "env")))]
# small budgets: the pair must build, act, store, update and evaluate, not learn
SHRINK = ["budget.steps=200", "eval.episodes=1", "eval.every=null", "logger=none", "objective.last_k=1"]
PER_AGENT = {"dqn": ["agent.learning_starts=50", "agent.train_freq=4", "agent.num_updates=1", "agent.batch=16",
                     "buffer.pool_size=1000"],
             "ppo": ["agent.n_steps=16", "agent.n_envs=2", "agent.batch=16", "agent.n_epochs=1"],
             "a2c": ["agent.n_steps=8", "agent.n_envs=2"],
             "trpo": ["agent.n_steps=32", "agent.n_envs=2", "agent.batch=16", "agent.n_critic_updates=1",
                      "agent.cg_max_steps=3"],
             "acer": ["agent.n_steps=8", "agent.n_envs=2", "agent.replay_start=32", "agent.buffer_size=160"],
             "ddpg": ["agent.learning_starts=50", "agent.batch=16", "buffer.pool_size=1000"],
             "td3": ["agent.learning_starts=50", "agent.batch=16", "buffer.pool_size=1000"],
             "sac": ["agent.learning_starts=50", "agent.batch=16", "buffer.pool_size=1000", "agent.train_freq=1",
                     "agent.num_updates=1"],
             "maddpg": ["agent.learning_starts=50", "agent.batch=16", "buffer.pool_size=1000"]}
BACKENDS = ["torch", "tf"]


def _case(agent: str, env: str, backend: str) -> list[str]:
    return [f"agent={agent}", f"env={env}", f"backend={backend}", *SHRINK, *PER_AGENT.get(agent, [])]


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("agent", AGENTS)
def test_every_agent_on_every_env_preset_trains_or_is_refused_in_one_line(agent, backend, tmp_path) -> None:
    from tuner.config.schema import validate
    from tuner.run.train import run_training

    accepted, refused = [], []
    for env in ENVS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cfg = validate(compose_cfg(_case(agent, env, backend)))
        except ConfigError as exc:
            line = str(exc)
            assert "\n" not in line and line.split(":", 1)[0].replace("=", ".").split(".")[0] in \
                ("env", "agent", "buffer", "strategy", "backend"), (env, line)
            refused.append(env)
            continue
        plain = OmegaConf.to_container(cfg, resolve=True)
        result = run_training(plain, str(tmp_path / env))
        assert result["env_steps"] >= 200 and result["final_eval_mean_return"] is not None, (env, result["env_steps"])
        assert math.isfinite(result["final_eval_mean_return"]), env
        accepted.append(env)
    # each agent trains on the presets of its action space (and MADDPG on its multi-agent env)
    expected = {"dqn": {"cartpole", "acrobot", "lunar_lander", "mountain_car", "bit_flip"},
                "maddpg": {"simple_spread"}}
    continuous = {"pendulum", "mountain_car_continuous", "lunar_lander_continuous", "hopper", "half_cheetah"}
    want = expected.get(agent, continuous | ({"point_reach"} if agent in ("ddpg", "td3", "sac") else
                                            {"cartpole", "acrobot", "lunar_lander", "mountain_car"}))
    # the image presets (issue 35): every agent with a network setting reads them, when their extra is installed
    if agent in ("dqn", "ppo", "a2c", "trpo"):
        want |= {env for env, packages in (("minatar_breakout", ["minatar"]), ("minigrid_empty", ["minigrid"]),
                                            ("atari_breakout", ["ale_py", "cv2"]))
                 if all(importlib.util.find_spec(package) is not None for package in packages)}
    assert want <= set(accepted), (agent, backend, sorted(want - set(accepted)), refused)
