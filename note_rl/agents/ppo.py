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
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..utils import log_softmax
from ..update import LossTerm, ParamGroup, TargetUpdate, UpdateSpec
from .common import ACTIVATIONS, LiveActor, MLPActor, SeededInit, discrete_env, hidden_sizes, init_mlp

__all__ = ["PPOMixin"]


class PPOMixin(SeededInit):
    """Shared by ``note_rl.agents.torch.PPO`` and ``note_rl.agents.keras.PPO``.  ``set(seed=s)``
    before the first gradient step re-draws the networks from ``s`` (see :class:`SeededInit`)."""

    #: the action spaces the agent handles (a builder refuses an env with others in one line)
    action_kinds = ("discrete",)

    def _setup_ppo(self, state_dim: int, hidden_size: int | Sequence[int], action_dim: int,
                   clip: float, entropy_coef: float, gamma: float, lam: float,
                   n_steps: int | None, n_envs: int, n_epochs: int, vf_coef: float,
                   normalize_advantage: bool, max_grad_norm: float | None, linear_decay: bool,
                   env: Any, seed: int | None, activation: str = "relu",
                   ortho_init: bool = False) -> tuple[list[np.ndarray], list[np.ndarray]]:
        if not 0.0 < gamma <= 1.0:
            raise ValueError(f"PPO(gamma={gamma!r}): must be in (0, 1]")
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"PPO(lam={lam!r}): must be in [0, 1]")
        if clip <= 0:
            raise ValueError(f"PPO(clip={clip!r}): must be > 0")
        for name, value in (("n_envs", n_envs), ("n_epochs", n_epochs), ("n_steps", n_steps or 1)):
            if int(value) <= 0:
                raise ValueError(f"PPO({name}={value!r}): must be a positive integer")
        if activation not in ACTIVATIONS:
            raise ValueError(f"PPO(activation={activation!r}): use one of {ACTIVATIONS}")
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
        self.env = discrete_env("PPO", env)
        self.PPO = self.n_steps is None  # replay mode scores PR items by TD and ratio
        self._initial_lrs: list[float] | None = None
        self.ortho_init = bool(ortho_init)
        return self.initial_weights(seed)

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

    # -- acting ------------------------------------------------------------------------------
    def numpy_actor(self) -> LiveActor:
        old = self.n_steps is None
        return LiveActor(self, lambda: self.actor_weights(old=old), "softmax", self.activation)

    def worker_actor(self) -> MLPActor:
        return MLPActor(self.actor_weights(old=self.n_steps is None), "softmax", self.activation)

    def worker_critic(self) -> MLPActor:
        return MLPActor(self.critic_weights(), "linear", self.activation)

    def _critic(self) -> LiveActor:
        critic = getattr(self, "_critic_actor", None)
        if critic is None:
            critic = self._critic_actor = LiveActor(self, self.critic_weights, "linear", self.activation)
        return critic

    def rollout_act(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Actions, their log-probabilities and state values for a batch of observations."""
        probs = self.act_output(obs)
        if self.policy is not None:
            actions = np.asarray(self.policy.act(probs, self.step_counter), dtype=np.int64)
        else:
            cdf = np.cumsum(probs, axis=1)
            u = self._sample_rng().random((len(probs), 1)) * cdf[:, -1:]
            actions = np.minimum((u > cdf).sum(axis=1), probs.shape[1] - 1).astype(np.int64)
        logp = np.log(probs[np.arange(len(actions)), actions] + 1e-12).astype(np.float32)
        return actions, logp, self.rollout_values(obs)

    def _sample_rng(self) -> np.random.Generator:
        rng = getattr(self, "_rng", None)
        if rng is None:
            rng = self._rng = np.random.default_rng(self.seed)
        return rng

    def rollout_values(self, obs: np.ndarray) -> np.ndarray:
        return self._critic()(obs)[:, 0].astype(np.float32)

    def on_rollout_start(self, progress_remaining: float) -> None:
        """Linear decay of learning rate(s) and clip range (rl-zoo's ``lin_`` schedules)."""
        if not self.linear_decay:
            return
        opts = self.optimizer if isinstance(self.optimizer, (list, tuple)) else [self.optimizer]
        if self._initial_lrs is None:
            self._initial_lrs = [self.backend.get_hparam(o, "lr") or 0.0 for o in opts]
        for opt, lr in zip(opts, self._initial_lrs):
            self.backend.set_hparam(opt, "lr", lr * progress_remaining)
        self.backend.assign(self.clip, self.clip_init * progress_remaining)

    def extra_state(self) -> dict[str, Any]:
        return {"initial_lrs": self._initial_lrs}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        self._initial_lrs = state.get("initial_lrs")


def entropy_np(logits: np.ndarray) -> np.ndarray:
    """Entropy of the softmax of each row (used by tests as a reference)."""
    logp = log_softmax(logits)
    return -(np.exp(logp) * logp).sum(axis=-1)
