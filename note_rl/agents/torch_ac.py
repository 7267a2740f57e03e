"""Built-in actor-critic agents on the PyTorch backend: ``DDPG``, ``TD3``, ``SAC`` and ``MADDPG`` (the
maths is in :mod:`note_rl.agents.continuous` and :mod:`note_rl.agents.maddpg`;
:mod:`note_rl.agents.keras_ac` is the same in Keras)."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..backends import torch_backend as _torch_backend  # noqa: F401,I001 - says how to install PyTorch when missing
import torch

from ..torch import RL_pytorch
from .common import ddpg_seed_order, maddpg_seed_order, pool_form
from .continuous import LOG_STD_MAX, LOG_STD_MIN, SACMixin, TD3Mixin
from .maddpg import MADDPGMixin
from .torch_nets import MLP

__all__ = ["DDPG", "TD3", "SAC", "MADDPG"]


def _q_values(critics: Any, s: torch.Tensor, a: torch.Tensor) -> list[torch.Tensor]:
    x = torch.cat([s, a], dim=1)
    return [critic(x)[:, 0] for critic in critics]


class _Critics:
    """Twin (or more) critics and their targets as ``ModuleList`` attributes (checkpointed by name)."""

    def _build_critics(self, critics: Sequence[list[np.ndarray]], activation: str) -> None:
        self.critics = torch.nn.ModuleList([MLP(w, activation) for w in critics]).to(self.device)
        self.critic_targets = torch.nn.ModuleList([MLP(w, activation) for w in critics]).to(self.device)

    def _load_critics(self, critics: Sequence[list[np.ndarray]]) -> None:
        for nets in (self.critics, self.critic_targets):
            for net, w in zip(nets, critics):
                self.backend.set_weights(list(net.parameters()), w)


class TD3(TD3Mixin, _Critics, RL_pytorch):
    """TD3 (twin critics, target policy smoothing, delayed actor); defaults are SB3's.

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
        RL_pytorch.__init__(self)
        self.device = self.backend.resolve_device(device)
        actor, *critics = self._setup_td3(state_dim, hidden_size, action_dim, gamma, tau, policy_delay,
                                          target_policy_noise, target_noise_clip, n_critics, env, seed, activation)
        self.lr = lr
        self.actor = MLP(actor, activation, output="tanh").to(self.device)
        self.actor_target = MLP(actor, activation, output="tanh").to(self.device)
        self._build_critics(critics, activation)
        self.param = [list(self.actor.parameters()), list(self.critics.parameters())]
        self.gamma = self.backend.make_variable(gamma)
        if seed is not None:
            self.set(seed=seed)

    def actor_weights(self) -> list[np.ndarray]:
        return self.actor.numpy_weights()

    def load_initial_weights(self, actor: list[np.ndarray], *critics: list[np.ndarray]) -> None:
        for net in (self.actor, self.actor_target):
            self.backend.set_weights(list(net.parameters()), actor)
        self._load_critics(critics)

    def action(self, s: torch.Tensor) -> torch.Tensor:
        return self.actor(s)

    def critic_loss(self, s: torch.Tensor, a: torch.Tensor, next_s: torch.Tensor, r: torch.Tensor,
                    d: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            next_a = self.actor_target(next_s)
            if self.target_policy_noise > 0:
                smooth = (torch.randn_like(next_a) * self.target_policy_noise).clamp(
                    -self.target_noise_clip, self.target_noise_clip)
                next_a = (next_a + smooth).clamp(-1.0, 1.0)
            next_q = torch.stack(_q_values(self.critic_targets, next_s, next_a)).min(dim=0).values
            target = r + self.gamma * (1.0 - d) * next_q
        qs = _q_values(self.critics, s, a.reshape(-1, self.action_dim))
        self.prioritized_replay.update(qs[0].detach() - target)  # used by prioritized replay
        return sum(torch.nn.functional.mse_loss(q, target) for q in qs)

    def actor_loss(self, s: torch.Tensor, a: torch.Tensor, next_s: torch.Tensor, r: torch.Tensor,
                   d: torch.Tensor) -> torch.Tensor:
        return -self.critics[0](torch.cat([s, self.actor(s)], dim=1)).mean()


class DDPG(TD3):
    """DDPG: TD3's update with one critic, no target smoothing and no delay (SB3's DDPG); the seeds'
    ``DDPG(hidden_size=128, tau=0.1, gamma=0.98, lr=0.005)`` works (dims from ``env``, default
    ``Pendulum-v1``).  Arguments as :class:`TD3`."""

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


class SAC(SACMixin, _Critics, RL_pytorch):
    """SAC with automatic entropy temperature; defaults are SB3's.

    :param state_dim: observation size (default: from ``env``)
    :param hidden_size: hidden units of every network (SB3's ``[256, 256]``)
    :param action_dim: action size (default: from ``env``)
    :param gamma: discount
    :param tau: Polyak rate of the target critics
    :param ent_coef: the temperature ``alpha``: a number (fixed), ``"auto"`` (learned from 1.0) or
        ``"auto_0.1"`` (learned from 0.1)
    :param target_entropy: ``"auto"`` (``-action_dim``) or a number
    :param n_critics: critics (the target is their minimum)
    :param target_update_interval: gradient updates between two target updates
    :param env, seed, activation, device, lr: as :class:`TD3`
    """

    def __init__(self, state_dim: int | None = None, hidden_size: int | Sequence[int] = (256, 256),
                 action_dim: int | None = None, gamma: float = 0.99, tau: float = 0.005,
                 ent_coef: float | str = "auto", target_entropy: float | str = "auto", n_critics: int = 2,
                 target_update_interval: int = 1, env: Any = None, seed: int | None = None,
                 activation: str = "relu", device: str | None = "auto", lr: float | None = None) -> None:
        RL_pytorch.__init__(self)
        self.device = self.backend.resolve_device(device)
        actor, *critics = self._setup_sac(state_dim, hidden_size, action_dim, gamma, tau, ent_coef,
                                          target_entropy, n_critics, target_update_interval, env, seed, activation)
        self.lr = lr
        self.actor = MLP(actor, activation).to(self.device)
        self._build_critics(critics, activation)
        self.log_alpha = torch.nn.Parameter(torch.tensor([math.log(self.alpha_init)], device=self.device))
        self.param = [list(self.actor.parameters()), list(self.critics.parameters())]
        if self.auto_alpha:
            self.param.append([self.log_alpha])
        self.gamma = self.backend.make_variable(gamma)
        if seed is not None:
            self.set(seed=seed)

    def actor_weights(self) -> list[np.ndarray]:
        return self.actor.numpy_weights()

    def load_initial_weights(self, actor: list[np.ndarray], *critics: list[np.ndarray]) -> None:
        self.backend.set_weights(list(self.actor.parameters()), actor)
        self._load_critics(critics)
        with torch.no_grad():
            self.log_alpha.fill_(math.log(self.alpha_init))

    def action(self, s: torch.Tensor) -> torch.Tensor:
        return self.actor(s)

    def _normal(self, like: torch.Tensor) -> torch.Tensor:
        return torch.randn_like(like)

    def _sample(self, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised squashed-Gaussian action for each state and its log-probability."""
        mean, log_std = self.actor(s).chunk(2, dim=1)
        log_std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        std = log_std.exp()
        eps = self._normal(mean)
        u = mean + std * eps
        action = torch.tanh(u)
        gauss = -0.5 * eps.pow(2) - log_std - 0.5 * math.log(2 * math.pi)
        log_prob = (gauss - torch.log(1.0 - action.pow(2) + 1e-6)).sum(dim=1)
        return action, log_prob

    def alpha(self) -> torch.Tensor:
        return self.log_alpha.detach().exp()

    def critic_loss(self, s: torch.Tensor, a: torch.Tensor, next_s: torch.Tensor, r: torch.Tensor,
                    d: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            next_a, next_logp = self._sample(next_s)
            next_q = torch.stack(_q_values(self.critic_targets, next_s, next_a)).min(dim=0).values
            target = r + self.gamma * (1.0 - d) * (next_q - self.alpha() * next_logp)
        qs = _q_values(self.critics, s, a.reshape(-1, self.action_dim))
        self.prioritized_replay.update(qs[0].detach() - target)  # used by prioritized replay
        return 0.5 * sum(torch.nn.functional.mse_loss(q, target) for q in qs)

    def _actor_terms(self, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        action, logp = self._sample(s)
        q = torch.stack(_q_values(self.critics, s, action)).min(dim=0).values
        return (self.alpha() * logp - q).mean(), logp

    def _alpha_from(self, logp: torch.Tensor) -> torch.Tensor:
        return -(self.log_alpha * (logp.detach() + self.target_entropy)).mean()


class MADDPG(MADDPGMixin, _Critics, RL_pytorch):
    """MADDPG: per-agent actors on their own observations, centralised per-agent critics (see
    :mod:`note_rl.agents.maddpg`); trains with ``set(MARL=True)``'s joint storage, which the
    constructor switches on.  Defaults are the paper's (two layers of 64, gamma 0.95, tau 0.01).

    :param hidden_size: hidden units of every network (int or list)
    :param gamma: discount
    :param tau: Polyak rate of the target networks
    :param env: a PettingZoo-parallel env (default: MPE ``simple_spread_v3``, 3 agents, continuous)
    :param seed: same as ``set(seed=seed)`` right after construction
    :param activation: hidden activation, ``"relu"`` or ``"tanh"``
    :param device: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``
    :param lr: the recommended learning rate (kept as ``self.lr``; the paper's is 1e-2)
    """

    def __init__(self, hidden_size: int | Sequence[int] = (64, 64), gamma: float = 0.95, tau: float = 0.01,
                 env: Any = None, seed: int | None = None, activation: str = "relu",
                 device: str | None = "auto", lr: float | None = None) -> None:
        RL_pytorch.__init__(self)
        gamma, tau, env, lr = maddpg_seed_order(gamma, tau, env, lr)
        self.device = self.backend.resolve_device(device)
        actors, critics = self._setup_maddpg(hidden_size, gamma, tau, env, seed, activation)
        self.lr = lr
        out = "linear" if self.discrete else "tanh"
        self.actors = torch.nn.ModuleList([MLP(w, activation, output=out) for w in actors]).to(self.device)
        self.actor_targets = torch.nn.ModuleList([MLP(w, activation, output=out) for w in actors]).to(self.device)
        self._build_critics(critics, activation)
        self.param = [list(self.actors.parameters()), list(self.critics.parameters())]
        self.gamma = self.backend.make_variable(gamma)
        self.set(MARL=True)
        if seed is not None:
            self.set(seed=seed)

    def load_initial_weights(self, actors: list[list[np.ndarray]], critics: list[list[np.ndarray]]) -> None:
        for nets in (self.actors, self.actor_targets):
            for net, w in zip(nets, actors):
                self.backend.set_weights(list(net.parameters()), w)
        self._load_critics(critics)

    def action(self, s: torch.Tensor, i: int = 0) -> torch.Tensor:
        """Agent ``i``'s action (continuous) or action probabilities (discrete)."""
        out = self.actors[i](s)
        return torch.softmax(out, dim=-1) if self.discrete else out

    def _policy_actions(self, actors: Any, s: torch.Tensor) -> list[torch.Tensor]:
        return [torch.softmax(net(s[:, j]), dim=-1) if self.discrete else net(s[:, j])
                for j, net in enumerate(actors)]

    def _stored_actions(self, a: torch.Tensor) -> list[torch.Tensor]:
        if self.discrete:
            onehot = torch.nn.functional.one_hot(a.long(), self.action_dim).to(torch.float32)
            return [onehot[:, j] for j in range(self.n_agents)]
        a = a.reshape(-1, self.n_agents, self.action_dim)
        return [a[:, j] for j in range(self.n_agents)]

    def critic_loss(self, s: torch.Tensor, a: torch.Tensor, next_s: torch.Tensor, r: torch.Tensor,
                    d: torch.Tensor) -> torch.Tensor:
        flat_s, flat_next = s.flatten(1), next_s.flatten(1)
        with torch.no_grad():
            next_x = torch.cat([flat_next, *self._policy_actions(self.actor_targets, next_s)], dim=1)
            targets = [r + self.gamma * (1.0 - d) * net(next_x)[:, 0] for net in self.critic_targets]
        x = torch.cat([flat_s, *self._stored_actions(a)], dim=1)
        return sum(torch.nn.functional.mse_loss(net(x)[:, 0], y) for net, y in zip(self.critics, targets))

    def actor_loss(self, s: torch.Tensor, a: torch.Tensor, next_s: torch.Tensor, r: torch.Tensor,
                   d: torch.Tensor) -> torch.Tensor:
        flat_s, stored, mine = s.flatten(1), self._stored_actions(a), self._policy_actions(self.actors, s)
        loss = 0.0
        for i, critic in enumerate(self.critics):  # agent i's own action from its policy, the others' as stored
            actions = [mine[j] if j == i else stored[j] for j in range(self.n_agents)]
            loss = loss - critic(torch.cat([flat_s, *actions], dim=1)).mean()
        return loss
