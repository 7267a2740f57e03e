"""``from Note_rl.examples.keras.PPO import PPO``: the built-in PPO (``set(PPO=True)`` trains it from
the replay buffer, Note_rl's way; ``n_steps=`` from rollouts)."""

from ...agents.keras import PPO

__all__ = ["PPO"]
