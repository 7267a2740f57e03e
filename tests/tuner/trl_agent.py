"""A user agent whose loss reads trajectory-triplet pairs (``buffer=trajectory``), built from config
with ``agent._target_=tests.tuner.trl_agent.PairAgent``."""

from __future__ import annotations

from typing import Any

import torch

from note_rl.torch import RL_pytorch

SHAPES: list[tuple[int, ...]] = []


class PairAgent(RL_pytorch):
    # the dqn agent config's constructor keys are accepted (and unused) so that agent=dqn's file can be
    # reused with only its _target_ changed
    def __init__(self, env: Any = None, seed: int | None = None, state_dim: int = 4, action_dim: int = 2,
                 hidden_size: Any = None, activation: str = "relu", ortho_init: bool = False, gamma: float = 0.99,
                 tau: float = 1.0, loss: str = "mse", double: bool = True, max_grad_norm: float | None = None,
                 device: Any = None, linear_decay: bool = False, network: Any = None) -> None:
        super().__init__()
        torch.manual_seed(seed or 0)
        self.q = torch.nn.Linear(state_dim, action_dim)
        self.param = list(self.q.parameters())
        self.env = env

    def action(self, s: torch.Tensor) -> torch.Tensor:
        return self.q(s)

    def __call__(self, s, a, next_s, r, d):
        SHAPES.append(tuple(s.shape))
        return ((self.q(s[:, 0]) - self.q(next_s[:, 1]).detach()) ** 2).mean()
