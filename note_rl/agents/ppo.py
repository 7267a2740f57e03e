"""Framework-free half of the built-in PPO (Schulman et al. 2017, https://arxiv.org/abs/1707.06347).

Two ways to train, chosen by ``n_steps``:

* ``n_steps=None`` (Note_rl style): transitions go to the replay buffer, the advantage is the
  TD error ``r + gamma**n * V(s') * (1 - d) - V(s)`` (``n = num_steps``, 1 without n-step
  returns), the ratio is taken against ``actor_old`` (synchronised by ``update_param()``, i.e.
  every ``update_steps`` / ``update_batches``), which also acts.  Works with ``PR=True`` (score
  from TD and ratio) and ``pool_network=True``.
* ``n_steps=k``: on-policy rollouts of ``k`` steps in ``n_envs`` vectorised envs, GAE(``lam``),
  ``n_epochs`` passes of mini-batches of ``batch``, advantages normalised per mini-batch, value loss
  weighted by ``vf_coef``, optional gradient-norm clip ``max_grad_norm`` and linear decay of the
  learning rate and clip range over the ``steps`` budget (rl-zoo's CartPole settings).

The loss is ``-mean(min(ratio * A, clip(ratio, 1 - c, 1 + c) * A)) + vf_coef * value_loss
- entropy_coef * mean(entropy)``; the entropy term is a bonus (Note_rl's sign was inverted).

Actions: a softmax over a ``Discrete`` space, or for a ``Box`` space a diagonal Gaussian whose mean
is the actor's output and whose log standard deviation is one learned vector, independent of the
state (``log_std_init`` to start; SB3's ``MlpPolicy``).  Gaussian actions are stored as sampled
and clipped to the env's bounds only when played; they need rollout mode (``n_steps``).

A2C (Mnih et al. 2016, https://arxiv.org/abs/1602.01783) is this rollout machinery with one
gradient step per rollout on the plain policy gradient ``-mean(log pi(a|s) * A)``.
"""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from ..core.runners import sample_rollout_actions
from ..policy import SoftmaxPolicy
from ..utils import log_softmax
from ..update import LossTerm, ParamGroup, TargetUpdate, UpdateSpec
from .common import (LiveActor, MLPActor, SeededInit, check_args, check_env_dims, decay_lrs, hidden_sizes,
                     init_mlp, make_env)

__all__ = ["PPOMixin", "A2CMixin"]


