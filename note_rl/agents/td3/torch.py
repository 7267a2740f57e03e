"""TD3 on the PyTorch backend: its networks and losses (the update is :mod:`note_rl.agents.td3`)."""

from __future__ import annotations

import numpy as np

from ...backends import torch_backend as _torch_backend  # noqa: F401,I001 - says how to install PyTorch when missing
import torch

from ...torch import RL_pytorch
from ..common import public_module
from ..common.torch import MLP, Critics, q_values
from . import TD3Mixin

__all__ = ["TD3"]


@public_module("note_rl.agents.torch")
class TD3(TD3Mixin, Critics, RL_pytorch):
    """TD3 (twin critics, target policy smoothing, delayed actor); arguments and defaults (SB3's) as
    :class:`note_rl.agents.td3.TD3Mixin`."""

    def _build_networks(self, actor: list[np.ndarray], critics: list[list[np.ndarray]], activation: str) -> None:
        self.actor = MLP(actor, activation, output="tanh").to(self.device)
        self.actor_target = MLP(actor, activation, output="tanh").to(self.device)
        self._build_critics(critics, activation)
        self.param = [list(self.actor.parameters()), list(self.critics.parameters())]

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
            next_q = torch.stack(q_values(self.critic_targets, next_s, next_a)).min(dim=0).values
            target = r + self.gamma * (1.0 - d) * next_q
        qs = q_values(self.critics, s, a.reshape(-1, self.action_dim))
        self.prioritized_replay.update(qs[0].detach() - target)  # used by prioritized replay
        return sum(torch.nn.functional.mse_loss(q, target) for q in qs)

    def actor_loss(self, s: torch.Tensor, a: torch.Tensor, next_s: torch.Tensor, r: torch.Tensor,
                   d: torch.Tensor) -> torch.Tensor:
        return -self.critics[0](torch.cat([s, self.actor(s)], dim=1)).mean()
