"""The tuner's replay memory check counts image observations once per frame (buffer.frames)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from omegaconf import OmegaConf

from tests.tuner.conftest import compose_cfg
from tuner.common.errors import ConfigError
from tuner.config import memory
from tuner.config.schema import _check_memory, validate
from tuner.run.build import build_agent

ATARI = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)


def test_atari_buffer_fits_in_a_gib_as_frames(monkeypatch) -> None:
    monkeypatch.setattr(memory, "machine_memory_bytes", lambda: 2**30)
    cfg = compose_cfg(["agent=dqn", "buffer.pool_size=100000"])
    _check_memory(cfg, ATARI)  # ~0.66 GiB: one 84x84 frame per item
    cfg.buffer.frames = False
    with pytest.raises(ConfigError, match=r"^buffer.pool_size: 100000 transitions need at least 5.3 GiB"):
        _check_memory(cfg, ATARI)  # two dense 4x84x84 stacks per item
    _check_memory(cfg)  # without the env: the lower bound only


def test_frames_key_is_checked_and_reaches_the_agent() -> None:
    cfg = compose_cfg(["agent=dqn", "buffer.frames=maybe"])
    with pytest.raises(ConfigError, match=r"^buffer.frames: must be auto, true or false, got 'maybe'"):
        _check_memory(cfg)
    cfg = compose_cfg(["agent=dqn", "agent.hidden_size=[8]", "buffer.pool_size=100", "buffer.frames=false"])
    agent = build_agent(OmegaConf.to_container(validate(cfg), resolve=True))
    assert agent.make_buffer().frames is False
    assert build_agent(OmegaConf.to_container(validate(compose_cfg(["agent=dqn"])), resolve=True)) \
        .make_buffer().frames == "auto"


def test_env_check_estimates_with_the_observation_space(monkeypatch) -> None:
    """validate() repeats the estimate once the env is made: a pool of CartPole items that the
    config-only lower bound lets through is refused when its real size does not fit."""
    monkeypatch.setattr(memory, "machine_memory_bytes", lambda: 10 * 2**20)
    cfg = compose_cfg(["agent=dqn", "buffer.pool_size=400000"])  # 7.6 MiB lower bound, 17 MiB estimated
    with pytest.raises(ConfigError, match=r"^buffer.pool_size: 400000 transitions need at least 17 MiB; this machine has 10 MiB"):
        validate(cfg)
