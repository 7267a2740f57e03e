"""Python API misuse is one clear error naming the argument, before anything runs."""

from __future__ import annotations

import pytest

from note_rl import LambdaCallback
from note_rl.policy import EpsGreedyQPolicy
from tests.conftest import agents_module, make_optimizer, train


@pytest.mark.parametrize("args,message", [((-4, 16, 2), r"DQN\(state_dim=-4\): must be a positive integer"),
                                          ((4, 16, 0), r"DQN\(action_dim=0\): must be a positive integer"),
                                          ((4.5, 16, 2), r"DQN\(state_dim=4.5\): must be a positive integer")])
def test_constructor_dimensions(args, message) -> None:
    with pytest.raises(ValueError, match=message):
        agents_module("torch").DQN(*args)


def test_set_refuses_what_is_not_a_policy_or_noise() -> None:
    agent = agents_module("torch").DQN(4, 16, 2)
    with pytest.raises(ValueError, match=r"set\(policy='greedy'\): not a policy object"):
        agent.set(policy="greedy")
    with pytest.raises(ValueError, match=r"set\(policy=3\): not a policy object"):
        agent.set(policy=[EpsGreedyQPolicy(0.1), 3])
    with pytest.raises(ValueError, match=r"set\(noise='ou'\): not a noise object"):
        agent.set(noise="ou")
    agent.set(policy=[EpsGreedyQPolicy(0.1)])  # a list of policies (one per process) is fine


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_train_refuses_a_missing_batch_and_non_callbacks_and_warns_of_a_useless_pool(backend) -> None:
    agent = agents_module(backend).DQN(4, 16, 2)
    opt = make_optimizer(backend, agent.param)
    with pytest.raises(ValueError, match=r"train\(\): batch is not set; call set\(batch=..., pool_size=...\)"):
        train(agent, backend, opt, 1, p=0)
    assert agent.step_counter == 0  # nothing ran
    agent.set(policy=EpsGreedyQPolicy(0.1), pool_size=10, batch=64)
    with pytest.warns(UserWarning, match=r"pool_size=10 is smaller than batch=64: no mini-batch can be drawn"):
        train(agent, backend, opt, None, p=0, steps=200)
    # collected past the default learning_starts (batch=64 env steps), never trained: what the warning said
    assert agent.step_counter == 200 and agent.batch_counter == 0
    agent.set(pool_size=100, batch=8)
    steps = agent.step_counter
    with pytest.raises(ValueError, match=r"train\(callbacks=...\): item 1 \(object\) is not a callback"):
        train(agent, backend, opt, 1, p=0, callbacks=[LambdaCallback(), object()])
    assert agent.step_counter == steps  # nothing ran
    train(agent, backend, opt, 1, p=0)
    assert agent.step_counter > steps


def test_seed_001_names_ma_and_epsilon() -> None:
    """Note_rl 001 writes ``set(..., MA=True)``, ``set(epsilon=...)`` and ``EpsGreedyQPolicy(epsilon=0.01)``."""
    agent = agents_module("torch").DQN(4, 16, 2)
    agent.set(epsilon=0.3)
    assert isinstance(agent.policy, EpsGreedyQPolicy) and agent.policy.eps == 0.3
    policy = EpsGreedyQPolicy(epsilon=0.01)
    assert policy.eps == 0.01
    agent.set(policy=policy, epsilon=0.05)
    assert agent.policy is policy and policy.eps == 0.05
    with pytest.raises(ValueError, match=r"set\(epsilon=1.5\): must be a probability"):
        agent.set(epsilon=1.5)
    with pytest.raises(ValueError, match=r"MA is another name for MARL"):
        agent.set(MA=True, MARL=False)
    agent.set(MA=False)
    assert agent.MARL is False
