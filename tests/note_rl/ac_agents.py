"""A small deterministic actor-critic (DDPG-style) written twice, once per backend, with the same
maths and the same starting weights, for the multi-loss conformance tests.

``spec="algorithm"``: the agent declares its update (``update_spec``): the critic's TD loss every
update, the actor's loss ``-Q(s, mu(s))`` every ``policy_delay`` updates (after the critic step, so
it sees the updated critic), Polyak targets every ``policy_delay`` updates (TD3's schedule).
``spec="list"`` / ``"dict"``: Note_rl's contract: ``self.param = [actor, critic]`` (or a dict) and
``__call__`` returns ``[actor_loss, critic_loss]`` (or a dict), one optimizer per group.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from note_rl.agents.common import init_mlp
from note_rl.update import LossTerm, ParamGroup, TargetUpdate, UpdateSpec

OBS, ACT, HIDDEN = 3, 1, 8


def initial_weights(seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return init_mlp([OBS, HIDDEN, ACT], rng), init_mlp([OBS + ACT, HIDDEN, 1], rng)


class _Common:
    """Backend-free parts: the spec and the group layout."""

    gamma, tau, policy_delay, bound = 0.9, 0.05, 2, 2.0

    def _setup(self, spec: str, seed: int, env: Any) -> None:
        self.spec_kind = spec
        self.env = env if env is not None else gym.make("Pendulum-v1")
        actor, critic = initial_weights(seed)
        self._build(actor, critic)
        a, c = self.actor_vars(), self.critic_vars()
        self.param = {"actor": a, "critic": c} if spec == "dict" else [a, c]

    def update_spec(self) -> UpdateSpec:
        if self.spec_kind != "algorithm":
            return super().update_spec()
        return UpdateSpec(
            groups=[ParamGroup("actor", self.actor_vars()), ParamGroup("critic", self.critic_vars())],
            terms=[LossTerm(self.critic_loss, ["critic"]),
                   LossTerm(self.actor_loss, ["actor"], every=self.policy_delay)],
            targets=[TargetUpdate(self.critic_target, self.critic, self.tau, every=self.policy_delay),
                     TargetUpdate(self.actor_target, self.actor, self.tau, every=self.policy_delay)])

    def __call__(self, s: Any, a: Any, next_s: Any, r: Any, d: Any) -> Any:
        actor_loss, critic_loss = self.actor_loss(s, a, next_s, r, d), self.critic_loss(s, a, next_s, r, d)
        if self.spec_kind == "dict":
            return {"critic": critic_loss, "actor": actor_loss}  # any key order
        return [actor_loss, critic_loss]

    def update_param(self) -> None:
        if self.spec_kind == "algorithm":
            return
        for t, s in ((self.critic_target, self.critic), (self.actor_target, self.actor)):
            self.backend.update_targets(self.backend.module_variables(t), self.backend.module_variables(s), self.tau)


def torch_agent(spec: str = "algorithm", seed: int = 0, env: Any = None) -> Any:
    import torch

    from note_rl.agents.torch import MLP
    from note_rl.torch import RL_pytorch

    class TorchAC(_Common, RL_pytorch):
        def __init__(self) -> None:
            RL_pytorch.__init__(self)
            self._setup(spec, seed, env)

        def _build(self, actor: list[np.ndarray], critic: list[np.ndarray]) -> None:
            self.actor, self.actor_target = MLP(actor), MLP(actor)
            self.critic, self.critic_target = MLP(critic), MLP(critic)

        def actor_vars(self) -> list[Any]:
            return list(self.actor.parameters())

        def critic_vars(self) -> list[Any]:
            return list(self.critic.parameters())

        def action(self, s: Any) -> Any:
            return self.bound * torch.tanh(self.actor(s))

        def critic_loss(self, s: Any, a: Any, next_s: Any, r: Any, d: Any) -> Any:
            with torch.no_grad():
                next_a = self.bound * torch.tanh(self.actor_target(next_s))
                y = r + self.gamma * (1.0 - d) * self.critic_target(torch.cat([next_s, next_a], 1))[:, 0]
            q = self.critic(torch.cat([s, a.reshape(-1, ACT)], 1))[:, 0]
            return ((q - y) ** 2).mean()

        def actor_loss(self, s: Any, a: Any, next_s: Any, r: Any, d: Any) -> Any:
            return -self.critic(torch.cat([s, self.action(s)], 1)).mean()

    return TorchAC()


def keras_agent(spec: str = "algorithm", seed: int = 0, env: Any = None) -> Any:
    import tensorflow as tf

    from note_rl.agents.keras import mlp
    from note_rl.keras import RL

    class KerasAC(_Common, RL):
        def __init__(self) -> None:
            RL.__init__(self)
            self._setup(spec, seed, env)

        def _build(self, actor: list[np.ndarray], critic: list[np.ndarray]) -> None:
            self.actor, self.actor_target = mlp(actor), mlp(actor)
            self.critic, self.critic_target = mlp(critic), mlp(critic)

        def actor_vars(self) -> list[Any]:
            return self.actor.trainable_weights

        def critic_vars(self) -> list[Any]:
            return self.critic.trainable_weights

        def action(self, s: Any) -> Any:
            return self.bound * tf.tanh(self.actor(s))

        def critic_loss(self, s: Any, a: Any, next_s: Any, r: Any, d: Any) -> Any:
            next_a = self.bound * tf.tanh(self.actor_target(next_s))
            y = tf.stop_gradient(r + self.gamma * (1.0 - d) *
                                 self.critic_target(tf.concat([next_s, next_a], 1))[:, 0])
            q = self.critic(tf.concat([s, tf.reshape(a, [-1, ACT])], 1))[:, 0]
            return tf.reduce_mean((q - y) ** 2)

        def actor_loss(self, s: Any, a: Any, next_s: Any, r: Any, d: Any) -> Any:
            return -tf.reduce_mean(self.critic(tf.concat([s, self.action(s)], 1)))

    return KerasAC()


def make(backend: str, spec: str = "algorithm", seed: int = 0, env: Any = None) -> Any:
    return (torch_agent if backend == "torch" else keras_agent)(spec, seed, env)


def sgd(backend: str, variables: Any, lr: float) -> Any:
    if backend == "torch":
        import torch

        return torch.optim.SGD(variables, lr=lr)
    import keras

    return keras.optimizers.SGD(learning_rate=lr)


def batch(rng: np.random.Generator, n: int = 16) -> list[np.ndarray]:
    return [rng.normal(size=(n, OBS)).astype(np.float32), rng.uniform(-2, 2, (n, ACT)).astype(np.float32),
            rng.normal(size=(n, OBS)).astype(np.float32), rng.normal(size=n).astype(np.float32),
            (rng.random(n) < 0.2).astype(np.float32)]
