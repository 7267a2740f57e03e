"""Image-observation envs as picklable factories (``env.factory`` in a tuner env preset): MinAtar and
MiniGrid, each behind its extra (``pip install "note-rl-tuner[minatar]"`` / ``[minigrid]``).

Both render ``rgb_array`` frames by default (drawn only when asked: ``note-tune play``), and both give
small ``(H, W, C)`` grids, read by an encoder network (:mod:`note_rl.agents.nets`, e.g.
``MinAtarCNN``): MinAtar ``bool`` channels of 10x10 (Young and Tian 2019), MiniGrid the agent's 7x7
``uint8`` partial view (object, colour, state per cell) through ``ImgObsWrapper``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

__all__ = ["minatar", "minigrid"]

MINATAR_GAMES = ("asterix", "breakout", "freeway", "seaquest", "space_invaders")


def _missing(extra: str, package: str) -> ImportError:
    return ImportError(f"{package} is not installed: pip install \"note-rl-tuner[{extra}]\" (or pip install {package})")


def minatar(game: str = "breakout", minimal_actions: bool = True, max_episode_steps: int | None = None,
            render_mode: str | None = "rgb_array", **kwargs: Any) -> gym.Env:
    """A MinAtar game (``MinAtar/<Game>-v1``: the minimal action set; ``minimal_actions=False``: ``-v0``
    with all 6 actions), registered with gymnasium on first use.  ``max_episode_steps`` truncates
    episodes (MinAtar's games end by themselves; Freeway after 2,500 steps).  Other keyword
    arguments go to MinAtar's ``Environment`` (``sticky_action_prob``, ``difficulty_ramping``)."""
    if game not in MINATAR_GAMES:
        raise ValueError(f"minatar(game={game!r}): use one of {MINATAR_GAMES}")
    try:
        import minatar.gym as minatar_gym
    except ImportError:
        raise _missing("minatar", "minatar") from None
    env_id = f"MinAtar/{game.title().replace('_', '')}-v{1 if minimal_actions else 0}"
    if env_id not in gym.registry:
        minatar_gym.register_envs()
    return gym.make(env_id, max_episode_steps=max_episode_steps, render_mode=render_mode, **kwargs)


def minigrid(env_id: str = "MiniGrid-Empty-5x5-v0", render_mode: str | None = "rgb_array", **kwargs: Any) -> gym.Env:
    """A MiniGrid env with image observations only (``ImgObsWrapper``: the 7x7x3 partial view, without
    the mission string), as SB3's and rl-zoo3's MiniGrid setups read it."""
    try:
        import minigrid as _minigrid  # noqa: F401 - registers the MiniGrid ids
        from minigrid.wrappers import ImgObsWrapper
    except ImportError:
        raise _missing("minigrid", "minigrid") from None
    return ImgObsWrapper(gym.make(env_id, render_mode=render_mode, **kwargs))
