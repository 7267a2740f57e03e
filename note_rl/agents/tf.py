"""The built-in agents of the ``tf`` backend under the backend's name, so that a config can name
them as ``note_rl.agents.${backend.name}.DQN`` (the same classes as :mod:`note_rl.agents.keras`)."""

from .keras import A2C, ACER, DDPG, DQN, MADDPG, PPO, SAC, TD3, TRPO

__all__ = ["DQN", "PPO", "A2C", "DDPG", "TD3", "SAC", "MADDPG", "TRPO", "ACER"]
