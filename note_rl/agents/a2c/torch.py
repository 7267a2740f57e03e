"""A2C on the PyTorch backend: PyTorch's ``PPO.Rollout`` with A2C's constructor and policy loss."""

from __future__ import annotations

from ...backends import torch_backend as _torch_backend  # noqa: F401,I001 - says how to install PyTorch when missing
import torch

from ..common import public_module
from ..ppo.torch import PPO
from . import A2CMixin

__all__ = ["A2C"]


@public_module("note_rl.agents.torch")
class A2C(A2CMixin, PPO.Rollout):
    """A2C: synchronous advantage actor-critic on vectorised rollouts (see :mod:`note_rl.agents.a2c`);
    defaults are SB3's (give it ``note_rl.optim.RMSprop(lr=7e-4, rho=0.99, eps=1e-5)`` to match).
    Arguments as :class:`PPO` without the clip range and epochs: one gradient step per rollout."""

    def policy_loss(self, logp: torch.Tensor, logp_old: torch.Tensor, adv: torch.Tensor) -> torch.Tensor:
        return -(logp * adv).mean()
