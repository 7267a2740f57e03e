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

With ``use_sde=True`` the policy explores with generalized state-dependent exploration (gSDE, Raffin
et al. 2022, https://jmlr.org/papers/v23/21-0360.html) instead of a fresh Gaussian draw per step::

    z = phi(s)                         # the actor's last hidden layer, held constant for the noise
    mu = clip(W z + b, -2, 2)          # the mean, kept where tanh does not saturate (SB3's clip_mean)
    E ~ N(0, exp(log_std)**2)          # a (len(z), action_dim) matrix, log_std a learned parameter
    u = mu + z E,   a = tanh(u)        # sigma(s)**2 = z**2 exp(log_std)**2 per action dimension
    log pi(a|s) = log N(u; mu, sigma(s)**2 + 1e-6) - sum log(1 - a**2 + 1e-6)

While acting, ``E`` is held for ``sde_sample_freq`` env steps (-1: one training round, ``train_freq``
steps, as SB3 draws it once per rollout), so the action is a smooth function of the state over that
stretch (the exploration that solves MountainCarContinuous in rl-zoo3's preset).  Each loss that samples
the policy draws its own ``E`` for the whole batch (SB3 draws one per gradient step) and
differentiates through it (the reparameterisation reaches ``log_std``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...core.runners import SDE_EPS
from ...core.runners import sde_log_prob as _gaussian_sde_log_prob
from ...update import LossTerm, ParamGroup, TargetUpdate, UpdateSpec
from ..common import LiveActor, SeededInit, check_args, check_sde, hidden_sizes, init_mlp, with_features
from ..common.box import BoxActions

__all__ = ["SACMixin", "LOG_STD_MIN", "LOG_STD_MAX", "SDE_CLIP_MEAN", "SDE_EPS", "squashed_log_prob",
           "sde_log_prob"]

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # SB3's clip of the actor's log standard deviation
SDE_CLIP_MEAN = 2.0  # gSDE: the mean is clipped to [-2, 2] before tanh (SB3's clip_mean)


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
    :param use_sde: explore with gSDE (see the module docstring) instead of independent Gaussian draws
    :param log_std_init: gSDE: the starting value of every entry of ``log_std`` (rl-zoo3's
        MountainCarContinuous preset: -3.67, a small noise that a smooth policy amplifies)
    :param sde_sample_freq: gSDE: env steps between two exploration matrices while acting (-1: one
        per training round of ``train_freq`` steps)
    :param env, seed, activation, device, lr: as :class:`note_rl.agents.td3.TD3Mixin`

    Networks: an actor ``[state, *hidden, 2 * action]`` giving the mean and log standard deviation
    (clipped to ``[-20, 2]``) of a Gaussian squashed by ``tanh``; ``n_critics`` critics and their
    Polyak targets.  Losses: ``critic_loss = 0.5 * sum_i mean((Q_i(s, a) - y)**2)``, ``y = r + gamma
    * (1 - d) * (min_i Q'_i(s', a') - alpha * log pi(a'|s'))`` with ``a' ~ pi(s')``; ``actor_loss =
    mean(alpha * log pi(a|s) - min_i Q_i(s, a))`` with ``a ~ pi(s)`` (reparameterised); ``alpha_loss =
    -mean(log_alpha * (log pi(a|s) + target_entropy))``, on the same sample ``a`` (``policy_losses``)
    and with the temperature of before this update, as in SB3.  With ``use_sde`` the actor is
    ``[state, *hidden, action]`` (the mean) plus the ``(hidden[-1], action)`` parameter
    ``sde_log_std`` in the actor's group; its output while acting is ``[mean, z]`` (the mean before
    its clip, then the last hidden layer), from which the numpy side draws the action.
    """

    def __init__(self, state_dim: int | None = None, hidden_size: int | Sequence[int] = (256, 256),
                 action_dim: int | None = None, gamma: float = 0.99, tau: float = 0.005,
                 ent_coef: float | str = "auto", target_entropy: float | str = "auto", n_critics: int = 2,
                 target_update_interval: int = 1, env: Any = None, seed: int | None = None,
                 activation: str = "relu", device: str | None = "auto", lr: float | None = None,
                 use_sde: bool = False, log_std_init: float = -3.0, sde_sample_freq: int = -1) -> None:
        super().__init__()  # the backend's base class (RL_pytorch / RL)
        self.device = self.backend.resolve_device(device)
        self._setup_sde(use_sde, log_std_init, sde_sample_freq)
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

    def _setup_sde(self, use_sde: bool, log_std_init: float, sde_sample_freq: int) -> None:
        name = type(self).__name__
        check_args(name, numbers={"log_std_init": log_std_init})
        self.use_sde, self.sde_sample_freq = check_sde(name, use_sde, sde_sample_freq)
        self.log_std_init = float(log_std_init)
        self._sde_matrices: dict[int, tuple[int, np.ndarray]] = {}  # env copy -> (period, matrix)

    def initial_weights(self, seed: int | None) -> tuple[list[np.ndarray], ...]:
        """``(actor, critic_1, ..., critic_n)`` drawn from ``seed``; targets start as copies (the
        actor outputs the mean and log std, or with ``use_sde`` the mean only)."""
        rng = np.random.default_rng(seed)
        heads = self.action_dim if self.use_sde else 2 * self.action_dim
        actor = init_mlp([self.state_dim, *self.hidden, heads], rng)
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

    def read_sde_log_std(self) -> np.ndarray:  # pragma: no cover - per backend
        """gSDE: the current ``log_std`` parameter as a numpy array."""
        raise NotImplementedError

    def numpy_actor(self) -> LiveActor:
        return LiveActor(self, self.acting_weights, "linear", self.activation)

    def acting_weights(self) -> list[np.ndarray]:
        """The numpy actor's weights.  With gSDE its output must also carry the last hidden layer
        ``z``, which the noise ``z E`` needs: the output layer is widened by an identity block, so one
        MLP pass gives ``[mean, z]`` (``z @ I + 0`` is ``z`` exactly)."""
        weights = self.actor_weights()
        return with_features(weights) if self.use_sde else weights

    def sample_action(self, output: np.ndarray, copy: int = 0) -> np.ndarray:
        if self.use_sde:
            mean, z = self.sde_split(output)
            return np.tanh(mean + z @ self.exploration_matrix(copy)).astype(np.float32)
        mean, log_std = np.split(output, 2, axis=-1)
        std = np.exp(np.clip(log_std, LOG_STD_MIN, LOG_STD_MAX))
        return np.tanh(mean + std * self._action_generator().standard_normal(mean.shape)).astype(np.float32)

    def greedy_action(self, output: np.ndarray) -> np.ndarray:
        if self.use_sde:
            return np.tanh(self.sde_split(output)[0])
        return np.tanh(np.split(np.asarray(output), 2, axis=-1)[0])

    def sde_split(self, output: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """gSDE: ``(clip(mean, -2, 2), z)`` from an acting output ``[mean, z]``."""
        output = np.asarray(output, dtype=np.float32)
        a = self.action_dim
        return np.clip(output[..., :a], -SDE_CLIP_MEAN, SDE_CLIP_MEAN), output[..., a:]

    def exploration_matrix(self, copy: int = 0) -> np.ndarray:
        """gSDE: the matrix ``E`` env copy ``copy`` acts with, drawn from ``N(0, exp(log_std)**2)``
        with the agent's action generator; a new one once every ``sde_sample_freq`` env steps (-1:
        every training round of ``train_freq`` steps)."""
        period = self.sde_sample_freq if self.sde_sample_freq > 0 else max(int(self.train_freq or 1), 1)
        tick = int(self.step_counter) // period
        held = self._sde_matrices.get(copy)
        if held is None or held[0] != tick:
            std = np.exp(self.read_sde_log_std().astype(np.float64))
            held = (tick, (std * self._action_generator().standard_normal(std.shape)).astype(np.float32))
            self._sde_matrices[copy] = held
        return held[1]

    def apply_seed(self, seed: int) -> None:
        super().apply_seed(seed)
        self._sde_matrices = {}  # redrawn from the new seed


def squashed_log_prob(u: np.ndarray, mean: np.ndarray, log_std: np.ndarray) -> np.ndarray:
    """``log pi(tanh(u))`` of the squashed Gaussian (numpy reference for the tests): the Gaussian's
    log density of ``u`` minus ``sum log(1 - tanh(u)**2 + 1e-6)``."""
    std = np.exp(log_std)
    gauss = -0.5 * ((u - mean) / std) ** 2 - log_std - 0.5 * np.log(2 * np.pi)
    return (gauss - np.log(1 - np.tanh(u) ** 2 + 1e-6)).sum(axis=-1)


def sde_log_prob(u: np.ndarray, mean: np.ndarray, z: np.ndarray, log_std: np.ndarray) -> np.ndarray:
    """gSDE's ``log pi(tanh(u))`` (numpy reference for the tests): ``u ~ N(mean, z**2 @ exp(log_std)**2
    + 1e-6)`` per action dimension, then the ``tanh`` correction."""
    return _gaussian_sde_log_prob(u, mean, z, log_std) - np.log(1 - np.tanh(u) ** 2 + 1e-6).sum(axis=-1)
