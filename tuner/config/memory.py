"""The replay buffer's memory estimate, checked before anything is allocated (``buffer.pool_size``,
``buffer.frames``): by :func:`tuner.config.schema.validate` from the config alone, and again by the
env check once the env's observation space is known."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from note_rl.utils import machine_memory_bytes

from ..common.errors import ConfigError

__all__ = ["check_replay_memory"]


def check_replay_memory(cfg: DictConfig, observation_space: Any = None) -> None:
    """Refuse a replay buffer that cannot fit in this machine's memory.  Without the env's
    ``observation_space``: a lower bound (one-dimensional observations and actions, float32), so a
    config that fits is never refused; with it (a ``Box``): the buffer's estimate, image
    observations counted once per frame as the frame pool stores them
    (:func:`note_rl.buffers.frames.replay_bytes`)."""
    pool = OmegaConf.select(cfg, "buffer.pool_size")
    frames = OmegaConf.select(cfg, "buffer.frames", default="auto")
    if frames not in ("auto", True, False):
        raise ConfigError(f"buffer.frames: must be auto, true or false, got {frames!r}")
    need = pool * 5 * 4 if pool else 0  # state, next_state, action, reward, done
    shape = getattr(observation_space, "shape", None)
    if pool and shape and getattr(observation_space, "dtype", None) is not None:
        from note_rl.buffers.frames import replay_bytes

        need = replay_bytes(pool, shape, observation_space.dtype, frames=frames)
    limit = machine_memory_bytes()
    if need > limit:
        raise ConfigError(f"buffer.pool_size: {pool} transitions need at least {_size(need)}; "
                          f"this machine has {_size(limit)}")


def _size(nbytes: float) -> str:
    return f"{nbytes / 2**30:.1f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.0f} MiB"
