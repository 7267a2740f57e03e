"""A small uint8 image env for frame-replay tests: CartPole's state drawn as a grey image."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class PixelCartPole(gym.ObservationWrapper):
    """CartPole whose observation is an ``(H, W)`` (or ``(H, W, 3)``) uint8 image: four bands of
    rows, band ``i`` filled up to a column given by state variable ``i`` (so consecutive frames
    differ and equal states give equal frames)."""

    def __init__(self, env: gym.Env, size: int = 8, channels: int | None = None) -> None:
        super().__init__(env)
        self.size, self.channels = size, channels
        shape = (size, size) if channels is None else (size, size, channels)
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)

    def observation(self, obs: Any) -> np.ndarray:
        s = self.size
        img = np.zeros((s, s), np.uint8)
        scale = np.array([2.4, 3.0, 0.21, 3.0])
        cols = np.clip(((np.asarray(obs) / scale + 1) / 2 * s).astype(int), 0, s)
        band = s // 4
        for i, c in enumerate(cols):
            img[i * band:(i + 1) * band, :c] = 40 + 50 * i
        img[:, -1] = np.clip(np.abs(obs[1]) * 80, 0, 255).astype(np.uint8)  # fine detail: frames rarely repeat
        return img if self.channels is None else np.repeat(img[..., None], self.channels, axis=-1)


def make_pixel_env(stack: int | None = 4, padding: str = "reset", max_steps: int = 40, size: int = 8,
                   channels: int | None = None) -> gym.Env:
    """CartPole-v1 as uint8 frames (``max_steps`` episode limit, so both terminations and
    truncations occur), frame-stacked with gymnasium's ``FrameStackObservation`` unless ``stack``
    is ``None``."""
    env: gym.Env = PixelCartPole(gym.make("CartPole-v1", max_episode_steps=max_steps), size, channels)
    if stack:
        env = gym.wrappers.FrameStackObservation(env, stack, padding_type=padding)
    return env


def rollout(env: gym.Env, steps: int, seed: int = 0) -> list[tuple[Any, int, Any, float, bool, bool]]:
    """``steps`` random-action steps as ``(s, a, s2, r, terminated, episode_end)``; ``s2`` of an
    episode's last step is its real final observation (terminated or truncated)."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    out = []
    for _ in range(steps):
        a = int(rng.integers(env.action_space.n))
        nxt, r, term, trunc, _ = env.step(a)
        out.append((obs, a, nxt, float(r), bool(term), bool(term or trunc)))
        obs = env.reset()[0] if term or trunc else nxt
    return out
