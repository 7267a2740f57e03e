"""Networks from config on the PyTorch backend: an encoder (the built-in convolutional stacks or a
user's own ``nn.Module``) followed by a linear head (see :mod:`note_rl.agents.nets`)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...backends import torch_backend as _torch_backend  # noqa: F401,I001 - says how to install PyTorch when missing
import torch

from . import ConvEncoder, Module, NetSpec, image_layout

__all__ = ["EncoderNet", "TorchNetworks", "as_float", "module_weights", "build_net"]


def as_float(x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """Observations as the layers read them, cast here and nowhere else: ``float32``, times ``scale``
    (1/255 for ``uint8`` images, :meth:`~note_rl.agents.nets.NetworkSetup.input_scale`)."""
    x = x if x.dtype == torch.float32 else x.float()
    return x * scale if scale != 1.0 else x


def _param(a: np.ndarray) -> torch.nn.Parameter:
    return torch.nn.Parameter(torch.as_tensor(np.array(a, dtype=np.float32)))


class _ConvStack(torch.nn.Module):
    """The convolutions and dense layer of a :class:`~note_rl.agents.nets.ConvEncoder`, kernels kept
    in Keras's ``(kh, kw, in, out)`` layout and the conv output flattened in ``(H, W, C)`` order, so
    weights pass between the backends unchanged."""

    def __init__(self, spec: ConvEncoder, obs_shape: Sequence[int], weights: Sequence[np.ndarray]) -> None:
        super().__init__()
        self.hwc = image_layout(obs_shape, spec.layout) == "hwc"
        self.strides = [stride for _, _, stride in spec.convs]
        self.layers = torch.nn.ParameterList([_param(w) for w in weights])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.hwc:
            x = x.permute(0, 3, 1, 2)  # NHWC -> NCHW, what conv2d reads
        layers = list(self.layers)
        for i, stride in enumerate(self.strides):
            kernel = layers[2 * i].permute(3, 2, 0, 1)  # (kh, kw, in, out) -> (out, in, kh, kw)
            x = torch.relu(torch.nn.functional.conv2d(x, kernel, layers[2 * i + 1], stride=stride))
        x = x.permute(0, 2, 3, 1).flatten(1)  # flattened as Keras flattens NHWC
        return torch.relu(torch.addmm(layers[-1], x, layers[-2]))


class _Head(torch.nn.Module):
    def __init__(self, weights: Sequence[np.ndarray]) -> None:
        super().__init__()
        self.weight, self.bias = _param(weights[0]), _param(weights[1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x, self.weight)


def _user_module(spec: Module, obs_shape: Sequence[int]) -> torch.nn.Module:
    module = spec.load()(tuple(int(s) for s in obs_shape), **spec.kwargs)
    if not isinstance(module, torch.nn.Module):
        raise ValueError(f"network._target_: {spec.target} built a {type(module).__name__}, not a torch.nn.Module "
                         "(backend=torch)")
    return module


def module_weights(spec: Module, obs_shape: Sequence[int], seed: int | None) -> tuple[list[np.ndarray], int]:
    """A fresh user module's initial weights, drawn from torch's generator seeded with ``seed`` (the
    global generator is left as it was), and the size of its feature vector."""
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(int(seed))
        module = _user_module(spec, obs_shape)
    with torch.no_grad():
        out = module(torch.zeros((1, *obs_shape), dtype=torch.float32))
    if out.ndim != 2:
        raise ValueError(f"network._target_: {spec.target} returns shape {tuple(out.shape)}; an encoder returns "
                         "(batch, features)")
    return [p.detach().cpu().numpy().copy() for p in module.parameters()], int(out.shape[1])


class EncoderNet(torch.nn.Module):
    """``head(encoder(obs))``: the encoder of ``spec`` on observations of ``obs_shape``, then a linear
    head; ``weights`` lists the encoder's arrays then the head's ``[W, b]`` (``W`` as ``(in, out)``).

    :param output: ``"linear"`` or ``"tanh"`` (actions in ``[-1, 1]``)
    :param scale: what observations are multiplied by once cast to ``float32`` (1/255: ``uint8`` images)
    """

    def __init__(self, spec: NetSpec, obs_shape: Sequence[int], weights: Sequence[np.ndarray],
                 output: str = "linear", scale: float = 1.0) -> None:
        super().__init__()
        self.scale = float(scale)
        self.squash = output == "tanh"
        if isinstance(spec, ConvEncoder):
            self.encoder: torch.nn.Module = _ConvStack(spec, obs_shape, weights[:-2])
        else:
            self.encoder = _user_module(spec, obs_shape)
            with torch.no_grad():
                for p, w in zip(self.encoder.parameters(), weights[:-2]):
                    p.copy_(torch.as_tensor(np.asarray(w)))
        self.head = _Head(weights[-2:])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.head(self.encoder(as_float(x, self.scale)))
        return torch.tanh(out) if self.squash else out

    def numpy_weights(self) -> list[np.ndarray]:
        return [p.detach().cpu().numpy() for p in self.parameters()]


def build_net(spec: Any, obs_shape: Sequence[int], weights: Sequence[np.ndarray], activation: str,
              output: str = "linear", scale: float = 1.0) -> torch.nn.Module:
    """The network of ``spec``: today's :class:`~note_rl.agents.common.torch.MLP` when ``spec`` is
    ``None`` or an MLP, else an :class:`EncoderNet`."""
    from ..common.torch import MLP

    if spec is None or not isinstance(spec, (ConvEncoder, Module)):
        return MLP(weights, activation, output)
    return EncoderNet(spec, obs_shape, weights, output, scale)


class TorchNetworks:
    """The agent side of :class:`~note_rl.agents.nets.NetworkSetup` on PyTorch: its networks built
    from ``self.network`` on ``self.device``, and a user module's initial weights."""

    def _net(self, weights: Sequence[np.ndarray], output: str = "linear") -> torch.nn.Module:
        return build_net(self.network, self.obs_shape, weights, self.activation, output,
                         self.input_scale()).to(self.device)  # type: ignore[attr-defined]

    def _module_weights(self, spec: Module, obs_shape: Sequence[int], seed: int | None) -> tuple[list[np.ndarray], int]:
        return module_weights(spec, obs_shape, seed)
