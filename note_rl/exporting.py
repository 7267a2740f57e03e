"""Export a trained agent's greedy policy to a file other tools load without note_rl.

``export(agent, path, format)`` with ``format``:

* ``torchscript``: a TorchScript archive; ``torch.jit.load(path)(obs)`` (PyTorch, C++ libtorch);
* ``onnx``: an ONNX graph, input ``obs``, output ``action`` (onnxruntime and friends); needs the
  ``onnx`` package (``pip install 'note-rl-tuner[onnx]'``) and PyTorch;
* ``saved_model``: a TensorFlow SavedModel directory; ``tf.saved_model.load(path)(obs)``, or its
  ``serving_default`` signature (TF Serving, the TFLite converter).

Every format maps float32 observations ``(batch, state_dim)`` (the env's raw ones: an agent trained with
``set(normalize=...)`` has its frozen observation statistics built into the file) to the actions
:meth:`predict` returns for them (int64 indices; float32 actions in the env's own bounds), whichever backend trained the
agent: the policy is first read out as arrays (:func:`note_rl.inference.policy_spec`), checked
against the agent's own ``predict`` on sample observations, then built in the target framework.
Only the built-in agents' MLP policies export (DQN, PPO, A2C, DDPG, TD3, SAC).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
from typing import Any

from .inference import ExportError, check_spec, policy_spec

__all__ = ["export", "default_path", "FORMATS", "ExportError"]

#: format -> (backend that writes it, module, function, default file suffix)
FORMATS = {
    "torchscript": ("torch", "note_rl.backends.torch_export", "save_torchscript", ".pt"),
    "onnx": ("torch", "note_rl.backends.torch_export", "save_onnx", ".onnx"),
    "saved_model": ("tf", "note_rl.backends.tf_export", "save_saved_model", ""),
}


def _writer(fmt: str) -> Any:
    from .backends import missing_framework

    if fmt not in FORMATS:
        raise ExportError(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")
    backend, module, func, _ = FORMATS[fmt]
    missing = missing_framework(backend)
    if missing is not None:
        raise ExportError(f"format={fmt}: {missing}")
    if fmt == "onnx" and importlib.util.find_spec("onnx") is None:
        raise ExportError("format=onnx needs the onnx package: pip install 'note-rl-tuner[onnx]'")
    return getattr(importlib.import_module(module), func)


def default_path(base: str, fmt: str) -> str:
    """``base`` with the format's suffix (``policy`` -> ``policy.pt``)."""
    return base + FORMATS[fmt][3]


def export(agent: Any, path: str, format: str = "torchscript") -> str:
    """Write ``agent``'s greedy policy to ``path`` in ``format`` (see the module docstring); returns
    ``path``.  A file is written under a temporary name and renamed, so a failed export leaves no
    partial file; a SavedModel replaces an earlier SavedModel at ``path`` but no other directory."""
    write = _writer(format)
    spec = policy_spec(agent)
    check_spec(agent, spec)
    from . import __version__

    env = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
    meta = {"format": format, "agent": type(agent).__name__, "env": getattr(getattr(env, "spec", None), "id", None),
            "note_rl": __version__, "obs_dim": spec.state_dim,
            "action": "discrete" if spec.discrete else "continuous", "input": "obs float32 (batch, obs_dim)",
            "output": "action int64 (batch,)" if spec.discrete else "action float32 (batch, action_dim)",
            "obs_normalized_inside": spec.obs_norm is not None}
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise ExportError(f"out: no such directory {folder}")
    directory = FORMATS[format][3] == ""
    if directory and os.path.exists(path) and not os.path.isfile(os.path.join(path, "saved_model.pb")):
        raise ExportError(f"out: {path} exists and is not a SavedModel; give a new directory name")
    if not directory and os.path.isdir(path):
        raise ExportError(f"out: {path} is a directory; give a file name")
    partial = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.partial")
    try:
        write(spec, partial, meta)
        if directory and os.path.exists(path):
            shutil.rmtree(path)
        os.replace(partial, path)
    finally:
        if os.path.isdir(partial):
            shutil.rmtree(partial, ignore_errors=True)
        elif os.path.exists(partial):
            os.remove(partial)
    return path
