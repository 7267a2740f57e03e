"""A corpus of Python API misuse (issue 14): every case is a ``ValueError`` or ``TypeError`` of one
line that names the argument, raised before anything trains.  In process: the whole corpus takes a
second."""

from __future__ import annotations

import pytest

from note_rl.buffers import ReplayBuffer
from note_rl.policy import EpsGreedyQPolicy
from tests.conftest import agents_module

# set(**kwargs) on a fresh DQN -> the start of the message
SET = [
    ({"batch": 0}, "set(batch=0): must be a positive integer"),
    ({"batch": -1}, "set(batch=-1): must be a positive integer"),
    ({"batch": 1.5}, "set(batch=1.5): must be a positive integer"),
    ({"batch": True}, "set(batch=True): must be a positive integer"),
    ({"batch": "64"}, "set(batch='64'): must be a positive integer"),
    ({"pool_size": 0}, "set(pool_size=0): must be a positive integer"),
    ({"pool_size": -5}, "set(pool_size=-5): must be a positive integer"),
    ({"pool_size": 1.5}, "set(pool_size=1.5): must be a positive integer"),
    ({"update_steps": 0}, "set(update_steps=0): must be a positive integer"),
    ({"train_freq": 0}, "set(train_freq=0): must be a positive integer"),
    ({"num_updates": 0}, "set(num_updates=0): must be a positive integer"),
    ({"num_steps": 0}, "set(num_steps=0): must be a positive integer"),
    ({"update_batches": 0}, "set(update_batches=0): must be a positive integer"),
    ({"alpha": -1}, "set(alpha=-1): must be >= 0"),
    ({"alpha": "x"}, "set(alpha='x'): must be a number"),
    ({"beta": -0.1}, "set(beta=-0.1): must be >= 0"),
    ({"lambda_": 2}, "set(lambda_=2): must be within [0, 1]"),
    ({"lambda_": -0.5}, "set(lambda_=-0.5): must be within [0, 1]"),
    ({"her_k": -1}, "set(her_k=-1): must be a non-negative integer"),
    ({"her_k": 1.5}, "set(her_k=1.5): must be a non-negative integer"),
    ({"learning_starts": -1}, "set(learning_starts=-1): must be a non-negative integer"),
    ({"learning_starts": 2.5}, "set(learning_starts=2.5): must be a non-negative integer"),
    ({"policy": "greedy"}, "set(policy='greedy'): not a policy object"),
    ({"policy": 3}, "set(policy=3): not a policy object"),
    ({"policy": [EpsGreedyQPolicy(0.1), "x"]}, "set(policy='x'): not a policy object"),
    ({"noise": "ou"}, "set(noise='ou'): not a noise object"),
    ({"buffer": dict}, "set(buffer=<class 'dict'>): must be a ReplayBuffer subclass"),
    ({"buffer": 3}, "set(buffer=3): must be a ReplayBuffer subclass"),
    ({"buffer": ReplayBuffer(10)}, "set(buffer=<note_rl.buffers.replay.ReplayBuffer"),
    ({"epsilon": 1.5}, "set(epsilon=1.5): must be a probability in [0, 1]"),
    ({"epsilon": -0.1}, "set(epsilon=-0.1): must be a probability in [0, 1]"),
    ({"criterion": "x"}, "set(criterion='x'): must be a number"),
    ({"initial_TD": "x"}, "set(initial_TD='x'): must be a number"),
    ({"initial_ratio": None, "alpha": "0.5"}, "set(alpha='0.5'): must be a number"),
    ({"PR": "yes"}, "set(PR='yes'): must be True or False"),
    ({"HER": 2}, "set(HER=2): must be True or False"),
    ({"MARL": "x"}, "set(MARL='x'): must be True or False"),
    ({"TRL": None, "IRL": "no"}, "set(IRL='no'): must be True or False"),
    ({"seed": -1}, "set(seed=-1): must be a non-negative integer"),
    ({"seed": "a"}, "set(seed='a'): must be a non-negative integer"),
    ({"seed": 1.5}, "set(seed=1.5): must be a non-negative integer"),
    ({"PR": True, "TRL": True}, "set(): TRL=True cannot be combined with PR=True"),
    # refused before anything is allocated, with what it would need (a lower bound: 20 bytes a transition)
    ({"pool_size": 10**12}, "set(pool_size=1000000000000): 1000000000000 transitions need at least"),
    # non-finite numbers passed every range test and then trained on NaN priorities
    ({"alpha": float("nan")}, "set(alpha=nan): must be a finite number"),
    ({"beta": float("inf")}, "set(beta=inf): must be a finite number"),
    ({"lambda_": float("nan")}, "set(lambda_=nan): must be a finite number"),
    ({"initial_TD": float("-inf")}, "set(initial_TD=-inf): must be a finite number"),
    ({"criterion": float("nan")}, "set(criterion=nan): must be a finite number"),
    # Keras seeds numpy's legacy generator, which takes seeds below 2**32 (2**64 was a traceback)
    ({"seed": 2**32}, "set(seed=4294967296): must be a non-negative integer below 2**32"),
    ({"seed": 2**64}, "set(seed=18446744073709551616): must be a non-negative integer below 2**32"),
    ({"HER": True, "TRL": True}, "set(): TRL=True cannot be combined with HER=True"),
]


