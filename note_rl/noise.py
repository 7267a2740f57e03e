"""Action noise for continuous control (numpy only, seeded).

``sigma`` can be annealed linearly from ``sigma`` to ``sigma_min`` over ``n_steps_annealing``
samples, as in Note_rl (and keras-rl before it):
``current_sigma = max(sigma_min, sigma - (sigma - sigma_min) * n_steps / n_steps_annealing)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["AnnealedGaussianProcess", "GaussianWhiteNoiseProcess", "OrnsteinUhlenbeckProcess"]


class AnnealedGaussianProcess:
    """Base class holding the linear ``sigma`` annealing and the random generator.

    :param mu: mean of the noise
    :param sigma: initial standard deviation
    :param sigma_min: final standard deviation; ``None`` disables annealing
    :param n_steps_annealing: number of samples over which ``sigma`` reaches ``sigma_min``
    :param seed: seed of the generator
    """

    def __init__(
        self,
        mu: float,
        sigma: float,
        sigma_min: float | None,
        n_steps_annealing: int,
        seed: int | None = None,
    ) -> None:
        self.mu = mu
        self.sigma = sigma
        self.n_steps = 0
        if sigma_min is not None:
            self.m = -float(sigma - sigma_min) / float(n_steps_annealing)
            self.c = sigma
            self.sigma_min = sigma_min
        else:
            self.m = 0.0
            self.c = sigma
            self.sigma_min = sigma
        self.rng = np.random.default_rng(seed)

    def seed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)

    @property
    def current_sigma(self) -> float:
        return max(self.sigma_min, self.m * float(self.n_steps) + self.c)

    def sample(self) -> np.ndarray:
        raise NotImplementedError

    def reset_states(self) -> None:
        """Start a new episode (stateless processes have nothing to reset)."""

    def get_state(self) -> dict[str, Any]:
        return {"n_steps": self.n_steps, "rng": self.rng.bit_generator.state}

    def set_state(self, state: dict[str, Any]) -> None:
        self.n_steps = int(state["n_steps"])
        self.rng.bit_generator.state = state["rng"]


class GaussianWhiteNoiseProcess(AnnealedGaussianProcess):
    """Independent Gaussian noise ``N(mu, current_sigma)`` of shape ``size``."""

    def __init__(
        self,
        mu: float = 0.0,
        sigma: float = 1.0,
        sigma_min: float | None = None,
        n_steps_annealing: int = 1000,
        size: int | tuple[int, ...] = 1,
        seed: int | None = None,
    ) -> None:
        super().__init__(mu, sigma, sigma_min, n_steps_annealing, seed)
        self.size = size

    def sample(self) -> np.ndarray:
        x = self.rng.normal(self.mu, self.current_sigma, self.size)
        self.n_steps += 1
        return x


class OrnsteinUhlenbeckProcess(AnnealedGaussianProcess):
    """Temporally correlated noise ``dx = theta * (mu - x) * dt + sigma * sqrt(dt) * N(0, 1)``.

    :param theta: mean-reversion rate (no default, as in Note_rl)
    :param dt: time step
    :param size: shape of one sample
    """

    def __init__(
        self,
        theta: float,
        mu: float = 0.0,
        sigma: float = 1.0,
        dt: float = 1e-2,
        size: int | tuple[int, ...] = 1,
        sigma_min: float | None = None,
        n_steps_annealing: int = 1000,
        seed: int | None = None,
    ) -> None:
        super().__init__(mu, sigma, sigma_min, n_steps_annealing, seed)
        self.theta = theta
        self.dt = dt
        self.size = size
        self.reset_states()

    def sample(self) -> np.ndarray:
        x = (
            self.x_prev
            + self.theta * (self.mu - self.x_prev) * self.dt
            + self.current_sigma * np.sqrt(self.dt) * self.rng.normal(size=self.size)
        )
        self.x_prev = x
        self.n_steps += 1
        return x

    def reset_states(self) -> None:
        # Note_rl starts each episode from a random point around mu, not from zero.
        self.x_prev = self.rng.normal(self.mu, self.current_sigma, self.size)

    def get_state(self) -> dict[str, Any]:
        state = super().get_state()
        state["x_prev"] = np.asarray(self.x_prev).tolist()
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self.x_prev = np.asarray(state["x_prev"])
