"""SAC (Haarnoja et al. 2018, https://arxiv.org/abs/1812.05905), framework-free: arguments, initial
weights, the update spec, numpy acting; ``torch.py`` and ``keras.py`` hold its networks and losses.

Per update, on a batch ``(s, a, r, s', d)`` from the replay buffer (actions in ``[-1, 1]``, see
:mod:`note_rl.agents.common.box`)::

    a' ~ pi(s')                                                  # squashed Gaussian
    y  = r + gamma * (1 - d) * (min_i Q'_i(s', a') - alpha * log pi(a'|s'))
    critic step on  0.5 * sum_i mean((Q_i(s, a) - y)**2)
    a~ ~ pi(s) (reparameterised)
    actor step on   mean(alpha * log pi(a~|s) - min_i Q_i(s, a~))
    alpha step on   -mean(log_alpha * (log pi(a~|s) + target_entropy))   # ent_coef="auto"
    every target_update_interval updates:  Q'_i <- (1 - tau) Q'_i + tau Q_i
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...update import LossTerm, ParamGroup, TargetUpdate, UpdateSpec
from ..common import LiveActor, SeededInit, check_args, hidden_sizes, init_mlp
from ..common.box import BoxActions

__all__ = ["SACMixin", "LOG_STD_MIN", "LOG_STD_MAX", "squashed_log_prob"]

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # SB3's clip of the actor's log standard deviation


class SACMixin(BoxActions, SeededInit):
    """SAC with automatic entropy temperature; defaults are SB3's.  Shared by the SAC classes of
    both backends (see the module docstring); a backend's class adds ``_build_networks``, the
    squashed-Gaussian sample and the losses.

    :param state_dim: observation size (default: from ``env``)
    :param hidden_size: hidden units of every network (SB3's ``[256, 256]``)
    :param action_dim: action size (default: from ``env``)
    :param gamma: discount
    :param tau: Polyak rate of the target critics
    :param ent_coef: the temperature ``alpha``: a number (fixed), ``"auto"`` (learned from 1.0) or
        ``"auto_0.1"`` (learned from 0.1)
    :param target_entropy: ``"auto"`` (``-action_dim``) or a number
    :param n_critics: critics (the target is their minimum)
    :param target_update_interval: gradient updates between two target updates
    :param env, seed, activation, device, lr: as :class:`note_rl.agents.td3.TD3Mixin`

    Networks: an actor ``[state, *hidden, 2 * action]`` giving the mean and log standard deviation
    (clipped to ``[-20, 2]``) of a Gaussian squashed by ``tanh``; ``n_critics`` critics and their
    Polyak targets.  Losses: ``critic_loss = 0.5 * sum_i mean((Q_i(s, a) - y)**2)``, ``y = r + gamma
    * (1 - d) * (min_i Q'_i(s', a') - alpha * log pi(a'|s'))`` with ``a' ~ pi(s')``; ``actor_loss =
    mean(alpha * log pi(a|s) - min_i Q_i(s, a))`` with ``a ~ pi(s)`` (reparameterised); ``alpha_loss =
    -mean(log_alpha * (log pi(a|s) + target_entropy))``, on the same sample ``a`` (``policy_losses``)
    and with the temperature of before this update, as in SB3.
    """

    def __init__(self, state_dim: int | None = None, hidden_size: int | Sequence[int] = (256, 256),
                 action_dim: int | None = None, gamma: float = 0.99, tau: float = 0.005,
                 ent_coef: float | str = "auto", target_entropy: float | str = "auto", n_critics: int = 2,
                 target_update_interval: int = 1, env: Any = None, seed: int | None = None,
                 activation: str = "relu", device: str | None = "auto", lr: float | None = None) -> None:
        super().__init__()  # the backend's base class (RL_pytorch / RL)
        self.device = self.backend.resolve_device(device)
        actor, *critics = self._setup_sac(state_dim, hidden_size, action_dim, gamma, tau, ent_coef,
                                          target_entropy, n_critics, target_update_interval, env, seed, activation)
        self.lr = lr
        self._build_networks(actor, critics, activation)
        self._finish_init(gamma, seed)

    def _build_networks(self, actor: list[np.ndarray], critics: list[list[np.ndarray]],
                        activation: str) -> None:  # pragma: no cover - per backend
        """``actor``, the critics and their targets, ``log_alpha`` and ``self.param`` (actor,
        critics, plus the temperature with ``ent_coef="auto"``)."""
        raise NotImplementedError

    def _setup_sac(self, state_dim: int | None, hidden_size: int | Sequence[int], action_dim: int | None,
                   gamma: float, tau: float, ent_coef: float | str, target_entropy: float | str,
                   n_critics: int, target_update_interval: int, env: Any, seed: int | None,
                   activation: str) -> tuple[list[np.ndarray], ...]:
        name = type(self).__name__
        check_args(name, gamma=gamma, tau=tau, activation=activation,
                   numbers={"ent_coef": ent_coef, "target_entropy": target_entropy})
        self.state_dim, self.action_dim = self._setup_box(env, state_dim, action_dim)
        auto = isinstance(ent_coef, str)
        if auto and not ent_coef.startswith("auto"):
            raise ValueError(f"{name}(ent_coef={ent_coef!r}): a number, 'auto' or 'auto_<initial value>'")
        init = float(ent_coef.partition("_")[2] or 1.0) if auto else float(ent_coef)
        if init <= 0:
            raise ValueError(f"{name}(ent_coef={ent_coef!r}): the temperature must be > 0")
        self.auto_alpha, self.alpha_init = auto, init
        self.target_entropy = -float(self.action_dim) if target_entropy == "auto" else float(target_entropy)
        self.hidden = hidden_sizes(hidden_size)
        self.activation = activation
        self.tau, self.n_critics = float(tau), int(n_critics)
        self.target_update_interval = int(target_update_interval)
        if self.n_critics < 1 or self.target_update_interval < 1:
            raise ValueError(f"{name}: n_critics and target_update_interval must be >= 1")
        return self.initial_weights(seed)

    def initial_weights(self, seed: int | None) -> tuple[list[np.ndarray], ...]:
        """``(actor, critic_1, ..., critic_n)`` drawn from ``seed``; targets start as copies."""
        rng = np.random.default_rng(seed)
        actor = init_mlp([self.state_dim, *self.hidden, 2 * self.action_dim], rng)
        critics = [init_mlp([self.state_dim + self.action_dim, *self.hidden, 1], rng) for _ in range(self.n_critics)]
        return (actor, *critics)

    def update_spec(self) -> UpdateSpec:
        groups = [ParamGroup("actor", self.param[0]), ParamGroup("critic", self.param[1])]  # self.param order
        terms = [LossTerm(self.critic_loss, ["critic"]), LossTerm(self.actor_loss, ["actor"])]
        if self.auto_alpha:
            groups.append(ParamGroup("alpha", self.param[2]))
            # one squashed-Gaussian sample serves the actor's and the temperature's losses (as in
            # SB3): a separate temperature term would run the actor a third time per update
            terms[1] = LossTerm(self.policy_losses, ["actor", "alpha"])
        return UpdateSpec(groups, terms, [TargetUpdate(self.critic_targets, self.critics, self.tau,
                                                       every=self.target_update_interval)])

    def policy_losses(self, s: Any, a: Any, next_s: Any, r: Any, d: Any) -> dict[str, Any]:
        """``{"actor": actor_loss, "alpha": alpha_loss}`` from one sample of the policy at ``s`` (the
        temperature's gradient reaches ``log_alpha`` only; the actor's reaches the actor only)."""
        actor, logp = self._actor_terms(s)
        return {"actor": actor, "alpha": self._alpha_from(logp)}

    def actor_loss(self, s: Any, a: Any, next_s: Any, r: Any, d: Any) -> Any:
        """The actor's loss alone (``policy_losses`` gives it with the temperature's)."""
        return self._actor_terms(s)[0]

    def alpha_loss(self, s: Any, a: Any, next_s: Any, r: Any, d: Any) -> Any:
        """The temperature's loss alone, on a fresh sample of the policy at ``s`` (no critic pass)."""
        return self._alpha_from(self._sample(s)[1])

    def _actor_terms(self, s: Any) -> tuple[Any, Any]:  # pragma: no cover - per backend
        """``(actor_loss, log pi(a|s))`` for a reparameterised sample ``a ~ pi(s)``."""
        raise NotImplementedError

    def _alpha_from(self, logp: Any) -> Any:  # pragma: no cover - per backend
        """``-mean(log_alpha * (logp + target_entropy))`` with ``logp`` held constant."""
        raise NotImplementedError

    # -- acting (numpy) ----------------------------------------------------------------------
    def actor_weights(self) -> list[np.ndarray]:  # pragma: no cover - per backend
        raise NotImplementedError

    def numpy_actor(self) -> LiveActor:
        return LiveActor(self, self.actor_weights, "linear", self.activation)

    def sample_action(self, output: np.ndarray) -> np.ndarray:
        mean, log_std = np.split(output, 2, axis=-1)
        std = np.exp(np.clip(log_std, LOG_STD_MIN, LOG_STD_MAX))
        return np.tanh(mean + std * self._action_generator().standard_normal(mean.shape)).astype(np.float32)

    def greedy_action(self, output: np.ndarray) -> np.ndarray:
        return np.tanh(np.split(np.asarray(output), 2, axis=-1)[0])


def squashed_log_prob(u: np.ndarray, mean: np.ndarray, log_std: np.ndarray) -> np.ndarray:
    """``log pi(tanh(u))`` of the squashed Gaussian (numpy reference for the tests): the Gaussian's
    log density of ``u`` minus ``sum log(1 - tanh(u)**2 + 1e-6)``."""
    std = np.exp(log_std)
    gauss = -0.5 * ((u - mean) / std) ** 2 - log_std - 0.5 * np.log(2 * np.pi)
    return (gauss - np.log(1 - np.tanh(u) ** 2 + 1e-6)).sum(axis=-1)
