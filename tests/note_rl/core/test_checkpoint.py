"""Checkpoints: full round trip in both backends, continuation equality, bad files."""

import os
import zipfile

import numpy as np
import pytest

from note_rl import CheckpointError, LambdaCallback
from note_rl.core import checkpoint
from note_rl.policy import EpsGreedyQPolicy
from tests.conftest import agents_module, make_optimizer, train


def _agent(backend, init_seed):
    agent = agents_module(backend).DQN(4, 32, 2, seed=init_seed)
    agent.set(policy=EpsGreedyQPolicy(0.2), pool_size=500, batch=16, update_steps=25, PR=True,
              learning_starts=20, seed=init_seed)  # set(seed) re-draws untrained weights
    return agent


def _run(agent, backend, opt, episodes):
    losses = []
    cb = LambdaCallback(on_batch_end=lambda batch, logs: losses.append(logs["loss"]))
    train(agent, backend, opt, episodes, p=0, callbacks=[cb], jit_compile=False)
    return losses


def _opt_arrays(agent):
    return agent.backend.optimizer_state(agent.optimizer)[1]


def test_full_round_trip_continues_identically(backend, tmp_path) -> None:
    path = str(tmp_path / "agent.dat")
    a = _agent(backend, init_seed=0)
    opt_a = make_optimizer(backend, a.param)
    _run(a, backend, opt_a, 6)
    a.save(path)
    saved = dict(weights=[w.copy() for w in a.q_weights()], opt=_opt_arrays(a),
                 buffer={k: v.copy() for k, v in a.buffer.state_dict()[1].items()},
                 counters=(a.step_counter, a.batch_counter, a.total_episode), rewards=list(a.reward_list))
    losses_a = _run(a, backend, opt_a, 3)

    b = _agent(backend, init_seed=123)  # different initial weights, replaced by the restore
    opt_b = make_optimizer(backend, b.param)
    b.restore(path, optimizer=opt_b)
    for w1, w2 in zip(saved["weights"], b.q_weights()):
        np.testing.assert_array_equal(w1, w2)
    for key, value in saved["opt"].items():
        np.testing.assert_array_equal(value, _opt_arrays(b)[key])
    for key, value in saved["buffer"].items():
        np.testing.assert_array_equal(value, b.buffer.state_dict()[1][key])
    assert (b.step_counter, b.batch_counter, b.total_episode) == saved["counters"]
    assert b.reward_list == saved["rewards"]
    losses_b = _run(b, backend, opt_b, 3)
    assert len(losses_b) == len(losses_a) > 0
    np.testing.assert_allclose(losses_b, losses_a, rtol=1e-5)
    assert b.reward_list == a.reward_list


def test_param_only_round_trip(backend, tmp_path) -> None:
    a = _agent(backend, init_seed=0)
    b = _agent(backend, init_seed=1)
    path = a.save_param(str(tmp_path / "p.dat"))
    b.restore_param(path)
    for w1, w2 in zip(a.q_weights(), b.q_weights()):
        np.testing.assert_array_equal(w1, w2)
    with pytest.raises(CheckpointError, match="weights only"):
        b.restore(path)


def test_bad_files_give_clear_errors(tmp_path) -> None:
    agent = _agent("torch", init_seed=0)
    garbage = tmp_path / "garbage.dat"
    garbage.write_bytes(b"\x00not a checkpoint at all")
    with pytest.raises(CheckpointError, match="not a note_rl checkpoint"):
        agent.restore(str(garbage))
    full = str(tmp_path / "full.dat")
    agent.save(full)
    truncated = tmp_path / "truncated.dat"
    truncated.write_bytes(open(full, "rb").read()[:200])
    with pytest.raises(CheckpointError):
        agent.restore(str(truncated))
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, x=np.zeros(3))
    with pytest.raises(CheckpointError, match="no metadata"):
        agent.restore(str(foreign))
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, __meta__=np.array([{"format": "note_rl-checkpoint"}], dtype=object))
    with pytest.raises(CheckpointError):  # object arrays would need pickle: refused
        agent.restore(str(pickled))
    with pytest.raises(FileNotFoundError):
        agent.restore(str(tmp_path / "missing.dat"))
    tf_agent = _agent("tf", init_seed=0)
    with pytest.raises(CheckpointError, match="backend"):
        tf_agent.restore(full)


def test_write_is_atomic(tmp_path, monkeypatch) -> None:
    path = str(tmp_path / "ckpt.dat")
    checkpoint.write_npz(path, {"format": checkpoint.FORMAT}, {"a": np.arange(3)})
    before = open(path, "rb").read()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(OSError):
        checkpoint.write_npz(path, {"format": checkpoint.FORMAT}, {"a": np.arange(5)})
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["ckpt.dat"]
    assert zipfile.is_zipfile(path)


def test_periodic_rotation_and_best_only(tmp_path) -> None:
    agent = _agent("torch", init_seed=0)
    agent.path = str(tmp_path / "model.dat")
    agent.save_freq = 1
    agent.max_save_files = 2
    train(agent, "torch", make_optimizer("torch", agent.param), 4, p=0)
    assert sorted(os.listdir(tmp_path)) == ["model-3.dat", "model-4.dat"]
    best = _agent("torch", init_seed=0)
    best.path = str(tmp_path / "best.dat")
    best.save_best_only = True
    best.save_param_only = True
    best.trial_count = 1
    saved = []
    orig = best.save_param
    best.save_param = lambda path=None: saved.append(best.reward_list[-1]) or orig(path)
    train(best, "torch", make_optimizer("torch", best.param), 8, p=0)
    assert saved == [r for i, r in enumerate(best.reward_list) if r > max(best.reward_list[:i], default=-1e9)]
