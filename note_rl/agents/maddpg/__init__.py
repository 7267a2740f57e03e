"""Framework-free half of the built-in MADDPG (Lowe et al. 2017, https://arxiv.org/abs/1706.02275).

``n`` agents of a PettingZoo-parallel env (``set(MARL=True)``'s joint storage: states
``(B, n, obs)``, actions ``(B, n)`` or ``(B, n, act)``, the team reward of ``reward_done_func_ma``).
Each agent ``i`` has an actor ``mu_i(o_i)`` that sees only its own observation and a centralised
critic ``Q_i(o_1..o_n, a_1..a_n)`` that sees everything; every network has a Polyak target.

* critic: ``y = r + gamma * (1 - d) * Q'_i(o', mu'_1(o'_1), ..., mu'_n(o'_n))``,
  ``critic_loss = sum_i mean((Q_i(o, a) - y)**2)``;
* actor: ``actor_loss = -sum_i mean(Q_i(o, a_1, .., mu_i(o_i), .., a_n))`` (the other agents'
  actions as stored).

Continuous actions: ``tanh`` actors in ``[-1, 1]`` (the env is wrapped in
:class:`note_rl.ma_envs.RescaledParallelEnv`), Gaussian/OU noise per agent, clipped.  Discrete
actions: actors output logits; the critic sees stored actions one-hot and policy actions as their
softmax probabilities (a deterministic relaxation of the paper's Gumbel-Softmax); acting samples
from the softmax (``SoftmaxPolicy`` or any policy given per agent).
"""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from ...core.base import _pick
from ...core.marl import check_marl_env
from ...ma_envs import RescaledParallelEnv
from ...update import LossTerm, ParamGroup, TargetUpdate, UpdateSpec
from ..common import SeededInit, check_args, hidden_sizes, init_mlp

__all__ = ["MADDPGMixin", "simple_spread", "maddpg_seed_order"]


def simple_spread(continuous: bool = True, n_agents: int = 3, max_cycles: int = 25) -> Any:
    """PettingZoo MPE ``simple_spread_v3`` as a parallel env (from the ``mpe2`` package)."""
    try:
        from mpe2 import simple_spread_v3
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("MADDPG's default env needs the mpe2 package (pip install 'note-rl-tuner[marl]')") from exc
    return simple_spread_v3.parallel_env(N=n_agents, max_cycles=max_cycles, continuous_actions=continuous)


