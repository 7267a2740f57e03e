"""SAC on the Keras backend: its networks, squashed-Gaussian sample and losses (the update is
:mod:`note_rl.agents.sac`)."""

from __future__ import annotations

import math

import numpy as np
from ...backends import tf_backend as _tf_backend  # noqa: F401,I001 - imports TensorFlow with its start-up log lines silenced
import tensorflow as tf

from ...keras import RL
from ..common import public_module
from ..common.keras import Critics, forward_hidden, mlp, mse, numpy_weights, q_values, sde_sigma
from . import LOG_STD_MAX, LOG_STD_MIN, SDE_CLIP_MEAN, SACMixin

__all__ = ["SAC"]


@public_module("note_rl.agents.keras")
class SAC(SACMixin, Critics, RL):
    """SAC (arguments as :class:`note_rl.agents.sac.SACMixin`)."""

    def _build_networks(self, actor: list[np.ndarray], critics: list[list[np.ndarray]], activation: str) -> None:
        with tf.device(self.device):
            self.actor = mlp(actor, activation)
            self.log_alpha = tf.Variable([math.log(self.alpha_init)], dtype=tf.float32, name="log_alpha")
            if self.use_sde:  # gSDE's log std: a (features, action) matrix trained with the actor
                self.sde_log_std = tf.Variable(tf.fill([self.hidden[-1], self.action_dim], self.log_std_init),
                                               name="sde_log_std")
        self._build_critics(critics, activation)
        actor_vars = list(self.actor.trainable_weights) + ([self.sde_log_std] if self.use_sde else [])
        self.param = [actor_vars, self._critic_variables()]
        if self.auto_alpha:
            self.param.append([self.log_alpha])

    def actor_weights(self) -> list[np.ndarray]:
        return numpy_weights(self.actor)

    def read_sde_log_std(self) -> np.ndarray:
        return np.asarray(self.sde_log_std.numpy())

    def load_initial_weights(self, actor: list[np.ndarray], *critics: list[np.ndarray]) -> None:
        self.actor.set_weights(actor)
        self._load_critics(critics)
        self.log_alpha.assign([math.log(self.alpha_init)])
        if self.use_sde:
            self.sde_log_std.assign(tf.fill(self.sde_log_std.shape, self.log_std_init))

    def action(self, s: tf.Tensor) -> tf.Tensor:
        if self.use_sde:  # [mean, features]: the numpy side draws gSDE's noise from the features
            return tf.concat(forward_hidden(self.actor, s), axis=1)
        return self.actor(s)

    def _normal(self, like: tf.Tensor) -> tf.Tensor:
        return tf.random.normal(tf.shape(like))

    def _sample(self, s: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        if self.use_sde:
            return self._sde_sample(s)
        mean, log_std = tf.split(self.actor(s), 2, axis=1)
        log_std = tf.clip_by_value(log_std, LOG_STD_MIN, LOG_STD_MAX)
        eps = self._normal(mean)
        u = mean + tf.exp(log_std) * eps
        action = tf.tanh(u)
        gauss = -0.5 * tf.square(eps) - log_std - 0.5 * math.log(2 * math.pi)
        log_prob = tf.reduce_sum(gauss - tf.math.log(1.0 - tf.square(action) + 1e-6), axis=1)
        return action, log_prob

    def _sde_sample(self, s: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """gSDE's sample (see :mod:`note_rl.agents.sac`): one exploration matrix for the batch."""
        mean, z = forward_hidden(self.actor, s)
        mean = tf.clip_by_value(mean, -SDE_CLIP_MEAN, SDE_CLIP_MEAN)
        z = tf.stop_gradient(z)  # as SB3 (learn_features=False): the noise's gradient does not train the features
        std = tf.exp(self.sde_log_std)
        noise = tf.matmul(z, std * self._normal(std))
        sigma = sde_sigma(z, std)
        action = tf.tanh(mean + noise)
        gauss = -0.5 * tf.square(noise / sigma) - tf.math.log(sigma) - 0.5 * math.log(2 * math.pi)
        return action, tf.reduce_sum(gauss - tf.math.log(1.0 - tf.square(action) + 1e-6), axis=1)

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
