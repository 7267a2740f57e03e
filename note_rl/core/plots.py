"""Training curves and agent replays (matplotlib; PNG/GIF files when there is no display)."""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

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
    env = env if env is not None else (agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env)
    state, _ = env.reset(seed=seed)
    states, total, steps = [state], 0.0, 0
    for steps in range(1, max_steps + 1):
        output = agent.act_output(np.asarray(state, dtype=np.float32)[None])[0]
        action = int(np.argmax(output)) if _discrete(env) else output
        state, reward, terminated, truncated, _ = env.step(action)
        states.append(state)
        total += float(reward)
        if terminated or truncated:
            break
    return states, total, steps


def _discrete(env: Any) -> bool:
    import gymnasium as gym

    return isinstance(env.action_space, gym.spaces.Discrete)


def animate_agent(agent: Any, max_steps: int, save_path: str | None = None, fps: int | None = None) -> str:
    """Record one greedy episode from ``rgb_array`` frames into a GIF (``save_path``, default
    ``agent.gif``); returns the file path."""
    import gymnasium as gym
    from PIL import Image

    base = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
    if getattr(base, "render_mode", None) == "rgb_array":
        env = base
    elif getattr(base, "spec", None) is not None:
        env = gym.make(base.spec, render_mode="rgb_array")
    else:
        raise ValueError("animate_agent needs an env created with render_mode='rgb_array'")
    frames = []
    state, _ = env.reset()
    total = 0.0
    steps = 0
    for steps in range(1, max_steps + 1):
        frames.append(Image.fromarray(env.render()))
        output = agent.act_output(np.asarray(state, dtype=np.float32)[None])[0]
        action = int(np.argmax(output)) if _discrete(env) else output
        state, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        if terminated or truncated:
            break
    frames.append(Image.fromarray(env.render()))
    path = save_path or "agent.gif"
    duration = int(1000 / (fps or env.metadata.get("render_fps", 30)))
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=duration, loop=0)
    print(f"steps:{steps}   reward:{total}")
    if env is not base:
        env.close()
    return path
