"""A2C (Mnih et al. 2016, https://arxiv.org/abs/1602.01783), framework-free: PPO on rollouts
(``PPO.Rollout``, :class:`note_rl.agents.ppo.RolloutMode`) with one gradient step per rollout on the
plain policy gradient::

    A = GAE(lam) over n_steps x n_envs steps (lam=1: the n-step return minus V(s))
    step on  -mean(log pi(a|s) * A) + vf_coef * mean((V(s) - V_target)**2) - entropy_coef * mean(H)

``torch.py`` and ``keras.py`` put this constructor over their backend's ``PPO.Rollout`` and give its
policy loss.
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = ["A2CMixin"]


class A2CMixin:
    """A2C's constructor over a backend's PPO on rollouts (``class A2C(A2CMixin, PPO.Rollout)``): SB3's defaults,
    rollouts required, one epoch; the backend class supplies ``policy_loss``.  Arguments as
    :class:`note_rl.agents.ppo.PPOMixin` without the clip range and epochs: one gradient step per
    rollout (give it ``note_rl.optim.RMSprop(lr=7e-4, rho=0.99, eps=1e-5)`` to match SB3)."""

    def __init__(self, state_dim: int | None = None, hidden_size: int | Sequence[int] | None = None,
                 action_dim: int | None = None,
                 gamma: float = 0.99, lam: float = 1.0, n_steps: int = 5, n_envs: int = 1,
                 entropy_coef: float = 0.0, vf_coef: float = 0.5, normalize_advantage: bool = False,
                 max_grad_norm: float | None = 0.5, linear_decay: bool = False, env: Any = None,
                 seed: int | None = None, activation: str = "tanh", ortho_init: bool = True,
                 log_std_init: float = 0.0, device: str | None = "auto", network: Any = None,
                 use_sde: bool = False, sde_sample_freq: int = -1) -> None:
        if not n_steps:
            raise ValueError(f"A2C(n_steps={n_steps!r}): A2C trains on rollouts; give their length")
        super().__init__(state_dim, hidden_size, action_dim, gamma=gamma, lam=lam, n_steps=n_steps,  # type: ignore[call-arg]
                         n_envs=n_envs, n_epochs=1, entropy_coef=entropy_coef, vf_coef=vf_coef,
                         normalize_advantage=normalize_advantage, max_grad_norm=max_grad_norm,
                         linear_decay=linear_decay, env=env, seed=seed, activation=activation,
                         ortho_init=ortho_init, log_std_init=log_std_init, device=device, network=network,
                         use_sde=use_sde, sde_sample_freq=sde_sample_freq)
