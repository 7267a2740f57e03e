"""Names from the seed documents (Note_rl 000-003) that the contract test lists, each checked for its
documented meaning with the seed's own snippet (package renamed, small episode counts)."""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import numpy as np
import pytest

import note_rl
from note_rl.buffers import PrioritizedReplayBuffer, ReplayBuffer, TrajectoryReplayBuffer
from note_rl.buffers.trajectory import distinct_triples
from note_rl.callbacks import LambdaCallback
from note_rl.core.async_save import AsyncSaver
from note_rl.core.checkpoint import read_npz, write_npz
from note_rl.policy import EpsGreedyQPolicy
from tests.conftest import agents_module, make_optimizer, train


# -- the pool-network constructor: DQN(state_dim=4, hidden_size=128, action_dim=2, processes=7) ----
@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_processes_constructor_argument_both_forms(backend) -> None:
    DQN = agents_module(backend).DQN
    keyword = DQN(state_dim=4, hidden_size=16, action_dim=2, processes=7)  # seed 000
    positional = DQN(4, 16, 2, 7)  # seed 001: the 4th positional argument is processes
    for model in (keyword, positional):
        assert model.processes == 7 and float(np.asarray(model.gamma)) == pytest.approx(0.99)
    assert DQN(4, 16, 2, 0.9).processes is None  # a discount there stays a discount
    with pytest.raises(ValueError, match=r"DQN\(gamma=7, processes=3\)"):
        DQN(4, 16, 2, 7, processes=3)
    with pytest.raises(ValueError, match=r"DQN\(processes=0\): must be a positive integer"):
        DQN(4, 16, 2, processes=0)


def test_processes_from_the_constructor_is_train_s_default() -> None:
    import torch

    model = agents_module("torch").DQN(state_dim=4, hidden_size=16, action_dim=2, processes=2)
    model.set(policy=EpsGreedyQPolicy(eps=0.01), pool_size=1000, batch=16, update_batches=17)
    seen = []
    cb = LambdaCallback(on_train_begin=lambda logs: seen.append(model._trainer.settings.processes))
    model.train(torch.optim.Adam(model.param), 2, pool_network=True, callbacks=[cb], p=0)
    assert seen == [2] and model.total_episode == 2


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_ddpg_positional_form_of_seed_001(backend) -> None:
    DDPG = agents_module(backend).DDPG
    model = DDPG(128, 0.1, 0.98, 0.005)  # hidden_size, tau, gamma, lr
    assert model.hidden == [128] and model.tau == 0.1 and model.lr == 0.005
    assert float(np.asarray(model.gamma)) == pytest.approx(0.98) and model.processes is None
    assert DDPG(128, 0.1, 0.98, 0.005, 7).processes == 7
    keyword = DDPG(hidden_size=128, tau=0.1, gamma=0.98, lr=0.005, processes=7)  # seed 000
    assert keyword.processes == 7 and keyword.tau == 0.1


# -- module-level restore_param (seeds 002/003: ``param = nn.restore_param('param.dat')``) ---------
@pytest.mark.parametrize("kind", ["save_param", "save"])
def test_module_level_restore_param(tmp_path, kind) -> None:
    model = agents_module("torch").DQN(4, 16, 2, seed=3)
    path = str(tmp_path / "param.dat")
    getattr(model, kind)(path)
    param = note_rl.restore_param(path)
    expected = [p.detach().numpy() for p in model.param]
    assert len(param) == len(expected)
    for got, want in zip(param, expected):
        np.testing.assert_array_equal(got, want)


# -- window_size as a float fraction, and both names of the trimming hook ------------------------
def _filled(buffer: ReplayBuffer, n: int) -> ReplayBuffer:
    for k in range(n):
        buffer.add(np.full(2, k, np.float32), 0, np.zeros(2, np.float32), 0.0, 0.0)
    return buffer


def test_float_window_size_is_a_fraction_of_the_full_buffer() -> None:
    buffer = _filled(ReplayBuffer(10, window_size=0.5), 11)  # full at 10: drop 5, then store 1
    assert len(buffer) == 6
    assert buffer.get(buffer.valid_slots()).state[0, 0] == 5  # the five oldest are gone
    buffer = _filled(ReplayBuffer(10, window_size=lambda: 0.25), 11)  # ceil(2.5) = 3 dropped
    assert len(buffer) == 8
    assert len(_filled(ReplayBuffer(10, window_size=3), 11)) == 8  # an int is a count, as before
    with pytest.raises(ValueError, match=r"a float window is a fraction of the buffer, in \(0, 1\]; got 1.5"):
        agents_module("torch").DQN(4, 16, 2).train(None, 1, window_size=1.5)


