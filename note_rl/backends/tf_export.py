"""Write a greedy policy (:class:`note_rl.inference.PolicySpec`) as a TensorFlow SavedModel.

``tf.saved_model.load(path)`` needs TensorFlow only, never note_rl: calling the loaded object on
float32 observations ``(batch, state_dim)`` gives the actions (int64 indices, or float32 actions in the
env's own bounds); the ``serving_default`` signature (TF Serving, ``tf.lite.TFLiteConverter``,
tf2onnx) takes ``obs`` and returns ``{"action": ...}``.  ``policy.json`` under ``assets/`` describes it.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import numpy as np

from .tf_backend import tf  # TensorFlow imported behind the seam (its C++ start-up lines silenced)

__all__ = ["PolicyModule", "save_saved_model"]


class PolicyModule(tf.Module):
    """The MLP and head of a :class:`~note_rl.inference.PolicySpec` as a ``tf.Module``."""

    def __init__(self, spec: Any) -> None:
        super().__init__(name="note_rl_policy")
        self.weights = [tf.Variable(np.asarray(w, np.float32), trainable=False) for w in spec.weights]
        self._spec = spec
        constant = lambda v: tf.constant(np.asarray(v, np.float32))  # noqa: E731
        self._clip = None if spec.clip is None else tuple(constant(v) for v in spec.clip)
        self._rescale = None if spec.rescale is None else tuple(constant(v) for pair in spec.rescale for v in pair)
        # set(normalize=...): the frozen observation statistics, applied to the raw observations first
        self._norm = None if spec.obs_norm is None else (constant(spec.obs_norm[0]), constant(spec.obs_norm[1]),
                                                          float(spec.obs_norm[2]))

    @tf.function
    def __call__(self, obs: tf.Tensor) -> tf.Tensor:
        return self._forward(obs)

    def _forward(self, obs: tf.Tensor) -> tf.Tensor:
        spec, x = self._spec, obs
        if self._norm is not None:
            mean, scale, limit = self._norm
            x = tf.clip_by_value((x - mean) / scale, -limit, limit)
        n = len(self.weights) // 2
        for i in range(n):
            x = tf.matmul(x, self.weights[2 * i]) + self.weights[2 * i + 1]
            if i < n - 1:
                x = tf.tanh(x) if spec.activation == "tanh" else tf.nn.relu(x)
        if spec.output == "softmax":
            x = tf.nn.softmax(x, axis=-1)
        elif spec.output == "tanh":
            x = tf.tanh(x)
        if spec.discrete:
            return tf.argmax(x, axis=-1, output_type=tf.int64)
        if spec.half:
            x = x[:, : int(spec.weights[-1].shape[0]) // 2]
        if spec.squash:
            x = tf.tanh(x)
        if self._clip is not None:
            x = tf.clip_by_value(x, *self._clip)
        if self._rescale is not None:
            lo, hi, low, high = self._rescale
            x = low + (high - low) * ((x - lo) / (hi - lo))
        return x


def save_saved_model(spec: Any, path: str, meta: dict[str, Any]) -> None:
    """``path``: a SavedModel directory of the policy."""
    module = PolicyModule(spec)
    obs = tf.TensorSpec([None, spec.state_dim], tf.float32, name="obs")
    module.__call__.get_concrete_function(obs)  # the loaded object is callable on any batch size
    serve = tf.function(lambda obs: {"action": module(obs)}, input_signature=[obs])
    with tempfile.TemporaryDirectory() as folder:
        info = os.path.join(folder, "policy.json")
        with open(info, "w") as f:
            json.dump(meta, f)
        module.info = tf.saved_model.Asset(info)
        tf.saved_model.save(module, path, signatures={"serving_default": serve})
