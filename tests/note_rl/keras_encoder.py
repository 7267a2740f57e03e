"""A user's own Keras encoder for tests/note_rl/agents/test_networks.py (``KerasEncoder(obs_shape, width)``)."""

from __future__ import annotations

import keras


class KerasEncoder(keras.layers.Layer):
    def __init__(self, obs_shape, width: int = 8) -> None:
        super().__init__()
        self.flat = keras.layers.Flatten()
        self.dense = keras.layers.Dense(width, activation="relu")

    def call(self, x):
        return self.dense(self.flat(x))
