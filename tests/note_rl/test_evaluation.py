"""Evaluation episodes (note_rl.evaluation): their own seeds, greedy actions, the EvalCallback
schedule, and the tuner's objective / pruner reports built on them."""

import gymnasium as gym
import numpy as np
import pytest
from omegaconf import OmegaConf

from note_rl.evaluation import EVAL_SEED, EvalCallback, evaluate
from note_rl.policy import EpsGreedyQPolicy
from tests.conftest import agents_module

pytest.importorskip("torch")


class SeedEcho(gym.Env):
    """One-step episodes: the observation is ``reset seed - EVAL_SEED``, the reward
    ``10 * action + observation`` (so a return names both the seed and the action)."""

    observation_space = gym.spaces.Box(-1e9, 1e9, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.obs = float((seed if seed is not None else EVAL_SEED + 100) - EVAL_SEED)
        return np.array([self.obs], np.float32), {}

    def step(self, action):
        return np.array([self.obs], np.float32), 10.0 * int(action) + self.obs, True, False, {}


def _always_action_one(backend):
    agent = agents_module(backend).DQN(1, [1], 2, env=SeedEcho(), seed=0)
    zero_w = [np.zeros((1, 1), np.float32), np.zeros(1, np.float32), np.zeros((1, 2), np.float32),
              np.array([0.0, 1.0], np.float32)]  # Q(s) = [0, 1] everywhere: greedy action 1
    agent.set(policy=EpsGreedyQPolicy(1.0))  # training would act at random
    agent.load_initial_weights(zero_w)
    return agent


def test_evaluation_uses_its_own_seeds_and_greedy_actions(backend) -> None:
    agent = _always_action_one(backend)
    assert evaluate(agent, episodes=3) == [10.0, 11.0, 12.0]  # seeds EVAL_SEED + 0, 1, 2; action 1
    assert evaluate(agent, episodes=2, seed=EVAL_SEED + 5) == [15.0, 16.0]
    assert evaluate(agent, episodes=3) == [10.0, 11.0, 12.0]  # the same seeds every time
    with pytest.raises(ValueError, match="episodes=0"):
        evaluate(agent, episodes=0)


def test_eval_callback_schedule_and_final_evaluation() -> None:
    import torch

    agent = agents_module("torch").DQN(4, 16, 2, seed=0)
    agent.set(policy=EpsGreedyQPolicy(0.1), pool_size=1000, batch=32, seed=0)
    seen = []
    cb = EvalCallback(every=100, episodes=2, on_evaluation=seen.append)
    agent.train(torch.optim.Adam(agent.param), None, steps=330, callbacks=[cb], p=0)
    steps = [r["step"] for r in cb.history]
    assert steps[-1] == agent.step_counter == 330  # the final policy is evaluated
    # one evaluation at the first episode end at or after each multiple of 100
    assert len(steps) == 4 and all(s >= m for s, m in zip(steps, (100, 200, 300)))
    assert all(len(r["returns"]) == 2 and r["mean"] == pytest.approx(np.mean(r["returns"])) for r in cb.history)
    assert seen == cb.history
    with pytest.raises(ValueError, match="every=0"):
        EvalCallback(every=0)


def _cfg(overrides):
    from tests.tuner.conftest import compose_cfg
    from tuner.config.schema import validate

    return OmegaConf.to_container(validate(compose_cfg(["agent=ppo", "agent.n_envs=2", "agent.n_steps=64",
                                                         "agent.batch=64", "agent.n_epochs=1", "budget.steps=1280",
                                                         "eval.episodes=2", "backend.threads=1", "logger=none",
                                                         *overrides])), resolve=True)


def test_tuner_objective_and_reports_come_from_evaluations(tmp_path) -> None:
    from tuner.run.train import run_training

    reports = []
    result = run_training(_cfg([]), str(tmp_path), reporter=lambda i, v: reports.append((i, v)) and False)
    evals = result["evaluations"]
    assert result["objective_source"] == "eval" and len(evals) == 5  # every 1280 / 5 = 256 steps
    assert result["objective"] == result["final_eval_mean_return"] == evals[-1]["mean"]
    assert reports == [(i, e["mean"]) for i, e in enumerate(evals)]  # the pruner sees evaluations
    trained = run_training(_cfg(["objective.source=train"]), None, reporter=lambda i, v: False, report_every=2)
    assert trained["objective"] == trained["final_mean_return"] and trained["evaluations"]


def test_a_pruned_run_skips_the_final_evaluation(tmp_path) -> None:
    from tuner.run.train import run_training

    result = run_training(_cfg(["eval.every=512"]), None, reporter=lambda i, v: True)
    assert result["status"] == "pruned" and len(result["evaluations"]) == 1
    assert result["evaluations"][0]["step"] >= 512 and result["env_steps"] < 1280
