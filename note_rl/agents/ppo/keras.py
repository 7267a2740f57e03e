"""PPO on the Keras backend: its networks, log-probabilities, ratio and entropy (the pieces of the
shared :class:`~note_rl.agents.ppo.PPOLoss`), the loss on given advantages that rollouts train on, and
``PPO.Replay``'s loss from a replayed transition (the update is :mod:`note_rl.agents.ppo`)."""

from __future__ import annotations

import math

from ...backends import tf_backend as _tf_backend  # noqa: F401,I001 - imports TensorFlow with its start-up log lines silenced
import numpy as np
import tensorflow as tf

from ...keras import RL
from ..common import public_module
from ..common.keras import forward_hidden, numpy_weights, pick, sde_sigma
from ..nets.keras import KerasNetworks
from . import PPOMixin, ReplayMode, RolloutMode

__all__ = ["PPO"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@public_module("note_rl.agents.keras")
class PPO(KerasNetworks, PPOMixin, RL):
    """PPO with a softmax (discrete) or Gaussian (Box) actor and a value critic (arguments as
    :class:`note_rl.agents.ppo.PPOMixin`); ``PPO(...)`` is a ``PPO.Replay`` (``n_steps=None``) or a
    ``PPO.Rollout`` (``n_steps=k``)."""

    def _build_networks(self, actor: list[np.ndarray], critic: list[np.ndarray], activation: str) -> None:
        self.actor = self._net(actor)
        self.actor_old = self._net(actor)
        self.critic = self._net(critic)
        with tf.device(self.device):
            actor_params = list(self.actor.trainable_weights)
            if self.continuous:  # trained with the actor, in its parameter group
                # gSDE's: a (features, action_dim) matrix
                self.log_std = tf.Variable(tf.fill(list(self.log_std_shape()), self.log_std_init), name="log_std")
                actor_params.append(self.log_std)
        self.param = [actor_params, self.critic.trainable_weights]

    def actor_weights(self, old: bool = False) -> list[np.ndarray]:
        return numpy_weights(self.actor_old if old else self.actor)

    def load_initial_weights(self, actor: list[np.ndarray], critic: list[np.ndarray]) -> None:
        for net, weights in ((self.actor, actor), (self.actor_old, actor), (self.critic, critic)):
            net.set_weights(weights)
        if self.continuous:
            self.log_std.assign(tf.fill(list(self.log_std_shape()), self.log_std_init))

    def critic_weights(self) -> list[np.ndarray]:
        return numpy_weights(self.critic)

    def log_std_weights(self) -> np.ndarray:
        return np.array(self.log_std.numpy())

    def action(self, s: tf.Tensor) -> tf.Tensor:
        """Action probabilities, or the Gaussian's mean for Box actions (gSDE: ``[mean, z]``, whose
        ``z`` the numpy side draws the noise from)."""
        net = self.acting_actor()
        if self.use_sde:
            return tf.concat(forward_hidden(net, s), axis=1)
        return net(s) if self.continuous else tf.nn.softmax(net(s), axis=-1)

    def _policy_out(self, s: tf.Tensor) -> tf.Tensor | tuple[tf.Tensor, tf.Tensor]:
        """The actor's output the loss reads: logits or the mean, or with gSDE ``(mean, z)``, ``z``
        held constant (SB3's ``learn_features=False``: the noise's gradient does not train the features)."""
        if self.use_sde:
            mean, z = forward_hidden(self.actor, s)
            return mean, tf.stop_gradient(z)
        return self.actor(s)

    def _log_prob(self, out: tf.Tensor, a: tf.Tensor) -> tf.Tensor:
        """``log pi(a|s)`` from the actor's output (logits, the Gaussian's mean, gSDE's ``(mean, z)``)."""
        if self.use_sde:
            mean, z = out
            sigma = sde_sigma(z, tf.exp(self.log_std))
            return tf.reduce_sum(-0.5 * tf.square((a - mean) / sigma) - tf.math.log(sigma) - _HALF_LOG_2PI, axis=-1)
        if self.continuous:
            z = (a - out) * tf.exp(-self.log_std)
            return tf.reduce_sum(-0.5 * z * z - self.log_std - _HALF_LOG_2PI, axis=-1)
        return pick(tf.nn.log_softmax(out, axis=-1), a)

    def _surrogate(self, logp: tf.Tensor, logp_old: tf.Tensor, adv: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        ratio = tf.exp(logp - logp_old)
        clipped = tf.clip_by_value(ratio, 1.0 - self.clip, 1.0 + self.clip)
        return -tf.reduce_mean(tf.minimum(ratio * adv, clipped * adv)), ratio

    def _entropy(self, out: tf.Tensor) -> tf.Tensor:
        if self.use_sde:  # a Gaussian's entropy, 0.5 + log(sqrt(2 pi) sigma), with sigma per state
            sigma = sde_sigma(out[1], tf.exp(self.log_std))
            return tf.reduce_mean(tf.reduce_sum(tf.math.log(sigma) + 0.5 + _HALF_LOG_2PI, axis=-1))
        if self.continuous:  # the same for every state: the log std does not depend on it
            return tf.reduce_sum(self.log_std + 0.5 + _HALF_LOG_2PI)
        logp = tf.nn.log_softmax(out, axis=-1)
        return tf.reduce_mean(-tf.reduce_sum(tf.exp(logp) * logp, axis=-1))

    def rollout_loss(self, s: tf.Tensor, a: tf.Tensor, logp_old: tf.Tensor, adv: tf.Tensor,
                     ret: tf.Tensor) -> tf.Tensor:
        """PPO's loss on a mini-batch whose advantages and value targets are given: what
        ``PPO.Rollout`` trains on (GAE advantages, normalised by the collector); the conformance
        tests evaluate it on either class."""
        out = self._policy_out(s)
        policy_loss = self.policy_loss(self._log_prob(out, a), logp_old, adv)
        value_loss = tf.reduce_mean(tf.square(ret - self.critic(s)[:, 0]))
        return self.objective(policy_loss, value_loss, out)


class _Replay(ReplayMode, PPO):
    """``PPO(n_steps=None)``: Note_rl's replay mode (see :class:`note_rl.agents.ppo.ReplayMode`)."""

    def __call__(self, s: tf.Tensor, a: tf.Tensor, next_s: tf.Tensor, r: tf.Tensor,
                 d: tf.Tensor) -> tf.Tensor:
        """The loss on replayed transitions: TD error as advantage, ratio against ``actor_old``."""
        logits = self.actor(s)
        logp = self._log_prob(logits, a)
        logp_old = tf.stop_gradient(self._log_prob(self.actor_old(s), a))
        v_next = tf.stop_gradient(self.critic(next_s)[:, 0])
        v = self.critic(s)[:, 0]
        td = r + self.gamma ** float(self.num_steps or 1) * v_next * (1.0 - d) - v  # n-step bootstrap
        policy_loss, ratio = self._surrogate(logp, logp_old, tf.stop_gradient(td))
        self.prioritized_replay.update(tf.stop_gradient(td), tf.stop_gradient(ratio))  # used by prioritized replay
        return self.objective(policy_loss, tf.reduce_mean(td * td), logits)


class _Rollout(RolloutMode, PPO):
    """``PPO(n_steps=k)``: on-policy rollouts with GAE (see :class:`note_rl.agents.ppo.RolloutMode`);
    trains on :meth:`PPO.rollout_loss`."""


PPO.name_modes(_Replay, _Rollout)
