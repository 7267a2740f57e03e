"""Write a greedy policy (:class:`note_rl.inference.PolicySpec`) as TorchScript, and as ONNX where
the ``onnx`` package is installed.

The file holds the whole computation, observations (float32, ``(batch, state_dim)``) to actions (int64
indices, or float32 actions in the env's own bounds): ``torch.jit.load(path)(obs)`` needs PyTorch
only, never note_rl.  ``policy.json`` inside the TorchScript archive (``_extra_files``) describes it.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np

from . import require_framework

require_framework("torch")
import torch  # noqa: E402

__all__ = ["PolicyModule", "save_torchscript", "save_onnx"]


class PolicyModule(torch.nn.Module):
    """The MLP and head of a :class:`~note_rl.inference.PolicySpec` as a ``torch.nn.Module``."""

    def __init__(self, spec: Any) -> None:
        super().__init__()
        layers = []
        for w, b in zip(spec.weights[0::2], spec.weights[1::2]):
            layer = torch.nn.Linear(w.shape[0], w.shape[1])
            with torch.no_grad():
                layer.weight.copy_(torch.from_numpy(np.ascontiguousarray(w.T)))
                layer.bias.copy_(torch.from_numpy(np.asarray(b)))
            layers.append(layer)
        self.layers = torch.nn.ModuleList(layers)
        self.tanh_hidden = spec.activation == "tanh"
        self.output = spec.output
        self.discrete, self.half, self.squash = spec.discrete, spec.half, spec.squash
        self.has_clip, self.has_rescale = spec.clip is not None, spec.rescale is not None
        zero = np.zeros(1, np.float32)
        (lo, hi), (low, high) = spec.rescale if spec.rescale is not None else ((zero, zero + 1), (zero, zero + 1))
        clip = spec.clip if spec.clip is not None else (zero, zero)
        # set(normalize=...): the frozen observation statistics, applied to the raw observations first
        self.has_norm = spec.obs_norm is not None
        mean, scale, limit = spec.obs_norm if spec.obs_norm is not None else (zero, zero + 1, 1.0)
        self.obs_clip = float(limit)
        self.register_buffer("obs_mean", torch.from_numpy(np.asarray(mean, np.float32).copy()))
        self.register_buffer("obs_scale", torch.from_numpy(np.asarray(scale, np.float32).copy()))
        for name, value in (("clip_low", clip[0]), ("clip_high", clip[1]), ("net_low", lo), ("net_high", hi),
                            ("env_low", low), ("env_high", high)):
            self.register_buffer(name, torch.from_numpy(np.asarray(value, np.float32).copy()))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        x = obs
        if self.has_norm:
            x = torch.clamp((x - self.obs_mean) / self.obs_scale, -self.obs_clip, self.obs_clip)
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.tanh(x) if self.tanh_hidden else torch.relu(x)
        if self.output == "softmax":
            x = torch.softmax(x, dim=-1)
        elif self.output == "tanh":
            x = torch.tanh(x)
        if self.discrete:
            return torch.argmax(x, dim=-1)
        if self.half:
            x = x[:, : x.shape[1] // 2]
        if self.squash:
            x = torch.tanh(x)
        if self.has_clip:
            x = torch.minimum(torch.maximum(x, self.clip_low), self.clip_high)
        if self.has_rescale:
            x = self.env_low + (self.env_high - self.env_low) * ((x - self.net_low) / (self.net_high - self.net_low))
        return x


def _module(spec: Any) -> torch.nn.Module:
    module = PolicyModule(spec).eval()
    module.requires_grad_(False)  # inference only: the actions come back without a graph
    return module


def save_torchscript(spec: Any, path: str, meta: dict[str, Any]) -> None:
    """``path``: a TorchScript archive (``torch.jit.script``) of the policy."""
    with warnings.catch_warnings():
        # torch 2.13 marks TorchScript deprecated in favour of torch.export, whose .pt2 files only
        # PyTorch reads; TorchScript is what libtorch (C++) and most serving tools still load
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(_module(spec))
        torch.jit.save(scripted, path, _extra_files={"policy.json": json.dumps(meta)})


def save_onnx(spec: Any, path: str, meta: dict[str, Any]) -> None:
    """``path``: an ONNX graph of the policy, input ``obs`` ``(batch, state_dim)``, output ``action``,
    ``policy.json`` in its metadata.  Written with PyTorch's TorchScript-based exporter, which needs
    the ``onnx`` package only (the torch.export-based one also needs ``onnxscript``; for an MLP both
    give the same graph)."""
    import onnx

    example = torch.zeros(2, spec.state_dim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(_module(spec), (example,), path, input_names=["obs"], output_names=["action"],
                          dynamic_axes={"obs": {0: "batch"}, "action": {0: "batch"}}, dynamo=False)
    model = onnx.load(path)
    entry = model.metadata_props.add()
    entry.key, entry.value = "policy.json", json.dumps(meta)
    onnx.checker.check_model(model)
    onnx.save(model, path)
