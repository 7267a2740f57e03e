"""On-policy rollout storage and generalized advantage estimation.

GAE: Schulman et al. 2015, https://arxiv.org/abs/1506.02438.  For each step
``delta_t = r_t + gamma * V_next_t * (1 - terminated_t) - V_t`` and
``A_t = delta_t + gamma * lam * (1 - episode_end_t) * A_{t+1}``, where ``V_next_t`` is the value of
the state actually reached (the final observation when an episode was truncated, so time limits
bootstrap instead of counting as failures).  Returns for the value loss are ``A_t + V_t``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["compute_gae", "RolloutBatch", "rollout_minibatches"]


def compute_gae(
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    terminated: np.ndarray,
    episode_end: np.ndarray,
    gamma: float,
    lam: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and returns for arrays of shape ``(T, n_envs)`` (or ``(T,)``).

    :param rewards: ``r_t``
    :param values: ``V(s_t)``
    :param next_values: ``V`` of the state reached after step ``t``
    :param terminated: true terminal flags (no bootstrap)
    :param episode_end: terminated or truncated (the recursion stops there)
    :param gamma: discount
    :param lam: GAE lambda
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    not_term = 1.0 - np.asarray(terminated, dtype=np.float64)
    not_end = 1.0 - np.asarray(episode_end, dtype=np.float64)
    deltas = rewards + gamma * np.asarray(next_values) * not_term - np.asarray(values)
    adv = np.zeros_like(rewards)
    last = np.zeros_like(rewards[0])
    for t in range(len(rewards) - 1, -1, -1):
        last = deltas[t] + gamma * lam * not_end[t] * last
        adv[t] = last
    return adv.astype(np.float32), (adv + values).astype(np.float32)


class RolloutBatch(NamedTuple):
    """A PPO mini-batch: states, actions, behaviour log-probs, advantages, returns."""

    state: np.ndarray
    action: np.ndarray
    log_prob: np.ndarray
    advantage: np.ndarray
    returns: np.ndarray


def rollout_minibatches(fields: dict[str, np.ndarray], batch: int, rng: np.random.Generator | None,
                        normalize_advantage: bool = False) -> list[RolloutBatch]:
    """One shuffled pass over a ``(T, n_envs)`` rollout (with ``advantage`` and ``returns``
    computed) in mini-batches of ``batch`` samples (``rng=None``: in rollout order).
    ``normalize_advantage`` standardises the advantages of each mini-batch (unbiased std, as SB3),
    here in numpy rather than in the loss."""
    names = ("state", "action", "log_prob", "advantage", "returns")
    n = fields["reward"].size
    flat = {k: fields[k].reshape(n, *fields[k].shape[2:]) for k in names}
    order = np.arange(n) if rng is None else rng.permutation(n)
    out = []
    for i in range(0, n, batch):
        mb = {k: flat[k][order[i:i + batch]] for k in names}
        adv = mb["advantage"]
        if normalize_advantage and len(adv) > 1:
            mb["advantage"] = ((adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)).astype(np.float32)
        out.append(RolloutBatch(**mb))
    return out
