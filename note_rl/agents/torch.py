"""The built-in agents on the PyTorch backend, under the names users and configs import them by
(``from note_rl.agents.torch import DQN``, ``_target_: note_rl.agents.${backend.name}.DQN``).

Each agent lives in its own folder (``note_rl/agents/<algo>/``: the framework-free part in
``__init__.py``, the PyTorch part in ``torch.py``); this module only gathers the PyTorch parts.  The
classes report this module as theirs (``DQN.__module__ == "note_rl.agents.torch"``), so pickles and
saved run configs name this path."""

from __future__ import annotations

from .acer.torch import ACER
from .a2c.torch import A2C
from .common.torch import MLP
from .ddpg.torch import DDPG
from .dqn.torch import DQN
from .maddpg.torch import MADDPG
from .ppo.torch import PPO
from .sac.torch import SAC
from .td3.torch import TD3
from .trpo.torch import TRPO

__all__ = ["DQN", "PPO", "A2C", "MLP", "DDPG", "TD3", "SAC", "MADDPG", "TRPO", "ACER"]
