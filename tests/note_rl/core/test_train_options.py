"""Behaviour of ``train()`` / ``set()`` options against values worked out by hand: batch callbacks,
the priority exponent vs an agent's own ``alpha``, PPO's linear decay and gradient clipping,
on-policy clearing, ``save_data``, ``window_size_pr`` and ``episodes=None`` with a criterion."""

import gymnasium as gym
import numpy as np
import pytest

from note_rl import LambdaCallback
from note_rl.core.checkpoint import read_npz
from note_rl.policy import EpsGreedyQPolicy, SoftmaxPolicy
from note_rl.utils import scalar
from tests.conftest import agents_module, make_optimizer, train


def _dqn(**settings):
    agent = agents_module("torch").DQN(4, 16, 2, seed=0)
    agent.set(policy=EpsGreedyQPolicy(0.3), pool_size=1000, batch=8, seed=0, **settings)
    return agent


def _torch_train(agent, episodes, **kwargs):
    return agent.train(make_optimizer("torch", agent.param, lr=1e-3), episodes, p=0, **kwargs)


def test_on_batch_begin_once_per_step_with_its_index() -> None:
    agent = _dqn(num_updates=2)
    events = []
    cb = LambdaCallback(on_batch_begin=lambda batch, logs: events.append(("begin", batch, agent.batch_counter)),
                        on_batch_end=lambda batch, logs: events.append(("end", batch, agent.batch_counter)))
    _torch_train(agent, 3, callbacks=[cb])
    n = agent.batch_counter
    assert n > 0
    # begin(i) runs before step i (counter still i), end(i) after it (counter i + 1)
    expected = [e for i in range(n) for e in (("begin", i, i), ("end", i, i + 1))]
    assert events == expected


def test_set_alpha_leaves_an_agents_own_alpha_alone() -> None:
    DQN = agents_module("torch").DQN

    class EntropyDQN(DQN):
        def __init__(self):
            super().__init__(4, 16, 2, seed=0)
            self.alpha = 0.01  # the agent's own coefficient (Note_rl's PPO examples)

    agent = EntropyDQN()
    agent.set(policy=EpsGreedyQPolicy(0.3), pool_size=1000, batch=8, PR=True, alpha=0.5, seed=0)
    assert agent.alpha == 0.01 and agent.priority_alpha == 0.5
    _torch_train(agent, 2)
    assert agent.alpha == 0.01 and agent.buffer.alpha == 0.5
    buf = agent.buffer
    slots = buf.valid_slots()
    np.testing.assert_allclose(buf.weights(), (buf.TD[slots] + 1e-7) ** 0.5, rtol=1e-9)
    fresh = agent.make_buffer()  # priorities (|TD| + eps) ** 0.5 by hand
    for v in range(2):
        fresh.add(np.zeros(4, np.float32), 0, np.zeros(4, np.float32), float(v), 0.0)
    np.testing.assert_allclose(fresh.weights(), [np.sqrt(7.0), np.sqrt(7.0)], rtol=1e-7)  # initial_TD 7
    fresh.update_priorities(np.array([0, 1]), np.array([4.0, -9.0]))
    np.testing.assert_allclose(fresh.weights(), [2.0, 3.0], rtol=1e-7)


def _ppo_rollout(backend, **kwargs):
    agent = agents_module(backend).PPO(4, 16, 2, n_steps=16, n_envs=2, n_epochs=1, seed=0, **kwargs)
    agent.set(batch=32, seed=0)  # one mini-batch per rollout of 16 x 2 steps
    return agent


def _record(agent, what):
    seen = []
    return seen, LambdaCallback(on_batch_begin=lambda batch, logs: seen.append(what()))


def test_ppo_linear_decay_of_lr_and_clip(backend) -> None:
    agent = _ppo_rollout(backend, clip=0.2, linear_decay=True)
    opt = make_optimizer(backend, agent.param, lr=1e-3)
    seen, cb = _record(agent, lambda: (agent.backend.get_hparam(opt, "lr"), scalar(agent.clip)))
    train(agent, backend, opt, None, steps=128, callbacks=[cb], p=0, jit_compile=False)
    # rollouts start after 0, 32, 64, 96 of 128 steps: remaining fraction 1, 3/4, 1/2, 1/4
    remaining = np.array([1.0, 0.75, 0.5, 0.25])
    np.testing.assert_allclose([lr for lr, _ in seen], 1e-3 * remaining, rtol=1e-5)
    np.testing.assert_allclose([c for _, c in seen], 0.2 * remaining, rtol=1e-5)


def test_dqn_linear_decay_of_lr_before_each_training_round(backend) -> None:
    agent = agents_module(backend).DQN(4, 16, 2, seed=0, linear_decay=True)
    agent.set(policy=EpsGreedyQPolicy(0.3), pool_size=1000, batch=8, train_freq=32, num_updates=2,
              learning_starts=32, seed=0)
    opt = make_optimizer(backend, agent.param, lr=1e-3)
    seen, cb = _record(agent, lambda: (agent.backend.get_hparam(opt, "lr"), agent.step_counter))
    train(agent, backend, opt, None, steps=128, callbacks=[cb], p=0, jit_compile=False)
    # rounds of 2 steps after env steps 32, 64, 96 (and 128, the last): lr = 1e-3 x (1 - steps / 128)
    assert [s for _, s in seen] == [32, 32, 64, 64, 96, 96, 128, 128]
    np.testing.assert_allclose([lr for lr, _ in seen], [1e-3 * (1 - s / 128) for _, s in seen], rtol=1e-5, atol=1e-12)
    assert agent.extra_state() == {"initial_lrs": [pytest.approx(1e-3)]}
    plain = agents_module(backend).DQN(4, 16, 2, seed=0)  # the default keeps a constant lr
    plain.set(policy=EpsGreedyQPolicy(0.3), pool_size=1000, batch=8, train_freq=32, num_updates=2, learning_starts=32)
    opt = make_optimizer(backend, plain.param, lr=1e-3)
    train(plain, backend, opt, None, steps=128, p=0, jit_compile=False)
    assert plain.backend.get_hparam(opt, "lr") == pytest.approx(1e-3)
    with pytest.raises(ValueError, match="linear_decay"):
        agents_module(backend).DQN(4, 16, 2, linear_decay="yes")


