"""``from Note_rl.examples.keras.DQN import DQN``: the built-in double DQN."""

from ...agents.keras import DQN

__all__ = ["DQN"]
