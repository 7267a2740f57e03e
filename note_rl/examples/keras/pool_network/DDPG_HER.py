"""``from Note_rl.examples.keras.pool_network.DDPG_HER import DDPG``: as
:mod:`note_rl.examples.keras.DDPG_HER` (``processes=N`` accepted; HER collects in one process:
``train(pool_network=True)`` with ``HER=True`` is refused in one line)."""

from ..DDPG_HER import DDPG

__all__ = ["DDPG"]
