"""``note_rl.core.run_context``: the context of one ``train()`` call is reachable through
``current(agent)`` only while the call runs, carries the call's settings and counters, and is
where adjusters report; its loop state round-trips through ``restore``."""

from types import SimpleNamespace

import pytest

from note_rl import LambdaCallback
from note_rl.core.run_context import RunContext, current
from note_rl.core.settings import TrainSettings
from note_rl.policy import EpsGreedyQPolicy
from tests.conftest import agents_module, make_optimizer


def _dqn():
    agent = agents_module("torch").DQN(4, 16, 2, seed=0)
    agent.set(policy=EpsGreedyQPolicy(0.3), pool_size=1000, batch=8, train_freq=4, learning_starts=16,
              update_steps=10, seed=0)
    return agent


def test_none_outside_train_and_the_calls_own_context_inside() -> None:
    agent = _dqn()
    assert current(agent) is None
    seen = []

    def probe(episode, logs):
        run = current(agent)
        seen.append((run, run.episode, run.settings.steps, run.start_steps, run.progress_remaining()))

    opt = make_optimizer("torch", agent.param)
    agent.train(opt, 3, p=0, steps=10_000, callbacks=[LambdaCallback(on_episode_end=probe)], jit_compile=False)
    assert current(agent) is None and agent._trainer is None  # gone when the call returns
    runs = {id(r) for r, *_ in seen}
    assert len(runs) == 1 and isinstance(seen[0][0], RunContext)
    assert [e for _, e, *_ in seen] == [0, 1, 2] and all(s == 10_000 and o == 0 for _, _, s, o, _ in seen)
    assert all(0.0 < p < 1.0 for *_, p in seen)
    first_steps = agent.step_counter
    agent.train(opt, 1, p=0, callbacks=[LambdaCallback(on_episode_end=probe)], jit_compile=False)
    assert id(seen[-1][0]) not in runs and seen[-1][3] == first_steps  # a new call, a new step origin
    assert current(agent) is None


def test_none_after_a_call_that_fails() -> None:
    agent = _dqn()

    def fail(logs):
        assert current(agent) is not None
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        agent.train(make_optimizer("torch", agent.param), 2, p=0, callbacks=[LambdaCallback(on_train_begin=fail)],
                    jit_compile=False)
    assert current(agent) is None


def test_adjusters_report_through_the_context() -> None:
    agent = _dqn()
    agent.adjuster = {"kind": "gns", "every": 5, "num_samples": 2, "target_noise": 1e-3,
                      "batch_params": {"min": 8, "max": 32, "align": 8}}
    reports, episodes, sunk = [], [], []

    def hook(logs):  # the context's sink is what the adjuster reaches during train()
        run = current(agent)
        if not sunk:
            sink = run.on_adjust
            run.on_adjust = lambda values: sunk.append(values) or sink(values)

    cb = LambdaCallback(on_train_begin=hook, on_adjust=reports.append,
                        on_episode_end=lambda e, logs: episodes.append(logs))
    agent.train(make_optimizer("torch", agent.param), 4, p=0, callbacks=[cb], jit_compile=False)
    assert reports and sunk == reports            # every run went through the context to on_adjust
    assert "adjust/batch" in episodes[-1]        # and into the episode logs
    # outside train() a Note_rl-style call reports to the agent's callbacks directly
    agent.callbacks = [LambdaCallback(on_adjust=reports.append)]
    n = len(reports)
    agent._report_adjust({"x": 1.0})
    assert reports[n:] == [{"x": 1.0}]


def test_progress_budget_and_loop_state() -> None:
    agent = SimpleNamespace(step_counter=100)
    run = RunContext(agent, TrainSettings(steps=40), episodes=None, start_steps=100)
    assert run.progress_remaining() == 1.0 and not run.out_of_steps()
    agent.step_counter = 130
    assert run.progress_remaining() == pytest.approx(0.25) and not run.out_of_steps()
    agent.step_counter = 150
    assert run.progress_remaining() == 0.0 and run.out_of_steps()
    by_episodes = RunContext(agent, TrainSettings(), episodes=8, episode=2)
    assert by_episodes.progress_remaining() == pytest.approx(0.75)
    assert RunContext(agent, TrainSettings(), episodes=None).progress_remaining() == 1.0
    run.cadence = SimpleNamespace(owed=1.5, sync_due=True)
    run.learner = SimpleNamespace(updates_since_sync=3)
    state = run.loop_state()
    assert state == {"start_steps": 100, "owed": 1.5, "sync_due": True, "updates_since_sync": 3}
    other = RunContext(agent, TrainSettings(steps=40), episodes=None, start_steps=150,
                       cadence=SimpleNamespace(owed=0.0, sync_due=False),
                       learner=SimpleNamespace(updates_since_sync=0))
    other.restore({**state, "episode": 7})
    assert other.episode == 7 and other.loop_state() == state


def test_a_span_makes_the_call_one_part_of_a_longer_run() -> None:
    """A population-based training segment: 100 env steps continuing a checkpoint at step 200 of a
    400-step run.  Its schedules read where the whole run is (steps 200 -> 300: progress 0.5 ->
    0.25), not where this call is (1 -> 0)."""
    agent = SimpleNamespace(step_counter=200)
    run = RunContext(agent, TrainSettings(steps=100), start_steps=200)
    assert run.progress_remaining() == 1.0
    run.span = 400
    assert run.progress_remaining() == 0.5
    agent.step_counter = 300
    assert run.progress_remaining() == 0.25 and run.out_of_steps()  # the call's own budget still ends it
    agent.step_counter = 500  # past the span: clipped, as a budget is
    assert run.progress_remaining() == 0.0
