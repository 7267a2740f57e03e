"""DDPG on the Keras backend: the constructor of :mod:`note_rl.agents.ddpg` over Keras's TD3."""

from __future__ import annotations

from ..common import public_module
from ..td3.keras import TD3
from . import DDPGMixin

__all__ = ["DDPG"]


@public_module("note_rl.agents.keras")
class DDPG(DDPGMixin, TD3):
    """DDPG (arguments as :class:`note_rl.agents.ddpg.DDPGMixin`)."""
