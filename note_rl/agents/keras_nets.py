"""Network building blocks of the Keras agents, shared by :mod:`note_rl.agents.keras` (DQN, PPO, A2C)
and :mod:`note_rl.agents.keras_ac` (DDPG, TD3, SAC, MADDPG); both import from here, so neither imports
the other's networks."""

from __future__ import annotations

from typing import Any, Sequence

from ..backends import tf_backend as _tf_backend  # noqa: F401,I001 - imports TensorFlow with its start-up log lines silenced
import keras
import numpy as np

__all__ = ["mlp"]


def mlp(weights: Sequence[np.ndarray], activation: str = "relu", output: str = "linear") -> keras.Sequential:
    """MLP of ``Dense`` layers (``relu`` or ``tanh``) initialised from ``[W0, b0, W1, b1, ...]``;
    ``output="tanh"`` squashes the last layer (actions in ``[-1, 1]``)."""
    n = len(weights) // 2
    layers: list[Any] = [keras.Input((weights[0].shape[0],))]
    last = "tanh" if output == "tanh" else None
    for i in range(n):
        layers.append(keras.layers.Dense(weights[2 * i].shape[1], activation=activation if i < n - 1 else last))
    model = keras.Sequential(layers)
    model.set_weights([np.asarray(w, dtype=np.float32) for w in weights])
    return model
