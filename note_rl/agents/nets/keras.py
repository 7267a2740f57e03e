"""Networks from config on the Keras backend: an encoder (the built-in convolutional stacks or a
user's own ``keras.layers.Layer``) followed by a linear head (see :mod:`note_rl.agents.nets`)."""

from __future__ import annotations

from typing import Any, Sequence

from ...backends import tf_backend as _tf_backend  # noqa: F401,I001 - imports TensorFlow with its start-up log lines silenced
import keras
import numpy as np
import tensorflow as tf

from . import ConvEncoder, Module, NetSpec, image_layout

__all__ = ["EncoderModel", "KerasNetworks", "as_float", "module_weights", "build_net"]


def as_float(x: tf.Tensor, scale: float = 1.0) -> tf.Tensor:
    """Observations as the layers read them, cast here and nowhere else: ``float32``, times ``scale``
    (1/255 for ``uint8`` images, :meth:`~note_rl.agents.nets.NetworkSetup.input_scale`)."""
    x = tf.convert_to_tensor(x)
    x = x if x.dtype == tf.float32 else tf.cast(x, tf.float32)
    return x * scale if scale != 1.0 else x


def _user_layer(spec: Module, obs_shape: Sequence[int]) -> keras.layers.Layer:
    layer = spec.load()(tuple(int(s) for s in obs_shape), **spec.kwargs)
    if not isinstance(layer, keras.layers.Layer):
        raise ValueError(f"network._target_: {spec.target} built a {type(layer).__name__}, not a keras.layers.Layer "
                         "(backend=tf)")
    return layer


def module_weights(spec: Module, obs_shape: Sequence[int], seed: int | None) -> tuple[list[np.ndarray], int]:
    """A fresh user layer's initial weights (Keras's initialisers; ``set(seed=...)`` seeds them through
    the backend) and the size of its feature vector."""
    layer = _user_layer(spec, obs_shape)
    out = layer(tf.zeros((1, *obs_shape), tf.float32))
    if len(out.shape) != 2:
        raise ValueError(f"network._target_: {spec.target} returns shape {tuple(out.shape)}; an encoder returns "
                         "(batch, features)")
    return [np.array(w) for w in layer.get_weights()], int(out.shape[1])


class EncoderModel(keras.Model):
    """``head(encoder(obs))`` (the PyTorch :class:`~note_rl.agents.nets.torch.EncoderNet`'s twin):
    convolutions in NHWC with kernels ``(kh, kw, in, out)``, flattened in ``(H, W, C)`` order; CHW
    observations are transposed to HWC first.  ``weights``: the encoder's arrays, then the head's."""

    def __init__(self, spec: NetSpec, obs_shape: Sequence[int], weights: Sequence[np.ndarray],
                 output: str = "linear", scale: float = 1.0) -> None:
        super().__init__()
        self.scale = float(scale)
        self.chw = isinstance(spec, ConvEncoder) and image_layout(obs_shape, spec.layout) == "chw"
        if isinstance(spec, ConvEncoder):
            convs = [keras.layers.Conv2D(f, k, strides=s, activation="relu") for f, k, s in spec.convs]
            self.encoder_layers = [*convs, keras.layers.Flatten(), keras.layers.Dense(spec.features, activation="relu")]
        else:
            self.encoder_layers = [_user_layer(spec, obs_shape)]
        self.head = keras.layers.Dense(int(np.shape(weights[-1])[0]), activation="tanh" if output == "tanh" else None)
        self(tf.zeros((1, *obs_shape), tf.float32))  # creates the variables
        self.set_weights([np.asarray(w, dtype=np.float32) for w in weights])

    def call(self, x: tf.Tensor) -> tf.Tensor:
        x = as_float(x, self.scale)
        if self.chw:
            x = tf.transpose(x, [0, 2, 3, 1])  # Conv2D on a CPU reads NHWC only
        for layer in self.encoder_layers:
            x = layer(x)
        return self.head(x)


def build_net(spec: Any, obs_shape: Sequence[int], weights: Sequence[np.ndarray], activation: str,
              output: str = "linear", scale: float = 1.0) -> keras.Model:
    """The network of ``spec``: today's :func:`~note_rl.agents.common.keras.mlp` when ``spec`` is
    ``None`` or an MLP, else an :class:`EncoderModel`."""
    from ..common.keras import mlp

    if spec is None or not isinstance(spec, (ConvEncoder, Module)):
        return mlp(weights, activation, output)
    return EncoderModel(spec, obs_shape, weights, output, scale)


class KerasNetworks:
    """The agent side of :class:`~note_rl.agents.nets.NetworkSetup` on Keras: its networks built from
    ``self.network`` on ``self.device``, and a user layer's initial weights."""

    def _net(self, weights: Sequence[np.ndarray], output: str = "linear") -> keras.Model:
        with tf.device(self.device):  # type: ignore[attr-defined]
            return build_net(self.network, self.obs_shape, weights, self.activation, output,
                         self.input_scale())  # type: ignore[attr-defined]

    def _module_weights(self, spec: Module, obs_shape: Sequence[int], seed: int | None) -> tuple[list[np.ndarray], int]:
        return module_weights(spec, obs_shape, seed)
