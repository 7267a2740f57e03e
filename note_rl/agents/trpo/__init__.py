"""TRPO (Schulman et al. 2015, https://arxiv.org/abs/1502.05477, with GAE: Schulman et al. 2016,
https://arxiv.org/abs/1506.02438), framework-free: the constructor, the natural-gradient policy step
(conjugate gradient and line search, in numpy) and the critic's update spec.  ``torch.py`` and
``keras.py`` put this over their backend's ``PPO.Rollout`` (its networks, Gaussian / categorical policy and
rollouts) and give the surrogate, the KL and the value loss.

Per rollout of ``n_steps`` x ``n_envs`` steps collected with ``pi_old = pi_theta_old``::

    A        = GAE(gamma, lam) over the rollout, normalised (mean 0, std 1) over the whole rollout
    L(theta) = mean(pi_theta(a|s) / pi_old(a|s) * A)                 # the surrogate, L(theta_old) = mean(A)
    KL(theta) = mean_s KL(pi_old(.|s) || pi_theta(.|s))
    g  = grad L(theta_old)
    F v = (Hessian of KL at theta_old) v + cg_damping * v              # Fisher-vector product
    x  = F^-1 g by cg_max_steps of conjugate gradient
    full_step = sqrt(2 * target_kl / (x . F x)) * x                  # the step whose quadratic KL is target_kl
    for i in 0 .. line_search_max_iter - 1:                            # backtracking line search
        theta = theta_old + line_search_shrinking_factor**i * full_step
        if L(theta) > L(theta_old) and KL(theta) <= target_kl: accept theta; stop
    else: theta = theta_old                                            # no step this rollout
    critic: n_critic_updates passes of mini-batches of ``batch`` (128) over the rollout, one Adam step
            each on mean((V(s) - (A_unnormalised + V_old(s)))**2)

The algebra (conjugate gradient, step size, line search) is numpy here; the backend supplies the
calculus on its own tensors (:meth:`~note_rl.backends.base.Backend.loss_gradient`,
:meth:`~note_rl.backends.base.Backend.hessian_vector_product`, ``loss_values``, ``get_flat`` /
``set_flat``), so both backends run the same algorithm.  The policy step runs once per rollout before
the critic's mini-batches (``policy_step``, called by the rollout collector); the critic is the update
spec's one term, stepped by the optimizer given to ``train()`` (Adam, lr 1e-3, as sb3-contrib).
Defaults are sb3-contrib's ``TRPO``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ...buffers import RolloutBatch
from ...update import LossTerm, ParamGroup, UpdateSpec

__all__ = ["TRPOMixin", "conjugate_gradient", "line_search", "gaussian_kl_np"]


def conjugate_gradient(matvec: Callable[[np.ndarray], np.ndarray], b: np.ndarray, max_steps: int,
                       residual_tol: float = 1e-10) -> np.ndarray:
    """Approximately solve ``A x = b`` for a symmetric positive-definite ``A`` given as ``matvec``
    (Hestenes and Stiefel), starting from ``x = 0``, for at most ``max_steps`` steps or until the
    squared residual is below ``residual_tol``."""
    b = np.asarray(b, np.float64)
    x = np.zeros_like(b)
    r = b.copy()  # residual b - A x
    p = r.copy()  # search direction
    rr = float(r @ r)
    for _ in range(int(max_steps)):
        if rr < residual_tol:
            break
        ap = np.asarray(matvec(p), np.float64)
        alpha = rr / float(p @ ap)
        x += alpha * p
        r -= alpha * ap
        rr_new = float(r @ r)
        p = r + (rr_new / rr) * p
        rr = rr_new
    return x


def line_search(evaluate: Callable[[np.ndarray], tuple[float, float]], theta_old: np.ndarray,
                full_step: np.ndarray, surrogate_old: float, max_kl: float, shrink: float,
                max_iter: int) -> tuple[np.ndarray, int, float, float]:
    """Backtracking line search: the first ``theta_old + shrink**i * full_step`` (``i < max_iter``)
    whose surrogate beats ``surrogate_old`` with its KL at most ``max_kl``; ``evaluate(theta)`` returns
    ``(surrogate, kl)``.  Returns ``(theta, i, surrogate, kl)``; ``i = -1`` and ``theta_old`` when no
    step is accepted (``surrogate``, ``kl`` then those of the last step tried)."""
    surrogate, kl = surrogate_old, 0.0
    for i in range(int(max_iter)):
        theta = theta_old + shrink ** i * full_step
        surrogate, kl = evaluate(theta)
        if np.isfinite(surrogate) and np.isfinite(kl) and surrogate > surrogate_old and kl <= max_kl:
            return theta, i, surrogate, kl
    return theta_old, -1, surrogate, kl


class TRPOMixin:
    """TRPO's constructor and update over a backend's PPO on rollouts (``class TRPO(TRPOMixin, PPO.Rollout)``): a
    softmax (``Discrete``) or state-independent diagonal Gaussian (``Box``) policy trained by the
    natural-gradient step above, and a value critic trained by the optimizer given to ``train()``.
    Defaults are sb3-contrib's ``TRPO`` (its ``MlpPolicy``: [64, 64] tanh, orthogonal init).

    :param state_dim: observation size
    :param hidden_size: hidden units (int or list), policy and critic alike
    :param action_dim: number of discrete actions, or the size of a Box action
    :param gamma: discount
    :param lam: GAE lambda
    :param n_steps: rollout length per env
    :param n_envs: vectorised envs
    :param n_critic_updates: passes of critic mini-batches over each rollout (mini-batch size:
        ``set(batch=...)``, 128 unless set)
    :param target_kl: the trust region: largest mean KL(pi_old || pi) of an accepted step
    :param cg_max_steps: conjugate-gradient steps for ``F^-1 g``
    :param cg_damping: ``F + cg_damping * I`` is what conjugate gradient inverts
    :param line_search_shrinking_factor: each backtracking step multiplies the step by this
    :param line_search_max_iter: steps tried before giving up on the rollout's policy step
    :param normalize_advantage: normalise the advantages over the rollout
    :param env: env instance or gymnasium id (default ``CartPole-v1``)
    :param seed: as :class:`note_rl.agents.ppo.PPOMixin`
    :param activation: hidden activation, ``"tanh"`` or ``"relu"``
    :param ortho_init: SB3's orthogonal initialisation
    :param log_std_init: starting log standard deviation of the Gaussian policy (Box actions)
    :param device: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``
    :param network: as :class:`note_rl.agents.ppo.PPOMixin` (``None``: the MLPs of ``hidden_size``)
    """

    #: critic mini-batch when ``set(batch=...)`` gave none (sb3-contrib's ``batch_size``)
    default_batch = 128

    def __init__(self, state_dim: int | None = None, hidden_size: int | Sequence[int] | None = None,
                 action_dim: int | None = None,
                 gamma: float = 0.99, lam: float = 0.95, n_steps: int = 2048, n_envs: int = 1,
                 n_critic_updates: int = 10, target_kl: float = 0.01, cg_max_steps: int = 15,
                 cg_damping: float = 0.1, line_search_shrinking_factor: float = 0.8,
                 line_search_max_iter: int = 10, normalize_advantage: bool = True, env: Any = None,
                 seed: int | None = None, activation: str = "tanh", ortho_init: bool = True,
                 log_std_init: float = 0.0, device: str | None = "auto", network: Any = None) -> None:
        name = type(self).__name__
        if not n_steps:
            raise ValueError(f"{name}(n_steps={n_steps!r}): TRPO trains on rollouts; give their length")
        if not (isinstance(target_kl, (int, float)) and np.isfinite(target_kl) and target_kl > 0):
            raise ValueError(f"{name}(target_kl={target_kl!r}): must be a finite number > 0")
        if not (isinstance(cg_damping, (int, float)) and np.isfinite(cg_damping) and cg_damping >= 0):
            raise ValueError(f"{name}(cg_damping={cg_damping!r}): must be a finite number >= 0")
        if not 0.0 < line_search_shrinking_factor < 1.0:
            raise ValueError(f"{name}(line_search_shrinking_factor={line_search_shrinking_factor!r}): "
                             "must be in (0, 1)")
        for arg, value in (("cg_max_steps", cg_max_steps), ("line_search_max_iter", line_search_max_iter),
                           ("n_critic_updates", n_critic_updates)):
            if int(value) != value or int(value) <= 0:
                raise ValueError(f"{name}({arg}={value!r}): must be a positive integer")
        self.target_kl = float(target_kl)
        self.cg_max_steps = int(cg_max_steps)
        self.cg_damping = float(cg_damping)
        self.line_search_shrinking_factor = float(line_search_shrinking_factor)
        self.line_search_max_iter = int(line_search_max_iter)
        self.n_critic_updates = int(n_critic_updates)
        #: what the last policy step did: ``kl``, ``surrogate_gain``, ``line_search_iter`` (-1: rejected)
        self.last_policy_step: dict[str, float] = {}
        super().__init__(state_dim, hidden_size, action_dim, gamma=gamma, lam=lam, n_steps=n_steps,  # type: ignore[call-arg]
                         n_envs=n_envs, n_epochs=n_critic_updates, entropy_coef=0.0, vf_coef=1.0,
                         normalize_advantage=normalize_advantage, max_grad_norm=None, linear_decay=False,
                         env=env, seed=seed, activation=activation, ortho_init=ortho_init,
                         log_std_init=log_std_init, device=device, network=network)
        if self.batch is None:
            self.batch = self.default_batch

    def distributed_training(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: replicas would each take their own natural-gradient step on their own rollout
        (the step is no optimizer step, so no gradient averaging keeps them equal)."""
        raise ValueError(f"{type(self).__name__}: distributed_training is not supported (each replica's "
                         "natural-gradient step would move its own policy); train it with train()")

    # -- the update ------------------------------------------------------------------------------
    def update_spec(self) -> UpdateSpec:
        """The critic alone: ``n_critic_updates`` passes of mini-batches of its value loss (the
        policy moves only in :meth:`policy_step`, outside any optimizer)."""
        return UpdateSpec(groups=[ParamGroup("critic", self.param[1])],
                          terms=[LossTerm(self.critic_loss, ["critic"], name="critic")])

    def policy_step(self, batch: RolloutBatch) -> dict[str, float]:
        """One natural-gradient step of the policy on the whole rollout (the module's pseudocode)."""
        backend, params = self.backend, self.param[0]
        old_out = self.policy_output(batch.state)  # pi_old's logits or means, fixed for this step
        old_log_std = self.log_std_weights() if self.continuous else np.zeros(1, np.float32)
        surrogate_args = [batch.state, batch.action, batch.log_prob, batch.advantage]
        kl_args = [batch.state, old_out, old_log_std]

        theta_old = backend.get_flat(params)
        surrogate_old, g = backend.loss_gradient(self.surrogate, params, surrogate_args)

        def fisher_vector(v: np.ndarray) -> np.ndarray:  # at theta_old: the parameters do not move here
            return backend.hessian_vector_product(self.kl, params, kl_args, v) + self.cg_damping * v

        x = conjugate_gradient(fisher_vector, g, self.cg_max_steps)
        xfx = float(x @ fisher_vector(x))
        info = {"kl": 0.0, "surrogate_gain": 0.0, "line_search_iter": -1.0}
        if np.isfinite(xfx) and xfx > 0.0:
            full_step = np.sqrt(2.0 * self.target_kl / xfx) * x

            def evaluate(theta: np.ndarray) -> tuple[float, float]:
                backend.set_flat(params, theta)
                return (backend.loss_values(self.surrogate, params, surrogate_args)["loss"],
                        backend.loss_values(self.kl, params, kl_args)["loss"])

            theta, i, surrogate, kl = line_search(evaluate, theta_old, full_step, surrogate_old, self.target_kl,
                                                  self.line_search_shrinking_factor, self.line_search_max_iter)
            backend.set_flat(params, theta)
            if i >= 0:
                info = {"kl": kl, "surrogate_gain": surrogate - surrogate_old, "line_search_iter": float(i)}
        self._actor = None  # the numpy actor re-reads the new policy
        self.last_policy_step = info
        return info

    # per backend: pi's output (logits or Gaussian means) on states, as numpy; the surrogate
    # mean(exp(log pi(a|s) - logp_old) * A); the mean KL(pi_old || pi) from pi_old's outputs; the value loss
    def policy_output(self, s: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def surrogate(self, s: Any, a: Any, logp_old: Any, adv: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    def kl(self, s: Any, old_out: Any, old_log_std: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    def critic_loss(self, s: Any, a: Any, logp_old: Any, adv: Any, ret: Any) -> Any:  # pragma: no cover
        raise NotImplementedError


def gaussian_kl_np(mean_old: np.ndarray, log_std_old: np.ndarray, mean: np.ndarray,
                   log_std: np.ndarray) -> np.ndarray:
    """KL(N(mean_old, std_old) || N(mean, std)) of diagonal Gaussians, summed over the last axis
    (a numpy reference for the tests)."""
    var_old, var = np.exp(2 * log_std_old), np.exp(2 * log_std)
    return (log_std - log_std_old + (var_old + (mean_old - mean) ** 2) / (2 * var) - 0.5).sum(-1)
