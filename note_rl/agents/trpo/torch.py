"""TRPO on the PyTorch backend: PyTorch's ``PPO.Rollout`` (networks, policy, rollouts) with TRPO's constructor and
update (:mod:`note_rl.agents.trpo`), and the three functions that update differentiates: the
surrogate, the mean KL(pi_old || pi) and the critic's value loss."""

from __future__ import annotations

import numpy as np

from ...backends import torch_backend as _torch_backend  # noqa: F401,I001 - says how to install PyTorch when missing
import torch

from ...utils import network_input
from ..common import public_module
from ..ppo.torch import PPO
from . import TRPOMixin

__all__ = ["TRPO"]


@public_module("note_rl.agents.torch")
class TRPO(TRPOMixin, PPO.Rollout):
    """TRPO: natural-gradient policy steps in a KL trust region, a value critic trained by
    ``train()``'s optimizer (see :mod:`note_rl.agents.trpo`); defaults are sb3-contrib's (give it
    ``note_rl.optim.Adam(lr=1e-3)``).  Discrete and Box actions."""

    def policy_output(self, s: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self.actor(torch.as_tensor(network_input(s), device=self.device)).cpu().numpy()

    def surrogate(self, s: torch.Tensor, a: torch.Tensor, logp_old: torch.Tensor, adv: torch.Tensor) -> torch.Tensor:
        return (torch.exp(self._log_prob(self.actor(s), a) - logp_old) * adv).mean()

    def kl(self, s: torch.Tensor, old_out: torch.Tensor, old_log_std: torch.Tensor) -> torch.Tensor:
        out = self.actor(s)
        if self.continuous:
            var_old, var = torch.exp(2.0 * old_log_std), torch.exp(2.0 * self.log_std)
            kl = self.log_std - old_log_std + (var_old + (old_out - out) ** 2) / (2.0 * var) - 0.5
        else:
            logp_old = torch.log_softmax(old_out, dim=-1)
            kl = logp_old.exp() * (logp_old - torch.log_softmax(out, dim=-1))
        return kl.sum(dim=-1).mean()

    def critic_loss(self, s: torch.Tensor, a: torch.Tensor, logp_old: torch.Tensor, adv: torch.Tensor,
                    ret: torch.Tensor) -> torch.Tensor:
        return ((ret - self.critic(s)[:, 0]) ** 2).mean()