def _update_norms(backend, max_grad_norm, lr):
    """Global norm of each gradient step's update / lr (= the applied gradient, plain SGD)."""
    agent = _ppo_rollout(backend, max_grad_norm=max_grad_norm)
    flat = agent.backend.flatten(agent.param)
    before, norms = [], []

    def begin(batch, logs):
        before[:] = agent.backend.get_weights(flat)

    def end(batch, logs):
        after = agent.backend.get_weights(flat)
        norms.append(np.sqrt(sum(float(np.sum((a.astype(np.float64) - b) ** 2))
                                 for a, b in zip(after, before))) / lr)

    opt = make_optimizer(backend, agent.param, name="sgd", lr=lr)
    train(agent, backend, opt, None, steps=128, p=0, jit_compile=False,
          callbacks=[LambdaCallback(on_batch_begin=begin, on_batch_end=end)])
    return np.array(norms)


def test_ppo_max_grad_norm_clips_the_global_norm(backend) -> None:
    free = _update_norms(backend, None, lr=0.01)
    assert len(free) == 4 and free.min() > 0.05  # unclipped gradients are larger than the limit
    clipped = _update_norms(backend, 0.02, lr=1.0)
    assert len(clipped) == 4
    np.testing.assert_allclose(clipped, 0.02, rtol=2e-3)  # rescaled to the limit exactly


def test_ppo_uniform_buffer_cleared_after_update_param() -> None:
    agent = agents_module("torch").PPO(4, 16, 2, seed=0)  # replay mode: agent.PPO is True
    agent.set(policy=SoftmaxPolicy(), pool_size=1000, batch=4, update_steps=10, seed=0)
    seen = []
    sync = agent.update_param

    def update_param():
        seen.append((agent.step_counter, len(agent.buffer)))
        sync()

    agent.update_param = update_param
    _torch_train(agent, 4)
    assert agent.PPO and not agent.PR and agent.step_counter > 20
    # every 10 env steps: update_param sees the 10 items stored since the last one, then the
    # on-policy data is discarded, so the buffer now holds only the steps since the last sync
    assert seen == [(10 * k, 10) for k in range(1, agent.step_counter // 10 + 1)]
    assert len(agent.buffer) == agent.step_counter % 10


@pytest.mark.parametrize("save_data", [True, False])
def test_save_data_controls_the_buffer_in_periodic_checkpoints(tmp_path, save_data) -> None:
    agent = _dqn()
    agent.path = str(tmp_path / "ckpt.npz")
    _torch_train(agent, 2, save_data=save_data)
    meta, arrays = read_npz(agent.path)
    assert meta["counters"]["total_episode"] == 2 and meta["counters"]["step_counter"] == agent.step_counter
    stored = [k for k in arrays if k.startswith("buffer/")]
    restored = _dqn()
    restored.restore(agent.path)
    assert restored.step_counter == agent.step_counter and restored.reward_list == agent.reward_list
    if save_data:
        assert meta["buffer"]["sizes"] == [len(agent.buffer)] and "buffer/state" in stored
        assert len(restored.buffer) == len(agent.buffer)
    else:  # weights, optimizer state and counters only
        assert meta["buffer"] is None and stored == []
        assert restored.buffer is None


def test_window_size_pr_trims_after_each_update() -> None:
    agent = _dqn(PR=True, update_steps=5)
    seen = []
    sync = agent.update_param
    agent.update_param = lambda: (seen.append(len(agent.buffer)), sync())
    _torch_train(agent, 3, window_size_pr=3)
    # +1 item per env step; every 5th step update_param() then the 3 oldest items are dropped
    size, before = 0, []
    for t in range(1, agent.step_counter + 1):
        size += 1
        if t % 5 == 0:
            before.append(size)
            size -= 3
    assert seen == before and len(agent.buffer) == size
    assert agent.buffer.store_counter[0] == agent.step_counter  # nothing else was dropped


class _Counting(gym.Env):
    """One-step episodes; the k-th episode (from 0) returns k."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.k = -1

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.k += 1
        return np.zeros(4, np.float32), {}

    def step(self, action):
        return np.zeros(4, np.float32), float(self.k), True, False, {}


def test_episodes_none_stops_at_the_criterion() -> None:
    agent = agents_module("torch").DQN(4, 8, 2, env=_Counting(), seed=0)
    agent.set(policy=EpsGreedyQPolicy(0.3), pool_size=100, batch=2, trial_count=2, criterion=4.5)
    _torch_train(agent, None, steps=50)  # the step budget only guards against a runaway loop
    # means of the last two returns: 0.5, 1.5, 2.5, 3.5, 4.5 -> reached after the 6th episode
    assert agent.reward_list == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and agent.total_episode == 6
