"""SAC on the Keras backend: its networks, squashed-Gaussian sample and losses (the update is
:mod:`note_rl.agents.sac`)."""

from __future__ import annotations

import math

import numpy as np
from ...backends import tf_backend as _tf_backend  # noqa: F401,I001 - imports TensorFlow with its start-up log lines silenced
import tensorflow as tf

from ...keras import RL
from ..common import public_module
from ..common.keras import Critics, mlp, mse, numpy_weights, q_values
from . import LOG_STD_MAX, LOG_STD_MIN, SACMixin

__all__ = ["SAC"]


@public_module("note_rl.agents.keras")
class SAC(SACMixin, Critics, RL):
    """SAC (arguments as :class:`note_rl.agents.sac.SACMixin`)."""

    def _build_networks(self, actor: list[np.ndarray], critics: list[list[np.ndarray]], activation: str) -> None:
        with tf.device(self.device):
            self.actor = mlp(actor, activation)
            self.log_alpha = tf.Variable([math.log(self.alpha_init)], dtype=tf.float32, name="log_alpha")
        self._build_critics(critics, activation)
        self.param = [self.actor.trainable_weights, self._critic_variables()]
        if self.auto_alpha:
            self.param.append([self.log_alpha])

    def actor_weights(self) -> list[np.ndarray]:
        return numpy_weights(self.actor)

    def load_initial_weights(self, actor: list[np.ndarray], *critics: list[np.ndarray]) -> None:
        self.actor.set_weights(actor)
        self._load_critics(critics)
        self.log_alpha.assign([math.log(self.alpha_init)])

    def action(self, s: tf.Tensor) -> tf.Tensor:
        return self.actor(s)

    def _normal(self, like: tf.Tensor) -> tf.Tensor:
        return tf.random.normal(tf.shape(like))

    def _sample(self, s: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        mean, log_std = tf.split(self.actor(s), 2, axis=1)
        log_std = tf.clip_by_value(log_std, LOG_STD_MIN, LOG_STD_MAX)
        eps = self._normal(mean)
        u = mean + tf.exp(log_std) * eps
        action = tf.tanh(u)
        gauss = -0.5 * tf.square(eps) - log_std - 0.5 * math.log(2 * math.pi)
        log_prob = tf.reduce_sum(gauss - tf.math.log(1.0 - tf.square(action) + 1e-6), axis=1)
        return action, log_prob

    def alpha(self) -> tf.Tensor:
        return tf.stop_gradient(tf.exp(self.log_alpha))

    def critic_loss(self, s: tf.Tensor, a: tf.Tensor, next_s: tf.Tensor, r: tf.Tensor, d: tf.Tensor) -> tf.Tensor:
        next_a, next_logp = self._sample(next_s)
        next_q = tf.reduce_min(tf.stack(q_values(self.critic_targets, next_s, next_a)), axis=0)
        target = tf.stop_gradient(r + self.gamma * (1.0 - d) * (next_q - self.alpha() * next_logp))
        qs = q_values(self.critics, s, tf.reshape(a, [-1, self.action_dim]))
        self.prioritized_replay.update(tf.stop_gradient(qs[0] - target))  # used by prioritized replay
        return 0.5 * tf.add_n([mse(q, target) for q in qs])

    def _actor_terms(self, s: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        action, logp = self._sample(s)
        q = tf.reduce_min(tf.stack(q_values(self.critics, s, action)), axis=0)
        return tf.reduce_mean(self.alpha() * logp - q), logp

    def _alpha_from(self, logp: tf.Tensor) -> tf.Tensor:
        return -tf.reduce_mean(self.log_alpha * tf.stop_gradient(logp + self.target_entropy))
