"""Exploration policies for discrete actions (numpy only, seeded).

Each policy keeps the Note_rl ``select_action`` signature and adds one uniform entry point,
:meth:`Policy.act`, which the training loop calls with the network output and the global step
counter.  ``act`` accepts a single output vector (shape ``(n_actions,)``) or a batch of them
(shape ``(n_envs, n_actions)``), so vectorised collection draws all actions in one call.

Every policy owns a :class:`numpy.random.Generator`; ``seed(s)`` makes its draws reproducible and
``get_state``/``set_state`` let checkpoints resume the exact random stream.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "Policy",
    "SoftmaxPolicy",
    "EpsGreedyQPolicy",
    "GreedyQPolicy",
    "BoltzmannQPolicy",
    "MaxBoltzmannQPolicy",
    "BoltzmannGumbelQPolicy",
    "GumbelSoftmaxPolicy",
    "AdaptiveEpsGreedyPolicy",
    "LinearEpsGreedyPolicy",
]


class Policy:
    """Base class: a seeded random generator plus the uniform :meth:`act` hook."""

    #: attributes saved in checkpoints besides the random state (subclasses extend it)
    _state_keys: tuple[str, ...] = ()

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def seed(self, seed: int | None) -> None:
        """Restart the random stream from ``seed``."""
        self.rng = np.random.default_rng(seed)

    def act(self, output: np.ndarray, step_counter: int = 0) -> np.ndarray | int:
        """Choose an action (or one per row) from the network ``output``."""
        raise NotImplementedError

    def get_state(self) -> dict[str, Any]:
        """JSON-serialisable state: hyperparameters in ``_state_keys`` and the RNG state."""
        state = {k: _to_json(getattr(self, k)) for k in self._state_keys}
        state["rng"] = self.rng.bit_generator.state
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        for key in self._state_keys:
            if key in state:
                value = state[key]
                setattr(self, key, np.asarray(value) if isinstance(value, list) else value)
        self.rng.bit_generator.state = state["rng"]

    # -- helpers shared by subclasses -------------------------------------------------------
    def _rows(self, output: np.ndarray) -> tuple[np.ndarray, bool]:
        out = np.asarray(output, dtype=np.float64)
        if out.ndim == 1:
            return out[None, :], True
        if out.ndim == 2:
            return out, False
        raise ValueError(f"{type(self).__name__} expects a 1-D or 2-D output, got shape {out.shape}")

    def _sample_rows(self, probs: np.ndarray) -> np.ndarray:
        """Draw one index per row of a probability matrix (inverse-CDF, vectorised)."""
        cdf = np.cumsum(probs, axis=1)
        u = self.rng.random((probs.shape[0], 1)) * cdf[:, -1:]
        return np.minimum((u > cdf).sum(axis=1), probs.shape[1] - 1)

    def _eps_greedy(self, q: np.ndarray, eps: float) -> np.ndarray:
        greedy = q.argmax(axis=1)
        explore = self.rng.random(q.shape[0]) < eps
        if explore.any():
            greedy[explore] = self.rng.integers(0, q.shape[1], size=int(explore.sum()))
        return greedy


def _to_json(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _single(actions: np.ndarray, single: bool) -> np.ndarray | int:
    return int(actions[0]) if single else actions


def _softmax(x: np.ndarray) -> np.ndarray:
    z = x - x.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class SoftmaxPolicy(Policy):
    """Sample from the probabilities the network outputs (the network applies the softmax)."""

    def select_action(self, nb_actions: int, probs: np.ndarray) -> int:
        p = np.asarray(probs, dtype=np.float64).reshape(-1)[:nb_actions]
        return int(self._sample_rows(p[None, :] / p.sum())[0])

    def act(self, output: np.ndarray, step_counter: int = 0) -> np.ndarray | int:
        probs, single = self._rows(output)
        probs = probs / probs.sum(axis=1, keepdims=True)
        return _single(self._sample_rows(probs), single)


class EpsGreedyQPolicy(Policy):
    """With probability ``eps`` a uniform random action, otherwise ``argmax(q)``.

    :param eps: exploration probability (Note_rl default 0.1)
    :param epsilon: the same, under Note_rl 001's name (``EpsGreedyQPolicy(epsilon=0.01)``)
    """

    _state_keys = ("eps",)

    def __init__(self, eps: float = 0.1, seed: int | None = None, epsilon: float | None = None) -> None:
        super().__init__(seed)
        self.eps = eps if epsilon is None else epsilon

    def select_action(self, q_values: np.ndarray) -> int:
        q = np.asarray(q_values)
        assert q.ndim == 1
        return int(self._eps_greedy(q[None, :].astype(np.float64), self.eps)[0])

    def act(self, output: np.ndarray, step_counter: int = 0) -> np.ndarray | int:
        q, single = self._rows(output)
        return _single(self._eps_greedy(q, self.eps), single)


class AdaptiveEpsGreedyPolicy(EpsGreedyQPolicy):
    """Epsilon-greedy with ``eps = min_eps + (initial_eps - min_eps) * exp(-decay_rate * step)``."""

    _state_keys = ("eps", "initial_eps", "min_eps", "decay_rate")

    def __init__(
        self,
        initial_eps: float = 1.0,
        min_eps: float = 0.1,
        decay_rate: float = 1e-4,
        seed: int | None = None,
    ) -> None:
        super().__init__(initial_eps, seed)
        self.initial_eps = initial_eps
        self.min_eps = min_eps
        self.decay_rate = decay_rate

    def current_eps(self, step_counter: int) -> float:
        decay = np.exp(-self.decay_rate * step_counter)
        return float(self.min_eps + (self.initial_eps - self.min_eps) * decay)

    def select_action(self, q_values: np.ndarray, step_counter: int = 0) -> int:  # type: ignore[override]
        self.eps = self.current_eps(step_counter)
        return super().select_action(q_values)

    def act(self, output: np.ndarray, step_counter: int = 0) -> np.ndarray | int:
        self.eps = self.current_eps(step_counter)
        return super().act(output, step_counter)


class LinearEpsGreedyPolicy(EpsGreedyQPolicy):
    """Epsilon-greedy with ``eps`` decayed linearly from ``initial_eps`` to ``final_eps`` over
    ``decay_steps`` environment steps (the schedule of SB3/rl-zoo DQN).
    """

    _state_keys = ("eps", "initial_eps", "final_eps", "decay_steps")

    def __init__(
        self,
        initial_eps: float = 1.0,
        final_eps: float = 0.05,
        decay_steps: int = 10000,
        seed: int | None = None,
    ) -> None:
        super().__init__(initial_eps, seed)
        self.initial_eps = initial_eps
        self.final_eps = final_eps
        self.decay_steps = max(int(decay_steps), 1)

    def current_eps(self, step_counter: int) -> float:
        frac = min(step_counter / self.decay_steps, 1.0)
        return float(self.initial_eps + frac * (self.final_eps - self.initial_eps))

    def act(self, output: np.ndarray, step_counter: int = 0) -> np.ndarray | int:
        self.eps = self.current_eps(step_counter)
        return super().act(output, step_counter)


class GreedyQPolicy(Policy):
    """Always ``argmax(q)``."""

    def select_action(self, q_values: np.ndarray) -> int:
        return int(np.argmax(q_values))

    def act(self, output: np.ndarray, step_counter: int = 0) -> np.ndarray | int:
        q, single = self._rows(output)
        return _single(q.argmax(axis=1), single)


class BoltzmannQPolicy(Policy):
    """Sample ``a`` with probability proportional to ``exp(clip(q / tau))``.

    :param tau: temperature
    :param clip: bounds applied to ``q / tau`` before exponentiation (overflow guard)
    """

    _state_keys = ("tau",)

    def __init__(
        self, tau: float = 1.0, clip: tuple[float, float] = (-500.0, 500.0), seed: int | None = None
    ) -> None:
        super().__init__(seed)
        self.tau = tau
        self.clip = clip

    def _boltzmann(self, q: np.ndarray) -> np.ndarray:
        logits = np.clip(q / self.tau, self.clip[0], self.clip[1])
        return self._sample_rows(_softmax(logits))

    def select_action(self, q_values: np.ndarray) -> int:
        return int(self._boltzmann(np.asarray(q_values, dtype=np.float64)[None, :])[0])

    def act(self, output: np.ndarray, step_counter: int = 0) -> np.ndarray | int:
        q, single = self._rows(output)
        return _single(self._boltzmann(q), single)


class MaxBoltzmannQPolicy(BoltzmannQPolicy):
    """With probability ``eps`` a Boltzmann sample, otherwise greedy."""

    _state_keys = ("eps", "tau")

    def __init__(
        self,
        eps: float = 0.1,
        tau: float = 1.0,
        clip: tuple[float, float] = (-500.0, 500.0),
        seed: int | None = None,
    ) -> None:
        super().__init__(tau, clip, seed)
        self.eps = eps

    def _max_boltzmann(self, q: np.ndarray) -> np.ndarray:
        actions = q.argmax(axis=1)
        explore = self.rng.random(q.shape[0]) < self.eps
        if explore.any():
            actions[explore] = self._boltzmann(q[explore])
        return actions

    def select_action(self, q_values: np.ndarray) -> int:
        return int(self._max_boltzmann(np.asarray(q_values, dtype=np.float64)[None, :])[0])

    def act(self, output: np.ndarray, step_counter: int = 0) -> np.ndarray | int:
        q, single = self._rows(output)
        return _single(self._max_boltzmann(q), single)


class BoltzmannGumbelQPolicy(Policy):
    """Boltzmann-Gumbel exploration (Cesa-Bianchi et al. 2017, https://arxiv.org/abs/1705.10257).

    ``a = argmax(q + C / sqrt(N_a) * Gumbel(0, 1))`` where ``N_a`` counts how often ``a`` was taken;
    the counts restart when ``step_counter == 0``.

    :param C: exploration scale, must be positive
    """

    _state_keys = ("C", "action_counts")

    def __init__(self, C: float = 1.0, seed: int | None = None) -> None:
        assert C > 0, "BoltzmannGumbelQPolicy: C must be > 0"
        super().__init__(seed)
        self.C = C
        self.action_counts: np.ndarray | None = None

    def _bgq(self, q: np.ndarray, step_counter: int) -> np.ndarray:
        if step_counter == 0 or self.action_counts is None or len(self.action_counts) != q.shape[1]:
            self.action_counts = np.ones(q.shape[1])
        actions = np.empty(q.shape[0], dtype=np.int64)
        for i, row in enumerate(q):  # counts change after each draw, so rows are sequential
            beta = self.C / np.sqrt(self.action_counts)
            a = int(np.argmax(row + beta * self.rng.gumbel(size=row.shape)))
            self.action_counts[a] += 1
            actions[i] = a
        return actions

    def select_action(self, q_values: np.ndarray, step_counter: int = 0) -> int:
        return int(self._bgq(np.asarray(q_values, dtype=np.float64)[None, :], step_counter)[0])

    def act(self, output: np.ndarray, step_counter: int = 0) -> np.ndarray | int:
        q, single = self._rows(output)
        return _single(self._bgq(q, step_counter), single)


class GumbelSoftmaxPolicy(Policy):
    """Gumbel-softmax helpers (Jang et al. 2016, https://arxiv.org/abs/1611.01144).

    :meth:`act` samples ``argmax(logits + Gumbel)`` (an exact categorical sample); the helpers give
    the relaxed sample, the epsilon-randomised one-hot and the straight-through estimator value.

    :param temperature: softmax temperature of the relaxed sample
    :param eps: probability of a random one-hot in :meth:`onehot_from_logits`
    """

    _state_keys = ("temperature", "eps")

    def __init__(self, temperature: float = 1.0, eps: float = 0.01, seed: int | None = None) -> None:
        super().__init__(seed)
        self.temperature = temperature
        self.eps = eps

    def sample_gumbel(self, shape: tuple[int, ...], eps: float = 1e-20) -> np.ndarray:
        u = self.rng.random(shape)
        return -np.log(-np.log(u + eps) + eps)

    def gumbel_softmax_sample(self, logits: np.ndarray) -> np.ndarray:
        logits = np.atleast_2d(np.asarray(logits, dtype=np.float64))
        return _softmax((logits + self.sample_gumbel(logits.shape)) / self.temperature)

    def onehot_from_logits(self, logits: np.ndarray) -> np.ndarray:
        logits = np.atleast_2d(np.asarray(logits, dtype=np.float64))
        n, k = logits.shape
        onehot = np.eye(k)[logits.argmax(axis=1)]
        rand = self.rng.random(n) < self.eps
        if rand.any():
            onehot[rand] = np.eye(k)[self.rng.integers(0, k, size=int(rand.sum()))]
        return onehot

    def gumbel_softmax(self, logits: np.ndarray) -> np.ndarray:
        """Forward value of the straight-through estimator: the hard one-hot of a relaxed sample."""
        y = self.gumbel_softmax_sample(logits)
        y_hard = np.eye(y.shape[1])[y.argmax(axis=1)]
        return (y_hard - y) + y

    def act(self, output: np.ndarray, step_counter: int = 0) -> np.ndarray | int:
        logits, single = self._rows(output)
        return _single((logits + self.sample_gumbel(logits.shape)).argmax(axis=1), single)
