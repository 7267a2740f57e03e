"""``agent.settings`` (issue 33): ``set()`` swaps in a new validated :class:`AgentSettings`, a refused
``set()`` changes nothing, and the settings stay plain attributes both ways (Note_rl's contract)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest

from note_rl.buffers import HerReplayBuffer, PrioritizedReplayBuffer, TrajectoryReplayBuffer
from note_rl.core.agent_settings import ATTRIBUTES, AgentSettings
from note_rl.core import checkpoint
from note_rl.core.base import RLBase
from note_rl.policy import EpsGreedyQPolicy
from tests.conftest import agents_module


def _agent() -> RLBase:
    """A framework-free agent: enough for set() without a seed (which seeds a framework)."""
    return RLBase()


def _attributes(agent: RLBase) -> dict:
    return {name: getattr(agent, name) for name in ATTRIBUTES}


def test_defaults_are_the_attributes_of_a_fresh_agent() -> None:
    agent = _agent()
    assert agent.settings == AgentSettings()
    assert _attributes(agent) == {name: getattr(AgentSettings(), name) for name in ATTRIBUTES}
    assert agent.priority_alpha == 0.7 and not hasattr(agent, "alpha")  # alpha is an agent's own name
    assert agent.buffer is None and agent.buffer_class is not None     # buffer: the instance, not the setting


def test_set_round_trips_through_settings() -> None:
    a, b = _agent(), _agent()
    policy = EpsGreedyQPolicy(0.2)
    a.set(policy=policy, pool_size=500, batch=16, num_updates=2, update_steps=10, trial_count=5, criterion=195.0,
          PR=True, alpha=0.5, beta=0.4, lambda_=0.3, initial_TD=3.0, train_freq=4, learning_starts=32, n_envs=2)
    assert (a.batch, a.PR, a.priority_alpha, a.policy) == (16, True, 0.5, policy)
    args = a.settings.set_args()
    assert args["alpha"] == 0.5 and "priority_alpha" not in args
    b.set(**args)
    assert b.settings == a.settings and _attributes(b) == _attributes(a)
    values = {f.name: getattr(a.settings, f.name) for f in dataclasses.fields(AgentSettings)}
    assert AgentSettings(**values) == a.settings   # a value: rebuilt from its fields, equal
    assert pickle.loads(pickle.dumps(a)).settings.set_args().keys() == args.keys()


def test_checkpoint_restores_the_saved_settings(tmp_path) -> None:
    agent = agents_module("torch").DQN(4, 16, 2, seed=0)
    agent.set(pool_size=300, batch=8, PR=True, alpha=0.4, beta=0.5, train_freq=2, learning_starts=16, seed=3)
    path = agent.save(str(tmp_path / "ck.npz"))
    other = agents_module("torch").DQN(4, 16, 2, seed=0)
    other.restore(path)
    saved = [k for k in ATTRIBUTES if k not in ("policy", "noise", "IRL")]  # what the file format holds
    assert set(saved) == set(checkpoint._SETTINGS)
    assert {k: getattr(other.settings, k) for k in saved} == {k: getattr(agent.settings, k) for k in saved}
    assert other.settings.priority_alpha == 0.4 and other.seed == 3


@pytest.mark.parametrize("kwargs", [
    {"batch": 0},
    {"batch": 8, "seed": -1},
    {"batch": 8, "PR": True, "TRL": True},                               # a conflict of flags
    {"buffer": PrioritizedReplayBuffer, "TRL": True},                    # the class's flags conflict
    {"buffer": TrajectoryReplayBuffer, "PR": True},                      # the class contradicts a flag
    {"buffer": HerReplayBuffer, "num_steps": 3},                         # the class's HER=True conflicts
    {"normalize": True, "batch": 0},                                     # the normalizer is not built into the agent
    {"normalize": True, "HER": True},
    {"pool_size": 10**12, "batch": 8},                                   # beyond this machine's memory
    {"policy": EpsGreedyQPolicy(0.1), "noise": "ou"},
], ids=lambda kw: ",".join(kw))
def test_failed_set_changes_nothing(kwargs) -> None:
    agent = _agent()
    agent.set(pool_size=100, batch=4, PR=False, alpha=0.6)
    buffer = agent.buffer = PrioritizedReplayBuffer(100)  # a built buffer is kept, not dropped
    before, attrs, buffer_class = agent.settings, _attributes(agent), agent.buffer_class
    with pytest.raises(ValueError):
        agent.set(**kwargs)
    assert agent.settings is before and agent.settings == before
    assert _attributes(agent) == attrs
    assert agent.buffer is buffer and agent.buffer_class is buffer_class and agent.normalizer is None


def test_attribute_writes_reach_settings() -> None:
    agent = _agent()
    agent.set(batch=8)
    old = agent.settings
    agent.batch = 32                 # an adjuster's write
    agent.priority_alpha = 0.25
    agent.policy = [EpsGreedyQPolicy(0.1), EpsGreedyQPolicy(0.3)]
    assert (agent.settings.batch, agent.settings.priority_alpha) == (32, 0.25)
    assert agent.settings.policy is agent.policy
    assert old.batch == 8            # a settings object is a value: held copies do not change
    agent.set(train_freq=4)          # arguments not passed keep the written values
    assert (agent.batch, agent.train_freq) == (32, 4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        agent.settings.batch = 1     # the settings change only through the agent
    for name in ATTRIBUTES:          # every field is a property of the agent class, both ways
        assert isinstance(getattr(RLBase, name), property)


def test_attribute_writes_are_as_unchecked_as_plain_attributes() -> None:
    agent = _agent()
    agent.batch = 0                  # set(batch=0) refuses it; a plain write never did
    assert agent.settings.batch == 0
    agent.set(train_freq=4)          # and set() checks only what it is given, as before
    assert (agent.batch, agent.train_freq) == (0, 4)


def test_subclass_writes_around_init() -> None:
    class Custom(RLBase):
        def __init__(self) -> None:
            self.seed = 5            # before RLBase.__init__: reset to the default, as before
            super().__init__()
            self.batch = 64          # Note_rl subclasses set their own values here
            self.alpha = 0.01        # an agent's own alpha is not the priority exponent

    agent = Custom()
    assert agent.seed is None and agent.batch == 64 and agent.settings.batch == 64
    agent.set(PR=True, alpha=0.5)
    assert agent.alpha == 0.01 and agent.priority_alpha == 0.5 and agent.batch == 64


def test_constructing_settings_checks_every_value() -> None:
    with pytest.raises(ValueError, match=r"^set\(batch=0\): must be a positive integer"):
        AgentSettings(batch=0)
    with pytest.raises(ValueError, match=r"^set\(alpha=-1\): must be >= 0"):
        AgentSettings(priority_alpha=-1)
    with pytest.raises(ValueError, match=r"^set\(\): TRL=True cannot be combined with PR=True"):
        AgentSettings().updated({"PR": True, "TRL": True})


def test_set_docstring_documents_every_argument() -> None:
    doc = RLBase.set.__doc__ or ""
    for name in inspect.signature(RLBase.set).parameters:
        if name != "self":
            assert f":param {name}:" in doc, name
    assert "{fields}" not in doc
