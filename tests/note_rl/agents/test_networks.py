"""Networks from config (issue 35, item 1): the built-in CNN encoders give the same outputs and losses
in PyTorch and Keras for the same weights (to 1e-5), image observations stay uint8 until the encoder,
seeded initial weights are reproducible, a user's module class plugs in, and ``network=None`` is
today's MLP."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from note_rl.agents.nets import (MLP, MinAtarCNN, Module, NatureCNN, conv_out_shape, image_layout,
                                 init_conv_encoder, network_spec)
from tests.conftest import agents_module

torch = pytest.importorskip("torch")


class ImageEnv(gym.Env):
    """Random uint8 images of ``shape`` (HWC or CHW), 3 actions, reward 1 for action 0, 8 steps."""

    metadata = {"render_modes": []}

    def __init__(self, shape=(10, 10, 4), dtype=np.uint8) -> None:
        high = 255 if dtype == np.uint8 else 1
        self.observation_space = gym.spaces.Box(0, high, shape, dtype)
        self.action_space = gym.spaces.Discrete(3)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        return self.observation_space.sample(), float(int(action) == 0), False, self.t >= 8, {}


class TinyEncoder(torch.nn.Module):
    """A user's own encoder: ``TinyEncoder(obs_shape, width)``, flat features of ``width``."""

    def __init__(self, obs_shape, width: int = 8) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(int(np.prod(obs_shape)), width)

    def forward(self, x):
        return torch.relu(self.linear(x.flatten(1)))


def _images(shape, n=5, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, *shape)).astype(np.uint8)


def test_layout_and_shapes() -> None:
    assert image_layout((4, 84, 84)) == "chw" and image_layout((84, 84, 4)) == "hwc"
    assert image_layout((10, 10, 10)) == "hwc" and image_layout((4, 84, 84), "hwc") == "hwc"
    assert conv_out_shape((84, 84, 4), NatureCNN()) == (7, 7, 64)
    assert conv_out_shape((4, 84, 84), NatureCNN()) == (7, 7, 64)
    assert conv_out_shape((10, 10, 4), MinAtarCNN()) == (8, 8, 16)
    with pytest.raises(ValueError, match="too small"):
        conv_out_shape((10, 10, 4), NatureCNN())
    with pytest.raises(ValueError, match="3 axes"):
        image_layout((4,))


def test_specs_from_config_nodes() -> None:
    assert network_spec(None) is None
    assert network_spec({"_target_": "note_rl.agents.nets.NatureCNN"}) == NatureCNN()
    assert network_spec({"_target_": "note_rl.agents.nets.MinAtarCNN", "features": 64}) == MinAtarCNN(64)
    assert network_spec({"_target_": "note_rl.agents.nets.MLP", "hidden_size": 32}).hidden_size == [32]
    user = network_spec({"_target_": "tests.note_rl.agents.test_networks.TinyEncoder", "width": 4})
    assert isinstance(user, Module) and user.kwargs == {"width": 4}
    with pytest.raises(ValueError, match="features"):
        network_spec({"_target_": "note_rl.agents.nets.MinAtarCNN", "features": 0})
    with pytest.raises(ValueError, match="unexpected keyword"):
        network_spec({"_target_": "note_rl.agents.nets.NatureCNN", "filters": 3})
    with pytest.raises(ValueError, match="_target_"):
        network_spec("nature")


@pytest.mark.parametrize("shape", [(84, 84, 4), (4, 84, 84)])
def test_nature_cnn_forward_matches_between_backends(shape) -> None:
    """Same numpy weights, same uint8 batch: PyTorch (NCHW inside) and Keras (NHWC) agree to 1e-5,
    in both channel orders; the uint8 batch and its float32 copy give the same output (the scale
    is the env's, applied once, in the encoder)."""
    pytest.importorskip("tensorflow")
    from note_rl.agents.nets.keras import EncoderModel
    from note_rl.agents.nets.torch import EncoderNet

    spec = NatureCNN()
    weights = init_conv_encoder(shape, spec, np.random.default_rng(0)) + [
        np.random.default_rng(1).normal(size=(512, 6)).astype(np.float32) * 0.05, np.zeros(6, np.float32)]
    x = _images(shape)
    out_t = EncoderNet(spec, shape, weights, scale=1 / 255)(torch.as_tensor(x)).detach().numpy()
    out_k = np.asarray(EncoderModel(spec, shape, weights, scale=1 / 255)(x))
    np.testing.assert_allclose(out_t, out_k, rtol=1e-5, atol=1e-5)
    as_float = EncoderNet(spec, shape, weights, scale=1 / 255)(torch.as_tensor(x.astype(np.float32)))
    np.testing.assert_allclose(as_float.detach().numpy(), out_t, rtol=1e-6, atol=1e-6)


