"""TD3 on the Keras backend: its networks and losses (the update is :mod:`note_rl.agents.td3`)."""

from __future__ import annotations

import numpy as np
from ...backends import tf_backend as _tf_backend  # noqa: F401,I001 - imports TensorFlow with its start-up log lines silenced
import tensorflow as tf

from ...keras import RL
from ..common import public_module
from ..common.keras import Critics, mlp, mse, numpy_weights, q_values
from . import TD3Mixin

__all__ = ["TD3"]


@public_module("note_rl.agents.keras")
class TD3(TD3Mixin, Critics, RL):
    """TD3 (arguments as :class:`note_rl.agents.td3.TD3Mixin`)."""

    def _build_networks(self, actor: list[np.ndarray], critics: list[list[np.ndarray]], activation: str) -> None:
        with tf.device(self.device):
            self.actor = mlp(actor, activation, output="tanh")
            self.actor_target = mlp(actor, activation, output="tanh")
        self._build_critics(critics, activation)
        self.param = [self.actor.trainable_weights, self._critic_variables()]

    def actor_weights(self) -> list[np.ndarray]:
        return numpy_weights(self.actor)

    def load_initial_weights(self, actor: list[np.ndarray], *critics: list[np.ndarray]) -> None:
        for net in (self.actor, self.actor_target):
            net.set_weights(actor)
        self._load_critics(critics)

    def action(self, s: tf.Tensor) -> tf.Tensor:
        return self.actor(s)

    def critic_loss(self, s: tf.Tensor, a: tf.Tensor, next_s: tf.Tensor, r: tf.Tensor, d: tf.Tensor) -> tf.Tensor:
        next_a = self.actor_target(next_s)
        if self.target_policy_noise > 0:
            smooth = tf.clip_by_value(tf.random.normal(tf.shape(next_a)) * self.target_policy_noise,
                                      -self.target_noise_clip, self.target_noise_clip)
            next_a = tf.clip_by_value(next_a + smooth, -1.0, 1.0)
        next_q = tf.reduce_min(tf.stack(q_values(self.critic_targets, next_s, next_a)), axis=0)
        target = tf.stop_gradient(r + self.gamma * (1.0 - d) * next_q)
        qs = q_values(self.critics, s, tf.reshape(a, [-1, self.action_dim]))
        self.prioritized_replay.update(tf.stop_gradient(qs[0] - target))  # used by prioritized replay
        return tf.add_n([mse(q, target) for q in qs])

    def actor_loss(self, s: tf.Tensor, a: tf.Tensor, next_s: tf.Tensor, r: tf.Tensor, d: tf.Tensor) -> tf.Tensor:
        return -tf.reduce_mean(self.critics[0](tf.concat([s, self.actor(s)], axis=1)))
