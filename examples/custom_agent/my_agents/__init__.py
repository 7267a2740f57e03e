"""A user's own agent, trained and tuned by ``note-tune`` from a config (see "Your own agent" in
docs/guide/config-objects.md).

``DuelingDQN`` is Wang et al. 2016's dueling architecture (https://arxiv.org/abs/1511.06581):
``Q(s, a) = V(s) + A(s, a) - mean_a A(s, a)``, trained with the double-DQN target and a target
network that follows the online one by Polyak averaging after every gradient step.  It is a plain
``RL_pytorch`` subclass: its constructor takes the env (passed by the tuner), its own fields (set
from ``conf/agent/dueling.yaml``) and a seed; ``update_spec`` declares one parameter group, one
loss and the Polyak target.
"""

from __future__ import annotations

from typing import Any

import torch

from note_rl.torch import RL_pytorch
from note_rl.update import LossTerm, ParamGroup, TargetUpdate, UpdateSpec

__all__ = ["DuelingDQN"]


class DuelingNet(torch.nn.Module):
    """A shared hidden layer, then a value head and an advantage head."""

    def __init__(self, state_dim: int, action_dim: int, hidden: int) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(state_dim, hidden), torch.nn.ReLU())
        self.value = torch.nn.Linear(hidden, 1)
        self.advantage = torch.nn.Linear(hidden, action_dim)

    def forward(self, s: torch.Tensor) -> torch.Tensor:
        h = self.body(s)
        adv = self.advantage(h)
        return self.value(h) + adv - adv.mean(dim=1, keepdim=True)


class DuelingDQN(RL_pytorch):
    """Dueling double DQN with a Polyak-averaged target network.

    :param env: the gymnasium env (given by the tuner)
    :param state_dim: observation size (given by the tuner)
    :param action_dim: number of actions (given by the tuner)
    :param hidden: units of the shared hidden layer
    :param gamma: discount
    :param tau: Polyak rate of the target network, every gradient step
    :param seed: seeds the network initialisation (given by the tuner)
    """

    def __init__(self, env: Any, state_dim: int, action_dim: int, hidden: int = 64, gamma: float = 0.99,
                 tau: float = 0.01, seed: int | None = None) -> None:
        super().__init__()
        if seed is not None:
            torch.manual_seed(seed)
        self.q_net = DuelingNet(state_dim, action_dim, hidden)
        self.target_net = DuelingNet(state_dim, action_dim, hidden)
        self.target_net.load_state_dict(self.q_net.state_dict())
        self.env, self.gamma, self.tau = env, gamma, tau
        self.param = list(self.q_net.parameters())

    def action(self, s: torch.Tensor) -> torch.Tensor:
        return self.q_net(s)

    def __call__(self, s: torch.Tensor, a: torch.Tensor, next_s: torch.Tensor, r: torch.Tensor,
                 d: torch.Tensor) -> torch.Tensor:
        q = self.q_net(s).gather(1, a.long().reshape(-1, 1)).squeeze(1)
        with torch.no_grad():
            best = self.q_net(next_s).argmax(dim=1, keepdim=True)
            target = r + self.gamma * (1.0 - d) * self.target_net(next_s).gather(1, best).squeeze(1)
        return torch.nn.functional.smooth_l1_loss(q, target)

    def update_spec(self) -> UpdateSpec:
        return UpdateSpec(groups=[ParamGroup("q", self.param)],
                          terms=[LossTerm(self.__call__, ["q"], name="td")],
                          targets=[TargetUpdate(self.target_net, self.q_net, tau=self.tau, every=1)])
