"""Image-observation envs as picklable factories (``env.factory`` in a tuner env preset): MinAtar,
MiniGrid and Atari, each behind its extra (``pip install "note-rl-tuner[minatar]"`` / ``[minigrid]`` /
``[atari]``).

Both render ``rgb_array`` frames by default (drawn only when asked: ``note-tune play``), and both give
small ``(H, W, C)`` grids, read by an encoder network (:mod:`note_rl.agents.nets`, e.g.
``MinAtarCNN``): MinAtar ``bool`` channels of 10x10 (Young and Tian 2019), MiniGrid the agent's 7x7
``uint8`` partial view (object, colour, state per cell) through ``ImgObsWrapper``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

__all__ = ["minatar", "minigrid", "atari", "FireOnLifeStart"]

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


class FireOnLifeStart(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Presses FIRE (action 1) after a reset and after each lost life, in games whose actions include
    it (Breakout): those games wait for FIRE to go on, and a greedy policy that never picks it would
    stand still until ALE's frame cap (27,000 agent steps), as SB3's ``FireResetEnv`` avoids.  The
    frame's reward is added to the step's."""

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        meanings = env.unwrapped.get_action_meanings()
        self.fire = len(meanings) > 1 and meanings[1] == "FIRE"
        self.lives = 0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        if self.fire:
            obs, _, terminated, truncated, info = self.env.step(1)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        self.lives = self.env.unwrapped.ale.lives()
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        lives = self.env.unwrapped.ale.lives()
        if self.fire and 0 < lives < self.lives and not (terminated or truncated):
            obs, more, terminated, truncated, info = self.env.step(1)
            reward += more
        self.lives = lives
        return obs, reward, terminated, truncated, info


def atari(game: str = "Breakout", frame_stack: int = 4, frame_skip: int = 4, noop_max: int = 30,
          screen_size: int = 84, terminal_on_life_loss: bool = False, repeat_action_probability: float = 0.0,
          clip_reward: bool = False, fire_on_life_start: bool = True, render_mode: str | None = "rgb_array",
          max_frames: int = 108_000) -> gym.Env:
    """An Atari game (``ALE/<game>-v5``, ROMs shipped in ``ale-py`` >= 0.12.1) preprocessed as in
    Mnih et al. 2015 / SB3's ``AtariWrapper`` with gymnasium's own wrappers: up to ``noop_max`` no-ops
    at reset, ``frame_skip`` frames per action (max-pooled over the last two), grey 84x84 ``uint8``
    frames, and the last ``frame_stack`` of them stacked: observations ``(4, 84, 84)`` (CHW).

    ``repeat_action_probability=0`` is rl-zoo3's (its NoFrameskip-v4 ids have no sticky actions); 0.25 is
    the v5 ids' own default (Machado et al. 2018), under which the one FIRE of
    :class:`FireOnLifeStart` is swallowed a quarter of the time.  Deviations from rl-zoo3's settings,
    each for a reason: rewards are not clipped and a lost life does not end the episode by default (``clip_reward`` /
    ``terminal_on_life_loss`` turn them on), because evaluation episodes use this same env and would
    report clipped, one-life scores.  ``fire_on_life_start``: :class:`FireOnLifeStart`.  ``max_frames``:
    ALE's cap on an episode's emulator frames (108,000: 30 minutes of play, 27,000 agent steps)."""
    try:
        import ale_py
    except ImportError:
        raise _missing("atari", "ale-py") from None
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation, TransformReward

    gym.register_envs(ale_py)
    env = gym.make(f"ALE/{game}-v5", frameskip=1, repeat_action_probability=repeat_action_probability,
                   max_num_frames_per_episode=max_frames, render_mode=render_mode)
    if fire_on_life_start:
        env = FireOnLifeStart(env)
    env = AtariPreprocessing(env, noop_max=noop_max, frame_skip=frame_skip, screen_size=screen_size,
                             terminal_on_life_loss=terminal_on_life_loss, grayscale_obs=True, scale_obs=False)
    if clip_reward:
        import numpy as np

        env = TransformReward(env, np.sign)
    return FrameStackObservation(env, frame_stack)
