"""DQN trains end to end on a frame-stacked uint8 env with the frame-pool replay storage."""

from __future__ import annotations

import numpy as np

from note_rl.policy import EpsGreedyQPolicy
from tests.conftest import agents_module, make_optimizer, train

from tests.note_rl.frame_envs import make_pixel_env

K, SIZE = 4, 8
FLAT = K * SIZE * SIZE


def _flat_dqn(backend: str):
    """The built-in MLP DQN reading flattened, scaled frames (the test's stand-in for a CNN)."""
    base = agents_module(backend).DQN
    if backend == "torch":
        import torch

        def flat(s):
            return torch.as_tensor(s).reshape(-1, FLAT).float() / 255.0
    else:
        import tensorflow as tf

        def flat(s):
            return tf.reshape(tf.cast(s, tf.float32), (-1, FLAT)) / 255.0

    class FlatDQN(base):
        def action(self, s):
            return super().action(flat(s))

        def __call__(self, s, a, next_s, r, d, weights=None):
            return super().__call__(flat(s), a, flat(next_s), r, d, weights)

        def numpy_actor(self):  # the numpy MLP actor reads flat vectors: act through action()
            return None

    return FlatDQN


def test_dqn_trains_on_frames(backend) -> None:
    agent = _flat_dqn(backend)(FLAT, 32, 2, env=make_pixel_env(K), seed=0)
    agent.set(policy=EpsGreedyQPolicy(0.2), update_steps=20, pool_size=200, batch=16, seed=0)
    loss = train(agent, backend, make_optimizer(backend, agent.param), None, steps=300, p=0, jit_compile=False)
    buf = agent.buffer
    assert buf.frame_store is not None and buf.data["frames"].dtype == np.uint8  # chosen by itself
    assert "state" not in buf.data and len(buf) == 200  # wrapped around
    assert agent.batch_counter > 200 and loss is not None and np.isfinite(loss)
    # stacks rebuilt for training are the env's observations
    batch = buf.sample(8)
    assert batch.state.shape == (8, K, SIZE, SIZE) and batch.state.dtype == np.uint8
    np.testing.assert_array_equal(batch.state[:, 1:][batch.done == 0], batch.next_state[:, :-1][batch.done == 0])


def test_agent_checkpoint_keeps_the_frame_pool(tmp_path) -> None:
    """A full agent save (npz) and restore brings the frame pool back: same samples."""
    from note_rl.core.checkpoint import restore_agent, save_agent

    def make():
        agent = _flat_dqn("torch")(FLAT, 16, 2, env=make_pixel_env(K), seed=0)
        agent.set(policy=EpsGreedyQPolicy(0.2), update_steps=20, pool_size=100, batch=8, seed=0)
        return agent

    agent = make()
    train(agent, "torch", make_optimizer("torch", agent.param), None, steps=150, p=0, jit_compile=False)
    path = save_agent(agent, str(tmp_path / "agent.npz"), full=True)
    again = make()
    restore_agent(again, path)
    assert again.buffer.frame_store is not None
    slots = agent.buffer.valid_slots()
    a, b = agent.buffer.get(slots), again.buffer.get(slots)
    for x, y in zip(a[:5], b[:5]):
        np.testing.assert_array_equal(x, y)


def test_vectorised_collection_keeps_uint8_frames() -> None:
    """``set(n_envs=2)`` (note_rl.core.vec_collect) stores uint8 images as uint8: the frame pool."""
    agent = _flat_dqn("torch")(FLAT, 16, 2, env=make_pixel_env(K), seed=0)
    agent.set(policy=EpsGreedyQPolicy(0.2), update_steps=20, pool_size=100, batch=8, seed=0, n_envs=2)
    train(agent, "torch", make_optimizer("torch", agent.param), None, steps=120, p=0, jit_compile=False)
    assert agent.buffer.frame_store is not None and agent.buffer.data["frames"].dtype == np.uint8
    batch = agent.buffer.sample(8)
    assert batch.state.shape == (8, K, SIZE, SIZE)
