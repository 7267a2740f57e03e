"""``note_rl.core.schedule``: values worked out by hand, where a schedule keeps its start, who owns a
value an online adjuster also changes, and ``linear_decay`` as Schedule objects in training."""

from types import SimpleNamespace

import numpy as np
import pytest

from note_rl import LambdaCallback
from note_rl.core.run_context import current
from note_rl.core.schedule import Schedule, owners
from note_rl.policy import EpsGreedyQPolicy
from tests.conftest import agents_module, make_optimizer


def test_linear_from_3e_4_falls_to_0_with_the_progress_left() -> None:
    lr = Schedule("lr", "linear", start=[3e-4])
    # start x progress_remaining: 3e-4 at the start, half way 1.5e-4, a quarter left 7.5e-5, 0 at the end
    for remaining, expected in ((1.0, 3e-4), (0.5, 1.5e-4), (0.25, 7.5e-5), (0.0, 0.0)):
        assert lr.value(remaining) == pytest.approx([expected], rel=1e-12, abs=0.0)
    # two optimizers: each from its own start
    assert Schedule("lr", start=[3e-4, 1e-3]).value(0.5) == pytest.approx([1.5e-4, 5e-4])


def test_constant_keeps_the_start() -> None:
    clip = Schedule("clip", "constant", start=[0.2])
    assert clip.value(1.0) == clip.value(0.3) == clip.value(0.0) == [0.2]


def test_unknown_values_and_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="schedulable values"):
        Schedule("gamma")
    with pytest.raises(ValueError, match="shape"):
        Schedule("lr", "cosine")
    with pytest.raises(ValueError, match="no start value"):
        Schedule("lr").value(0.5)


class _Backend:
    def get_hparam(self, opt, name):
        return opt[name]

    def set_hparam(self, opt, name, value):
        opt[name] = value

    def assign(self, var, value):
        var[0] = value


def test_the_lr_start_is_read_once_and_kept_the_clip_start_read_each_time() -> None:
    opts = [{"lr": 3e-4}, {"lr": 1e-3}]
    agent = SimpleNamespace(optimizer=opts, backend=_Backend(), clip=[0.2], clip_init=0.2)
    lr, clip = Schedule("lr"), Schedule("clip")
    lr.apply(agent, 0.5)
    clip.apply(agent, 0.5)
    assert [o["lr"] for o in opts] == pytest.approx([1.5e-4, 5e-4]) and agent.clip[0] == pytest.approx(0.1)
    assert lr.start == [3e-4, 1e-3]           # kept (checkpoints' initial_lrs): not the decayed values
    assert clip.start is None                 # PPO's clip_init is the start, read at each application
    lr.apply(agent, 0.25)
    agent.clip_init = 0.4
    clip.apply(agent, 0.25)
    assert [o["lr"] for o in opts] == pytest.approx([7.5e-5, 2.5e-4]) and agent.clip[0] == pytest.approx(0.1)


def test_an_adjuster_that_changes_a_value_owns_it_for_the_call() -> None:
    schedules = {"lr": Schedule("lr"), "clip": Schedule("clip")}
    assert owners(schedules, None) == {"lr": "schedule", "clip": "schedule"}
    adjuster = SimpleNamespace(active=("batch", "lr"))
    assert owners(schedules, adjuster) == {"lr": "adjuster", "clip": "schedule"}


def _dqn(linear_decay: bool):
    agent = agents_module("torch").DQN(4, 16, 2, seed=0, linear_decay=linear_decay)
    agent.set(policy=EpsGreedyQPolicy(0.3), pool_size=1000, batch=8, train_freq=32, num_updates=2,
              learning_starts=32, seed=0)
    return agent


def test_linear_decay_is_a_schedule_and_the_adjuster_keeps_the_lr_it_changes() -> None:
    assert _dqn(False).schedules == {}
    agent = _dqn(True)
    assert list(agent.schedules) == ["lr"] and agent.schedules["lr"].shape == "linear"
    agent.adjuster = {"kind": "gns", "every": 4, "num_samples": 2, "target_noise": 1e-3,
                      "lr_params": {"rate": 1e-4, "min": 1e-4, "max": 1e-2}}
    opt = make_optimizer("torch", agent.param, lr=1e-3)
    seen, reports = [], []
    cb = LambdaCallback(on_batch_begin=lambda batch, logs: seen.append(
        (dict(current(agent).owner), agent.backend.get_hparam(opt, "lr"))), on_adjust=reports.append)
    agent.train(opt, None, steps=128, p=0, callbacks=[cb], jit_compile=False)
    assert seen and all(owner == {"lr": "adjuster"} for owner, _ in seen)
    # before the adjuster's first run the lr is the optimizer's own, never 1e-3 x (1 - steps / 128)
    assert seen[0][1] == pytest.approx(1e-3)
    changed = [r["lr"] for r in reports if "lr" in r]
    assert changed and agent.backend.get_hparam(opt, "lr") == pytest.approx(changed[-1], rel=1e-6)
    assert agent.schedules["lr"].start is None  # the schedule never ran


def test_ppo_schedules_lr_and_clip_and_keeps_initial_lrs_in_checkpoints() -> None:
    agent = agents_module("torch").PPO(4, 16, 2, n_steps=16, n_envs=2, n_epochs=1, seed=0, linear_decay=True)
    assert sorted(agent.schedules) == ["clip", "lr"]
    agent.set(batch=32, seed=0)
    opt = make_optimizer("torch", agent.param, lr=1e-3)
    agent.train(opt, None, steps=64, p=0, jit_compile=False)
    # rollouts at 0 and 32 of 64 steps: the last one set lr 1e-3 x 1/2, clip 0.2 x 1/2
    assert agent.backend.get_hparam(opt, "lr") == pytest.approx(5e-4, rel=1e-5)
    assert float(np.asarray(agent.clip)) == pytest.approx(0.1, rel=1e-5)
    assert agent.extra_state() == {"initial_lrs": [pytest.approx(1e-3)]}
    other = agents_module("torch").PPO(4, 16, 2, n_steps=16, n_envs=2, n_epochs=1, seed=0, linear_decay=True)
    other.load_extra_state(agent.extra_state())
    assert other.schedules["lr"].start == agent.schedules["lr"].start
