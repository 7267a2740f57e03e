"""DDPG (Lillicrap et al. 2015, https://arxiv.org/abs/1509.02971), framework-free: TD3's update
(:mod:`note_rl.agents.td3`) with one critic, no target smoothing and no delay, as SB3 implements
it::

    y = r + gamma * (1 - d) * Q'(s', mu'(s'))
    critic step on  mean((Q(s, a) - y)**2);   actor step on  -mean(Q(s, mu(s)))
    Q' <- (1 - tau) Q' + tau Q;  mu' <- (1 - tau) mu' + tau mu

``torch.py`` and ``keras.py`` put this constructor over their backend's TD3.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..common import pool_form

__all__ = ["DDPGMixin", "ddpg_seed_order"]


class DDPGMixin:
    """DDPG's constructor over a backend's TD3 class (``class DDPG(DDPGMixin, TD3)``); the seeds'
    ``DDPG(hidden_size=128, tau=0.1, gamma=0.98, lr=0.005)`` works (dims from ``env``, default
    ``Pendulum-v1``), and so does Note_rl 001's positional ``DDPG(128, 0.1, 0.98, 0.005[, 7])``.
    Arguments as :class:`note_rl.agents.td3.TD3Mixin`, plus ``processes`` (pool-network workers)."""

    def __init__(self, state_dim: int | None = None, hidden_size: int | Sequence[int] = (400, 300),
                 action_dim: int | None = None, gamma: float = 0.99, tau: float = 0.005, env: Any = None,
                 seed: int | None = None, activation: str = "relu", device: str | None = "auto",
                 lr: float | None = None, processes: int | None = None) -> None:
        state_dim, hidden_size, action_dim, gamma, tau, lr, processes = ddpg_seed_order(
            state_dim, hidden_size, action_dim, gamma, tau, lr, processes)
        super().__init__(state_dim, hidden_size, action_dim, gamma, tau, policy_delay=1,  # type: ignore[call-arg]
                         target_policy_noise=0.0, target_noise_clip=0.0, n_critics=1, env=env, seed=seed,
                         activation=activation, device=device, lr=lr)
        self.processes = pool_form("DDPG", None, processes)[1]


def ddpg_seed_order(state_dim: Any, hidden_size: Any, action_dim: Any, gamma: Any, tau: Any,
                    lr: Any, processes: Any) -> tuple[Any, ...]:
    """Note_rl 001's positional DDPG, ``DDPG(128, 0.1, 0.98, 0.005[, 7])`` = ``(hidden_size, tau,
    gamma, lr[, processes])``, mapped to this signature.  It is recognised by a float in
    ``hidden_size``'s place (a layer size never is one); otherwise the arguments pass unchanged.
    Returns ``(state_dim, hidden_size, action_dim, gamma, tau, lr, processes)``."""
    if not isinstance(hidden_size, float):
        return state_dim, hidden_size, action_dim, gamma, tau, lr, processes
    seed_processes = tau if isinstance(tau, (int, np.integer)) and not isinstance(tau, bool) else None
    if lr is not None:
        raise ValueError(f"DDPG({state_dim!r}, {hidden_size!r}, ...): Note_rl's positional form "
                         "(hidden_size, tau, gamma, lr) and lr= given together")
    return None, state_dim, None, action_dim, hidden_size, gamma, processes or seed_processes