# ids from the messages, not the arguments: an object's repr holds its address, which differs between
# pytest-xdist workers (they must collect the same test names)
@pytest.mark.parametrize("kwargs,message", SET, ids=[f"{i}-{m[:48]}" for i, (_, m) in enumerate(SET)])
def test_set_misuse_is_one_line_naming_the_argument(kwargs, message) -> None:
    agent = agents_module("torch").DQN(4, 16, 2)
    with pytest.raises(ValueError) as info:
        agent.set(**kwargs)
    text = str(info.value)
    assert text.startswith(message) and "\n" not in text, text
    assert agent.batch is None and agent.step_counter == 0  # nothing was set or run


def test_an_unknown_set_argument_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'batchsize'"):
        agents_module("torch").DQN(4, 16, 2).set(batchsize=64)


# constructor (agent, args, kwargs) -> the start of the message
CTOR = [
    ("DQN", (-4, 16, 2), {}, "DQN(state_dim=-4): must be a positive integer"),
    ("DQN", (4, 16, 0), {}, "DQN(action_dim=0): must be a positive integer"),
    ("DQN", (4.5, 16, 2), {}, "DQN(state_dim=4.5): must be a positive integer"),
    ("DQN", (4, 0, 2), {}, "hidden_size=0: must be a positive int or a list of them"),
    ("DQN", (4, [16, -1], 2), {}, "hidden_size=[16, -1]: must be a positive int"),
    ("DQN", (4, "big", 2), {}, "hidden_size='big': must be a positive int"),
    ("DQN", (4, 16, 2), {"gamma": 1.5}, "DQN(gamma=1.5): must be in (0, 1]"),
    ("DQN", (4, 16, 2), {"gamma": -0.1}, "DQN(gamma=-0.1): must be in (0, 1]"),
    ("DQN", (4, 16, 2), {"loss": "l3"}, "DQN(loss='l3'): use 'mse' or 'huber'"),
    ("DQN", (4, 16, 2), {"tau": 0}, "DQN(tau=0): must be in (0, 1]"),
    ("DQN", (4, 16, 2), {"tau": 2}, "DQN(tau=2): must be in (0, 1]"),
    ("DQN", (4, 16, 2), {"activation": "swishy"}, "DQN(activation='swishy'): use one of"),
    ("DQN", (4, 16, 2), {"max_grad_norm": -1}, "DQN(max_grad_norm=-1): must be > 0 or None"),
    ("DQN", (4, 16, 2), {"device": "tpu"}, "unknown device 'tpu'; use auto, cpu, cuda, cuda:N or mps"),
    ("PPO", (4, 16, 2), {"clip": -1}, "PPO(clip=-1): must be > 0"),
    ("PPO", (4, 16, 2), {"n_steps": 0}, "PPO(n_steps=0): must be a positive integer"),
    ("PPO", (4, 16, 2), {"n_envs": 0}, "PPO(n_envs=0): must be a positive integer"),
    ("PPO", (4, 16, 2), {"n_epochs": 0}, "PPO(n_epochs=0): must be a positive integer"),
    ("PPO", (4, 16, 2), {"lam": 2}, "PPO(lam=2): must be in [0, 1]"),
    ("A2C", (4, 16, 2), {"n_steps": -1}, "A2C(n_steps=-1): must be a positive integer"),
    ("SAC", (3, 16, 1), {"env": "CartPole-v1"}, "SAC needs a Box (continuous) action space; the env has Discrete(2)"),
    ("TD3", (3, 16, 1), {"policy_delay": 0}, "TD3(policy_delay=0, n_critics=2): must be >= 1"),
    ("DDPG", (3, 16, 1), {"tau": -1}, "DDPG(tau=-1): must be in (0, 1]"),
    # dimensions that do not match the env (CartPole: 4 observations, 2 actions) failed inside train()
    ("DQN", (5, 16, 2), {}, "DQN(state_dim=5): the env has 4"),
    ("DQN", (4, 16, 3), {}, "DQN(action_dim=3): the env has 2"),
    ("PPO", (3, 16, 2), {}, "PPO(state_dim=3): the env has 4"),
    ("A2C", (4, 16, 5), {}, "A2C(action_dim=5): the env has 2"),
    ("TD3", (4, 16, 1), {}, "TD3(state_dim=4): the env has 3"),
    # non-finite numbers pass "clip <= 0"-style tests and trained on NaN
    ("DQN", (4, 16, 2), {"gamma": float("nan")}, "DQN(gamma=nan): must be a finite number"),
    ("DQN", (4, 16, 2), {"max_grad_norm": float("inf")}, "DQN(max_grad_norm=inf): must be a finite number"),
    ("PPO", (4, 16, 2), {"clip": float("nan")}, "PPO(clip=nan): must be a finite number"),
    ("A2C", (4, 16, 2), {"vf_coef": float("inf")}, "A2C(vf_coef=inf): must be a finite number"),
    ("TD3", (3, 16, 1), {"target_policy_noise": float("nan")}, "TD3(target_policy_noise=nan): must be a finite"),
    ("SAC", (3, 16, 1), {"ent_coef": float("inf")}, "SAC(ent_coef=inf): must be a finite number"),
]


