"""Network building blocks every PyTorch agent shares: the :class:`MLP` and the :class:`Critics`
(critics and their targets) of DDPG, TD3, SAC and MADDPG."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...backends import torch_backend as _torch_backend  # noqa: F401,I001 - says how to install PyTorch when missing
import torch

from ...core.runners import SDE_EPS

__all__ = ["MLP", "Critics", "q_values", "sde_sigma"]


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

    def forward_hidden(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(output, last hidden layer)`` in one pass (SAC's gSDE reads the features its output
        layer sees)."""
        layers = self._params
        for i in range(len(layers) // 2 - 1):
            x = self.act(torch.addmm(layers[2 * i + 1], x, layers[2 * i]))
        out = torch.addmm(layers[-1], x, layers[-2])
        return (torch.tanh(out) if self.squash else out), x

    def numpy_weights(self) -> list[np.ndarray]:
        # on the CPU zero-copy views (the optimizer updates the parameters in place); copies from a GPU
        return [p.detach().cpu().numpy() for p in self.layers]


def sde_sigma(z: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """gSDE: each action dimension's standard deviation at the states whose features are ``z``,
    ``sqrt(z**2 @ std**2 + 1e-6)`` (``std`` the ``(features, action_dim)`` matrix; SAC, PPO, A2C)."""
    return torch.sqrt(z.pow(2) @ std.pow(2) + SDE_EPS)


def q_values(critics: Any, s: torch.Tensor, a: torch.Tensor) -> list[torch.Tensor]:
    """``[Q_i(s, a)]`` of each critic, on the state and action concatenated."""
    x = torch.cat([s, a], dim=1)
    return [critic(x)[:, 0] for critic in critics]


class Critics:
    """Twin (or more) critics and their targets as ``ModuleList`` attributes (checkpointed by name)."""

    def _build_critics(self, critics: Sequence[list[np.ndarray]], activation: str) -> None:
        self.critics = torch.nn.ModuleList([MLP(w, activation) for w in critics]).to(self.device)
        self.critic_targets = torch.nn.ModuleList([MLP(w, activation) for w in critics]).to(self.device)

    def _load_critics(self, critics: Sequence[list[np.ndarray]]) -> None:
        for nets in (self.critics, self.critic_targets):
            for net, w in zip(nets, critics):
                self.backend.set_weights(list(net.parameters()), w)
