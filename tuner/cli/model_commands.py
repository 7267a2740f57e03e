"""``note-tune eval model=<file> [episodes=20] [seeds=0,1,2] [max_steps=N]``: evaluate a saved model;
``note-tune play model=<file> [out=<file.gif|file.mp4>] [seed=0] [max_steps=N] [fps=N]``: record one
greedy episode of it (GIF with Pillow, MP4 with ffmpeg), like rl-zoo3's ``enjoy`` / ``record_video``;
``note-tune export model=<run dir|file> [format=torchscript|onnx|saved_model] [out=<path>]``: write its greedy
policy in a format other tools load without note_rl (:mod:`note_rl.exporting`).

The model is a ``model.npz`` / ``best_eval_model.npz`` that a run or trial wrote into its run dir;
the agent is rebuilt from the ``result.json`` (or ``config.yaml``) beside it.  Each seed ``s``
plays ``episodes`` greedy episodes reset with seeds ``s * 10000 + k`` (``k < episodes``), so the
seeds are disjoint from each other and from training's; the command prints the mean and standard
deviation over seeds and each seed's mean.  ``max_steps`` cuts each episode at that many steps (default:
the env's own limit), as ``play`` does: an env without a time limit would otherwise play up to 100,000.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any

import numpy as np

from ..common.errors import first_line
from ..common.files import name_too_long

__all__ = ["eval_model", "play_model", "export_model", "load_run_config"]

SEED_STRIDE = 10_000
SEED_LIMIT = (2**32 - 1) // SEED_STRIDE  # reset seeds s * SEED_STRIDE + k stay below numpy's 2**32
MAX_EPISODES = 100_000


class _Bad(ValueError):
    """Raised with the one line to print (the caller turns it into exit status 2)."""


def load_run_config(model: str, trust_code: bool = False) -> tuple[dict[str, Any], str]:
    """The resolved config of the run that wrote ``model`` and the file it came from (its run dir's
    result.json or config.yaml), checked as data (:mod:`tuner.config.untrusted`) unless ``trust_code``."""
    from ..run.loading import ModelLoadError, load_run_config as load

    try:
        return load(model, trust_code)
    except ModelLoadError as exc:
        raise _Bad(str(exc)) from None


def flag(args: dict[str, str], key: str) -> bool:
    """A ``true`` / ``false`` argument (``trust_code=``); absent is false."""
    value = args.get(key, "false").strip().lower()
    if value not in ("true", "false"):
        raise _Bad(f"{key}: expected true or false, got {args[key]!r}")
    return value == "true"


def _ints(text: str, key: str, low: int = 0, high: int = SEED_LIMIT) -> list[int]:
    """Comma-separated integers in ``[low, high]`` (``high`` keeps ``seed * SEED_STRIDE`` a valid
    numpy seed)."""
    parts = [v.strip() for v in text.strip("[]").split(",") if v.strip()]
    if not all(re.fullmatch(r"-?[0-9]+", v) for v in parts):  # ASCII digits: int() also reads '𝟙' and '١'
        raise _Bad(f"{key}: expected integers separated by commas, got {text!r}")
    values = [int(v) for v in parts]
    if not values or min(values) < low or max(values) > high:
        kind = "non-negative" if low == 0 else "positive" if low == 1 else f">= {low}"
        raise _Bad(f"{key}: expected {kind} integers (at most {high}), got {text!r}")
    return values


def _int(text: str, key: str, low: int = 0, high: int = SEED_LIMIT) -> int:
    """One integer in ``[low, high]`` (``episodes=1,2`` is refused, not read as 1)."""
    values = _ints(text, key, low, high)
    if len(values) != 1 or "," in text or "[" in text:
        raise _Bad(f"{key}: expected one integer, got {text!r}")
    return values[0]


def _model_path(args: dict[str, str]) -> str:
    model = args.get("model")
    if not model:
        raise _Bad("model: give model=<path of a model.npz written by a run>")
    if not os.path.exists(model):
        raise _Bad(f"model: no such file {model!r}")
    if not os.path.isfile(model):
        raise _Bad(f"model: {model!r} is not a regular file")
    return model


def _load_agent(model: str, trust_code: bool = False) -> tuple[Any, dict[str, Any]]:
    """The agent of the run that wrote ``model``, with the model's weights (:mod:`tuner.run.loading`)."""
    from ..run.loading import ModelLoadError, load_agent

    try:
        return load_agent(model, trust_code)
    except ModelLoadError as exc:
        raise _Bad(str(exc)) from None




def eval_model(args: dict[str, str]) -> dict[str, Any]:
    """Evaluate ``args['model']``; prints and returns ``{"mean", "std", "per_seed", ...}``."""
    from note_rl.evaluation import evaluate

    model = _model_path(args)
    episodes = _int(args.get("episodes", "20"), "episodes", low=1, high=MAX_EPISODES)
    seeds = _ints(args.get("seeds", "0,1,2"), "seeds")
    limit = _int(args["max_steps"], "max_steps", low=1, high=10**7) if "max_steps" in args else None
    agent, cfg = _load_agent(model, flag(args, "trust_code"))
    per_seed = {s: evaluate(agent, episodes, seed=s * SEED_STRIDE, max_steps=limit) for s in seeds}
    means = [float(np.mean(r)) for r in per_seed.values()]
    out = {"model": model, "episodes": episodes, "mean": float(np.mean(means)), "std": float(np.std(means)),
           "per_seed": {str(s): float(np.mean(r)) for s, r in per_seed.items()}}
    print(f"{cfg['agent']['name']} on {cfg['env']['id']}: mean {out['mean']:.2f} +- {out['std']:.2f} over seeds "
          f"{seeds} ({episodes} greedy episodes each); per seed: "
          + ", ".join(f"{s}: {v:.2f}" for s, v in out["per_seed"].items()))
    return out