class PPOMixin(SeededInit):
    """Shared by ``note_rl.agents.torch.PPO`` and ``note_rl.agents.keras.PPO``.  ``set(seed=s)``
    before the first gradient step re-draws the networks from ``s`` (see :class:`SeededInit`)."""

    #: the action spaces the agent handles (a builder refuses an env with others in one line)
    action_kinds = ("discrete", "continuous")

    def _setup_ppo(self, state_dim: int, hidden_size: int | Sequence[int], action_dim: int,
                   clip: float, entropy_coef: float, gamma: float, lam: float,
                   n_steps: int | None, n_envs: int, n_epochs: int, vf_coef: float,
                   normalize_advantage: bool, max_grad_norm: float | None, linear_decay: bool,
                   env: Any, seed: int | None, activation: str = "relu",
                   ortho_init: bool = False,
                   log_std_init: float = 0.0) -> tuple[list[np.ndarray], list[np.ndarray]]:
        name = type(self).__name__
        check_args(name, gamma=gamma, activation=activation, state_dim=state_dim,
                   numbers={"clip": clip, "entropy_coef": entropy_coef, "lam": lam, "vf_coef": vf_coef,
                            "max_grad_norm": max_grad_norm, "log_std_init": log_std_init})
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"{name}(lam={lam!r}): must be in [0, 1]")
        if clip <= 0:
            raise ValueError(f"{name}(clip={clip!r}): must be > 0")
        # n_steps=None trains from replay (Note_rl-style); 0 is refused, not read as None
        for arg, value in (("n_envs", n_envs), ("n_epochs", n_epochs), ("n_steps", 1 if n_steps is None else n_steps)):
            if int(value) <= 0:
                raise ValueError(f"{name}({arg}={value!r}): must be a positive integer")
        self.env = make_env(env)
        action_dim = self._setup_actions(action_dim, n_steps, log_std_init)
        check_env_dims(name, self.env, state_dim, action_dim)
        self.activation = activation
        self.state_dim, self.action_dim = int(state_dim), int(action_dim)
        self.hidden = hidden_sizes(hidden_size)
        self.clip_init = float(clip)
        self.entropy_coef = float(entropy_coef)
        self.lam = float(lam)
        self.n_steps = int(n_steps) if n_steps else None
        self.n_envs = int(n_envs)
        self.n_epochs = int(n_epochs)
        self.vf_coef = float(vf_coef)
        self.normalize_advantage = bool(normalize_advantage)
        self.max_grad_norm = max_grad_norm
        self.linear_decay = bool(linear_decay)
        self.PPO = self.n_steps is None  # replay mode scores PR items by TD and ratio
        self._initial_lrs: list[float] | None = None
        self.ortho_init = bool(ortho_init)
        return self.initial_weights(seed)

    def _setup_actions(self, action_dim: int, n_steps: int | None, log_std_init: float) -> int:
        """Discrete (softmax) or Box (Gaussian) actions, from the env's action space."""
        name, space = type(self).__name__, self.env.action_space
        self.continuous = isinstance(space, gym.spaces.Box)
        self.log_std_init = float(log_std_init)
        self.action_bounds: tuple[np.ndarray, np.ndarray] | None = None
        if not self.continuous:
            if not isinstance(space, gym.spaces.Discrete):
                raise ValueError(f"{name} needs a Discrete or Box action space; the env has {space}")
            return action_dim
        if not n_steps:
            raise ValueError(f"{name} with Box actions ({space}) trains on rollouts: give n_steps "
                             "(n_steps=None, Note_rl's replay mode, is for discrete actions)")
        size = int(np.prod(space.shape))
        if int(action_dim) != size:
            raise ValueError(f"{name}(action_dim={action_dim}): the env's actions have {size} dimensions")
        self.action_bounds = (space.low.astype(np.float32).ravel(), space.high.astype(np.float32).ravel())
        return size

    def initial_weights(self, seed: int | None) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """``(actor, critic)`` weights drawn from ``seed``; ``actor_old`` starts as the actor."""
        rng = np.random.default_rng(seed)
        ortho = self.ortho_init
        # SB3's ortho_init gains: 0.01 for the policy head, 1 for the value head
        actor = init_mlp([self.state_dim, *self.hidden, self.action_dim], rng, 0.01 if ortho else None)
        critic = init_mlp([self.state_dim, *self.hidden, 1], rng, 1.0 if ortho else None)
        return actor, critic

    def update_spec(self) -> UpdateSpec:
        """Two groups (actor, critic) stepped on one loss (the clipped surrogate plus the weighted
        value loss, minus the entropy bonus), clipped jointly to ``max_grad_norm`` as SB3 does;
        ``actor_old`` (replay mode's acting and ratio reference) copies the actor whenever
        ``update_param()`` runs."""
        loss = self.rollout_loss if self.n_steps else self.__call__
        actor, critic = self.param
        return UpdateSpec(
            groups=[ParamGroup("actor", actor), ParamGroup("critic", critic)],
            terms=[LossTerm(loss, ["actor", "critic"], max_grad_norm=self.max_grad_norm, name="ppo")],
            targets=[TargetUpdate(self.actor_old, self.actor, 1.0, every=None)])

    # per backend: numpy copies of the networks' weights
    def actor_weights(self, old: bool = False) -> list[np.ndarray]:  # pragma: no cover
        raise NotImplementedError

    def critic_weights(self) -> list[np.ndarray]:  # pragma: no cover
        raise NotImplementedError

    def log_std_weights(self) -> np.ndarray:  # pragma: no cover
        """The Gaussian policy's log standard deviations (continuous actions)."""
        raise NotImplementedError

    def rollout_log_std(self) -> np.ndarray | None:
        """What rollout workers need besides the actor: the Gaussian's log std, or ``None``."""
        return self.log_std_weights() if self.continuous else None

    def policy_loss(self, logp: Any, logp_old: Any, adv: Any) -> Any:
        """PPO's clipped surrogate (A2C overrides it with the plain policy gradient)."""
        return self._surrogate(logp, logp_old, adv)[0]

    def _surrogate(self, logp: Any, logp_old: Any, adv: Any) -> tuple[Any, Any]:  # pragma: no cover
        raise NotImplementedError

    # -- acting ------------------------------------------------------------------------------
    def _output(self) -> str:
        return "linear" if self.continuous else "softmax"  # the Gaussian's mean, or probabilities

    def numpy_actor(self) -> LiveActor:
        old = self.n_steps is None
        return LiveActor(self, lambda: self.actor_weights(old=old), self._output(), self.activation)

    def worker_actor(self) -> MLPActor:
        return MLPActor(self.actor_weights(old=self.n_steps is None), self._output(), self.activation)

    def worker_critic(self) -> MLPActor:
        return MLPActor(self.critic_weights(), "linear", self.activation)

    def _critic(self) -> LiveActor:
        critic = getattr(self, "_critic_actor", None)
        if critic is None:
            critic = self._critic_actor = LiveActor(self, self.critic_weights, "linear", self.activation)
        return critic

    def rollout_act(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Actions, their log-probabilities and state values for a batch of observations."""
        actions, logp = sample_rollout_actions(self.act_output(obs), self._sample_rng(), self.rollout_log_std(),
                                               None if self.continuous else self.policy, self.step_counter)
        return actions, logp, self.rollout_values(obs)

    def greedy_action(self, output: np.ndarray) -> Any:
        """The mean action clipped to the bounds (Box), or the most probable action."""
        if self.continuous:
            return np.clip(output, *self.action_bounds)
        return int(np.argmax(output))

    def _sample_rng(self) -> np.random.Generator:
        rng = getattr(self, "_rng", None)
        if rng is None:
            rng = self._rng = np.random.default_rng(self.seed)
        return rng

    def rollout_values(self, obs: np.ndarray) -> np.ndarray:
        return self._critic()(obs)[:, 0].astype(np.float32)

    def on_rollout_start(self, progress_remaining: float) -> None:
        """Linear decay of learning rate(s) and clip range (rl-zoo's ``lin_`` schedules)."""
        if self.continuous and self.policy is not None and not isinstance(self.policy, SoftmaxPolicy):
            raise ValueError(f"{type(self).__name__} samples Box actions from its Gaussian policy; "
                             f"policy={type(self.policy).__name__} applies to discrete actions only")
        if not self.linear_decay:
            return
        decay_lrs(self, progress_remaining)
        self.backend.assign(self.clip, self.clip_init * progress_remaining)

    def extra_state(self) -> dict[str, Any]:
        return {"initial_lrs": self._initial_lrs}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        self._initial_lrs = state.get("initial_lrs")



class A2CMixin:
    """A2C's constructor over a backend's PPO class (``class A2C(A2CMixin, PPO)``): SB3's defaults,
    rollouts required, one epoch; the backend class supplies ``policy_loss``."""

    def __init__(self, state_dim: int, hidden_size: int | Sequence[int], action_dim: int,
                 gamma: float = 0.99, lam: float = 1.0, n_steps: int = 5, n_envs: int = 1,
                 entropy_coef: float = 0.0, vf_coef: float = 0.5, normalize_advantage: bool = False,
                 max_grad_norm: float | None = 0.5, linear_decay: bool = False, env: Any = None,
                 seed: int | None = None, activation: str = "tanh", ortho_init: bool = True,
                 log_std_init: float = 0.0, device: str | None = "auto") -> None:
        if not n_steps:
            raise ValueError(f"A2C(n_steps={n_steps!r}): A2C trains on rollouts; give their length")
        super().__init__(state_dim, hidden_size, action_dim, gamma=gamma, lam=lam, n_steps=n_steps,  # type: ignore[call-arg]
                         n_envs=n_envs, n_epochs=1, entropy_coef=entropy_coef, vf_coef=vf_coef,
                         normalize_advantage=normalize_advantage, max_grad_norm=max_grad_norm,
                         linear_decay=linear_decay, env=env, seed=seed, activation=activation,
                         ortho_init=ortho_init, log_std_init=log_std_init, device=device)

def entropy_np(logits: np.ndarray) -> np.ndarray:
    """Entropy of the softmax of each row (used by tests as a reference)."""
    logp = log_softmax(logits)
    return -(np.exp(logp) * logp).sum(axis=-1)
