"""Built-in agents on the PyTorch backend: ``DQN``, ``PPO`` and ``A2C`` here, ``DDPG``, ``TD3``, ``SAC`` and
``MADDPG`` from :mod:`note_rl.agents.torch_ac`, the ``MLP`` both build on from :mod:`note_rl.agents.torch_nets`."""

from __future__ import annotations

from typing import Any, Sequence

import math

import numpy as np

from ..backends import torch_backend as _torch_backend  # noqa: F401,I001 - says how to install PyTorch when missing
import torch

from ..torch import RL_pytorch
from .common import pool_form, seed_hidden
from .dqn import DQNMixin
from .ppo import A2CMixin, PPOMixin
from .torch_ac import DDPG, MADDPG, SAC, TD3
from .torch_nets import MLP

__all__ = ["DQN", "PPO", "A2C", "MLP", "DDPG", "TD3", "SAC", "MADDPG"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _td_loss(q: torch.Tensor, target: torch.Tensor, kind: str, weights: torch.Tensor | None) -> torch.Tensor:
    """``mean(w * l(q - target))``, ``l`` the squared error or the Huber loss (delta 1), each one
    fused op (forward and backward) instead of a chain of small ones."""
    loss = torch.nn.functional.huber_loss if kind == "huber" else torch.nn.functional.mse_loss
    if weights is None:
        return loss(q, target)
    return (loss(q, target, reduction="none") * weights).mean()


class DQN(DQNMixin, RL_pytorch):
    """Double DQN with a ReLU MLP Q-network.

    :param state_dim: observation size
    :param hidden_size: hidden units (int: one layer, list: several layers)
    :param action_dim: number of discrete actions
    :param gamma: discount
    :param tau: target update rate in ``update_param()`` (1.0 = hard copy)
    :param loss: ``"mse"`` or ``"huber"``
    :param double: double-DQN target (else max over the target network)
    :param env: env instance or gymnasium id (default ``CartPole-v1``)
    :param seed: same as ``set(seed=seed)`` right after construction: the initial weights and
        everything else (without it, ``set(seed=...)`` before training re-draws the weights)
    :param activation: hidden activation, ``"relu"`` or ``"tanh"``
    :param ortho_init: SB3's orthogonal initialisation
    :param max_grad_norm: clip the gradient's global norm (``None``: no clipping; SB3's DQN uses 10)
    :param device: ``auto`` (a GPU when one is present), ``cpu``, ``cuda``, ``cuda:N`` or ``mps``
    :param processes: pool-network workers ``train(pool_network=True)`` uses when it gets none
        (Note_rl's pool DQN; ``DQN(4, 128, 2, 7)``, an integer >= 2 in gamma's place, means it too)
    :param hidden_dim: Note_rl 001's name for ``hidden_size``
    :param linear_decay: lower the learning rate linearly to 0 over ``train(steps=...)``
    """

    def __init__(self, state_dim: int, hidden_size: int | Sequence[int] | None = None, action_dim: int | None = None,
                 gamma: float = 0.99, tau: float = 1.0, loss: str = "mse", double: bool = True,
                 env: Any = None, seed: int | None = None, activation: str = "relu",
                 ortho_init: bool = False, max_grad_norm: float | None = None,
                 device: str | None = "auto", processes: int | None = None,
                 hidden_dim: int | Sequence[int] | None = None, linear_decay: bool = False) -> None:
        RL_pytorch.__init__(self)
        gamma, self.processes = pool_form("DQN", gamma, processes)
        hidden_size = seed_hidden("DQN", hidden_size, hidden_dim, action_dim)
        self.device = self.backend.resolve_device(device)
        init = self._setup_dqn(state_dim, hidden_size, action_dim, gamma, tau, loss, double, env, seed,
                               activation, ortho_init, max_grad_norm, linear_decay)
        self.q_net = MLP(init, activation).to(self.device)
        self.target_q_net = MLP(init, activation).to(self.device)
        self.param = list(self.q_net.parameters())
        self.gamma = self.backend.make_variable(gamma)
        if seed is not None:
            self.set(seed=seed)

    def q_weights(self) -> list[np.ndarray]:
        return self.q_net.numpy_weights()

    def load_initial_weights(self, q: list[np.ndarray]) -> None:
        for net in (self.q_net, self.target_q_net):
            self.backend.set_weights(list(net.parameters()), q)

    def action(self, s: torch.Tensor) -> torch.Tensor:
        return self.q_net(s)

    def __call__(self, s: torch.Tensor, a: torch.Tensor, next_s: torch.Tensor, r: torch.Tensor,
                 d: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        q = self.q_net(s).gather(1, a.long().reshape(-1, 1)).squeeze(1)
        with torch.no_grad():
            next_target = self.target_q_net(next_s)
            if self.double:
                best = self.q_net(next_s).argmax(dim=1, keepdim=True)
                next_q = next_target.gather(1, best).squeeze(1)
            else:
                next_q = next_target.max(dim=1).values
            discount = self.gamma ** (self.num_steps or 1)
            target = r + discount * next_q * (1.0 - d)
            self.prioritized_replay.update(q.detach() - target)  # used by prioritized replay
        return _td_loss(q, target, self.loss_type, weights)


class PPO(PPOMixin, RL_pytorch):
    """PPO with a softmax (discrete) or state-independent Gaussian (Box) actor and a value critic;
    see :mod:`note_rl.agents.ppo`.

    :param state_dim: observation size
    :param hidden_size: hidden units (int or list)
    :param action_dim: number of discrete actions, or the size of a Box action
    :param clip: clip range of the probability ratio
    :param entropy_coef: weight of the entropy bonus
    :param gamma: discount
    :param lam: GAE lambda (rollout mode)
    :param n_steps: rollout length per env; ``None`` trains from the replay buffer (Note_rl style)
    :param n_envs: vectorised envs in rollout mode
    :param n_epochs: passes over each rollout
    :param vf_coef: weight of the value loss
    :param normalize_advantage: normalise advantages per mini-batch (rollout mode)
    :param max_grad_norm: clip the global gradient norm (``None``: no clipping)
    :param linear_decay: decay lr and clip linearly to 0 over ``train(steps=...)``
    :param device: ``auto`` (a GPU when one is present), ``cpu``, ``cuda``, ``cuda:N`` or ``mps``
    :param env: env instance or gymnasium id (default ``CartPole-v1``)
    :param seed: same as ``set(seed=seed)`` right after construction: the initial weights and
        everything else (without it, ``set(seed=...)`` before training re-draws the weights)
    :param activation: hidden activation, ``"relu"`` or ``"tanh"``
    :param ortho_init: SB3's orthogonal initialisation
    :param log_std_init: starting log standard deviation of the Gaussian policy (Box actions)
    """

    def __init__(self, state_dim: int, hidden_size: int | Sequence[int], action_dim: int,
                 clip: float = 0.2, entropy_coef: float = 0.0, gamma: float = 0.99,
                 lam: float = 0.95, n_steps: int | None = None, n_envs: int = 1, n_epochs: int = 10,
                 vf_coef: float = 0.5, normalize_advantage: bool = True,
                 max_grad_norm: float | None = None, linear_decay: bool = False, env: Any = None,
                 seed: int | None = None, activation: str = "relu", ortho_init: bool = False,
                 log_std_init: float = 0.0, device: str | None = "auto") -> None:
        RL_pytorch.__init__(self)
        self.device = self.backend.resolve_device(device)
        actor, critic = self._setup_ppo(state_dim, hidden_size, action_dim, clip, entropy_coef,
                                        gamma, lam, n_steps, n_envs, n_epochs, vf_coef,
                                        normalize_advantage, max_grad_norm, linear_decay, env, seed,
                                        activation, ortho_init, log_std_init)
        self.actor = MLP(actor, activation).to(self.device)
        self.actor_old = MLP(actor, activation).to(self.device)
        self.critic = MLP(critic, activation).to(self.device)
        actor_params = list(self.actor.parameters())
        if self.continuous:
            self.log_std = torch.nn.Parameter(
                torch.full((self.action_dim,), self.log_std_init, dtype=torch.float32, device=self.device))
            actor_params.append(self.log_std)  # trained with the actor, in its parameter group
        self.param = [actor_params, list(self.critic.parameters())]
        self.gamma = self.backend.make_variable(gamma)
        self.clip = self.backend.make_variable(clip)
        if seed is not None:
            self.set(seed=seed)

    def actor_weights(self, old: bool = False) -> list[np.ndarray]:
        return (self.actor_old if old else self.actor).numpy_weights()

    def load_initial_weights(self, actor: list[np.ndarray], critic: list[np.ndarray]) -> None:
        for net, weights in ((self.actor, actor), (self.actor_old, actor), (self.critic, critic)):
            self.backend.set_weights(list(net.parameters()), weights)
        if self.continuous:
            with torch.no_grad():
                self.log_std.fill_(self.log_std_init)

    def critic_weights(self) -> list[np.ndarray]:
        return self.critic.numpy_weights()

    def log_std_weights(self) -> np.ndarray:
        return self.log_std.detach().cpu().numpy().copy()

    def action(self, s: torch.Tensor) -> torch.Tensor:
        """Action probabilities, or the Gaussian's mean for Box actions."""
        net = self.actor if self.n_steps else self.actor_old
        return net(s) if self.continuous else torch.softmax(net(s), dim=-1)

    def _log_prob(self, out: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """``log pi(a|s)`` from the actor's output (logits, or the Gaussian's mean)."""
        if self.continuous:
            z = (a - out) * torch.exp(-self.log_std)
            return (-0.5 * z * z - self.log_std - _HALF_LOG_2PI).sum(dim=-1)
        return torch.log_softmax(out, dim=-1).gather(1, a.long().reshape(-1, 1)).squeeze(1)

    def _surrogate(self, logp: torch.Tensor, logp_old: torch.Tensor,
                   adv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ratio = torch.exp(logp - logp_old)
        clipped = torch.clamp(ratio, 1.0 - self.clip, 1.0 + self.clip)
        return -torch.min(ratio * adv, clipped * adv).mean(), ratio

    def _entropy(self, out: torch.Tensor) -> torch.Tensor:
        if self.continuous:  # the same for every state: the log std does not depend on it
            return (self.log_std + 0.5 + _HALF_LOG_2PI).sum()
        logp = torch.log_softmax(out, dim=-1)
        return -(logp.exp() * logp).sum(dim=-1).mean()

    def __call__(self, s: torch.Tensor, a: torch.Tensor, next_s: torch.Tensor, r: torch.Tensor,
                 d: torch.Tensor) -> torch.Tensor:
        """Replay-mode loss: TD error as advantage, ratio against ``actor_old``."""
        a = a.long().reshape(-1, 1)
        logits = self.actor(s)
        logp = torch.log_softmax(logits, dim=-1).gather(1, a).squeeze(1)
        with torch.no_grad():
            logp_old = torch.log_softmax(self.actor_old(s), dim=-1).gather(1, a).squeeze(1)
            v_next = self.critic(next_s)[:, 0]
        v = self.critic(s)[:, 0]
        td = r + self.gamma ** (self.num_steps or 1) * v_next * (1.0 - d) - v  # n-step bootstrap
        policy_loss, ratio = self._surrogate(logp, logp_old, td.detach())
        self.prioritized_replay.update(td.detach(), ratio.detach())  # used by prioritized replay
        loss = policy_loss + self.vf_coef * (td * td).mean()
        return loss - self.entropy_coef * self._entropy(logits) if self.entropy_coef else loss

    def rollout_loss(self, s: torch.Tensor, a: torch.Tensor, logp_old: torch.Tensor,
                     adv: torch.Tensor, ret: torch.Tensor) -> torch.Tensor:
        """Rollout-mode loss on a mini-batch with GAE advantages (normalised by the collector)."""
        out = self.actor(s)
        policy_loss = self.policy_loss(self._log_prob(out, a), logp_old, adv)
        value_loss = ((ret - self.critic(s)[:, 0]) ** 2).mean()
        loss = policy_loss + self.vf_coef * value_loss
        return loss - self.entropy_coef * self._entropy(out) if self.entropy_coef else loss


class A2C(A2CMixin, PPO):
    """A2C: synchronous advantage actor-critic on vectorised rollouts (see :mod:`note_rl.agents.ppo`);
    defaults are SB3's (give it ``note_rl.optim.RMSprop(lr=7e-4, rho=0.99, eps=1e-5)`` to match).
    Arguments as :class:`PPO` without the clip range and epochs: one gradient step per rollout."""

    def policy_loss(self, logp: torch.Tensor, logp_old: torch.Tensor, adv: torch.Tensor) -> torch.Tensor:
        return -(logp * adv).mean()
