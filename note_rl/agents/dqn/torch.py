"""Double DQN on the PyTorch backend: its network and loss (the update is :mod:`note_rl.agents.dqn`)."""

from __future__ import annotations

import numpy as np

from ...backends import torch_backend as _torch_backend  # noqa: F401,I001 - says how to install PyTorch when missing
import torch

from ...torch import RL_pytorch
from ..common import public_module
from ..nets.torch import TorchNetworks
from . import DQNMixin

__all__ = ["DQN"]


def _td_loss(q: torch.Tensor, target: torch.Tensor, kind: str, weights: torch.Tensor | None) -> torch.Tensor:
    """``mean(w * l(q - target))``, ``l`` the squared error or the Huber loss (delta 1), each one
    fused op (forward and backward) instead of a chain of small ones."""
    loss = torch.nn.functional.huber_loss if kind == "huber" else torch.nn.functional.mse_loss
    if weights is None:
        return loss(q, target)
    return (loss(q, target, reduction="none") * weights).mean()


@public_module("note_rl.agents.torch")
class DQN(TorchNetworks, DQNMixin, RL_pytorch):
    """Double DQN with an MLP Q-network (arguments as :class:`note_rl.agents.dqn.DQNMixin`)."""

    def _build_networks(self, q: list[np.ndarray], activation: str) -> None:
        self.q_net = self._net(q)
        self.target_q_net = self._net(q)
        self.param = list(self.q_net.parameters())

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