@pytest.mark.parametrize("name", ["window_size_func", "window_size_fn"])
def test_window_hook_under_both_seed_names(name) -> None:
    import torch

    model = agents_module("torch").DQN(4, 16, 2, seed=0)
    model.set(policy=EpsGreedyQPolicy(0.1), pool_size=200, batch=8, PR=True, update_batches=5)
    calls = []

    def hook(p=None):
        calls.append(p)
        return 0.1  # a fraction works here too: a tenth of the buffer

    setattr(model, name, hook)
    model.train(torch.optim.Adam(model.param), 3, p=0)
    assert calls and calls[0] is None  # single process: called without p, as Note_rl does
    assert len(model.buffer) < model.step_counter
    model.window_size_func = model.window_size_fn = hook
    with pytest.raises(ValueError, match="defines both window_size_func and window_size_fn"):
        model.train(torch.optim.Adam(model.param), 1, p=0)


# -- shuffle (seed 001) ----------------------------------------------------------------------------
def test_shuffle_walks_a_permutation_of_the_stored_items() -> None:
    buffer = _filled(ReplayBuffer(20, seed=0), 10)
    buffer.shuffle = True
    first, second = buffer.sample_slots(5), buffer.sample_slots(5)
    assert sorted(np.concatenate([first, second]).tolist()) == list(range(10))  # each item once per pass
    third = buffer.sample_slots(5)
    assert len(set(third.tolist())) == 5
    buffer.drop_oldest(4)  # a drop ends the pass: the next one holds only what is stored
    drawn = np.concatenate([buffer.sample_slots(3), buffer.sample_slots(3)])
    assert sorted(drawn.tolist()) == list(range(4, 10))


def test_train_shuffle_runs_and_is_refused_with_prioritized_replay() -> None:
    import torch

    model = agents_module("torch").DQN(4, 16, 2, seed=0)
    model.set(policy=EpsGreedyQPolicy(0.1), pool_size=500, batch=8)
    model.train(torch.optim.Adam(model.param), 2, shuffle=True, p=0)
    assert model.buffer.shuffle and model.batch_counter > 0
    model.set(PR=True)
    with pytest.raises(ValueError, match=r"train\(shuffle=True\) is for uniform replay"):
        model.train(torch.optim.Adam(model.param), 1, shuffle=True, p=0)


# -- IRL: action(s) returns [aux, policy_output] ----------------------------------------------------
class PairEnv(gym.Wrapper):
    """Steps CartPole with the action of Note_rl's IRL pair and records the aux output it got."""

    def __init__(self) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.aux = []

    def step(self, pair):
        aux, action = pair
        self.aux.append(np.asarray(aux))
        return self.env.step(action)


def _irl_agent(backend: str):
    if backend == "tf":
        import keras
        from note_rl.keras import RL

        class KerasIrlDQN(RL):
            def __init__(self):
                super().__init__()
                self.q = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
                self.reward_net = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
                self.param = self.q.trainable_weights
                self.env = PairEnv()

            def action(self, s):
                return [self.reward_net(s), self.q(s)]

            def __call__(self, s, a, next_s, r, d):
                import tensorflow as tf

                q = tf.gather(self.q(s), tf.cast(a, tf.int32), batch_dims=1)
                return tf.reduce_mean((q - r) ** 2)

        return KerasIrlDQN()
    import torch
    from note_rl.torch import RL_pytorch

    class IrlDQN(RL_pytorch):
        def __init__(self):
            super().__init__()
            self.q = torch.nn.Linear(4, 2)
            self.reward_net = torch.nn.Linear(4, 3)
            self.param = list(self.q.parameters())
            self.env = PairEnv()

        def action(self, s):
            return [self.reward_net(s), self.q(s)]

        def __call__(self, s, a, next_s, r, d):
            q = self.q(s).gather(1, a.long().unsqueeze(1)).squeeze(1)
            return ((q - r) ** 2).mean()

    return IrlDQN()


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_irl_action_plumbing(backend) -> None:
    model = _irl_agent(backend)
    model.set(policy=EpsGreedyQPolicy(0.0), pool_size=500, batch=8, IRL=True)
    aux, action = model.select_action(np.zeros(4, np.float32))
    assert np.asarray(aux).shape == (3,) and action in (0, 1)
    optimizer = make_optimizer(backend, model.param)
    train(model, backend, optimizer, 2, p=0)
    assert model.batch_counter > 0
    assert len(model.env.aux) == model.step_counter and model.env.aux[0].shape == (3,)
    stored = model.buffer.get(model.buffer.valid_slots()).action
    assert set(np.unique(stored).tolist()) <= {0, 1}  # replay keeps the action, not the pair
    with pytest.raises(ValueError, match=r"IRL=True\) runs with single-process"):
        train(model, backend, optimizer, 1, pool_network=True, processes=2, p=0)
    plain = agents_module(backend).DQN(4, 16, 2)
    plain.set(policy=EpsGreedyQPolicy(0.1), IRL=True)
    with pytest.raises(ValueError, match=r"action\(s\) must return a pair \[aux, policy_output\]"):
        plain.select_action(np.zeros(4, np.float32))


