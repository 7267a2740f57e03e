"""``from Note_rl.examples.pytorch.MADDPG import DDPG``: Note_rl's MADDPG example class is named
``DDPG``; here it is the built-in :class:`~note_rl.agents.torch.MADDPG`."""

from ...agents.torch import MADDPG

DDPG = MADDPG

__all__ = ["DDPG", "MADDPG"]