def test_nature_cnn_matches_a_reference_written_with_torch_layers() -> None:
    """The kernel and flatten layouts are right: the encoder equals torch's own Conv2d / Linear stack
    (SB3's NatureCNN shape) given the same weights, permuted to torch's layouts."""
    from note_rl.agents.nets.torch import EncoderNet

    shape = (4, 84, 84)
    spec = NatureCNN()
    weights = init_conv_encoder(shape, spec, np.random.default_rng(3)) + [
        np.eye(512, 2, dtype=np.float32), np.zeros(2, np.float32)]
    convs = [torch.nn.Conv2d(4, 32, 8, 4), torch.nn.Conv2d(32, 64, 4, 2), torch.nn.Conv2d(64, 64, 3, 1)]
    with torch.no_grad():
        for i, conv in enumerate(convs):
            conv.weight.copy_(torch.as_tensor(weights[2 * i]).permute(3, 2, 0, 1))
            conv.bias.copy_(torch.as_tensor(weights[2 * i + 1]))
        x = torch.as_tensor(_images(shape)).float() / 255.0
        h = x
        for conv in convs:
            h = torch.relu(conv(h))
        h = h.permute(0, 2, 3, 1).flatten(1)  # the encoder's documented (H, W, C) flatten order
        ref = torch.relu(h @ torch.as_tensor(weights[6]) + torch.as_tensor(weights[7]))[:, :2]
        out = EncoderNet(spec, shape, weights, scale=1 / 255)(torch.as_tensor(_images(shape)))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cls_name", ["DQN", "PPO"])
def test_agents_with_a_cnn_match_between_backends(cls_name) -> None:
    """Seeded agents with the MinAtar CNN start from the same weights in both backends, act the same,
    and DQN's TD loss on a uint8 image batch agrees to 1e-5."""
    pytest.importorskip("tensorflow")
    kwargs = dict(env=ImageEnv(), network={"_target_": "note_rl.agents.nets.MinAtarCNN"}, seed=4)
    if cls_name == "PPO":
        kwargs.update(n_steps=8, ortho_init=True)
    agents = [getattr(agents_module(b), cls_name)(None, None, 3, **kwargs) for b in ("torch", "tf")]
    read = "q_weights" if cls_name == "DQN" else "actor_weights"
    for wt, wk in zip(*(getattr(a, read)() for a in agents)):
        np.testing.assert_array_equal(wt, wk)
    obs = _images((10, 10, 4), n=6, seed=2)
    np.testing.assert_allclose(agents[0].act_output(obs), agents[1].act_output(obs), rtol=1e-5, atol=1e-6)
    if cls_name == "DQN":
        rng = np.random.default_rng(5)
        batch = [obs, rng.integers(0, 3, 6), _images((10, 10, 4), n=6, seed=3),
                 rng.normal(size=6).astype(np.float32), np.zeros(6, np.float32)]
        for a in agents:
            a.set(PR=True)
        res = [a.backend.evaluate(a.__call__, batch, a.prioritized_replay) for a in agents]
        assert res[0].loss == pytest.approx(res[1].loss, rel=1e-5, abs=1e-6)
    else:
        values = [a.rollout_values(obs) for a in agents]
        np.testing.assert_allclose(values[0], values[1], rtol=1e-5, atol=1e-6)


def test_seeded_init_is_reproducible_and_reseeds() -> None:
    from note_rl.agents.torch import DQN

    net = {"_target_": "note_rl.agents.nets.MinAtarCNN", "features": 32}
    a, b = (DQN(None, None, 3, env=ImageEnv(), network=net, seed=7) for _ in range(2))
    c = DQN(None, None, 3, env=ImageEnv(), network=net, seed=8)
    for wa, wb in zip(a.q_weights(), b.q_weights()):
        np.testing.assert_array_equal(wa, wb)
    assert not np.array_equal(a.q_weights()[0], c.q_weights()[0])
    c.set(seed=7)  # before any gradient step: the weights are re-drawn from the new seed
    np.testing.assert_array_equal(a.q_weights()[0], c.q_weights()[0])


def test_images_stay_uint8_in_the_replay_buffer_and_train() -> None:
    from note_rl.agents.torch import DQN
    from tests.conftest import make_optimizer

    agent = DQN(None, None, 3, env=ImageEnv(), network={"_target_": "note_rl.agents.nets.MinAtarCNN"}, seed=0)
    agent.set(batch=8, learning_starts=16, pool_size=200, train_freq=4)
    agent.train(make_optimizer("torch", agent.param), None, steps=64, p=0)
    # stored once per frame, as uint8 (note_rl.buffers.frames), and sampled back as uint8 images
    assert agent.buffer.frame_store is not None and agent.buffer.data["frames"].dtype == np.uint8
    assert agent.buffer.sample(4)[0].dtype == np.uint8  # (state, action, ...)
    assert agent.batch_counter > 0


