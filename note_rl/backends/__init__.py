"""The backend seam: everything framework-specific lives behind :class:`Backend`.

Backends are loaded lazily by name so that ``import note_rl`` never imports TensorFlow or PyTorch.
"""

from __future__ import annotations

import importlib

from .base import Backend, StepResult

__all__ = ["Backend", "StepResult", "get_backend"]

_MODULES = {"torch": "note_rl.backends.torch_backend", "tf": "note_rl.backends.tf_backend"}
_CACHE: dict[str, Backend] = {}


def get_backend(name: str) -> Backend:
    """The backend called ``name`` (``"torch"`` or ``"tf"``), imported on first use."""
    if name not in _MODULES:
        raise ValueError(f"unknown backend {name!r}; choose one of {sorted(_MODULES)}")
    if name not in _CACHE:
        _CACHE[name] = importlib.import_module(_MODULES[name]).BACKEND
    return _CACHE[name]
