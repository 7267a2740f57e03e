"""Built-in agents on the Keras/TensorFlow backend: ``DQN``, ``PPO`` and ``A2C`` here, ``DDPG``, ``TD3``,
``SAC`` and ``MADDPG`` from :mod:`note_rl.agents.keras_ac`, the ``mlp`` both build on from
:mod:`note_rl.agents.keras_nets` (same maths as :mod:`note_rl.agents.torch`; the conformance tests hold
them to 1e-5)."""

from __future__ import annotations

import math
from typing import Any, Sequence

from ..backends import tf_backend as _tf_backend  # noqa: F401,I001 - imports TensorFlow with its start-up log lines silenced
import keras
import numpy as np
import tensorflow as tf

from ..keras import RL
from .common import pool_form, seed_hidden
from .dqn import DQNMixin
from .keras_ac import DDPG, MADDPG, SAC, TD3
from .keras_nets import mlp
from .ppo import A2CMixin, PPOMixin

__all__ = ["DQN", "PPO", "A2C", "mlp", "DDPG", "TD3", "SAC", "MADDPG"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _numpy_weights(model: keras.Model) -> list[np.ndarray]:
    return [np.asarray(v.numpy()) for v in model.weights]


def _td_loss(td: tf.Tensor, kind: str, weights: tf.Tensor | None) -> tf.Tensor:
    if kind == "huber":
        a = tf.abs(td)
        per = tf.where(a < 1.0, 0.5 * td * td, a - 0.5)
    else:
        per = td * td
    if weights is not None:
        per = per * weights
    return tf.reduce_mean(per)


def _pick(values: tf.Tensor, a: tf.Tensor) -> tf.Tensor:
    return tf.gather(values, tf.cast(tf.reshape(a, [-1]), tf.int32), axis=1, batch_dims=1)


class DQN(DQNMixin, RL):
    """Double DQN with a ReLU MLP Q-network (arguments as :class:`note_rl.agents.torch.DQN`)."""

    def __init__(self, state_dim: int, hidden_size: int | Sequence[int] | None = None, action_dim: int | None = None,
                 gamma: float = 0.99, tau: float = 1.0, loss: str = "mse", double: bool = True,
                 env: Any = None, seed: int | None = None, activation: str = "relu",
                 ortho_init: bool = False, max_grad_norm: float | None = None,
                 device: str | None = "auto", processes: int | None = None,
                 hidden_dim: int | Sequence[int] | None = None, linear_decay: bool = False) -> None:
        RL.__init__(self)
        gamma, self.processes = pool_form("DQN", gamma, processes)
        hidden_size = seed_hidden("DQN", hidden_size, hidden_dim, action_dim)
        self.device = self.backend.resolve_device(device)
        init = self._setup_dqn(state_dim, hidden_size, action_dim, gamma, tau, loss, double, env, seed,
                               activation, ortho_init, max_grad_norm, linear_decay)
        with tf.device(self.device):
            self.q_net = mlp(init, activation)
            self.target_q_net = mlp(init, activation)
        self.param = self.q_net.trainable_weights
        self.gamma = self.backend.make_variable(gamma)
        if seed is not None:
            self.set(seed=seed)

    def q_weights(self) -> list[np.ndarray]:
        return _numpy_weights(self.q_net)

    def load_initial_weights(self, q: list[np.ndarray]) -> None:
        for net in (self.q_net, self.target_q_net):
            net.set_weights(q)  # assigns the existing variables: self.param stays valid

    def action(self, s: tf.Tensor) -> tf.Tensor:
        return self.q_net(s)

    def __call__(self, s: tf.Tensor, a: tf.Tensor, next_s: tf.Tensor, r: tf.Tensor, d: tf.Tensor,
                 weights: tf.Tensor | None = None) -> tf.Tensor:
        q = _pick(self.q_net(s), a)
        next_target = self.target_q_net(next_s)
        if self.double:
            best = tf.argmax(self.q_net(next_s), axis=1)
            next_q = _pick(next_target, best)
        else:
            next_q = tf.reduce_max(next_target, axis=1)
        discount = self.gamma ** float(self.num_steps or 1)
        target = tf.stop_gradient(r + discount * next_q * (1.0 - d))
        td = q - target
        self.prioritized_replay.update(tf.stop_gradient(td))  # used by prioritized replay
        return _td_loss(td, self.loss_type, weights)


class PPO(PPOMixin, RL):
    """PPO with a softmax (discrete) or Gaussian (Box) actor and a value critic (arguments as
    :class:`note_rl.agents.torch.PPO`)."""

    def __init__(self, state_dim: int, hidden_size: int | Sequence[int], action_dim: int,
                 clip: float = 0.2, entropy_coef: float = 0.0, gamma: float = 0.99,
                 lam: float = 0.95, n_steps: int | None = None, n_envs: int = 1, n_epochs: int = 10,
                 vf_coef: float = 0.5, normalize_advantage: bool = True,
                 max_grad_norm: float | None = None, linear_decay: bool = False, env: Any = None,
                 seed: int | None = None, activation: str = "relu", ortho_init: bool = False,
                 log_std_init: float = 0.0, device: str | None = "auto") -> None:
        RL.__init__(self)
        self.device = self.backend.resolve_device(device)
        actor, critic = self._setup_ppo(state_dim, hidden_size, action_dim, clip, entropy_coef,
                                        gamma, lam, n_steps, n_envs, n_epochs, vf_coef,
                                        normalize_advantage, max_grad_norm, linear_decay, env, seed,
                                        activation, ortho_init, log_std_init)
        with tf.device(self.device):
            self.actor = mlp(actor, activation)
            self.actor_old = mlp(actor, activation)
            self.critic = mlp(critic, activation)
            actor_params = list(self.actor.trainable_weights)
            if self.continuous:  # trained with the actor, in its parameter group
                self.log_std = tf.Variable(tf.fill([self.action_dim], self.log_std_init), name="log_std")
                actor_params.append(self.log_std)
        self.param = [actor_params, self.critic.trainable_weights]
        self.gamma = self.backend.make_variable(gamma)
        self.clip = self.backend.make_variable(clip)
        if seed is not None:
            self.set(seed=seed)

    def actor_weights(self, old: bool = False) -> list[np.ndarray]:
        return _numpy_weights(self.actor_old if old else self.actor)

    def load_initial_weights(self, actor: list[np.ndarray], critic: list[np.ndarray]) -> None:
        for net, weights in ((self.actor, actor), (self.actor_old, actor), (self.critic, critic)):
            net.set_weights(weights)
        if self.continuous:
            self.log_std.assign(tf.fill([self.action_dim], self.log_std_init))

    def critic_weights(self) -> list[np.ndarray]:
        return _numpy_weights(self.critic)

    def log_std_weights(self) -> np.ndarray:
        return np.array(self.log_std.numpy())

    def action(self, s: tf.Tensor) -> tf.Tensor:
        """Action probabilities, or the Gaussian's mean for Box actions."""
        net = self.actor if self.n_steps else self.actor_old
        return net(s) if self.continuous else tf.nn.softmax(net(s), axis=-1)

    def _log_prob(self, out: tf.Tensor, a: tf.Tensor) -> tf.Tensor:
        """``log pi(a|s)`` from the actor's output (logits, or the Gaussian's mean)."""
        if self.continuous:
            z = (a - out) * tf.exp(-self.log_std)
            return tf.reduce_sum(-0.5 * z * z - self.log_std - _HALF_LOG_2PI, axis=-1)
        return _pick(tf.nn.log_softmax(out, axis=-1), a)

    def _surrogate(self, logp: tf.Tensor, logp_old: tf.Tensor, adv: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        ratio = tf.exp(logp - logp_old)
        clipped = tf.clip_by_value(ratio, 1.0 - self.clip, 1.0 + self.clip)
        return -tf.reduce_mean(tf.minimum(ratio * adv, clipped * adv)), ratio

    def _entropy(self, out: tf.Tensor) -> tf.Tensor:
        if self.continuous:  # the same for every state: the log std does not depend on it
            return tf.reduce_sum(self.log_std + 0.5 + _HALF_LOG_2PI)
        logp = tf.nn.log_softmax(out, axis=-1)
        return tf.reduce_mean(-tf.reduce_sum(tf.exp(logp) * logp, axis=-1))

    def __call__(self, s: tf.Tensor, a: tf.Tensor, next_s: tf.Tensor, r: tf.Tensor,
                 d: tf.Tensor) -> tf.Tensor:
        """Replay-mode loss: TD error as advantage, ratio against ``actor_old``."""
        logits = self.actor(s)
        logp = _pick(tf.nn.log_softmax(logits, axis=-1), a)
        logp_old = tf.stop_gradient(_pick(tf.nn.log_softmax(self.actor_old(s), axis=-1), a))
        v_next = tf.stop_gradient(self.critic(next_s)[:, 0])
        v = self.critic(s)[:, 0]
        td = r + self.gamma ** float(self.num_steps or 1) * v_next * (1.0 - d) - v  # n-step bootstrap
        policy_loss, ratio = self._surrogate(logp, logp_old, tf.stop_gradient(td))
        self.prioritized_replay.update(tf.stop_gradient(td), tf.stop_gradient(ratio))  # used by prioritized replay
        loss = policy_loss + self.vf_coef * tf.reduce_mean(td * td)
        return loss - self.entropy_coef * self._entropy(logits) if self.entropy_coef else loss

    def rollout_loss(self, s: tf.Tensor, a: tf.Tensor, logp_old: tf.Tensor, adv: tf.Tensor,
                     ret: tf.Tensor) -> tf.Tensor:
        """Rollout-mode loss on a mini-batch with GAE advantages (normalised by the collector)."""
        out = self.actor(s)
        policy_loss = self.policy_loss(self._log_prob(out, a), logp_old, adv)
        value_loss = tf.reduce_mean(tf.square(ret - self.critic(s)[:, 0]))
        loss = policy_loss + self.vf_coef * value_loss
        return loss - self.entropy_coef * self._entropy(out) if self.entropy_coef else loss


class A2C(A2CMixin, PPO):
    """A2C (arguments and defaults as :class:`note_rl.agents.torch.A2C`)."""

    def policy_loss(self, logp: tf.Tensor, logp_old: tf.Tensor, adv: tf.Tensor) -> tf.Tensor:
        return -tf.reduce_mean(logp * adv)
