"""``from Note_rl.examples.pytorch.pool_network.DQN import DQN``: the built-in DQN, whose
``processes=N`` (or Note_rl's 4th positional argument) and ``train(pool_network=True)`` collect
in N processes."""

from ....agents.torch import DQN

__all__ = ["DQN"]
