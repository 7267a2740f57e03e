"""Network building blocks of the PyTorch agents, shared by :mod:`note_rl.agents.torch` (DQN, PPO,
A2C) and :mod:`note_rl.agents.torch_ac` (DDPG, TD3, SAC, MADDPG); both import from here, so neither
imports the other's networks."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..backends import torch_backend as _torch_backend  # noqa: F401,I001 - says how to install PyTorch when missing
import torch

__all__ = ["MLP"]


class MLP(torch.nn.Module):
    """ReLU MLP with weights stored as ``(in, out)`` matrices (the Keras ``Dense`` layout), so the
    two backends exchange weights without transposes.

    :param weights: initial ``[W0, b0, W1, b1, ...]``
    :param activation: ``"relu"`` or ``"tanh"``
    :param output: ``"linear"`` or ``"tanh"`` (actions in ``[-1, 1]``)
    """

    def __init__(self, weights: Sequence[np.ndarray], activation: str = "relu", output: str = "linear") -> None:
        super().__init__()
        # in place on the fresh output of the layer's addmm (neither op's backward needs the
        # pre-activation): a CPU step writes one hidden-sized buffer less per layer, and writing
        # freshly allocated memory is what costs (TD3 [400, 300]: 3 % of a training step)
        self.act = torch.tanh_ if activation == "tanh" else torch.relu_
        self.squash = output == "tanh"
        self.layers = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.as_tensor(np.array(w, dtype=np.float32))) for w in weights])
        self._params = tuple(self.layers)

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> "MLP":
        out = super()._apply(fn, *args, **kwargs)
        self._params = tuple(self.layers)  # .to() / .double() may have made new Parameters
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # the parameters read once per forward from a cached tuple: ``self.layers.parameters()``
        # costs ~10 us of Python per call, 2-3 % of a DQN run of 20,000 steps
        layers = self._params
        n = len(layers) // 2
        for i in range(n):
            x = torch.addmm(layers[2 * i + 1], x, layers[2 * i])  # one fused op per layer
            if i < n - 1:
                x = self.act(x)
        return torch.tanh(x) if self.squash else x

    def numpy_weights(self) -> list[np.ndarray]:
        # on the CPU zero-copy views (the optimizer updates the parameters in place); copies from a GPU
        return [p.detach().cpu().numpy() for p in self.layers]
