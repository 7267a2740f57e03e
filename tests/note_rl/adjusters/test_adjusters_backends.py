"""Adjusters on both backends: optimizer hyperparameters and scalar variables really change and
the next (compiled) step uses them; gradient noise measured through the backends' gradients."""

import types

import numpy as np
import pytest

from note_rl.adjusters import ESSAdjuster, GNSAdjuster
from note_rl.buffers import PriorityRecorder, ReplayBuffer
from tests.conftest import agents_module


def _adjust_to(agent, name, direction, new):
    """Move ``name`` to ``new`` through an ESS-mode rate rule (rate 1, no smoothing):
    ``x + d * (E / T - 1) = new`` with ``T = 1``."""
    current = ESSAdjuster(target_ess=1.0, params={name: {"rate": 1.0, "smooth": 0.0}})
    signal = 1.0 + direction * (new - _get(agent, name))
    logs = current.apply(agent, signal, 1.0)
    assert logs[name] == pytest.approx(new)


def _get(agent, name):
    return agent.backend.get_hparam(agent.optimizer, name)


def _setup(backend, opt_name, **opt_kwargs):
    """A 3-vector ``w``, loss ``sum(w * x)`` (gradient ``x``), the backend's compiled step."""
    w0 = np.array([1.0, -2.0, 0.5], np.float32)
    if backend == "torch":
        import torch

        from note_rl.backends.torch_backend import BACKEND

        w = torch.nn.Parameter(torch.tensor(w0))
        cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[opt_name]
        opt = cls([w], **opt_kwargs)
        loss = lambda x: (w * x).sum()  # noqa: E731
        read = lambda: w.detach().numpy().copy()  # noqa: E731
        slots = lambda: (opt.state[w]["exp_avg"].numpy().copy(), opt.state[w]["exp_avg_sq"].numpy().copy())  # noqa: E731
    else:
        import keras
        import tensorflow as tf

        from note_rl.backends.tf_backend import BACKEND

        w = tf.Variable(w0)
        cls = {"sgd": keras.optimizers.SGD, "adam": keras.optimizers.Adam}[opt_name]
        opt = cls(**opt_kwargs)
        loss = lambda x: tf.reduce_sum(w * x)  # noqa: E731
        read = lambda: w.numpy().copy()  # noqa: E731
        slots = lambda: (opt._momentums[0].numpy().copy(), opt._velocities[0].numpy().copy())  # noqa: E731
    BACKEND.prepare_optimizer(opt, [w])
    # jit: XLA-compiled tf.function for TF; eager torch (torch.compile is tested elsewhere)
    step = BACKEND.make_step(loss, [opt], [[w]], PriorityRecorder(), jit=backend == "tf")
    agent = types.SimpleNamespace(backend=BACKEND, optimizer=opt, buffer=None)
    return agent, step, read, slots


X = np.array([0.5, 1.0, -2.0], np.float32)


def test_lr_change_is_used_by_the_next_step(backend) -> None:
    agent, step, read, _ = _setup(backend, "sgd", **({"lr": 0.1} if backend == "torch" else {"learning_rate": 0.1}))
    w0 = read()
    step([X])                                           # traced with lr 0.1
    w1 = read()
    np.testing.assert_allclose(w1, w0 - 0.1 * X, rtol=1e-6)
    _adjust_to(agent, "lr", +1, 0.3)
    step([X])
    np.testing.assert_allclose(read(), w1 - 0.3 * X, rtol=1e-6)


def test_weight_decay_change_is_used_by_the_next_step(backend) -> None:
    kwargs = {"weight_decay": 0.1, **({"lr": 0.1} if backend == "torch" else {"learning_rate": 0.1})}
    agent, step, read, _ = _setup(backend, "sgd", **kwargs)
    step([X])
    w1 = read()
    _adjust_to(agent, "weight_decay", -1, 0.5)
    step([X])
    # both frameworks: w <- w - lr * g - lr * wd * w
    np.testing.assert_allclose(read(), w1 - 0.1 * X - 0.1 * 0.5 * w1, rtol=1e-5)


def test_adam_betas_change_inside_the_compiled_step(backend) -> None:
    agent, step, read, slots = _setup(backend, "adam", **({"lr": 0.01} if backend == "torch" else {"learning_rate": 0.01}))
    step([X])                                           # traced with betas (0.9, 0.999)
    m1, v1 = slots()
    np.testing.assert_allclose(m1, 0.1 * X, rtol=1e-5)
    _adjust_to(agent, "beta1", +1, 0.5)
    _adjust_to(agent, "beta2", +1, 0.75)
    x2 = 2.0 * X
    step([x2])
    m2, v2 = slots()
    np.testing.assert_allclose(m2, 0.5 * m1 + 0.5 * x2, rtol=1e-5)
    np.testing.assert_allclose(v2, 0.75 * v1 + 0.25 * x2 ** 2, rtol=1e-5)


