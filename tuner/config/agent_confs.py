"""Agent sections of the tuner's config schema: the keys every agent has and one dataclass per
built-in agent (its constructor's arguments), with what the checks know of each built-in without
importing a framework (action kinds, multi-agent, on-policy).  :mod:`tuner.config.schema` merges a composed
``agent`` node into one of these; a user's own class gets a schema built from its signature."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = ["AGENT_CONTEXT", "AGENT_SETTINGS", "AgentCommon", "DQNConf", "TRPOConf", "ACERConf", "BUILTIN_AGENTS", "BUILTIN_ACTION_KINDS",
           "BUILTIN_MULTI_AGENT", "BUILTIN_ON_POLICY", "BUILTIN_OWN_LOOP", "builtin_target"]

# keys a builder passes to an agent's constructor itself (never from the config)
AGENT_CONTEXT = ("env", "state_dim", "action_dim", "seed", "device")
# agent keys that are set() settings of the training loop, not constructor arguments
AGENT_SETTINGS = ("batch", "train_freq", "num_updates", "update_steps", "update_batches",
                  "learning_starts", "num_steps", "policy", "noise", "normalize")


@dataclass
class AgentCommon:
    """What every agent config has: the class (``_target_``), a name (studies and runs are named
    after it), its recommended learning rate, and the ``set()`` settings of the training loop.
    ``policy`` / ``noise`` are ``_target_`` nodes (exploration for discrete / continuous actions)."""

    _target_: str = "note_rl.agents.${backend.name}.DQN"
    name: str = "agent"
    lr: float = 1e-3  # used when optimizer.lr is null
    batch: int = 64
    train_freq: int = 1
    num_updates: int = 1
    update_steps: Optional[int] = None
    update_batches: Optional[int] = None
    learning_starts: Optional[int] = None
    num_steps: Optional[int] = None
    n_envs: int = 1  # vectorised env copies (set(n_envs=...); on-policy agents take it in their constructor)
    policy: Any = None
    noise: Any = None
    # set(normalize=...): null, true/false, or {obs, reward, clip_obs, clip_reward, gamma, epsilon}
    normalize: Any = None


@dataclass
class _MLPAgent(AgentCommon):
    hidden_size: list[int] = field(default_factory=lambda: [64, 64])
    activation: str = "relu"
    ortho_init: bool = False
    gamma: float = 0.99
    max_grad_norm: Optional[float] = None
    # null: the MLP of hidden_size / activation; else a _target_ node (note_rl.agents.nets: NatureCNN,
    # MinAtarCNN, MLP, or a user's module class), checked by tuner.config.network_check
    network: Any = None


@dataclass
class DQNConf(_MLPAgent):
    """``note_rl.agents.<backend>.DQN``."""

    name: str = "dqn"
    tau: float = 1.0
    loss: str = "mse"
    double: bool = True
    linear_decay: bool = False


@dataclass
class PPOConf(_MLPAgent):
    """``note_rl.agents.<backend>.PPO``."""

    name: str = "ppo"
    clip: float = 0.2
    entropy_coef: float = 0.0
    lam: float = 0.95
    n_steps: Optional[int] = None
    n_envs: int = 1
    n_epochs: int = 10
    vf_coef: float = 0.5
    normalize_advantage: bool = True
    linear_decay: bool = False
    log_std_init: float = 0.0
    use_sde: bool = False
    sde_sample_freq: int = -1


@dataclass
class A2CConf(_MLPAgent):
    """``note_rl.agents.<backend>.A2C``; ``batch=None`` takes the whole rollout in one step."""

    name: str = "a2c"
    batch: Optional[int] = None
    activation: str = "tanh"
    ortho_init: bool = True
    lam: float = 1.0
    n_steps: int = 5
    n_envs: int = 1
    entropy_coef: float = 0.0
    vf_coef: float = 0.5
    normalize_advantage: bool = False
    max_grad_norm: Optional[float] = 0.5
    linear_decay: bool = False
    log_std_init: float = 0.0
    use_sde: bool = False
    sde_sample_freq: int = -1


@dataclass
class TRPOConf(_MLPAgent):
    """``note_rl.agents.<backend>.TRPO``; ``batch`` is the critic's mini-batch."""

    name: str = "trpo"
    batch: int = 128
    activation: str = "tanh"
    ortho_init: bool = True
    lam: float = 0.95
    n_steps: int = 2048
    n_envs: int = 1
    n_critic_updates: int = 10
    target_kl: float = 0.01
    cg_max_steps: int = 15
    cg_damping: float = 0.1
    line_search_shrinking_factor: float = 0.8
    line_search_max_iter: int = 10
    normalize_advantage: bool = True
    log_std_init: float = 0.0


