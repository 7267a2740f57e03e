"""MADDPG on the PyTorch backend: its networks and losses (the update is :mod:`note_rl.agents.maddpg`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backends import torch_backend as _torch_backend  # noqa: F401,I001 - says how to install PyTorch when missing
import torch

from ...torch import RL_pytorch
from ..common import public_module
from ..common.torch import MLP, Critics
from . import MADDPGMixin

__all__ = ["MADDPG"]


@public_module("note_rl.agents.torch")
class MADDPG(MADDPGMixin, Critics, RL_pytorch):
    """MADDPG (arguments and defaults, the paper's, as :class:`note_rl.agents.maddpg.MADDPGMixin`)."""

    def _build_networks(self, actors: list[list[np.ndarray]], critics: list[list[np.ndarray]],
                        activation: str) -> None:
        out = "linear" if self.discrete else "tanh"
        self.actors = torch.nn.ModuleList([MLP(w, activation, output=out) for w in actors]).to(self.device)
        self.actor_targets = torch.nn.ModuleList([MLP(w, activation, output=out) for w in actors]).to(self.device)
        self._build_critics(critics, activation)
        self.param = [list(self.actors.parameters()), list(self.critics.parameters())]

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
