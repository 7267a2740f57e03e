"""MADDPG on the Keras backend: its networks and losses (the update is :mod:`note_rl.agents.maddpg`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from ...backends import tf_backend as _tf_backend  # noqa: F401,I001 - imports TensorFlow with its start-up log lines silenced
import tensorflow as tf

from ...keras import RL
from ..common import public_module
from ..common.keras import Critics, mlp, mse
from . import MADDPGMixin

__all__ = ["MADDPG"]


@public_module("note_rl.agents.keras")
class MADDPG(MADDPGMixin, Critics, RL):
    """MADDPG (arguments as :class:`note_rl.agents.maddpg.MADDPGMixin`)."""

    def _build_networks(self, actors: list[list[np.ndarray]], critics: list[list[np.ndarray]],
                        activation: str) -> None:
        out = "linear" if self.discrete else "tanh"
        with tf.device(self.device):
            self.actors = [mlp(w, activation, output=out) for w in actors]
            self.actor_targets = [mlp(w, activation, output=out) for w in actors]
        self._build_critics(critics, activation)
        self.param = [[v for m in self.actors for v in m.trainable_weights], self._critic_variables()]

    def load_initial_weights(self, actors: list[list[np.ndarray]], critics: list[list[np.ndarray]]) -> None:
        for nets in (self.actors, self.actor_targets):
            for net, w in zip(nets, actors):
                net.set_weights(w)
        self._load_critics(critics)

    def action(self, s: tf.Tensor, i: int = 0) -> tf.Tensor:
        """Agent ``i``'s action (continuous) or action probabilities (discrete)."""
        out = self.actors[i](s)
        return tf.nn.softmax(out, axis=-1) if self.discrete else out

    def _policy_actions(self, actors: Any, s: tf.Tensor) -> list[tf.Tensor]:
        return [tf.nn.softmax(net(s[:, j]), axis=-1) if self.discrete else net(s[:, j])
                for j, net in enumerate(actors)]

    def _stored_actions(self, a: tf.Tensor) -> list[tf.Tensor]:
        if self.discrete:
            onehot = tf.one_hot(tf.cast(a, tf.int32), self.action_dim)
            return [onehot[:, j] for j in range(self.n_agents)]
        a = tf.reshape(a, [-1, self.n_agents, self.action_dim])
        return [a[:, j] for j in range(self.n_agents)]

    def _flat(self, s: tf.Tensor) -> tf.Tensor:
        return tf.reshape(s, [-1, self.n_agents * self.obs_dim])

    def critic_loss(self, s: tf.Tensor, a: tf.Tensor, next_s: tf.Tensor, r: tf.Tensor, d: tf.Tensor) -> tf.Tensor:
        next_x = tf.concat([self._flat(next_s), *self._policy_actions(self.actor_targets, next_s)], axis=1)
        targets = [tf.stop_gradient(r + self.gamma * (1.0 - d) * net(next_x)[:, 0]) for net in self.critic_targets]
        x = tf.concat([self._flat(s), *self._stored_actions(a)], axis=1)
        return tf.add_n([mse(net(x)[:, 0], y) for net, y in zip(self.critics, targets)])

    def actor_loss(self, s: tf.Tensor, a: tf.Tensor, next_s: tf.Tensor, r: tf.Tensor, d: tf.Tensor) -> tf.Tensor:
        flat_s, stored, mine = self._flat(s), self._stored_actions(a), self._policy_actions(self.actors, s)
        losses = []
        for i, critic in enumerate(self.critics):  # agent i's own action from its policy, the others' as stored
            actions = [mine[j] if j == i else stored[j] for j in range(self.n_agents)]
            losses.append(-tf.reduce_mean(critic(tf.concat([flat_s, *actions], axis=1))))
        return tf.add_n(losses)
