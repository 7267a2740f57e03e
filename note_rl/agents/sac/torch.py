"""SAC on the PyTorch backend: its networks, squashed-Gaussian sample and losses (the update is
:mod:`note_rl.agents.sac`)."""

from __future__ import annotations

import math

import numpy as np

from ...backends import torch_backend as _torch_backend  # noqa: F401,I001 - says how to install PyTorch when missing
import torch

from ...torch import RL_pytorch
from ..common import public_module
from ..common.torch import MLP, Critics, q_values, sde_sigma
from . import LOG_STD_MAX, LOG_STD_MIN, SDE_CLIP_MEAN, SACMixin

__all__ = ["SAC"]


@public_module("note_rl.agents.torch")
class SAC(SACMixin, Critics, RL_pytorch):
    """SAC with automatic entropy temperature; arguments and defaults (SB3's) as
    :class:`note_rl.agents.sac.SACMixin`."""

    def _build_networks(self, actor: list[np.ndarray], critics: list[list[np.ndarray]], activation: str) -> None:
        self.actor = MLP(actor, activation).to(self.device)
        self._build_critics(critics, activation)
        self.log_alpha = torch.nn.Parameter(torch.tensor([math.log(self.alpha_init)], device=self.device))
        actor_params = list(self.actor.parameters())
        if self.use_sde:  # gSDE's log std: a (features, action) matrix trained with the actor
            self.sde_log_std = torch.nn.Parameter(
                torch.full((self.hidden[-1], self.action_dim), self.log_std_init, device=self.device))
            actor_params.append(self.sde_log_std)
        self.param = [actor_params, list(self.critics.parameters())]
        if self.auto_alpha:
            self.param.append([self.log_alpha])

    def actor_weights(self) -> list[np.ndarray]:
        return self.actor.numpy_weights()

    def read_sde_log_std(self) -> np.ndarray:
        return self.sde_log_std.detach().cpu().numpy().copy()

    def load_initial_weights(self, actor: list[np.ndarray], *critics: list[np.ndarray]) -> None:
        self.backend.set_weights(list(self.actor.parameters()), actor)
        self._load_critics(critics)
        with torch.no_grad():
            self.log_alpha.fill_(math.log(self.alpha_init))
            if self.use_sde:
                self.sde_log_std.fill_(self.log_std_init)

    def action(self, s: torch.Tensor) -> torch.Tensor:
        if self.use_sde:  # [mean, features]: the numpy side draws gSDE's noise from the features
            return torch.cat(self.actor.forward_hidden(s), dim=1)
        return self.actor(s)

    def _normal(self, like: torch.Tensor) -> torch.Tensor:
        return torch.randn_like(like)

    def _sample(self, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised squashed-Gaussian action for each state and its log-probability."""
        if self.use_sde:
            return self._sde_sample(s)
        mean, log_std = self.actor(s).chunk(2, dim=1)
        log_std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        std = log_std.exp()
        eps = self._normal(mean)
        u = mean + std * eps
        action = torch.tanh(u)
        gauss = -0.5 * eps.pow(2) - log_std - 0.5 * math.log(2 * math.pi)
        log_prob = (gauss - torch.log(1.0 - action.pow(2) + 1e-6)).sum(dim=1)
        return action, log_prob

    def _sde_sample(self, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """gSDE's sample (see :mod:`note_rl.agents.sac`): one exploration matrix for the batch."""
        mean, z = self.actor.forward_hidden(s)
        mean = mean.clamp(-SDE_CLIP_MEAN, SDE_CLIP_MEAN)
        z = z.detach()  # as SB3 (learn_features=False): the noise's gradient does not train the features
        std = self.sde_log_std.exp()
        noise = z @ (std * self._normal(std))
        sigma = sde_sigma(z, std)
        action = torch.tanh(mean + noise)
        gauss = -0.5 * (noise / sigma).pow(2) - sigma.log() - 0.5 * math.log(2 * math.pi)
        return action, (gauss - torch.log(1.0 - action.pow(2) + 1e-6)).sum(dim=1)

    def alpha(self) -> torch.Tensor:
        return self.log_alpha.detach().exp()

    def critic_loss(self, s: torch.Tensor, a: torch.Tensor, next_s: torch.Tensor, r: torch.Tensor,
                    d: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            next_a, next_logp = self._sample(next_s)
            next_q = torch.stack(q_values(self.critic_targets, next_s, next_a)).min(dim=0).values
            target = r + self.gamma * (1.0 - d) * (next_q - self.alpha() * next_logp)
        qs = q_values(self.critics, s, a.reshape(-1, self.action_dim))
        self.prioritized_replay.update(qs[0].detach() - target)  # used by prioritized replay
        return 0.5 * sum(torch.nn.functional.mse_loss(q, target) for q in qs)

    def _actor_terms(self, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        action, logp = self._sample(s)
        q = torch.stack(q_values(self.critics, s, action)).min(dim=0).values
        return (self.alpha() * logp - q).mean(), logp

    def _alpha_from(self, logp: torch.Tensor) -> torch.Tensor:
        return -(self.log_alpha * (logp.detach() + self.target_entropy)).mean()
