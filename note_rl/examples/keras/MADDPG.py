"""``from Note_rl.examples.keras.MADDPG import DDPG``: Note_rl's MADDPG example class is named
``DDPG``; here it is the built-in :class:`~note_rl.agents.keras.MADDPG`."""

from ...agents.keras import MADDPG

DDPG = MADDPG

__all__ = ["DDPG", "MADDPG"]
