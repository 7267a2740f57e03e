"""A user's own encoder for ``agent.network`` (docs/guide/networks.md, "Your own module"): built as
``MyEncoder(obs_shape, width=...)``; the agent puts its own linear head after it."""

import math

import torch


class MyEncoder(torch.nn.Module):  # backend=torch; a keras.layers.Layer for backend=tf
    """Flatten, one dense layer of ``width`` units, ReLU."""

    def __init__(self, obs_shape: tuple[int, ...], width: int = 64) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(math.prod(obs_shape), width),
                                       torch.nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # float32, images already scaled, the env's layout
        return self.net(x)  # (batch, width)
