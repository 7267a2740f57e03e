"""ACER on the PyTorch backend: the shared actor-critic MLP, its average copy, and the loss the update
steps on (the update is :mod:`note_rl.agents.acer`)."""

from __future__ import annotations

import numpy as np

from ...backends import torch_backend as _torch_backend  # noqa: F401,I001 - says how to install PyTorch when missing
import torch

from ...torch import RL_pytorch
from ..common import public_module
from ..common.torch import MLP
from . import ACERMixin

__all__ = ["ACER"]


@public_module("note_rl.agents.torch")
class ACER(ACERMixin, RL_pytorch):
    """ACER: actor-critic with experience replay, Retrace targets, truncated importance weights with
    bias correction and the efficient trust region (see :mod:`note_rl.agents.acer`); defaults are
    OpenAI baselines' (give it ``note_rl.optim.RMSprop(lr=7e-4, rho=0.99, eps=1e-5)``).  Discrete
    actions."""

    def _build_networks(self, weights: list[np.ndarray], *sdn: list[np.ndarray]) -> None:
        self.net = MLP(weights, self.activation).to(self.device)
        self.avg_net = MLP(weights, self.activation).to(self.device)
        self.param = list(self.net.parameters())
        if sdn:  # Box actions: the stochastic dueling network, trained with the policy
            self.v_net, self.a_net = (MLP(w, self.activation).to(self.device) for w in sdn)
            self.param += list(self.v_net.parameters()) + list(self.a_net.parameters())

    def load_initial_weights(self, weights: list[np.ndarray], *sdn: list[np.ndarray]) -> None:
        for net, w in ((self.net, weights), (self.avg_net, weights),
                       *zip((self.v_net, self.a_net) if sdn else (), sdn)):
            self.backend.set_weights(list(net.parameters()), w)

    def sdn_weights(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        return self.v_net.numpy_weights(), self.a_net.numpy_weights()

    def net_weights(self, avg: bool = False) -> list[np.ndarray]:
        return (self.avg_net if avg else self.net).numpy_weights()

    def action(self, s: torch.Tensor) -> torch.Tensor:
        """The policy's action probabilities, or the Gaussian's mean (Box actions)."""
        if self.continuous:
            return self.net(s)
        return torch.softmax(self.net(s)[:, :self.action_dim], dim=-1)

    def acer_loss(self, x: torch.Tensor, a: torch.Tensor, grad_f: torch.Tensor, q_ret: torch.Tensor,
                  offset: torch.Tensor) -> torch.Tensor:
        out = self.net(x)
        f = torch.softmax(out[:, :self.action_dim], dim=-1)
        q_a = out[:, self.action_dim:].gather(1, a.long().reshape(-1, 1)).squeeze(1)
        # the policy's gradient is grad_f pulled back through f (Algorithm 2, lines 16-18)
        return (grad_f * f).sum() + offset.sum() + self.q_coef * 0.5 * ((q_ret - q_a) ** 2).mean()

    def sdn_loss(self, x: torch.Tensor, au: torch.Tensor, grad_mean: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        n, k1, d = au.shape
        v = self.v_net(x)[:, 0]
        adv = self.a_net(torch.cat([x[:, None].expand(n, k1, x.shape[1]), au], -1).reshape(n * k1, -1)).reshape(n, k1)
        q = v + adv[:, 0] - adv[:, 1:].mean(1)  # Q~(x, a) of the stochastic dueling network
        q_ret, v_coef, offset = targets.unbind(1)
        return ((grad_mean * self.net(x)).sum() + offset.sum()
                + self.q_coef * (0.5 * ((q_ret - q) ** 2).mean() - (v_coef * v).mean()))
