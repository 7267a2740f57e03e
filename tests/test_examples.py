"""examples/agents.py: every agent's script runs end to end (a few hundred env steps; the learning
claims are the slow learning tests' job)."""

import importlib.util
import os

import numpy as np
import pytest

pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _examples():
    spec = importlib.util.spec_from_file_location("agents_example", os.path.join(ROOT, "examples", "agents.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["dqn", "ppo", "ppo_gaussian", "a2c", "trpo", "acer", "ddpg", "td3", "sac", "ddpg_her", "maddpg"])
def test_every_agent_example_runs(name) -> None:
    if name == "maddpg":
        pytest.importorskip("mpe2")
    agent = _examples().EXAMPLES[name]("torch", steps=300, seed=0)
    assert agent.step_counter >= 300 and agent.reward_list and np.all(np.isfinite(agent.reward_list))


@pytest.mark.parametrize("name", ["a2c", "sac"])
def test_examples_run_in_keras(name) -> None:
    pytest.importorskip("tensorflow")
    agent = _examples().EXAMPLES[name]("tf", steps=300, seed=0)
    assert agent.backend_name == "tf" and agent.step_counter >= 300
