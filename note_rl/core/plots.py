"""Training curves and agent replays (matplotlib; PNG files when there is no display; replays
as GIF, or MP4 when ffmpeg is installed)."""

from __future__ import annotations

import os
import shutil
from typing import Any, Sequence

import numpy as np

from ..buffers.her import flatten_goal_obs

__all__ = ["visualize", "run_agent", "animate_agent", "has_display"]


def has_display() -> bool:
    """Whether figures can be shown on screen (otherwise they are written to files)."""
    import matplotlib

    backend = matplotlib.get_backend().lower()
    interactive = backend not in ("agg", "pdf", "ps", "svg", "cairo", "template") and "inline" not in backend
    return interactive and bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _pyplot() -> Any:
    import matplotlib

    if not has_display():
        matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def visualize(agent: Any, series: Sequence[str], path: str | None = None) -> str | None:
    """Plot ``reward`` and/or ``loss`` per episode; show it, or save it to ``path`` (default
    ``<series>.png`` in the working directory) and return the path."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    data = {"reward": np.asarray(agent.reward_list, dtype=float),
            "loss": np.asarray([np.nan if v is None else v for v in agent.loss_list], dtype=float)}
    for name in series:
        values = data[name]
        ax.plot(np.arange(1, len(values) + 1), values, label=name)
        if len(values) and np.isfinite(values[-1]):
            print(f"last {name}: {values[-1]:.4f}")
    ax.set_xlabel("episode")
    ax.set_ylabel(" / ".join(series))
    ax.legend()
    fig.tight_layout()
    if path is None and has_display():
        plt.show()
        plt.close(fig)
        return None
    path = path or f"{'_'.join(series)}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def run_agent(agent: Any, max_steps: int, seed: int | None = None,
              env: Any = None) -> tuple[list[Any], float, int]:
    """One greedy episode (no exploration); returns ``(states, total_reward, steps)``."""
    _refuse_marl(agent, "run_agent")
    env = env if env is not None else (agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env)
    state, _ = env.reset(seed=seed)
    states, total, steps = [state], 0.0, 0
    for steps in range(1, max_steps + 1):
        flat = flatten_goal_obs(state) if isinstance(state, dict) else state  # goal env (HER)
        output = agent.act_output(agent.policy_obs(np.asarray(flat, dtype=np.float32)[None]))[0]
        action = agent.greedy_action(output)
        state, reward, terminated, truncated, _ = env.step(action)
        states.append(state)
        total += float(reward)
        if terminated or truncated:
            break
    return states, total, steps


ANIMATION_MODES = ("rgb_array",)
_WRITERS = {".gif": "pillow", ".mp4": "ffmpeg"}


def _animation_target(save_path: str | None, mode: str, writer: str | None) -> tuple[str, str]:
    """Check the arguments before the episode runs; returns ``(path, writer)``."""
    if mode not in ANIMATION_MODES:
        raise ValueError(f"animate_agent(mode={mode!r}): only 'rgb_array' is supported "
                         "(frames are recorded from env.render())")
    path = save_path or "agent.gif"
    ext = os.path.splitext(path)[1].lower()
    if ext not in _WRITERS:
        raise ValueError(f"animate_agent(save_path={path!r}): use a .gif or .mp4 file")
    if writer is not None and writer != _WRITERS[ext]:
        raise ValueError(f"animate_agent(writer={writer!r}): {ext} files are written with "
                         f"writer={_WRITERS[ext]!r} (or writer=None)")
    if ext == ".mp4" and shutil.which("ffmpeg") is None:
        raise RuntimeError(f"animate_agent: writing {path} needs ffmpeg on PATH (not found); "
                           "install ffmpeg or save a .gif")
    return path, _WRITERS[ext]


def _refuse_marl(agent: Any, what: str) -> None:
    # a MARL agent acts per agent index on a multi-agent env: a single-agent replay does not apply
    if getattr(agent, "MARL", False):
        raise ValueError(f"{what}: not supported for MARL=True agents (one action(s, i) per agent; "
                         "step the multi-agent env yourself)")


def animate_agent(agent: Any, max_steps: int, save_path: str | None = None, fps: int | None = None,
                  mode: str = "rgb_array", writer: str | None = None, seed: int | None = None) -> str:
    """Record one greedy episode from ``rgb_array`` frames and return the file path.

    :param save_path: ``.gif`` (Pillow; default ``agent.gif``) or ``.mp4`` (matplotlib's
        ``FFMpegWriter``; needs ``ffmpeg`` on ``PATH``, checked before the episode runs)
    :param fps: frames per second (default: the env's ``render_fps``, else 30)
    :param mode: render mode; only ``"rgb_array"`` (Note_rl's default) can be recorded
    :param writer: ``None`` (chosen from the extension), ``"pillow"`` (GIF) or ``"ffmpeg"`` (MP4)
    :param seed: seed of the episode's reset (``None``: unseeded)
    """
    import gymnasium as gym

    _refuse_marl(agent, "animate_agent")
    path, writer = _animation_target(save_path, mode, writer)
    base = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
    if getattr(base, "render_mode", None) == "rgb_array":
        env = base
    elif getattr(base, "spec", None) is not None:
        env = gym.make(base.spec, render_mode="rgb_array")
    else:
        raise ValueError("animate_agent needs an env created with render_mode='rgb_array'")
    frames = []
    state, _ = env.reset(seed=seed)
    total = 0.0
    steps = 0
    for steps in range(1, max_steps + 1):
        frames.append(np.asarray(env.render()))
        flat = flatten_goal_obs(state) if isinstance(state, dict) else state  # goal env (HER)
        output = agent.act_output(agent.policy_obs(np.asarray(flat, dtype=np.float32)[None]))[0]
        action = agent.greedy_action(output)
        state, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        if terminated or truncated:
            break
    frames.append(np.asarray(env.render()))
    frames = [_rgb8(f) for f in frames]
    fps = fps or env.metadata.get("render_fps") or 30
    if writer == "pillow":
        _write_gif(frames, path, fps)
    else:
        _write_mp4(frames, path, fps)
    print(f"steps:{steps}   reward:{total}")
    if env is not base:
        env.close()
    return path


def _rgb8(frame: np.ndarray, min_size: int = 160) -> np.ndarray:
    """A rendered frame as the writers take it: ``uint8`` (float frames in ``[0, 1]``, as MinAtar's
    ``rgb_array`` renders them, scaled by 255), and a grid of a few pixels (MinAtar's 10x10) enlarged by
    whole pixels to at least ``min_size`` on its shorter side, so that the recording can be watched."""
    if frame.dtype != np.uint8:
        frame = (np.clip(frame, 0.0, 1.0) * 255.0 if np.issubdtype(frame.dtype, np.floating) else frame)
        frame = frame.astype(np.uint8)
    factor = -(-min_size // max(1, min(frame.shape[:2])))
    return frame.repeat(factor, 0).repeat(factor, 1) if factor > 1 else frame


def _write_gif(frames: list[np.ndarray], path: str, fps: int) -> None:
    from PIL import Image

    images = [Image.fromarray(f) for f in frames]
    images[0].save(path, save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)


def _write_mp4(frames: list[np.ndarray], path: str, fps: int) -> None:
    from matplotlib.animation import FFMpegWriter

    plt = _pyplot()
    height, width = frames[0].shape[:2]
    fig = plt.figure(figsize=(width / 100, height / 100), dpi=100)
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.axis("off")
    image = ax.imshow(frames[0])
    movie = FFMpegWriter(fps=fps)
    try:
        with movie.saving(fig, path, dpi=100):
            for frame in frames:
                image.set_data(frame)
                movie.grab_frame()
    finally:
        plt.close(fig)
