"""DDPG on the PyTorch backend: the constructor of :mod:`note_rl.agents.ddpg` over PyTorch's TD3."""

from __future__ import annotations

from ..common import public_module
from ..td3.torch import TD3
from . import DDPGMixin

__all__ = ["DDPG"]


@public_module("note_rl.agents.torch")
class DDPG(DDPGMixin, TD3):
    """DDPG: TD3's update with one critic, no target smoothing and no delay (SB3's DDPG); see
    :class:`note_rl.agents.ddpg.DDPGMixin` for the arguments."""
