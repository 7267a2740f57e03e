"""Networks from config, framework-free: what an agent's ``network`` setting may name, the shapes of
image observations, and the numpy initial weights both backends start from.

An agent network is an **encoder** (the feature extractor) followed by the agent's own **head** (a
linear layer: Q-values, logits, a value).  ``network=None`` keeps the MLP of ``hidden_size`` and
``activation`` exactly as before.  Otherwise ``network`` is one of the specs below, or a config node
with ``_target_`` naming one of them or a user's own module class::

    agent.network={_target_: note_rl.agents.nets.NatureCNN}             # Atari frames (84x84)
    agent.network={_target_: note_rl.agents.nets.MinAtarCNN}            # MinAtar, MiniGrid
    agent.network={_target_: note_rl.agents.nets.MLP, hidden_size: [128, 128], activation: tanh}
    agent.network={_target_: my_pkg.MyEncoder, width: 64}              # my_pkg.MyEncoder(obs_shape, width=64)

Observations reach the network as the env gives them (``uint8`` and ``bool`` images stay so in the
replay buffer, the rollouts and on their way to the device); the encoder is the one place that casts
them to ``float32``, and scales them by 1/255 when the env's observation space is ``uint8``
(``normalize_images``, SB3's rule).

Channel order: an image observation is ``(H, W, C)`` (gymnasium's image envs: MinAtar, MiniGrid,
CarRacing) or ``(C, H, W)`` (frame stacks: ``FrameStackObservation`` over grey Atari frames).
``layout="auto"`` reads ``(C, H, W)`` when the first axis is shorter than the last and ``(H, W, C)``
otherwise (``(4, 84, 84)`` is CHW, ``(10, 10, 4)`` and ``(84, 84, 4)`` are HWC); give ``layout="chw"``
or ``"hwc"`` where that guess is wrong.  Inside, each backend convolves in its own order (PyTorch
NCHW, Keras NHWC) but flattens in ``(H, W, C)`` order and keeps every kernel in Keras's
``(kh, kw, in, out)`` layout, so the same numpy weights give the same network in both.
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping, Sequence

import numpy as np

from ..common import _orthogonal, hidden_sizes

__all__ = ["NetworkSetup", "NetSpec", "MLP", "ConvEncoder", "NatureCNN", "MinAtarCNN", "Module", "network_spec",
           "image_layout", "conv_out_shape", "init_conv_encoder", "LAYOUTS"]

LAYOUTS = ("auto", "hwc", "chw")


class NetSpec:
    """A network named in config (a plain object, not a dataclass: Hydra passes it to the agent's
    constructor as it is, and pickles carry it to spawned trials and pool workers)."""

    def _fields(self) -> dict[str, Any]:
        return dict(vars(self))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._fields().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._fields() == self._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(repr(self))


class MLP(NetSpec):
    """The MLP of the agent's ``hidden_size`` / ``activation`` (``None`` keeps the agent's value):
    ``network={_target_: note_rl.agents.nets.MLP, hidden_size: [128, 128]}`` is the same network as
    ``hidden_size=[128, 128]``, in a form a study can search next to the CNNs.

    :param hidden_size: hidden units (int: one layer, list: several)
    :param activation: ``"relu"`` or ``"tanh"``
    """

    def __init__(self, hidden_size: int | Sequence[int] | None = None, activation: str | None = None) -> None:
        self.hidden_size = None if hidden_size is None else hidden_sizes(hidden_size)
        if activation is not None and activation not in ("relu", "tanh"):
            raise ValueError(f"MLP(activation={activation!r}): use 'relu' or 'tanh'")
        self.activation = activation


class ConvEncoder(NetSpec):
    """Convolutions (ReLU, no padding) then one dense ReLU layer of ``features`` units.

    :param convs: ``[[filters, kernel, stride], ...]``
    :param features: units of the dense layer after the convolutions (the head reads these)
    :param layout: ``"auto"``, ``"hwc"`` or ``"chw"`` (see the module docstring)
    :param normalize_images: scale ``uint8`` observations by 1/255 (SB3's ``normalize_images``)
    """

    def __init__(self, convs: Sequence[Sequence[int]] = ((32, 8, 4), (64, 4, 2), (64, 3, 1)), features: int = 512,
                 layout: str = "auto", normalize_images: bool = True) -> None:
        name = type(self).__name__
        try:
            self.convs = [tuple(int(v) for v in c) for c in convs]
        except (TypeError, ValueError):
            self.convs = []
        if not self.convs or any(len(c) != 3 or min(c) <= 0 for c in self.convs):
            raise ValueError(f"{name}(convs={convs!r}): use a list of [filters, kernel, stride], all positive")
        if isinstance(features, bool) or not isinstance(features, (int, np.integer)) or features <= 0:
            raise ValueError(f"{name}(features={features!r}): must be a positive integer")
        if layout not in LAYOUTS:
            raise ValueError(f"{name}(layout={layout!r}): use one of {LAYOUTS}")
        self.features, self.layout, self.normalize_images = int(features), layout, bool(normalize_images)


class NatureCNN(ConvEncoder):
    """The DQN Nature network (Mnih et al. 2015, https://doi.org/10.1038/nature14236): 32 8x8
    filters stride 4, 64 4x4 stride 2, 64 3x3 stride 1, a dense layer of 512, ReLU throughout (SB3's
    ``NatureCNN``).  Meant for 84x84 frames."""

    def __init__(self, features: int = 512, layout: str = "auto", normalize_images: bool = True) -> None:
        super().__init__(((32, 8, 4), (64, 4, 2), (64, 3, 1)), features, layout, normalize_images)

    def _fields(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k != "convs"}


class MinAtarCNN(ConvEncoder):
    """The MinAtar network (Young and Tian 2019, https://arxiv.org/abs/1903.03176; CleanRL's MinAtar
    DQN): 16 3x3 filters stride 1, a dense layer of 128, ReLU.  Small grids: MinAtar's 10x10,
    MiniGrid's 7x7 views."""

    def __init__(self, features: int = 128, layout: str = "auto", normalize_images: bool = True) -> None:
        super().__init__(((16, 3, 1),), features, layout, normalize_images)

    def _fields(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k != "convs"}


class Module(NetSpec):
    """A user's own encoder class, built as ``target(obs_shape, **kwargs)``: a ``torch.nn.Module`` (torch
    backend) or a ``keras.layers.Layer`` (tf backend) mapping a ``float32`` batch of observations (images
    already scaled to ``[0, 1]``, in the env's own layout) to a batch of feature vectors.  Its initial
    weights come from the framework's initialisers, drawn under the agent's seed.

    :param target: the class's dotted path
    :param kwargs: its other constructor arguments
    """

    def __init__(self, target: str, **kwargs: Any) -> None:
        if not isinstance(target, str) or "." not in target:
            raise ValueError(f"network._target_: {target!r} is not a dotted class path")
        self.target, self.kwargs = target, dict(kwargs)

    def load(self) -> Any:
        """The class ``target`` names."""
        module, _, name = self.target.rpartition(".")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"network._target_: cannot import {self.target!r} ({exc})") from None


_SPECS = {f"note_rl.agents.nets.{cls.__name__}": cls for cls in (MLP, ConvEncoder, NatureCNN, MinAtarCNN, Module)}


def network_spec(value: Any) -> NetSpec | None:
    """The spec an agent's ``network`` argument names: ``None``, a :class:`NetSpec`, or a mapping with
    ``_target_`` (one of this module's classes, or a user's module class -> :class:`Module`)."""
    if value is None or isinstance(value, NetSpec):
        return value
    if not isinstance(value, Mapping) or not isinstance(value.get("_target_"), str):
        raise ValueError(f"network={value!r}: use null, or a node with _target_ (note_rl.agents.nets.NatureCNN, "
                         "note_rl.agents.nets.MinAtarCNN, note_rl.agents.nets.MLP or your module class)")
    kwargs = {str(k): _plain(v) for k, v in value.items() if not str(k).startswith("_")}
    target = value["_target_"]
    cls = _SPECS.get(target)
    if cls is None:
        return Module(target, **kwargs)
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ValueError(f"network: {exc}") from None


def _plain(value: Any) -> Any:
    """A config value (possibly an OmegaConf list or dict) as plain Python."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ListConfig":
        return [_plain(v) for v in value]
    return value


def image_layout(shape: Sequence[int], layout: str = "auto") -> str:
    """``"hwc"`` or ``"chw"`` for an image observation of ``shape`` (see the module docstring)."""
    if len(shape) != 3:
        raise ValueError(f"a convolutional network needs image observations (3 axes); the env's have shape "
                         f"{tuple(shape)}")
    if layout != "auto":
        return layout
    return "chw" if shape[0] < shape[-1] else "hwc"


def conv_out_shape(shape: Sequence[int], spec: ConvEncoder) -> tuple[int, int, int]:
    """``(H, W, C)`` after the convolutions of ``spec`` on observations of ``shape``; refused in one
    line when the image is too small for them."""
    layout = image_layout(shape, spec.layout)
    h, w, c = (shape[1], shape[2], shape[0]) if layout == "chw" else tuple(shape)
    for filters, kernel, stride in spec.convs:
        h, w, c = (h - kernel) // stride + 1, (w - kernel) // stride + 1, filters
        if h <= 0 or w <= 0:
            raise ValueError(f"{type(spec).__name__}: observations of shape {tuple(shape)} ({layout}) are too small "
                             f"for its convolutions {spec.convs}")
    return int(h), int(w), int(c)


def init_conv_encoder(shape: Sequence[int], spec: ConvEncoder, rng: np.random.Generator,
                      ortho: bool = False) -> list[np.ndarray]:
    """``[K0, b0, K1, b1, ..., W, b]`` of the encoder: kernels ``(kh, kw, in, out)`` (Keras's layout),
    the dense layer ``(in, features)``.  Default: torch's rule for ``Conv2d`` / ``Linear``,
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``; ``ortho``: orthogonal with gain ``sqrt(2)`` and zero biases
    (SB3's ``ortho_init`` of its CNNs)."""
    layout = image_layout(shape, spec.layout)
    channels = shape[0] if layout == "chw" else shape[-1]
    h, w, c = conv_out_shape(shape, spec)
    fans = []
    for filters, kernel, _ in spec.convs:
        fans.append(((kernel, kernel, channels, filters), kernel * kernel * channels, filters))
        channels = filters
    fans.append(((h * w * c, spec.features), h * w * c, spec.features))
    weights: list[np.ndarray] = []
    for shape_w, fan_in, fan_out in fans:
        if ortho:
            weights.append((np.sqrt(2.0) * _orthogonal(fan_in, fan_out, rng)).reshape(shape_w).astype(np.float32))
            weights.append(np.zeros(fan_out, np.float32))
        else:
            bound = 1.0 / np.sqrt(fan_in)
            weights.append(rng.uniform(-bound, bound, shape_w).astype(np.float32))
            weights.append(rng.uniform(-bound, bound, (fan_out,)).astype(np.float32))
    return weights


class NetworkSetup:
    """What DQN and PPO (and the agents built on PPO) share to take a ``network``: the spec, the
    observation shape, and the initial weights of an encoder plus a linear head.  The backend class
    supplies ``_module_weights(spec, obs_shape, seed)`` for a user's module."""

    network: NetSpec | None = None
    obs_shape: tuple[int, ...] | None = None
    obs_dtype: str = "float32"

    def _setup_network(self, name: str, network: Any, env: Any, state_dim: Any) -> None:
        """Read ``network`` (after ``self.hidden`` / ``self.activation`` are set: an :class:`MLP`
        spec overrides them) and the env's observation shape; one-line errors name the agent."""
        try:
            spec = network_spec(network)
        except ValueError as exc:
            raise ValueError(f"{name}({exc})" if not str(exc).startswith("network") else f"{name}: {exc}") from None
        self.network = spec
        space = getattr(env, "observation_space", None)
        shape = getattr(space, "shape", None)
        self.obs_shape = tuple(int(s) for s in shape) if shape else None
        self.obs_dtype = str(getattr(space, "dtype", "float32"))
        if isinstance(spec, MLP):
            self.hidden = spec.hidden_size or self.hidden  # type: ignore[has-type]
            self.activation = spec.activation or self.activation  # type: ignore[has-type]
        if self.uses_encoder():
            if self.obs_shape is None:
                raise ValueError(f"{name}(network={spec!r}): the env's observations have no shape")
            if isinstance(spec, ConvEncoder):
                try:
                    conv_out_shape(self.obs_shape, spec)
                except ValueError as exc:
                    raise ValueError(f"{name}(network=...): {exc}") from None
        elif state_dim is None and self.obs_shape is not None and len(self.obs_shape) > 1:
            raise ValueError(f"{name}(network={spec!r}): the env's observations have shape {self.obs_shape}; an MLP "
                             "reads flat vectors (give a convolutional network: NatureCNN, MinAtarCNN)")
        elif state_dim is None:
            raise TypeError(f"{name}() missing required argument: 'state_dim'")

    @property
    def obs_ndim(self) -> int:
        """Axes of one observation as the networks read it (``select_action`` tells one from a batch)."""
        return len(self.obs_shape) if self.uses_encoder() and self.obs_shape else 1

    def input_scale(self) -> float:
        """What the encoder multiplies observations by after casting them to ``float32``: 1/255 for
        ``uint8`` observations (with ``normalize_images``), else 1.  Read off the env's observation
        space, not off each batch's dtype, so an image batch cast to float32 on its way is still scaled."""
        normalize = getattr(self.network, "normalize_images", True)
        return 1.0 / 255.0 if normalize and getattr(self, "obs_dtype", "") == "uint8" else 1.0

    def uses_encoder(self) -> bool:
        """Whether the networks are an encoder plus a head (else today's MLP)."""
        return isinstance(self.network, (ConvEncoder, Module))

    def net_weights(self, rng: np.random.Generator, out_dim: int, head_gain: float | None,
                    seed: int | None) -> list[np.ndarray]:
        """Initial ``[encoder..., W, b]`` of one network with ``out_dim`` outputs (the encoder drawn
        first, then the head: :func:`~note_rl.agents.common.init_mlp` on ``[features, out_dim]``)."""
        from ..common import init_mlp

        spec, ortho = self.network, head_gain is not None
        if isinstance(spec, ConvEncoder):
            encoder = init_conv_encoder(self.obs_shape, spec, rng, ortho)  # type: ignore[arg-type]
            features = spec.features
        else:
            # a user's module: drawn by its framework, from a seed of its own per network
            encoder, features = self._module_weights(spec, self.obs_shape, int(rng.integers(2**31)))
        return encoder + init_mlp([features, out_dim], rng, head_gain)

    def _module_weights(self, spec: Any, obs_shape: Any, seed: int | None) -> tuple[list[np.ndarray], int]:
        raise NotImplementedError  # pragma: no cover - per backend