class MADDPGMixin(SeededInit):
    """MADDPG: per-agent actors on their own observations, centralised per-agent critics (see the
    module docstring); trains with ``set(MARL=True)``'s joint storage, which the constructor switches
    on.  Defaults are the paper's (two layers of 64, gamma 0.95, tau 0.01).  Shared by
    ``note_rl.agents.torch.MADDPG`` and ``note_rl.agents.keras.MADDPG``.

    :param hidden_size: hidden units of every network (int or list)
    :param gamma: discount
    :param tau: Polyak rate of the target networks
    :param env: a PettingZoo-parallel env (default: MPE ``simple_spread_v3``, 3 agents, continuous)
    :param seed: same as ``set(seed=seed)`` right after construction
    :param activation: hidden activation, ``"relu"`` or ``"tanh"``
    :param device: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``
    :param lr: the recommended learning rate (kept as ``self.lr``; the paper's is 1e-2)
    """

    #: per-agent action spaces the agent handles (all agents of one kind)
    action_kinds = ("continuous", "discrete")
    #: it trains a team on a multi-agent env (the tuner checks the env against this)
    multi_agent = True

    def __init__(self, hidden_size: int | Sequence[int] = (64, 64), gamma: float = 0.95, tau: float = 0.01,
                 env: Any = None, seed: int | None = None, activation: str = "relu",
                 device: str | None = "auto", lr: float | None = None) -> None:
        super().__init__()  # the backend's base class (RL_pytorch / RL)
        gamma, tau, env, lr = maddpg_seed_order(gamma, tau, env, lr)
        self.device = self.backend.resolve_device(device)
        actors, critics = self._setup_maddpg(hidden_size, gamma, tau, env, seed, activation)
        self.lr = lr
        self._build_networks(actors, critics, activation)
        self.gamma = self.backend.make_variable(gamma)
        self.set(MARL=True)
        if seed is not None:
            self.set(seed=seed)

    def _build_networks(self, actors: list[list[np.ndarray]], critics: list[list[np.ndarray]],
                        activation: str) -> None:  # pragma: no cover - per backend
        """The actors (``tanh`` outputs, or logits for discrete actions), their targets, the
        critics and their targets, and ``self.param``."""
        raise NotImplementedError

    def _setup_maddpg(self, hidden_size: int | Sequence[int], gamma: float, tau: float, env: Any,
                      seed: int | None, activation: str) -> tuple[list[list[np.ndarray]], list[list[np.ndarray]]]:
        name = type(self).__name__
        check_args(name, gamma=gamma, tau=tau, activation=activation)
        env = simple_spread() if env is None else env
        check_marl_env(env)
        names = list(env.possible_agents)
        spaces = [env.action_space(n) for n in names]
        if all(isinstance(sp, gym.spaces.Discrete) for sp in spaces):
            self.discrete, dims = True, {int(sp.n) for sp in spaces}
        elif all(isinstance(sp, gym.spaces.Box) for sp in spaces):
            if not all(np.all(np.isfinite(sp.low)) and np.all(np.isfinite(sp.high)) for sp in spaces):
                raise ValueError(f"{name} needs finite action bounds; the env has {spaces}")
            self.discrete, dims = False, {int(np.prod(sp.shape)) for sp in spaces}
            env = RescaledParallelEnv(env)
        else:
            raise ValueError(f"{name} needs all agents' actions Discrete or all Box; the env has {spaces}")
        if len(dims) > 1:
            raise ValueError(f"{name} needs the same action size for every agent (joint storage); got {sorted(dims)}")
        self.env = env
        self.n_agents, self.action_dim = len(names), dims.pop()
        self.obs_dim = int(np.prod(env.observation_space(names[0]).shape))
        self.hidden = hidden_sizes(hidden_size)
        self.activation, self.tau = activation, float(tau)
        return self.initial_weights(seed)

    def initial_weights(self, seed: int | None) -> tuple[list[list[np.ndarray]], list[list[np.ndarray]]]:
        """``(actors, critics)``: one actor ``[obs, *hidden, act]`` and one critic
        ``[n * (obs + act), *hidden, 1]`` per agent, drawn from ``seed``; targets start as copies."""
        rng = np.random.default_rng(seed)
        n, obs, act = self.n_agents, self.obs_dim, self.action_dim
        actors = [init_mlp([obs, *self.hidden, act], rng) for _ in range(n)]
        critics = [init_mlp([n * (obs + act), *self.hidden, 1], rng) for _ in range(n)]
        return actors, critics

    def update_spec(self) -> UpdateSpec:
        actor, critic = self.param
        return UpdateSpec(
            groups=[ParamGroup("actor", actor), ParamGroup("critic", critic)],  # self.param order
            terms=[LossTerm(self.critic_loss, ["critic"]), LossTerm(self.actor_loss, ["actor"])],
            targets=[TargetUpdate(self.critic_targets, self.critics, self.tau),
                     TargetUpdate(self.actor_targets, self.actors, self.tau)])

    # -- acting (numpy) ----------------------------------------------------------------------
    def _action_generator(self) -> np.random.Generator:
        rng = getattr(self, "_action_rng", None)
        if rng is None:
            rng = self._action_rng = np.random.default_rng(None if self.seed is None else self.seed + 17)
        return rng

    def explore(self, output: np.ndarray, p: int | None = None, i: int | None = None) -> Any:
        """Agent ``i``'s action: a sample of its softmax (or its ``policy[i]``), or its actor's
        action plus ``noise[i]``, clipped to ``[-1, 1]``."""
        index = p if i is None else i
        if self.discrete:
            policy = _pick(self.policy, index)
            if policy is not None:
                return policy.act(output, self.step_counter)
            probs = np.asarray(output, np.float64)
            return int(self._action_generator().choice(len(probs), p=probs / probs.sum()))
        noise = _pick(self.noise, index)
        action = output if noise is None else output + noise.sample()
        return np.clip(action, -1.0, 1.0).astype(np.float32)

    def greedy_action(self, output: np.ndarray) -> Any:
        return int(np.argmax(output)) if self.discrete else np.clip(output, -1.0, 1.0)

    def apply_seed(self, seed: int) -> None:
        super().apply_seed(seed)
        self._action_rng = None  # restarts from the new seed

    def team_return(self, episodes: int = 10, seed: int = 0) -> float:
        """Mean team return (``reward_done_func_ma``'s reward, summed over steps) of greedy
        episodes on the agent's env, seeded ``seed``, ``seed + 1``, ..."""
        names, total = list(self.env.possible_agents), 0.0
        for e in range(episodes):
            obs, _ = self.env.reset(seed=seed + e)
            while True:
                acts = {n: self.greedy_action(self.act_output(np.asarray(obs[n], np.float32)[None], i)[0])
                        for i, n in enumerate(names)}
                obs, rewards, terms, truncs, _ = self.env.step(acts)
                r, done = self.marl_reward_done([float(rewards[n]) for n in names], [bool(terms[n]) for n in names])
                total += r
                if done or any(terms[n] or truncs[n] for n in names):
                    break
        return total / episodes


def maddpg_seed_order(gamma: Any, tau: Any, env: Any, lr: Any) -> tuple[Any, Any, Any, Any]:
    """Note_rl's positional MADDPG (its example class is also called ``DDPG``):
    ``DDPG(128, 0.1, 0.98, 0.005)`` = ``(hidden_size, tau, gamma, lr)``; this signature is
    ``(hidden_size, gamma, tau, env)``.  Recognised by a number in ``env``'s place; returns
    ``(gamma, tau, env, lr)``."""
    if isinstance(env, (float, np.floating)):
        if lr is not None:
            raise ValueError("MADDPG: Note_rl's positional form (hidden_size, tau, gamma, lr) and lr= given together")
        return tau, gamma, None, float(env)
    return gamma, tau, env, lr
