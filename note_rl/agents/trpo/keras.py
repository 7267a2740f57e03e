"""TRPO on the Keras backend: Keras's ``PPO.Rollout`` (networks, policy, rollouts) with TRPO's constructor and
update (:mod:`note_rl.agents.trpo`), and the surrogate, the mean KL(pi_old || pi) and the value loss."""

from __future__ import annotations

from ...backends import tf_backend as _tf_backend  # noqa: F401,I001 - imports TensorFlow with its start-up log lines silenced
import numpy as np
import tensorflow as tf

from ...utils import network_input
from ..common import public_module
from ..ppo.keras import PPO
from . import TRPOMixin

__all__ = ["TRPO"]


@public_module("note_rl.agents.keras")
class TRPO(TRPOMixin, PPO.Rollout):
    """TRPO (arguments and defaults as :class:`note_rl.agents.torch.TRPO`)."""

    def policy_output(self, s: np.ndarray) -> np.ndarray:
        with tf.device(self.device):
            return np.asarray(self.actor(tf.convert_to_tensor(network_input(s))))

    def surrogate(self, s: tf.Tensor, a: tf.Tensor, logp_old: tf.Tensor, adv: tf.Tensor) -> tf.Tensor:
        return tf.reduce_mean(tf.exp(self._log_prob(self.actor(s), a) - logp_old) * adv)

    def kl(self, s: tf.Tensor, old_out: tf.Tensor, old_log_std: tf.Tensor) -> tf.Tensor:
        out = self.actor(s)
        if self.continuous:
            var_old, var = tf.exp(2.0 * old_log_std), tf.exp(2.0 * self.log_std)
            kl = self.log_std - old_log_std + (var_old + tf.square(old_out - out)) / (2.0 * var) - 0.5
        else:
            logp_old = tf.nn.log_softmax(old_out, axis=-1)
            kl = tf.exp(logp_old) * (logp_old - tf.nn.log_softmax(out, axis=-1))
        return tf.reduce_mean(tf.reduce_sum(kl, axis=-1))

    def critic_loss(self, s: tf.Tensor, a: tf.Tensor, logp_old: tf.Tensor, adv: tf.Tensor, ret: tf.Tensor) -> tf.Tensor:
        return tf.reduce_mean(tf.square(ret - self.critic(s)[:, 0]))
