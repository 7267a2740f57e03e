"""TD3 (Fujimoto et al. 2018, https://arxiv.org/abs/1802.09477), framework-free: arguments, initial
weights, the update spec; ``torch.py`` and ``keras.py`` hold its networks and losses.

Per update, on a batch ``(s, a, r, s', d)`` from the replay buffer (actions in ``[-1, 1]``, see
:mod:`note_rl.agents.common.box`)::

    a' = clip(mu'(s') + clip(N(0, sigma), -c, c), -1, 1)        # target policy smoothing
    y  = r + gamma * (1 - d) * min_i Q'_i(s', a')                # clipped double Q
    critic step on  sum_i mean((Q_i(s, a) - y)**2)               # every update
    every policy_delay updates:
        actor step on  -mean(Q_1(s, mu(s)))                      # delayed actor
        Q'_i <- (1 - tau) Q'_i + tau Q_i;  mu' <- (1 - tau) mu' + tau mu

DDPG (:mod:`note_rl.agents.ddpg`) is this update with one critic, no smoothing and no delay.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...update import LossTerm, ParamGroup, TargetUpdate, UpdateSpec
from ..common import LiveActor, SeededInit, check_args, hidden_sizes, init_mlp
from ..common.box import BoxActions

__all__ = ["TD3Mixin"]


class TD3Mixin(BoxActions, SeededInit):
    """TD3 (twin critics, target policy smoothing, delayed actor); defaults are SB3's.  Shared by the
    TD3 and DDPG classes of both backends (see the module docstring); a backend's class adds
    ``_build_networks`` and the losses ``critic_loss`` / ``actor_loss``.

    Networks: an actor ``[state, *hidden, action]`` with a ``tanh`` output, ``n_critics`` critics
    ``[state + action, *hidden, 1]``, and a target copy of each.

    :param state_dim: observation size (default: from ``env``)
    :param hidden_size: hidden units of every network (int or list; SB3's ``[400, 300]``)
    :param action_dim: action size (default: from ``env``)
    :param gamma: discount
    :param tau: Polyak rate of the target networks
    :param policy_delay: critic updates per actor (and target) update
    :param target_policy_noise: std of the smoothing noise on the target action (``[-1, 1]`` scale)
    :param target_noise_clip: the smoothing noise is clipped to ``[-c, c]``
    :param n_critics: critics (the target is their minimum)
    :param env: env instance or gymnasium id with a Box action space (default ``Pendulum-v1``)
    :param seed: same as ``set(seed=seed)`` right after construction
    :param activation: hidden activation, ``"relu"`` or ``"tanh"``
    :param device: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``
    :param lr: the recommended learning rate (kept as ``self.lr``; optimizers come to ``train()``)
    """

    def __init__(self, state_dim: int | None = None, hidden_size: int | Sequence[int] = (400, 300),
                 action_dim: int | None = None, gamma: float = 0.99, tau: float = 0.005,
                 policy_delay: int = 2, target_policy_noise: float = 0.2, target_noise_clip: float = 0.5,
                 n_critics: int = 2, env: Any = None, seed: int | None = None, activation: str = "relu",
                 device: str | None = "auto", lr: float | None = None) -> None:
        super().__init__()  # the backend's base class (RL_pytorch / RL)
        self.device = self.backend.resolve_device(device)
        actor, *critics = self._setup_td3(state_dim, hidden_size, action_dim, gamma, tau, policy_delay,
                                          target_policy_noise, target_noise_clip, n_critics, env, seed, activation)
        self.lr = lr
        self._build_networks(actor, critics, activation)
        self._finish_init(gamma, seed)

    def _build_networks(self, actor: list[np.ndarray], critics: list[list[np.ndarray]],
                        activation: str) -> None:  # pragma: no cover - per backend
        """``actor``, ``actor_target``, the critics and their targets, and ``self.param``."""
        raise NotImplementedError

    def _setup_td3(self, state_dim: int | None, hidden_size: int | Sequence[int], action_dim: int | None,
                   gamma: float, tau: float, policy_delay: int, target_policy_noise: float,
                   target_noise_clip: float, n_critics: int, env: Any, seed: int | None,
                   activation: str) -> tuple[list[np.ndarray], ...]:
        name = type(self).__name__
        check_args(name, gamma=gamma, tau=tau, activation=activation,
                   numbers={"target_policy_noise": target_policy_noise, "target_noise_clip": target_noise_clip})
        if int(policy_delay) < 1 or int(n_critics) < 1:
            raise ValueError(f"{name}(policy_delay={policy_delay!r}, n_critics={n_critics!r}): must be >= 1")
        if target_policy_noise < 0 or target_noise_clip < 0:
            raise ValueError(f"{name}: target_policy_noise and target_noise_clip must be >= 0")
        self.state_dim, self.action_dim = self._setup_box(env, state_dim, action_dim)
        self.hidden = hidden_sizes(hidden_size)
        self.activation = activation
        self.tau, self.policy_delay, self.n_critics = float(tau), int(policy_delay), int(n_critics)
        self.target_policy_noise, self.target_noise_clip = float(target_policy_noise), float(target_noise_clip)
        return self.initial_weights(seed)

    def initial_weights(self, seed: int | None) -> tuple[list[np.ndarray], ...]:
        """``(actor, critic_1, ..., critic_n)`` drawn from ``seed``; targets start as copies."""
        rng = np.random.default_rng(seed)
        actor = init_mlp([self.state_dim, *self.hidden, self.action_dim], rng)
        critics = [init_mlp([self.state_dim + self.action_dim, *self.hidden, 1], rng) for _ in range(self.n_critics)]
        return (actor, *critics)

    def update_spec(self) -> UpdateSpec:
        actor, critic = self.param
        delay = self.policy_delay
        return UpdateSpec(
            groups=[ParamGroup("actor", actor), ParamGroup("critic", critic)],  # self.param order
            terms=[LossTerm(self.critic_loss, ["critic"]), LossTerm(self.actor_loss, ["actor"], every=delay)],
            targets=[TargetUpdate(self.critic_targets, self.critics, self.tau, every=delay),
                     TargetUpdate(self.actor_target, self.actor, self.tau, every=delay)])

    def actor_weights(self) -> list[np.ndarray]:  # pragma: no cover - per backend
        raise NotImplementedError

    def numpy_actor(self) -> LiveActor:
        return LiveActor(self, self.actor_weights, "tanh", self.activation)
