"""Network building blocks every Keras agent shares: :func:`mlp`, the :class:`Critics` (critics and
their targets) of DDPG, TD3, SAC and MADDPG, and small tensor helpers."""

from __future__ import annotations

from typing import Any, Sequence

from ...backends import tf_backend as _tf_backend  # noqa: F401,I001 - imports TensorFlow with its start-up log lines silenced
import keras
import numpy as np
import tensorflow as tf

from ...core.runners import SDE_EPS

__all__ = ["mlp", "Critics", "q_values", "mse", "pick", "numpy_weights", "forward_hidden", "sde_sigma"]


def mlp(weights: Sequence[np.ndarray], activation: str = "relu", output: str = "linear") -> keras.Sequential:
    """MLP of ``Dense`` layers (``relu`` or ``tanh``) initialised from ``[W0, b0, W1, b1, ...]``;
    ``output="tanh"`` squashes the last layer (actions in ``[-1, 1]``)."""
    n = len(weights) // 2
    layers: list[Any] = [keras.Input((weights[0].shape[0],))]
    last = "tanh" if output == "tanh" else None
    for i in range(n):
        layers.append(keras.layers.Dense(weights[2 * i].shape[1], activation=activation if i < n - 1 else last))
    model = keras.Sequential(layers)
    model.set_weights([np.asarray(w, dtype=np.float32) for w in weights])
    return model


def forward_hidden(model: keras.Sequential, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """``(output, last hidden layer)`` of an :func:`mlp` in one pass (SAC's gSDE reads the features
    its output layer sees)."""
    *body, last = model.layers
    for layer in body:
        x = layer(x)
    return last(x), x


def sde_sigma(z: tf.Tensor, std: tf.Tensor) -> tf.Tensor:
    """gSDE: each action dimension's standard deviation at the states whose features are ``z``,
    ``sqrt(z**2 @ std**2 + 1e-6)`` (``std`` the ``(features, action_dim)`` matrix; SAC, PPO, A2C)."""
    return tf.sqrt(tf.matmul(tf.square(z), tf.square(std)) + SDE_EPS)


def numpy_weights(model: keras.Model) -> list[np.ndarray]:
    """The model's weights as numpy arrays, in ``[W0, b0, W1, b1, ...]`` order."""
    return [np.asarray(v.numpy()) for v in model.weights]


def pick(values: tf.Tensor, a: tf.Tensor) -> tf.Tensor:
    """``values[i, a[i]]`` for each row ``i`` (the value of the action taken)."""
    return tf.gather(values, tf.cast(tf.reshape(a, [-1]), tf.int32), axis=1, batch_dims=1)


def q_values(critics: Any, s: tf.Tensor, a: tf.Tensor) -> list[tf.Tensor]:
    """``[Q_i(s, a)]`` of each critic, on the state and action concatenated."""
    x = tf.concat([s, a], axis=1)
    return [critic(x)[:, 0] for critic in critics]


def mse(q: tf.Tensor, target: tf.Tensor) -> tf.Tensor:
    return tf.reduce_mean(tf.square(q - target))


class Critics:
    """Critics and their targets as lists of Keras models (checkpointed as ``critics[i]``)."""

    def _build_critics(self, critics: Sequence[list[np.ndarray]], activation: str) -> None:
        with tf.device(self.device):
            self.critics = [mlp(w, activation) for w in critics]
            self.critic_targets = [mlp(w, activation) for w in critics]

    def _critic_variables(self) -> list[Any]:
        return [v for c in self.critics for v in c.trainable_weights]

    def _load_critics(self, critics: Sequence[list[np.ndarray]]) -> None:
        for nets in (self.critics, self.critic_targets):
            for net, w in zip(nets, critics):
                net.set_weights(w)
