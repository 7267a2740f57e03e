"""Built-in actor-critic agents on the Keras/TensorFlow backend: ``DDPG``, ``TD3``, ``SAC`` and
``MADDPG`` (same maths as :mod:`note_rl.agents.torch_ac`; the conformance tests hold them to 1e-5)."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from ..backends import tf_backend as _tf_backend  # noqa: F401,I001 - imports TensorFlow with its start-up log lines silenced
import tensorflow as tf

from ..keras import RL
from .common import ddpg_seed_order, maddpg_seed_order, pool_form
from .continuous import LOG_STD_MAX, LOG_STD_MIN, SACMixin, TD3Mixin
from .keras_nets import mlp
from .maddpg import MADDPGMixin

__all__ = ["DDPG", "TD3", "SAC", "MADDPG"]


def _q_values(critics: Any, s: tf.Tensor, a: tf.Tensor) -> list[tf.Tensor]:
    x = tf.concat([s, a], axis=1)
    return [critic(x)[:, 0] for critic in critics]


def _mse(q: tf.Tensor, target: tf.Tensor) -> tf.Tensor:
    return tf.reduce_mean(tf.square(q - target))


class _Critics:
    """Critics and their targets as lists of Keras models (checkpointed as ``critics[i]``)."""

    def _build_critics(self, critics: Sequence[list[np.ndarray]], activation: str) -> None:
        with tf.device(self.device):
            self.critics = [mlp(w, activation) for w in critics]
            self.critic_targets = [mlp(w, activation) for w in critics]

    def _critic_variables(self) -> list[Any]:
        return [v for c in self.critics for v in c.trainable_weights]

    def _load_critics(self, critics: Sequence[list[np.ndarray]]) -> None:
        for nets in (self.critics, self.critic_targets):
            for net, w in zip(nets, critics):
                net.set_weights(w)


class TD3(TD3Mixin, _Critics, RL):
    """TD3 (arguments as :class:`note_rl.agents.torch_ac.TD3`)."""

    def __init__(self, state_dim: int | None = None, hidden_size: int | Sequence[int] = (400, 300),
                 action_dim: int | None = None, gamma: float = 0.99, tau: float = 0.005,
                 policy_delay: int = 2, target_policy_noise: float = 0.2, target_noise_clip: float = 0.5,
                 n_critics: int = 2, env: Any = None, seed: int | None = None, activation: str = "relu",
                 device: str | None = "auto", lr: float | None = None) -> None:
        RL.__init__(self)
        self.device = self.backend.resolve_device(device)
        actor, *critics = self._setup_td3(state_dim, hidden_size, action_dim, gamma, tau, policy_delay,
                                          target_policy_noise, target_noise_clip, n_critics, env, seed, activation)
        self.lr = lr
        with tf.device(self.device):
            self.actor = mlp(actor, activation, output="tanh")
            self.actor_target = mlp(actor, activation, output="tanh")
        self._build_critics(critics, activation)
        self.param = [self.actor.trainable_weights, self._critic_variables()]
        self.gamma = self.backend.make_variable(gamma)
        if seed is not None:
            self.set(seed=seed)

    def actor_weights(self) -> list[np.ndarray]:
        return [np.asarray(v.numpy()) for v in self.actor.weights]

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
        next_q = tf.reduce_min(tf.stack(_q_values(self.critic_targets, next_s, next_a)), axis=0)
        target = tf.stop_gradient(r + self.gamma * (1.0 - d) * next_q)
        qs = _q_values(self.critics, s, tf.reshape(a, [-1, self.action_dim]))
        self.prioritized_replay.update(tf.stop_gradient(qs[0] - target))  # used by prioritized replay
        return tf.add_n([_mse(q, target) for q in qs])

    def actor_loss(self, s: tf.Tensor, a: tf.Tensor, next_s: tf.Tensor, r: tf.Tensor, d: tf.Tensor) -> tf.Tensor:
        return -tf.reduce_mean(self.critics[0](tf.concat([s, self.actor(s)], axis=1)))


class DDPG(TD3):
    """DDPG (arguments as :class:`note_rl.agents.torch_ac.DDPG`)."""

    def __init__(self, state_dim: int | None = None, hidden_size: int | Sequence[int] = (400, 300),
                 action_dim: int | None = None, gamma: float = 0.99, tau: float = 0.005, env: Any = None,
                 seed: int | None = None, activation: str = "relu", device: str | None = "auto",
                 lr: float | None = None, processes: int | None = None) -> None:
        state_dim, hidden_size, action_dim, gamma, tau, lr, processes = ddpg_seed_order(
            state_dim, hidden_size, action_dim, gamma, tau, lr, processes)
        super().__init__(state_dim, hidden_size, action_dim, gamma, tau, policy_delay=1, target_policy_noise=0.0,
                         target_noise_clip=0.0, n_critics=1, env=env, seed=seed, activation=activation,
                         device=device, lr=lr)
        self.processes = pool_form("DDPG", None, processes)[1]


class SAC(SACMixin, _Critics, RL):
    """SAC (arguments as :class:`note_rl.agents.torch_ac.SAC`)."""

    def __init__(self, state_dim: int | None = None, hidden_size: int | Sequence[int] = (256, 256),
                 action_dim: int | None = None, gamma: float = 0.99, tau: float = 0.005,
                 ent_coef: float | str = "auto", target_entropy: float | str = "auto", n_critics: int = 2,
                 target_update_interval: int = 1, env: Any = None, seed: int | None = None,
                 activation: str = "relu", device: str | None = "auto", lr: float | None = None) -> None:
        RL.__init__(self)
        self.device = self.backend.resolve_device(device)
        actor, *critics = self._setup_sac(state_dim, hidden_size, action_dim, gamma, tau, ent_coef,
                                          target_entropy, n_critics, target_update_interval, env, seed, activation)
        self.lr = lr
        with tf.device(self.device):
            self.actor = mlp(actor, activation)
            self.log_alpha = tf.Variable([math.log(self.alpha_init)], dtype=tf.float32, name="log_alpha")
        self._build_critics(critics, activation)
        self.param = [self.actor.trainable_weights, self._critic_variables()]
        if self.auto_alpha:
            self.param.append([self.log_alpha])
        self.gamma = self.backend.make_variable(gamma)
        if seed is not None:
            self.set(seed=seed)

    def actor_weights(self) -> list[np.ndarray]:
        return [np.asarray(v.numpy()) for v in self.actor.weights]

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
        next_q = tf.reduce_min(tf.stack(_q_values(self.critic_targets, next_s, next_a)), axis=0)
        target = tf.stop_gradient(r + self.gamma * (1.0 - d) * (next_q - self.alpha() * next_logp))
        qs = _q_values(self.critics, s, tf.reshape(a, [-1, self.action_dim]))
        self.prioritized_replay.update(tf.stop_gradient(qs[0] - target))  # used by prioritized replay
        return 0.5 * tf.add_n([_mse(q, target) for q in qs])

    def _actor_terms(self, s: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        action, logp = self._sample(s)
        q = tf.reduce_min(tf.stack(_q_values(self.critics, s, action)), axis=0)
        return tf.reduce_mean(self.alpha() * logp - q), logp

    def _alpha_from(self, logp: tf.Tensor) -> tf.Tensor:
        return -tf.reduce_mean(self.log_alpha * tf.stop_gradient(logp + self.target_entropy))


class MADDPG(MADDPGMixin, _Critics, RL):
    """MADDPG (arguments as :class:`note_rl.agents.torch_ac.MADDPG`)."""

    def __init__(self, hidden_size: int | Sequence[int] = (64, 64), gamma: float = 0.95, tau: float = 0.01,
                 env: Any = None, seed: int | None = None, activation: str = "relu",
                 device: str | None = "auto", lr: float | None = None) -> None:
        RL.__init__(self)
        gamma, tau, env, lr = maddpg_seed_order(gamma, tau, env, lr)
        self.device = self.backend.resolve_device(device)
        actors, critics = self._setup_maddpg(hidden_size, gamma, tau, env, seed, activation)
        self.lr = lr
        out = "linear" if self.discrete else "tanh"
        with tf.device(self.device):
            self.actors = [mlp(w, activation, output=out) for w in actors]
            self.actor_targets = [mlp(w, activation, output=out) for w in actors]
        self._build_critics(critics, activation)
        self.param = [[v for m in self.actors for v in m.trainable_weights], self._critic_variables()]
        self.gamma = self.backend.make_variable(gamma)
        self.set(MARL=True)
        if seed is not None:
            self.set(seed=seed)

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
        return tf.add_n([_mse(net(x)[:, 0], y) for net, y in zip(self.critics, targets)])

    def actor_loss(self, s: tf.Tensor, a: tf.Tensor, next_s: tf.Tensor, r: tf.Tensor, d: tf.Tensor) -> tf.Tensor:
        flat_s, stored, mine = self._flat(s), self._stored_actions(a), self._policy_actions(self.actors, s)
        losses = []
        for i, critic in enumerate(self.critics):  # agent i's own action from its policy, the others' as stored
            actions = [mine[j] if j == i else stored[j] for j in range(self.n_agents)]
            losses.append(-tf.reduce_mean(critic(tf.concat([flat_s, *actions], axis=1))))
        return tf.add_n(losses)
