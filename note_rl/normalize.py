"""Running observation and reward normalisation (``set(normalize=True)``), the behaviour of
Stable-Baselines3's ``VecNormalize`` as a component of the agent rather than an env wrapper.

* Observations: ``clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)`` with ``mean`` /
  ``var`` the running statistics of every observation training has seen (the reset observations
  included), updated with each batch before it is normalised (Chan et al.'s parallel merge).
* Rewards: ``clip(r / sqrt(var_R + epsilon), -clip_reward, clip_reward)`` where ``var_R`` is the
  running variance of the discounted return ``R <- gamma * R + r`` of each env copy (not of the
  reward), ``R`` set back to 0 where an episode ended; rewards are only scaled, never centred.
* The statistics start as SB3's do: mean 0, variance 1, a prior count of ``1e-4``.

Training's collectors call :meth:`Normalizer.observe` (update, then normalise) and
:meth:`Normalizer.scale_reward`; everything that acts outside training (``predict``, evaluation,
``play``, exported policies) calls :meth:`Normalizer.normalize_obs`, which reads the statistics and
never changes them: they are frozen there.  The episode returns training and evaluation report are
the env's own rewards.  :meth:`state` / :meth:`from_state` give the statistics as plain arrays and
JSON for checkpoints (no pickle).  numpy only: pool workers and loaders import it without a framework.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["RunningMeanStd", "Normalizer", "make_normalizer"]


class RunningMeanStd:
    """Mean and variance of a stream of arrays of one ``shape``, updated batch by batch.

    :param shape: the shape of one sample (``()`` for scalars)
    :param prior: the count the initial ``mean`` 0 / ``var`` 1 stand for (SB3: ``1e-4``)
    """

    def __init__(self, shape: tuple[int, ...] = (), prior: float = 1e-4) -> None:
        self.mean = np.zeros(shape, np.float64)
        self.var = np.ones(shape, np.float64)
        self.count = float(prior)

    def update(self, batch: Any) -> None:
        """Merge a batch ``(n, *shape)`` of samples."""
        x = np.asarray(batch, np.float64).reshape((-1, *self.mean.shape))
        if len(x):
            self.merge(x.mean(axis=0), x.var(axis=0), len(x))

    def merge(self, mean: Any, var: Any, count: float) -> None:
        """Merge the statistics of another set of samples (its mean, population variance and count):
        the combined mean and variance are those of both sets together."""
        delta = np.asarray(mean, np.float64) - self.mean
        total = self.count + count
        m2 = self.var * self.count + np.asarray(var, np.float64) * count + delta**2 * self.count * count / total
        self.mean = self.mean + delta * count / total
        self.var = m2 / total
        self.count = total


class Normalizer:
    """Observation and reward normalisation with running statistics (see the module docstring).

    :param obs: normalise observations
    :param reward: scale rewards by the running std of the discounted return
    :param clip_obs: normalised observations are clipped to ``[-clip_obs, clip_obs]``
    :param clip_reward: scaled rewards are clipped to ``[-clip_reward, clip_reward]``
    :param gamma: discount of the return whose std scales rewards (``None``: the agent's ``gamma``,
        filled in by ``set(normalize=...)``)
    :param epsilon: added to the variances under the square roots
    :param training: update the statistics while training (``False`` freezes them, as SB3's
        ``VecNormalize.training = False``)
    """

    def __init__(self, obs: bool = True, reward: bool = True, clip_obs: float = 10.0, clip_reward: float = 10.0,
                 gamma: float | None = None, epsilon: float = 1e-8, training: bool = True) -> None:
        for name, value in (("clip_obs", clip_obs), ("clip_reward", clip_reward), ("epsilon", epsilon)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"Normalizer({name}={value!r}): must be a positive number")
        if gamma is not None and (isinstance(gamma, bool) or not isinstance(gamma, (int, float))
                                  or not 0.0 <= float(gamma) <= 1.0):
            raise ValueError(f"Normalizer(gamma={gamma!r}): must be in [0, 1]")
        self.obs, self.reward = bool(obs), bool(reward)
        self.clip_obs, self.clip_reward = float(clip_obs), float(clip_reward)
        self.gamma = None if gamma is None else float(gamma)
        self.epsilon = float(epsilon)
        self.training = bool(training)
        self.obs_rms: RunningMeanStd | None = None  # made on the first observation (its shape)
        self.ret_rms = RunningMeanStd(())
        self.returns = np.zeros(0, np.float64)  # the discounted return of each env copy

    def __repr__(self) -> str:
        return (f"Normalizer(obs={self.obs}, reward={self.reward}, clip_obs={self.clip_obs}, "
                f"clip_reward={self.clip_reward}, gamma={self.gamma}, epsilon={self.epsilon})")

    # -- observations ----------------------------------------------------------------------
    def observe(self, obs: Any) -> np.ndarray:
        """Training: a batch ``(n, *shape)`` of observations from the env, merged into the
        statistics (when ``training``), then normalised."""
        x = np.asarray(obs, np.float64)
        if self.obs and self.training:
            if self.obs_rms is None:
                self.obs_rms = RunningMeanStd(x.shape[1:])
            self.obs_rms.update(x)
        return self.normalize_obs(x)

    def normalize_obs(self, obs: Any) -> np.ndarray:
        """Observations (one or a batch) as the networks see them, with the statistics as they are
        (frozen: nothing is updated); float32."""
        x = np.asarray(obs, np.float64)
        if not self.obs or self.obs_rms is None:
            return x.astype(np.float32)
        scale = np.sqrt(self.obs_rms.var + self.epsilon)
        return np.clip((x - self.obs_rms.mean) / scale, -self.clip_obs, self.clip_obs).astype(np.float32)

    def obs_transform(self) -> tuple[np.ndarray, np.ndarray, float] | None:
        """``(mean, scale, clip)`` with ``normalize_obs(x) = clip((x - mean) / scale, -clip, clip)``
        (what an exported policy computes), or ``None`` when observations pass unchanged."""
        if not self.obs or self.obs_rms is None:
            return None
        return (self.obs_rms.mean.astype(np.float32).ravel(),
                np.sqrt(self.obs_rms.var + self.epsilon).astype(np.float32).ravel(), self.clip_obs)

    # -- rewards ---------------------------------------------------------------------------
    def reset_returns(self, n_envs: int) -> None:
        """Start the discounted returns of ``n_envs`` env copies at 0 (a new collection)."""
        self.returns = np.zeros(int(n_envs), np.float64)

    def scale_reward(self, reward: Any, ended: Any) -> np.ndarray:
        """Training: the rewards of one step of every env copy (``(n,)``), scaled; ``ended`` marks the
        copies whose episode ended with this step (their return starts again at 0)."""
        r = np.asarray(reward, np.float64).reshape(-1)
        if len(self.returns) != len(r):
            self.reset_returns(len(r))
        if self.training:
            gamma = 1.0 if self.gamma is None else self.gamma
            self.returns = self.returns * gamma + r
            self.ret_rms.update(self.returns)
        out = self.normalize_reward(r)
        self.returns[np.asarray(ended, bool).reshape(-1)] = 0.0
        return out

    def normalize_reward(self, reward: Any) -> np.ndarray:
        """Rewards scaled with the statistics as they are (nothing updated); float32."""
        r = np.asarray(reward, np.float64)
        if not self.reward:
            return r.astype(np.float32)
        return np.clip(r / np.sqrt(self.ret_rms.var + self.epsilon), -self.clip_reward,
                       self.clip_reward).astype(np.float32)

    # -- checkpoints -----------------------------------------------------------------------
    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """``(meta, arrays)``: the settings and counts as JSON, the statistics as float64 arrays."""
        meta = {"obs": self.obs, "reward": self.reward, "clip_obs": self.clip_obs, "clip_reward": self.clip_reward,
                "gamma": self.gamma, "epsilon": self.epsilon, "training": self.training,
                "ret_count": self.ret_rms.count, "obs_count": None if self.obs_rms is None else self.obs_rms.count}
        arrays = {"ret_mean": np.asarray(self.ret_rms.mean), "ret_var": np.asarray(self.ret_rms.var),
                  "returns": self.returns.copy()}
        if self.obs_rms is not None:
            arrays.update(obs_mean=self.obs_rms.mean.copy(), obs_var=self.obs_rms.var.copy())
        return meta, arrays

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Normalizer:
        """The normaliser :meth:`state` describes; a malformed entry raises ``ValueError``."""
        if not isinstance(meta, dict):
            raise ValueError("normalize: the metadata is not a mapping")
        out = cls(**{k: meta[k] for k in ("obs", "reward", "clip_obs", "clip_reward", "gamma", "epsilon", "training")
                     if k in meta})
        out.ret_rms.mean, out.ret_rms.var = _floats(arrays, "ret_mean", ()), _floats(arrays, "ret_var", ())
        out.ret_rms.count = _count(meta.get("ret_count"))
        out.returns = _floats(arrays, "returns", None).reshape(-1)
        if meta.get("obs_count") is not None:
            mean, var = _floats(arrays, "obs_mean", None), _floats(arrays, "obs_var", None)
            if mean.shape != var.shape or np.any(var < 0):
                raise ValueError("normalize: obs_mean and obs_var differ in shape or hold a negative variance")
            out.obs_rms = RunningMeanStd(mean.shape)
            out.obs_rms.mean, out.obs_rms.var, out.obs_rms.count = mean, var, _count(meta["obs_count"])
        return out


def _floats(arrays: dict[str, np.ndarray], key: str, shape: tuple[int, ...] | None) -> np.ndarray:
    if key not in arrays:
        raise ValueError(f"normalize: the array {key!r} is missing")
    value = np.asarray(arrays[key])
    if value.dtype.kind not in "fiu" or (shape is not None and value.shape != shape) or not np.all(np.isfinite(value)):
        raise ValueError(f"normalize: {key!r} is a {value.shape} {value.dtype} array, not finite numbers")
    return value.astype(np.float64)


def _count(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"normalize: count {value!r} is not a positive number")
    return float(value)


def make_normalizer(value: Any, gamma: float | None) -> Normalizer | None:
    """``set(normalize=...)``'s value as a :class:`Normalizer`: ``True`` (observations and rewards),
    a mapping of its arguments (``{"obs": True, "reward": False}``, the tuner's ``agent.normalize``),
    a :class:`Normalizer`, or ``False`` / ``None`` (none).  ``gamma`` fills a missing ``gamma``."""
    if value is None or value is False:
        return None
    if value is True:
        return Normalizer(gamma=gamma)
    if isinstance(value, Normalizer):
        if value.gamma is None and gamma is not None:
            value.gamma = float(gamma)
        return value
    if isinstance(value, dict):
        allowed = ("obs", "reward", "clip_obs", "clip_reward", "gamma", "epsilon", "training")
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise ValueError(f"set(normalize={{{unknown[0]!r}: ...}}): unknown key; use {', '.join(allowed)}")
        kwargs = dict(value)
        if kwargs.get("gamma") is None:
            kwargs["gamma"] = gamma
        return Normalizer(**kwargs)
    raise ValueError(f"set(normalize={value!r}): give True, False, a dict of Normalizer arguments or a Normalizer")