def _check_out(out: str) -> None:
    """``out`` can be written: not a directory, in an existing writable directory, a name the file
    system takes."""
    if os.path.isdir(out):
        raise _Bad(f"out: {out} is a directory; give a file name ending in .gif or .mp4")
    _check_writable_place(out)


def _check_writable_place(out: str) -> None:
    """``out``'s directory exists and is writable, and its name is one the file system takes."""
    folder, name = os.path.split(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise _Bad(f"out: no such directory {folder}")
    if not os.access(folder, os.W_OK):
        raise _Bad(f"out: directory {folder} is not writable")
    if name_too_long(out, folder):
        raise _Bad(f"out: file name {name[:40]}... is longer than the file system allows")


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
    _check_out(out)
    seed = _int(args.get("seed", "0"), "seed", high=2**32 - 1)
    fps = _int(args["fps"], "fps", low=1, high=1000) if "fps" in args else None
    limit = _int(args["max_steps"], "max_steps", low=1, high=10**7) if "max_steps" in args else None
    agent, cfg = _load_agent(model, flag(args, "trust_code"))
    if getattr(agent, "MARL", False):
        raise _Bad(f"model: {cfg['agent']['name']} is a multi-agent agent; play records single-agent envs only")
    from note_rl.core.envs import EnvFactory
    from note_rl.evaluation import _episode_limit

    if limit is None:
        limit = _episode_limit(EnvFactory(agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env)())
    # recorded under a temporary name beside ``out`` and renamed: a failed write (full disk, ffmpeg
    # dying) leaves no partial file and keeps an earlier recording of the same name
    partial = os.path.join(os.path.dirname(os.path.abspath(out)), f".{os.getpid()}.partial{ext}")
    try:
        agent.animate_agent(limit, save_path=partial, fps=fps, seed=seed)
        os.replace(partial, out)
    except ValueError as exc:  # e.g. an env that cannot render rgb_array frames
        raise _Bad(f"model: cannot record {cfg['env']['id']} ({first_line(exc)})") from None
    except (OSError, subprocess.CalledProcessError) as exc:  # full disk, a file system that refuses the name
        raise _Bad(f"out: cannot write {out} ({getattr(exc, 'strerror', None) or first_line(exc)})") from None
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    print(f"recorded one greedy episode of {cfg['agent']['name']} on {cfg['env']['id']} (reset seed {seed}) -> {out}")
    return out


#: ``format=`` when none is given: the trained backend's own
_DEFAULT_FORMAT = {"torch": "torchscript", "tf": "saved_model"}


def export_model(args: dict[str, str]) -> str:
    """Write the greedy policy of ``args['model']`` (a run dir or its model file) as ``format``
    (:mod:`note_rl.exporting`) to ``out`` (default: beside the model, ``policy.pt`` / ``policy.onnx`` /
    ``saved_model``); returns the path written."""
    from note_rl.exporting import FORMATS, ExportError, default_path, export

    from ..run.loading import ModelLoadError, model_file

    if not args.get("model"):
        raise _Bad("model: give model=<run dir or a model.npz written by a run>")
    try:
        model = model_file(args["model"])
    except ModelLoadError as exc:
        raise _Bad(str(exc)) from None
    fmt = args.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise _Bad(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")
    out = args.get("out")
    if out is not None:
        _check_export_out(out, fmt)
    agent, cfg = _load_agent(model, flag(args, "trust_code"))
    fmt = fmt or _DEFAULT_FORMAT.get(cfg["backend"]["name"], "torchscript")
    if out is not None:
        _check_export_out(out, fmt)
    if out is None:
        out = default_path(os.path.join(os.path.dirname(model), "policy" if FORMATS[fmt][3] else "saved_model"), fmt)
    try:
        path = export(agent, out, fmt)
    except ExportError as exc:
        raise _Bad(str(exc)) from None
    except OSError as exc:
        raise _Bad(f"out: cannot write {out} ({exc.strerror or first_line(exc)})") from None
    print(f"exported the greedy policy of {cfg['agent']['name']} on {cfg['env']['id']} as {fmt} -> {path}")
    return path


def _check_export_out(out: str, fmt: str | None) -> None:
    """``out`` is a name that can be written: in an existing writable directory, short enough."""
    if not os.path.basename(os.path.abspath(out)):
        raise _Bad(f"out: {out!r} names no file")
    _check_writable_place(out)
    if fmt is None:
        return
    suffixes = _EXPORT_SUFFIXES[fmt]
    if fmt == "saved_model":
        if os.path.exists(out) and not os.path.isfile(os.path.join(out, "saved_model.pb")):
            raise _Bad(f"out: {out} exists and is not a SavedModel; give a new directory name")
    elif os.path.isdir(out):
        raise _Bad(f"out: {out} is a directory; give a file name ending in {' or '.join(suffixes)}")
    elif not out.lower().endswith(suffixes):
        raise _Bad(f"out: {out!r} must end in {' or '.join(suffixes)} for format={fmt}")


#: file names ``out=`` may have per format (an existing file of another kind is never overwritten)
_EXPORT_SUFFIXES = {"torchscript": (".pt", ".pth"), "onnx": (".onnx",), "saved_model": ()}