def test_users_module_class_and_mlp_spec() -> None:
    from note_rl.agents.torch import DQN, PPO

    net = {"_target_": "tests.note_rl.agents.test_networks.TinyEncoder", "width": 5}
    a, b = (PPO(None, None, 3, env=ImageEnv((6, 6, 2)), network=net, seed=1, n_steps=8) for _ in range(2))
    assert [w.shape for w in a.actor_weights()] == [(5, 72), (5,), (5, 3), (3,)]  # torch's own Linear layout
    for wa, wb in zip(a.critic_weights(), b.critic_weights()):
        np.testing.assert_array_equal(wa, wb)
    assert a.act_output(_images((6, 6, 2), n=2)).shape == (2, 3)
    # MLP spec: the same network as hidden_size / activation
    mlp = DQN(4, 16, 2, network=MLP([32, 8], "tanh"), seed=0)
    plain = DQN(4, [32, 8], 2, activation="tanh", seed=0)
    for wa, wb in zip(mlp.q_weights(), plain.q_weights()):
        np.testing.assert_array_equal(wa, wb)
    assert mlp.numpy_actor() is not None  # still the numpy MLP actor


def test_bad_networks_are_refused_in_one_line() -> None:
    from note_rl.agents.torch import DQN

    with pytest.raises(ValueError, match=r"too small for its convolutions"):
        DQN(None, None, 3, env=ImageEnv(), network={"_target_": "note_rl.agents.nets.NatureCNN"})
    with pytest.raises(ValueError, match="3 axes"):
        DQN(4, None, 2, network={"_target_": "note_rl.agents.nets.MinAtarCNN"})
    with pytest.raises(ValueError, match="cannot import"):
        DQN(None, None, 3, env=ImageEnv(), network={"_target_": "no_such_pkg.Encoder"})
    with pytest.raises(ValueError, match=r"shape \(10, 10, 4\); an MLP reads flat vectors"):
        DQN(None, 16, 3, env=ImageEnv())
    with pytest.raises(TypeError, match="state_dim"):
        DQN(None, 16, 2, env=gym.make("CartPole-v1").unwrapped.__class__())


def test_users_keras_layer_is_seeded_by_the_agent() -> None:
    pytest.importorskip("tensorflow")
    from note_rl.agents.keras import DQN

    net = {"_target_": "tests.note_rl.keras_encoder.KerasEncoder", "width": 5}
    a, b = (DQN(None, None, 3, env=ImageEnv((6, 6, 2)), network=net, seed=1) for _ in range(2))
    assert [w.shape for w in a.q_weights()] == [(72, 5), (5,), (5, 3), (3,)]
    for wa, wb in zip(a.q_weights(), b.q_weights()):
        np.testing.assert_array_equal(wa, wb)
    assert a.act_output(_images((6, 6, 2), n=2)).shape == (2, 3)
    with pytest.raises(ValueError, match="not a keras.layers.Layer"):
        DQN(None, None, 3, env=ImageEnv((6, 6, 2)), network={"_target_": "tests.note_rl.agents.test_networks.TinyEncoder"})


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_flat_integer_observations_still_reach_an_mlp_as_float32(backend) -> None:
    """Images stay uint8 until an encoder; a flat uint8 Box (Atari RAM's kind) is cast to float32 where
    envs are made, as float64 ones are, so the MLP agents read it as before."""
    if backend == "tf":
        pytest.importorskip("tensorflow")
    from tests.conftest import make_optimizer, train

    agent = agents_module(backend).DQN(8, 16, 3, env=ImageEnv((8,)), seed=0)
    assert agent.env.observation_space.dtype == np.float32
    agent.set(batch=8, learning_starts=16, pool_size=100, train_freq=4)
    train(agent, backend, make_optimizer(backend, agent.param), None, steps=40, p=0)
    assert agent.buffer.data["state"].dtype == np.float32 and agent.batch_counter > 0


def test_pool_network_dqn_acts_for_its_workers_with_a_cnn() -> None:
    """An encoder network has no numpy copy for pool workers: DQN's pool collection falls back to
    stepping the workers' envs while the training process acts for them (images stay uint8)."""
    from note_rl.agents.torch import DQN
    from tests.conftest import make_optimizer

    agent = DQN(None, None, 3, env=ImageEnv(), network={"_target_": "note_rl.agents.nets.MinAtarCNN"}, seed=0)
    agent.set(batch=8, learning_starts=16, pool_size=200, train_freq=4)
    agent.env = [ImageEnv(), ImageEnv()]
    agent.train(make_optimizer("torch", agent.param), 4, pool_network=True, processes=2, p=0)
    assert agent.step_counter == 64 and agent.batch_counter > 0 and agent.buffer.data["frames"].dtype == np.uint8