# -- TRL: trajectory triplets ------------------------------------------------------------------------
def test_distinct_triples_are_uniform() -> None:
    rng = np.random.default_rng(0)
    triples = distinct_triples(np.full(40_000, 4), rng)
    assert (np.diff(triples, axis=1) > 0).all()
    _, counts = np.unique(triples, axis=0, return_counts=True)
    assert len(counts) == 4 and np.allclose(counts / counts.sum(), 0.25, atol=0.01)  # C(4, 3) = 4 triples


def test_trajectory_buffer_samples_within_one_finished_episode() -> None:
    buffer = TrajectoryReplayBuffer(50, seed=1)
    # episode A: steps 0-4 (terminal at 4); B: 5-6 (too short); C: 7-9 unfinished
    dones = [0, 0, 0, 0, 1, 0, 1, 0, 0, 0]
    for t, d in enumerate(dones):
        # training waits for a finished episode, however many steps learning_starts asked for
        assert buffer.can_sample(2) == (t > 4)
        buffer.add(np.array([t, t], np.float32), t, np.array([t + 0.5, t + 0.5], np.float32), float(t), float(d))
    assert not buffer.can_sample(11)
    batch = buffer.sample(256)
    assert batch.state.shape == (256, 2, 2) and batch.action.shape == (256, 2)
    i, k, j = batch.indices.T
    assert ((0 <= i) & (i < k) & (k < j) & (j <= 4)).all()
    np.testing.assert_array_equal(batch.state[:, 0, 0], i)
    np.testing.assert_array_equal(batch.state[:, 1, 0], k + 0.5)  # s = [s_i, s'_k]
    np.testing.assert_array_equal(batch.next_state[:, 1, 0], j + 0.5)  # next_s = [s'_k, s'_j]
    np.testing.assert_array_equal(batch.reward, np.stack([i, k], axis=1))


def test_trl_keras_agent_trains_on_pairs() -> None:
    import keras
    import tensorflow as tf
    from note_rl.keras import RL

    shapes = []

    class KerasTrl(RL):
        def __init__(self):
            super().__init__()
            self.q = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
            self.param = self.q.trainable_weights
            self.env = gym.make("CartPole-v1")

        def action(self, s):
            return self.q(s)

        def __call__(self, s, a, next_s, r, d):
            shapes.append(tuple(s.shape))  # at trace time
            return tf.reduce_mean((self.q(s[:, 0]) - self.q(next_s[:, 1])) ** 2)

    model = KerasTrl()
    # a CartPole episode lasts at least 8 steps: 6 episodes always store more than learning_starts
    model.set(policy=EpsGreedyQPolicy(0.2), pool_size=2000, batch=16, TRL=True, learning_starts=40)
    model.train(None, keras.optimizers.Adam(), 6, p=0)
    assert model.batch_counter > 0 and set(shapes) == {(16, 2, 4)}


def test_trl_agent_trains_on_pairs_and_refuses_pr() -> None:
    import torch
    from note_rl.torch import RL_pytorch

    shapes = []

    class TrlAgent(RL_pytorch):
        def __init__(self):
            super().__init__()
            self.q = torch.nn.Linear(4, 2)
            self.param = list(self.q.parameters())
            self.env = gym.make("CartPole-v1")

        def action(self, s):
            return self.q(s)

        def __call__(self, s, a, next_s, r, d):
            shapes.append(tuple(s.shape))
            return ((self.q(s[:, 0]) - self.q(next_s[:, 1])) ** 2).mean()

    model = TrlAgent()
    model.set(policy=EpsGreedyQPolicy(0.2), pool_size=2000, batch=16, TRL=True, learning_starts=40)
    model.train(torch.optim.Adam(model.param), 6, p=0)
    assert isinstance(model.buffer, TrajectoryReplayBuffer) and shapes and set(shapes) == {(16, 2, 4)}
    with pytest.raises(ValueError, match=r"TRL=True cannot be combined with PR=True"):
        model.set(PR=True)
    model.set(TRL=False, PR=True)
    assert model.buffer_class is PrioritizedReplayBuffer


