"""ACER on the Keras backend: the shared actor-critic MLP, its average copy, and the loss the update
steps on (the update is :mod:`note_rl.agents.acer`)."""

from __future__ import annotations

from ...backends import tf_backend as _tf_backend  # noqa: F401,I001 - imports TensorFlow with its start-up log lines silenced
import numpy as np
import tensorflow as tf

from ...keras import RL
from ..common import public_module
from ..common.keras import mlp, numpy_weights, pick
from . import ACERMixin

__all__ = ["ACER"]


@public_module("note_rl.agents.keras")
class ACER(ACERMixin, RL):
    """ACER (arguments and defaults as :class:`note_rl.agents.torch.ACER`)."""

    def _build_networks(self, weights: list[np.ndarray]) -> None:
        with tf.device(self.device):
            self.net = mlp(weights, self.activation)
            self.avg_net = mlp(weights, self.activation)
        self.param = self.net.trainable_weights

    def load_initial_weights(self, weights: list[np.ndarray]) -> None:
        for net in (self.net, self.avg_net):
            net.set_weights(weights)

    def net_weights(self, avg: bool = False) -> list[np.ndarray]:
        return numpy_weights(self.avg_net if avg else self.net)

    def action(self, s: tf.Tensor) -> tf.Tensor:
        """The policy's action probabilities."""
        return tf.nn.softmax(self.net(s)[:, :self.action_dim], axis=-1)

    def acer_loss(self, x: tf.Tensor, a: tf.Tensor, grad_f: tf.Tensor, q_ret: tf.Tensor, offset: tf.Tensor) -> tf.Tensor:
        out = self.net(x)
        f = tf.nn.softmax(out[:, :self.action_dim], axis=-1)
        q_a = pick(out[:, self.action_dim:], a)
        # the policy's gradient is grad_f pulled back through f (Algorithm 2, lines 16-18)
        return (tf.reduce_sum(grad_f * f) + tf.reduce_sum(offset)
                + self.q_coef * 0.5 * tf.reduce_mean(tf.square(q_ret - q_a)))