@dataclass
class ACERConf(_MLPAgent):
    """``note_rl.agents.<backend>.ACER``; its loop updates on whole segments (``batch`` unused)."""

    name: str = "acer"
    activation: str = "tanh"
    ortho_init: bool = True
    n_steps: int = 20
    n_envs: int = 4
    replay_ratio: float = 4.0
    buffer_size: int = 50_000
    replay_start: int = 10_000
    c: float = 10.0
    q_coef: float = 0.5
    ent_coef: float = 0.01
    trust_region: bool = True
    delta: float = 1.0
    alpha: float = 0.99
    max_grad_norm: Optional[float] = 10.0
    linear_decay: bool = False
    action_std: float = 0.3
    sdn_samples: int = 5


@dataclass
class _OffPolicyAC(AgentCommon):
    hidden_size: list[int] = field(default_factory=lambda: [256, 256])
    activation: str = "relu"
    gamma: float = 0.99
    tau: float = 0.005


@dataclass
class MADDPGConf(_OffPolicyAC):
    """``note_rl.agents.<backend>.MADDPG`` (a multi-agent env: ``env.factory``)."""

    name: str = "maddpg"
    hidden_size: list[int] = field(default_factory=lambda: [64, 64])
    gamma: float = 0.95
    tau: float = 0.01


@dataclass
class DDPGConf(_OffPolicyAC):
    """``note_rl.agents.<backend>.DDPG``."""

    name: str = "ddpg"


@dataclass
class TD3Conf(_OffPolicyAC):
    """``note_rl.agents.<backend>.TD3``."""

    name: str = "td3"
    policy_delay: int = 2
    target_policy_noise: float = 0.2
    target_noise_clip: float = 0.5
    n_critics: int = 2


@dataclass
class SACConf(_OffPolicyAC):
    """``note_rl.agents.<backend>.SAC``; ``ent_coef`` / ``target_entropy`` take a number or
    ``auto`` (``auto_0.1``: learned from 0.1)."""

    name: str = "sac"
    ent_coef: Any = "auto"
    target_entropy: Any = "auto"
    n_critics: int = 2
    target_update_interval: int = 1
    use_sde: bool = False
    log_std_init: float = -3.0
    sde_sample_freq: int = -1


BUILTIN_AGENTS: dict[str, type] = {"DQN": DQNConf, "PPO": PPOConf, "A2C": A2CConf, "TRPO": TRPOConf, "ACER": ACERConf,
                                   "DDPG": DDPGConf, "TD3": TD3Conf, "SAC": SACConf, "MADDPG": MADDPGConf}
#: the action spaces each built-in agent handles (its class's ``action_kinds``, known here without
#: importing a framework)
BUILTIN_ACTION_KINDS: dict[str, tuple[str, ...]] = {
    "DQN": ("discrete",), "PPO": ("discrete", "continuous"), "A2C": ("discrete", "continuous"),
    "TRPO": ("discrete", "continuous"), "ACER": ("discrete", "continuous"),
    "DDPG": ("continuous",), "TD3": ("continuous",),
    "SAC": ("continuous",), "MADDPG": ("continuous", "discrete")}
#: built-in agents that train teams on multi-agent envs (a class says so with ``multi_agent = True``)
BUILTIN_MULTI_AGENT = ("MADDPG",)
#: built-in on-policy agents (the core's ``PPO`` flag: no relabelled or replayed-team experience)
BUILTIN_ON_POLICY = ("PPO", "A2C", "TRPO", "ACER")
#: built-in agents with their own master loop in the training process (no pool_network strategy)
BUILTIN_OWN_LOOP = ("ACER",)


def builtin_target(target: str) -> tuple[str, str] | None:
    """``(backend module, class name)`` when ``target`` names a built-in agent
    (``note_rl.agents.<torch|tf>.<DQN|PPO|...>``), else ``None``: the checks answer those from the
    tables above without importing a framework."""
    found = re.fullmatch(r"note_rl\.agents\.(\w+)\.(\w+)", target)
    return (found.group(1), found.group(2)) if found and found.group(2) in BUILTIN_AGENTS else None
