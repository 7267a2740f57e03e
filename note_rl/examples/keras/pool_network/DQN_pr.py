"""``from Note_rl.examples.keras.pool_network.DQN_pr import DQN``: the built-in DQN; prioritized replay
is ``set(PR=True)`` and its mini-batches are drawn in worker processes with ``train(processes_pr=N)``."""

from ....agents.keras import DQN

__all__ = ["DQN"]
