"""``from Note_rl.examples.pytorch.DQN import DQN``: the built-in double DQN."""

from ...agents.torch import DQN

__all__ = ["DQN"]
