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

    def _build_networks(self, weights: list[np.ndarray], *sdn: list[np.ndarray]) -> None:
        with tf.device(self.device):
            self.net = mlp(weights, self.activation)
            self.avg_net = mlp(weights, self.activation)
            self.param = list(self.net.trainable_weights)
            if sdn:  # Box actions: the stochastic dueling network, trained with the policy
                self.v_net, self.a_net = (mlp(w, self.activation) for w in sdn)
                self.param += list(self.v_net.trainable_weights) + list(self.a_net.trainable_weights)

    def load_initial_weights(self, weights: list[np.ndarray], *sdn: list[np.ndarray]) -> None:
        for net, w in ((self.net, weights), (self.avg_net, weights),
                       *zip((self.v_net, self.a_net) if sdn else (), sdn)):
            net.set_weights(w)

    def sdn_weights(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        return numpy_weights(self.v_net), numpy_weights(self.a_net)

    def net_weights(self, avg: bool = False) -> list[np.ndarray]:
        return numpy_weights(self.avg_net if avg else self.net)

    def action(self, s: tf.Tensor) -> tf.Tensor:
        """The policy's action probabilities, or the Gaussian's mean (Box actions)."""
        if self.continuous:
            return self.net(s)
        return tf.nn.softmax(self.net(s)[:, :self.action_dim], axis=-1)

    def acer_loss(self, x: tf.Tensor, a: tf.Tensor, grad_f: tf.Tensor, q_ret: tf.Tensor, offset: tf.Tensor) -> tf.Tensor:
        out = self.net(x)
        f = tf.nn.softmax(out[:, :self.action_dim], axis=-1)
        q_a = pick(out[:, self.action_dim:], a)
        # the policy's gradient is grad_f pulled back through f (Algorithm 2, lines 16-18)
        return (tf.reduce_sum(grad_f * f) + tf.reduce_sum(offset)
                + self.q_coef * 0.5 * tf.reduce_mean(tf.square(q_ret - q_a)))

    def sdn_loss(self, x: tf.Tensor, au: tf.Tensor, grad_mean: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
        n, k1 = tf.shape(au)[0], tf.shape(au)[1]
        v = self.v_net(x)[:, 0]
        xs = tf.broadcast_to(x[:, None], tf.concat([[n, k1], tf.shape(x)[1:]], 0))
        xa = tf.reshape(tf.concat([xs, au], -1), [n * k1, x.shape[1] + au.shape[2]])
        adv = tf.reshape(self.a_net(xa)[:, 0], [n, k1])
        q = v + adv[:, 0] - tf.reduce_mean(adv[:, 1:], 1)  # Q~(x, a) of the stochastic dueling network
        q_ret, v_coef, offset = targets[:, 0], targets[:, 1], targets[:, 2]
        return (tf.reduce_sum(grad_mean * self.net(x)) + tf.reduce_sum(offset)
                + self.q_coef * (0.5 * tf.reduce_mean(tf.square(q_ret - q)) - tf.reduce_mean(v_coef * v)))
