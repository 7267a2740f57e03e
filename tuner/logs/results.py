"""What a run records of itself: ``result.json`` (written atomically), the digest of its initial
weights and the moving best of its returns."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import numpy as np

__all__ = ["write_json", "weights_digest", "moving_best"]


def write_json(path: str, obj: Any) -> None:
    """Write JSON atomically (temporary file + rename)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, default=_default)
    os.replace(tmp, path)


def _default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def weights_digest(agent: Any) -> str:
    """SHA-256 of the agent's trainable weights (equal digests: identical starting points).  Here,
    not in the finders, so that a trial process never imports the finders (and Optuna)."""
    h = hashlib.sha256()
    for w in agent.backend.get_weights(agent.backend.flatten(agent.param)):
        h.update(np.ascontiguousarray(w).tobytes())
    return h.hexdigest()


def moving_best(returns: list[float], k: int) -> float | None:
    """Best mean over any ``k`` consecutive episodes (or over all, when fewer than ``k``)."""
    if not returns:
        return None
    if len(returns) < k:
        return float(np.mean(returns))
    window = np.convolve(np.asarray(returns, dtype=float), np.ones(k) / k, mode="valid")
    return float(window.max())