def test_each_optimizer_of_a_list_is_adjusted(backend) -> None:
    agent = agents_module(backend).PPO(4, 8, 2, seed=0)
    if backend == "torch":
        import torch

        agent.optimizer = [torch.optim.Adam(agent.param[0], lr=1e-4), torch.optim.Adam(agent.param[1], lr=5e-3)]
    else:
        import keras

        agent.optimizer = [keras.optimizers.Adam(1e-4), keras.optimizers.Adam(5e-3)]
    logs = ESSAdjuster(target_ess=1.0, params={"lr": {"rate": 1e-3, "smooth": 0.0}}).apply(agent, 2.0, 1.0)
    lrs = [agent.backend.get_hparam(o, "lr") for o in agent.optimizer]
    assert lrs == pytest.approx([1.1e-3, 6e-3]) and [logs["lr/0"], logs["lr/1"]] == pytest.approx(lrs)


def test_gamma_and_clip_variables_change_where_compiled_losses_read_them(backend) -> None:
    agent = agents_module(backend).PPO(4, 8, 2, clip=0.2, gamma=0.9, seed=0)
    if backend == "tf":
        import tensorflow as tf

        read = tf.function(lambda: (agent.gamma * 1.0, agent.clip * 1.0))
    else:
        read = lambda: (agent.gamma * 1.0, agent.clip * 1.0)  # noqa: E731
    assert np.allclose([float(v) for v in read()], [0.9, 0.2])   # traced before the change
    ESSAdjuster(target_ess=1.0, params={"gamma": {"rate": 0.05, "smooth": 0.0},
                                        "clip": {"rate": 0.1, "smooth": 0.0}}).apply(agent, 2.0, 1.0)
    assert np.allclose([float(v) for v in read()], [0.95, 0.3])


# -- gradient noise through the backends ------------------------------------------------------
def _linear_agent(backend, w0):
    """Loss 1/2 mean((s . w - r)^2): linear regression on the buffer's (state, reward)."""
    if backend == "torch":
        import torch

        from note_rl.torch import RL_pytorch

        class LinReg(RL_pytorch):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.tensor(w0))
                self.param = [self.w]

            def __call__(self, s, a, next_s, r, d):
                return 0.5 * ((s @ self.w - r) ** 2).mean()
    else:
        import tensorflow as tf

        from note_rl.keras import RL

        class LinReg(RL):
            def __init__(self):
                super().__init__()
                self.w = tf.Variable(w0)
                self.param = [self.w]

            def __call__(self, s, a, next_s, r, d):
                return 0.5 * tf.reduce_mean(tf.square(tf.linalg.matvec(s, self.w) - r))
    return LinReg()


def test_gns_recovers_the_noise_of_linear_regression(backend) -> None:
    """x ~ N(0, I), y = x.w* + N(0, 1), w = w* + d with |d| = 1: B_simple = (D (|d|^2 + 1) +
    |d|^2) / |d|^2 = 21 for D = 10 (the pool's exact values are used as the truth)."""
    rng = np.random.default_rng(1)
    dim, n, batch = 10, 20_000, 32
    w_star = rng.normal(size=dim).astype(np.float32)
    x = rng.normal(size=(n, dim)).astype(np.float32)
    y = (x @ w_star + rng.normal(size=n)).astype(np.float32)
    agent = _linear_agent(backend, (w_star + 1 / np.sqrt(dim)).astype(np.float32))
    agent.set(batch=batch)
    agent.buffer = ReplayBuffer(n)
    agent.buffer.add_batch(x, np.zeros(n), x, y, np.zeros(n))
    per_example = x.astype(np.float64) * (x @ (w_star + 1 / np.sqrt(dim)) - y)[:, None]
    true_tr = per_example.var(axis=0).sum()
    true_g2 = float(np.sum(per_example.mean(axis=0) ** 2))
    adj = GNSAdjuster(num_samples=16, smooth_alpha=0.04, seed=0)
    for _ in range(150):  # EMA over ~50 measurements: 30 seeds of this setup err by < 6 %
        logs = adj.run(agent)
    assert true_tr / true_g2 == pytest.approx(21, rel=0.1)
    assert logs["b_simple"] == pytest.approx(true_tr / true_g2, rel=0.1)
    assert logs["noise_ema"] == pytest.approx(true_tr / (batch * dim), rel=0.1)
    assert logs["noise_ratio"] == pytest.approx(true_tr / true_g2 / batch, rel=0.1)
