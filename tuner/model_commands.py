"""``note-tune eval model=<file> [episodes=20] [seeds=0,1,2]``: evaluate a saved model;
``note-tune play model=<file> [out=<file.gif|file.mp4>] [seed=0] [max_steps=N] [fps=N]``: record one
greedy episode of it (GIF with Pillow, MP4 with ffmpeg), like rl-zoo3's ``enjoy`` / ``record_video``.

The model is a ``model.npz`` / ``best_eval_model.npz`` that a run or trial wrote into its run dir;
the agent is rebuilt from the ``result.json`` (or ``config.yaml``) beside it.  Each seed ``s``
plays ``episodes`` greedy episodes reset with seeds ``s * 10000 + k`` (``k < episodes``), so the
seeds are disjoint from each other and from training's; the command prints the mean and standard
deviation over seeds and each seed's mean.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

__all__ = ["eval_model", "play_model", "load_run_config"]

SEED_STRIDE = 10_000


class _Bad(ValueError):
    """Raised with the one line to print (the caller turns it into exit status 2)."""


def load_run_config(model: str) -> dict[str, Any]:
    """The resolved config of the run that wrote ``model`` (its run dir's result.json or config.yaml)."""
    folder = os.path.dirname(os.path.abspath(model))
    result = os.path.join(folder, "result.json")
    if os.path.exists(result):
        try:
            with open(result) as f:
                cfg = json.load(f).get("config")
        except (OSError, json.JSONDecodeError) as exc:
            raise _Bad(f"model: cannot read {result} ({exc})") from None
        if isinstance(cfg, dict):
            return cfg
    config = os.path.join(folder, "config.yaml")
    if os.path.exists(config):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(OmegaConf.load(config), resolve=True)
    raise _Bad(f"model: no result.json or config.yaml beside {model} to rebuild its agent from")


def _ints(text: str, key: str) -> list[int]:
    try:
        values = [int(v) for v in text.strip("[]").split(",") if v.strip()]
    except ValueError:
        raise _Bad(f"{key}: expected integers separated by commas, got {text!r}") from None
    if not values or min(values) < 0:
        raise _Bad(f"{key}: expected non-negative integers, got {text!r}")
    return values


def _model_path(args: dict[str, str]) -> str:
    model = args.get("model")
    if not model:
        raise _Bad("model: give model=<path of a model.npz written by a run>")
    if not os.path.isfile(model):
        raise _Bad(f"model: no such file {model!r}")
    return model


def _load_agent(model: str) -> tuple[Any, dict[str, Any]]:
    """The agent of the run that wrote ``model``, with the model's weights."""
    from note_rl.core.checkpoint import CheckpointError

    from .build import build_agent, set_threads

    from .schema import ConfigError

    cfg = load_run_config(model)
    set_threads(cfg)
    try:
        agent = build_agent(cfg)
    except ConfigError as exc:  # e.g. a user's agent class whose module is not importable from here
        hint = " (run it where the run's code imports, e.g. with the run's PYTHONPATH)" if "import" in str(exc) else ""
        raise _Bad(f"model: {model}: {str(exc).splitlines()[0]}{hint}") from None
    try:
        agent.restore_param(model)
    except (CheckpointError, ValueError, KeyError) as exc:
        raise _Bad(f"model: {model} does not load into this agent ({str(exc).splitlines()[0]})") from None
    return agent, cfg


def eval_model(args: dict[str, str]) -> dict[str, Any]:
    """Evaluate ``args['model']``; prints and returns ``{"mean", "std", "per_seed", ...}``."""
    from note_rl.evaluation import evaluate

    model = _model_path(args)
    episodes = _ints(args.get("episodes", "20"), "episodes")[0]
    seeds = _ints(args.get("seeds", "0,1,2"), "seeds")
    agent, cfg = _load_agent(model)
    per_seed = {s: evaluate(agent, episodes, seed=s * SEED_STRIDE) for s in seeds}
    means = [float(np.mean(r)) for r in per_seed.values()]
    out = {"model": model, "episodes": episodes, "mean": float(np.mean(means)), "std": float(np.std(means)),
           "per_seed": {str(s): float(np.mean(r)) for s, r in per_seed.items()}}
    print(f"{cfg['agent']['name']} on {cfg['env']['id']}: mean {out['mean']:.2f} +- {out['std']:.2f} over seeds "
          f"{seeds} ({episodes} greedy episodes each); per seed: "
          + ", ".join(f"{s}: {v:.2f}" for s, v in out["per_seed"].items()))
    return out


def play_model(args: dict[str, str]) -> str:
    """Record one greedy episode of ``args['model']`` to ``out`` (default: the model's path with
    ``.gif``); returns the file written."""
    import shutil

    # frames are drawn off-screen (rgb_array): without this, pygame's SDL looks for a display and
    # prints "error: XDG_RUNTIME_DIR is invalid ..." on a machine without one
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    model = _model_path(args)
    out = args.get("out") or os.path.splitext(model)[0] + ".gif"
    ext = os.path.splitext(out)[1].lower()
    if ext not in (".gif", ".mp4"):
        raise _Bad(f"out: {out!r} must end in .gif or .mp4")
    if ext == ".mp4" and shutil.which("ffmpeg") is None:
        raise _Bad(f"out: writing {out} needs ffmpeg on PATH (not found); install it or give out=<file>.gif")
    if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        raise _Bad(f"out: no such directory {os.path.dirname(os.path.abspath(out))}")
    seed = _ints(args.get("seed", "0"), "seed")[0]
    fps = _ints(args["fps"], "fps")[0] if "fps" in args else None
    agent, cfg = _load_agent(model)
    if getattr(agent, "MARL", False):
        raise _Bad(f"model: {cfg['agent']['name']} is a multi-agent agent; play records single-agent envs only")
    from note_rl.core.envs import EnvFactory
    from note_rl.evaluation import _episode_limit

    limit = _ints(args["max_steps"], "max_steps")[0] if "max_steps" in args else None
    if limit is None:
        limit = _episode_limit(EnvFactory(agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env)())
    try:
        path = agent.animate_agent(limit, save_path=out, fps=fps, seed=seed)
    except ValueError as exc:  # e.g. an env that cannot render rgb_array frames
        raise _Bad(f"model: cannot record {cfg['env']['id']} ({str(exc).splitlines()[0]})") from None
    print(f"recorded one greedy episode of {cfg['agent']['name']} on {cfg['env']['id']} (reset seed {seed}) -> {path}")
    return path
