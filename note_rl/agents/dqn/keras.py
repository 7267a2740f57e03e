"""Double DQN on the Keras backend: its network and loss (the update is :mod:`note_rl.agents.dqn`)."""

from __future__ import annotations

from ...backends import tf_backend as _tf_backend  # noqa: F401,I001 - imports TensorFlow with its start-up log lines silenced
import numpy as np
import tensorflow as tf

from ...keras import RL
from ..common import public_module
from ..common.keras import numpy_weights, pick
from ..nets.keras import KerasNetworks
from . import DQNMixin

__all__ = ["DQN"]


def _td_loss(td: tf.Tensor, kind: str, weights: tf.Tensor | None) -> tf.Tensor:
    if kind == "huber":
        a = tf.abs(td)
        per = tf.where(a < 1.0, 0.5 * td * td, a - 0.5)
    else:
        per = td * td
    if weights is not None:
        per = per * weights
    return tf.reduce_mean(per)


@public_module("note_rl.agents.keras")
class DQN(KerasNetworks, DQNMixin, RL):
    """Double DQN with an MLP Q-network (arguments as :class:`note_rl.agents.dqn.DQNMixin`)."""

    def _build_networks(self, q: list[np.ndarray], activation: str) -> None:
        self.q_net = self._net(q)
        self.target_q_net = self._net(q)
        self.param = self.q_net.trainable_weights

    def q_weights(self) -> list[np.ndarray]:
        return numpy_weights(self.q_net)

    def load_initial_weights(self, q: list[np.ndarray]) -> None:
        for net in (self.q_net, self.target_q_net):
            net.set_weights(q)  # assigns the existing variables: self.param stays valid

    def action(self, s: tf.Tensor) -> tf.Tensor:
        return self.q_net(s)

    def __call__(self, s: tf.Tensor, a: tf.Tensor, next_s: tf.Tensor, r: tf.Tensor, d: tf.Tensor,
                 weights: tf.Tensor | None = None) -> tf.Tensor:
        q = pick(self.q_net(s), a)
        next_target = self.target_q_net(next_s)
        if self.double:
            best = tf.argmax(self.q_net(next_s), axis=1)
            next_q = pick(next_target, best)
        else:
            next_q = tf.reduce_max(next_target, axis=1)
        discount = self.gamma ** float(self.num_steps or 1)
        target = tf.stop_gradient(r + discount * next_q * (1.0 - d))
        td = q - target
        self.prioritized_replay.update(tf.stop_gradient(td))  # used by prioritized replay
        return _td_loss(td, self.loss_type, weights)
