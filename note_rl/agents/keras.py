"""The built-in agents on the Keras/TensorFlow backend, under the names users and configs import
them by (``from note_rl.agents.keras import DQN``; :mod:`note_rl.agents.tf` is the same under the
backend's name).  Same maths as :mod:`note_rl.agents.torch`: the conformance tests hold them to 1e-5.

Each agent lives in its own folder (``note_rl/agents/<algo>/``: the framework-free part in
``__init__.py``, the Keras part in ``keras.py``); this module only gathers the Keras parts.  The
classes report this module as theirs (``DQN.__module__ == "note_rl.agents.keras"``)."""

from __future__ import annotations

from .acer.keras import ACER
from .a2c.keras import A2C
from .common.keras import mlp
from .ddpg.keras import DDPG
from .dqn.keras import DQN
from .maddpg.keras import MADDPG
from .ppo.keras import PPO
from .sac.keras import SAC
from .td3.keras import TD3
from .trpo.keras import TRPO

__all__ = ["DQN", "PPO", "A2C", "mlp", "DDPG", "TD3", "SAC", "MADDPG", "TRPO", "ACER"]