@pytest.mark.parametrize("backend", ["torch", "tf"])
@pytest.mark.parametrize("name,args,kwargs,message", CTOR, ids=[f"{n}{a}{k}" for n, a, k, _ in CTOR])
def test_constructor_misuse_is_one_line_naming_the_argument(backend, name, args, kwargs, message) -> None:
    with pytest.raises(ValueError) as info:
        getattr(agents_module(backend), name)(*args, **kwargs)
    text = str(info.value)
    assert text.startswith(message) and "\n" not in text, text


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_a_name_where_an_optimizer_goes_is_refused_before_training(backend) -> None:
    """``train('adam')`` failed deep inside the first gradient step (PyTorch) or was taken as the
    loss metric (Keras, whose ``train`` takes ``train_loss`` first): one line naming the argument."""
    agent = agents_module(backend).DQN(4, 16, 2)
    agent.set(pool_size=100, batch=8)
    first = "optimizer" if backend == "torch" else "train_loss"
    for args, kwargs, message in ((("adam",), {}, f"train({first}='adam'): not a"),
                                  ((), {"optimizer": ["adam"]}, "train(optimizer='adam'): not an optimizer"),
                                  ((), {"optimizer": {"q": 3}}, "train(optimizer=3): not an optimizer")):
        with pytest.raises(ValueError) as info:
            agent.train(*args, **kwargs)
        text = str(info.value)
        assert text.startswith(message) and "\n" not in text, text
    assert agent.step_counter == 0 and agent.buffer is None  # nothing ran


def test_corpus_size() -> None:
    assert len(SET) + 1 + 2 * len(CTOR) >= 80
