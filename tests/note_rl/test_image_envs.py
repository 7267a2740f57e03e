"""The image env factories behind the env presets (issue 35, item 3): MinAtar, MiniGrid and Atari give
the shapes and dtypes the networks read, rebuild from their spec (vectorised envs, evaluation copies),
and an Atari episode of a policy that never fires ends (FIRE after a reset and a lost life)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from note_rl.agents.nets import MinAtarCNN, NatureCNN, conv_out_shape, image_layout
from note_rl.core.envs import EnvFactory


def _needs(*packages):
    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    return pytest.mark.skipif(bool(missing), reason=f"not installed: {missing}")


@_needs("minatar")
def test_minatar_breakout() -> None:
    from note_rl.image_envs import minatar

    env = minatar("breakout")
    obs, _ = env.reset(seed=0)
    assert obs.shape == (10, 10, 4) and obs.dtype == np.bool_ and env.action_space.n == 3
    assert image_layout(obs.shape) == "hwc" and conv_out_shape(obs.shape, MinAtarCNN()) == (8, 8, 16)
    assert EnvFactory(env)().reset(seed=0)[0].shape == (10, 10, 4)
    with pytest.raises(ValueError, match="game='pong'"):
        minatar("pong")


@_needs("minigrid")
def test_minigrid_image_view() -> None:
    from note_rl.image_envs import minigrid

    env = minigrid("MiniGrid-Empty-5x5-v0")
    obs, _ = env.reset(seed=0)
    assert obs.shape == (7, 7, 3) and obs.dtype == np.uint8 and env.action_space.n == 7
    assert EnvFactory(env)().reset(seed=0)[0].shape == (7, 7, 3)
    assert np.asarray(env.render()).shape[-1] == 3  # rgb_array by default: play records it


@_needs("ale_py", "cv2")
def test_atari_breakout_frames_and_fire() -> None:
    from note_rl.image_envs import atari

    env = atari("Breakout")
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8 and env.action_space.n == 4
    assert image_layout(obs.shape) == "chw" and conv_out_shape(obs.shape, NatureCNN()) == (7, 7, 64)
    factory = EnvFactory(env)
    assert factory.spec is not None  # rebuilt by gym.make from the spec, wrappers included
    copy = factory()
    copy.reset(seed=1)
    steps, done = 0, False
    while not done:  # NOOP forever: the ball is still launched after each lost life
        _, _, terminated, truncated, _ = copy.step(0)
        steps, done = steps + 1, terminated or truncated
    assert steps < 1000, steps
