"""PPO on the PyTorch backend: its networks, log-probabilities, ratio and entropy (the pieces of the
shared :class:`~note_rl.agents.ppo.PPOLoss`), the loss on given advantages that rollouts train on, and
``PPO.Replay``'s loss from a replayed transition (the update is :mod:`note_rl.agents.ppo`)."""

from __future__ import annotations

import math

import numpy as np

from ...backends import torch_backend as _torch_backend  # noqa: F401,I001 - says how to install PyTorch when missing
import torch

from ...torch import RL_pytorch
from ..common import public_module
from ..common.torch import sde_sigma
from ..nets.torch import TorchNetworks
from . import PPOMixin, ReplayMode, RolloutMode

__all__ = ["PPO"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@public_module("note_rl.agents.torch")
class PPO(TorchNetworks, PPOMixin, RL_pytorch):
    """PPO with a softmax (discrete) or state-independent Gaussian (Box) actor and a value critic;
    arguments as :class:`note_rl.agents.ppo.PPOMixin`.  ``PPO(...)`` is a ``PPO.Replay``
    (``n_steps=None``) or a ``PPO.Rollout`` (``n_steps=k``)."""

    def _build_networks(self, actor: list[np.ndarray], critic: list[np.ndarray], activation: str) -> None:
        self.actor = self._net(actor)
        self.actor_old = self._net(actor)
        self.critic = self._net(critic)
        actor_params = list(self.actor.parameters())
        if self.continuous:
            self.log_std = torch.nn.Parameter(  # gSDE's: a (features, action_dim) matrix
                torch.full(self.log_std_shape(), self.log_std_init, dtype=torch.float32, device=self.device))
            actor_params.append(self.log_std)  # trained with the actor, in its parameter group
        self.param = [actor_params, list(self.critic.parameters())]

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
        """Action probabilities, or the Gaussian's mean for Box actions (gSDE: ``[mean, z]``, whose
        ``z`` the numpy side draws the noise from)."""
        net = self.acting_actor()
        if self.use_sde:
            return torch.cat(net.forward_hidden(s), dim=1)
        return net(s) if self.continuous else torch.softmax(net(s), dim=-1)

    def _policy_out(self, s: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """The actor's output the loss reads: logits or the mean, or with gSDE ``(mean, z)``, ``z``
        held constant (SB3's ``learn_features=False``: the noise's gradient does not train the features)."""
        if self.use_sde:
            mean, z = self.actor.forward_hidden(s)
            return mean, z.detach()
        return self.actor(s)

    def _log_prob(self, out: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """``log pi(a|s)`` from the actor's output (logits, the Gaussian's mean, gSDE's ``(mean, z)``)."""
        if self.use_sde:
            mean, z = out
            sigma = sde_sigma(z, self.log_std.exp())
            return (-0.5 * ((a - mean) / sigma).pow(2) - sigma.log() - _HALF_LOG_2PI).sum(dim=-1)
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
        if self.use_sde:  # a Gaussian's entropy, 0.5 + log(sqrt(2 pi) sigma), with sigma per state
            return (sde_sigma(out[1], self.log_std.exp()).log() + 0.5 + _HALF_LOG_2PI).sum(dim=-1).mean()
        if self.continuous:  # the same for every state: the log std does not depend on it
            return (self.log_std + 0.5 + _HALF_LOG_2PI).sum()
        logp = torch.log_softmax(out, dim=-1)
        return -(logp.exp() * logp).sum(dim=-1).mean()

    def rollout_loss(self, s: torch.Tensor, a: torch.Tensor, logp_old: torch.Tensor,
                     adv: torch.Tensor, ret: torch.Tensor) -> torch.Tensor:
        """PPO's loss on a mini-batch whose advantages and value targets are given: what
        ``PPO.Rollout`` trains on (GAE advantages, normalised by the collector); the conformance
        tests evaluate it on either class."""
        out = self._policy_out(s)
        policy_loss = self.policy_loss(self._log_prob(out, a), logp_old, adv)
        value_loss = ((ret - self.critic(s)[:, 0]) ** 2).mean()
        return self.objective(policy_loss, value_loss, out)


class _Replay(ReplayMode, PPO):
    """``PPO(n_steps=None)``: Note_rl's replay mode (see :class:`note_rl.agents.ppo.ReplayMode`)."""

    def __call__(self, s: torch.Tensor, a: torch.Tensor, next_s: torch.Tensor, r: torch.Tensor,
                 d: torch.Tensor) -> torch.Tensor:
        """The loss on replayed transitions: TD error as advantage, ratio against ``actor_old``."""
        logits = self.actor(s)
        logp = self._log_prob(logits, a)
        with torch.no_grad():
            logp_old = self._log_prob(self.actor_old(s), a)
            v_next = self.critic(next_s)[:, 0]
        v = self.critic(s)[:, 0]
        td = r + self.gamma ** (self.num_steps or 1) * v_next * (1.0 - d) - v  # n-step bootstrap
        policy_loss, ratio = self._surrogate(logp, logp_old, td.detach())
        self.prioritized_replay.update(td.detach(), ratio.detach())  # used by prioritized replay
        return self.objective(policy_loss, (td * td).mean(), logits)


class _Rollout(RolloutMode, PPO):
    """``PPO(n_steps=k)``: on-policy rollouts with GAE (see :class:`note_rl.agents.ppo.RolloutMode`);
    trains on :meth:`PPO.rollout_loss`."""


PPO.name_modes(_Replay, _Rollout)