# -- parallel_training_and_save ----------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_parallel_training_and_save_writes_in_another_process(tmp_path, backend) -> None:
    model = agents_module(backend).DQN(4, 16, 2, seed=0)
    model.set(policy=EpsGreedyQPolicy(0.1), pool_size=500, batch=8)
    model.path, model.save_freq, model.max_save_files = str(tmp_path / "model.dat"), 1, 2
    writers = []
    cb = LambdaCallback(on_episode_end=lambda e, logs: writers.append(
        (model._saver.process.pid, model._saver.process.is_alive())))
    train(model, backend, make_optimizer(backend, model.param), 4, parallel_training_and_save=True,
          callbacks=[cb], p=0)
    pids = {pid for pid, _ in writers}
    assert len(pids) == 1 and os.getpid() not in pids and all(alive for _, alive in writers)
    assert model._saver is None  # the writer stopped with train()
    kept = sorted(os.listdir(tmp_path))
    assert kept == ["model-3.dat", "model-4.dat"]  # rotation, done by the writer after each write
    restored = agents_module(backend).DQN(4, 16, 2)
    restored.restore(str(tmp_path / "model-4.dat"))
    assert restored.total_episode == 4 and restored.step_counter == model.step_counter


def test_a_killed_writer_leaves_no_partial_checkpoint(tmp_path) -> None:
    path = str(tmp_path / "model.dat")
    write_npz(path, {"format": "test", "n": 1}, {"x": np.zeros(3)})  # the previous checkpoint
    saver = AsyncSaver()
    saver.submit(path, {"format": "test", "n": 2}, {"x": np.ones(40_000_000)})  # 320 MB
    os.kill(saver.process.pid, signal.SIGKILL)
    saver.process.join()
    meta, arrays = read_npz(path, expect="test")  # the real name still holds a complete file
    assert meta["n"] in (1, 2)
    with pytest.raises(RuntimeError, match="checkpoint writer process died"):
        saver.wait()
    saver.close()
    write_npz(path, {"format": "test", "n": 3}, {"x": np.zeros(3)})  # the next save cleans up
    assert sorted(os.listdir(tmp_path)) == ["model.dat"]


# -- ParallelFinder's Note_rl attributes and callbacks ---------------------------------------------
def test_parallel_finder_callbacks_keep_note_rl_bookkeeping() -> None:
    from note_rl.parallel_finder import ParallelFinder

    agents, optimizers = [object(), object()], ["opt-a", "opt-b"]
    finder = ParallelFinder(agents, optimizers)
    assert finder.rewards == {} and finder.losses == {} and finder.episode is None and finder.lock
    finder.episode = 2
    for episode, (ra, rb) in enumerate([(1.0, 5.0), (3.0, 7.0)]):
        finder.on_episode_end(episode, {"reward": ra}, agent=agents[0], lock=finder.lock)
        finder.on_episode_end(episode, {"reward": rb}, agent=agents[1])
    assert finder.rewards == {0: [1.0, 3.0], 1: [5.0, 7.0]}
    assert finder.logs["best_reward"] == 6.0 and finder.logs["best_opt"] == "opt-b"
    for episode, loss in enumerate([0.5, 0.1]):
        finder.on_episode_end_(episode, {"loss": loss}, agent=agents[0])
    assert finder.logs["best_loss"] == pytest.approx(0.3) and finder.logs["best_opt"] == "opt-a"


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_maddpg_positional_form(backend) -> None:
    """The seed's MADDPG example class is called DDPG: ``DDPG(128, 0.1, 0.98, 0.005)`` with
    ``MARL=True`` = (hidden_size, tau, gamma, lr)."""
    model = agents_module(backend).MADDPG(128, 0.1, 0.98, 0.005)
    assert model.hidden == [128] and model.tau == 0.1 and model.lr == 0.005
    assert float(np.asarray(model.gamma)) == pytest.approx(0.98) and model.MARL


def test_dqn_hidden_dim_of_seed_001() -> None:
    model = agents_module("torch").DQN(state_dim=4, hidden_dim=128, action_dim=2)
    assert model.hidden == [128]
    with pytest.raises(ValueError, match="two names for one argument"):
        agents_module("torch").DQN(4, 16, 2, hidden_dim=8)
