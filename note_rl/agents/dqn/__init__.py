"""Double DQN (van Hasselt et al. 2015, https://arxiv.org/abs/1509.06461), framework-free:
arguments, initial weights, the update spec, numpy acting; ``torch.py`` and ``keras.py`` hold its
network and loss.

Per update, on a batch ``(s, a, r, s', d)`` (n-step returns: ``r`` summed over ``n`` steps)::

    a* = argmax_a' Q(s', a')                       # double DQN (``double=False``: max of Q')
    y  = r + gamma**n * Q'(s', a*) * (1 - d)
    step on  mean(w * l(Q(s, a) - y))              # l: squared error or Huber; w: PR weights
    every update_steps env steps (update_param):  Q' <- (1 - tau) Q' + tau Q
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...update import LossTerm, ParamGroup, TargetUpdate, UpdateSpec
from ..common import (LinearDecay, LiveActor, MLPActor, SeededInit, check_args, check_env_dims, discrete_env,
                      hidden_sizes, init_mlp, pool_form, seed_hidden)
from ..nets import NetworkSetup

__all__ = ["DQNMixin"]


class DQNMixin(NetworkSetup, SeededInit, LinearDecay):
    """Double DQN with an MLP Q-network; shared by ``note_rl.agents.torch.DQN`` and
    ``note_rl.agents.keras.DQN``, which add the network and the loss.

    The loss is ``mean(w * l(Q(s, a) - y))`` with ``y = r + gamma**n * Q_target(s', argmax_a'
    Q(s', a')) * (1 - done)`` (double DQN; ``double=False`` uses ``max Q_target``), ``l`` the
    squared error or the Huber loss, ``w`` importance weights (1 without ``beta``) and ``n`` the
    ``num_steps`` of n-step returns (every stored non-terminal item spans exactly ``n`` steps:
    windows cut short by a time limit are not stored, see :mod:`note_rl.buffers.nstep`).
    ``update_param()`` moves the target network towards the online one by ``tau`` (1.0 = hard
    copy, Note_rl's behaviour).  ``set(seed=s)`` before the
    first gradient step re-draws both networks from ``s`` (see :class:`SeededInit`).
    ``linear_decay=True`` lowers the learning rate linearly to 0 over ``train(steps=...)``, set
    before each training round: with a constant rate the greedy policy of CartPole DQN swings
    between solved and ~120 from one evaluation to the next to the very end of a 50,000-step run
    (BENCHMARKS.md, "A whole tuning job").

    :param state_dim: observation size (``None`` with a ``network`` for image observations)
    :param hidden_size: hidden units (int: one layer, list: several layers)
    :param action_dim: number of discrete actions
    :param gamma: discount
    :param tau: target update rate in ``update_param()`` (1.0 = hard copy)
    :param loss: ``"mse"`` or ``"huber"``
    :param double: double-DQN target (else max over the target network)
    :param env: env instance or gymnasium id (default ``CartPole-v1``)
    :param seed: same as ``set(seed=seed)`` right after construction: the initial weights and
        everything else (without it, ``set(seed=...)`` before training re-draws the weights)
    :param activation: hidden activation, ``"relu"`` or ``"tanh"``
    :param ortho_init: SB3's orthogonal initialisation
    :param max_grad_norm: clip the gradient's global norm (``None``: no clipping; SB3's DQN uses 10)
    :param device: ``auto`` (a GPU when one is present), ``cpu``, ``cuda``, ``cuda:N`` or ``mps``
    :param processes: pool-network workers ``train(pool_network=True)`` uses when it gets none
        (Note_rl's pool DQN; ``DQN(4, 128, 2, 7)``, an integer >= 2 in gamma's place, means it too)
    :param hidden_dim: Note_rl 001's name for ``hidden_size``
    :param linear_decay: lower the learning rate linearly to 0 over ``train(steps=...)``
    :param network: ``None`` (the MLP of ``hidden_size`` / ``activation``) or a network spec or
        ``_target_`` node (:mod:`note_rl.agents.nets`): an encoder (``NatureCNN``, ``MinAtarCNN``, a
        user's module) then a linear layer of Q-values; ``hidden_size`` is then unused
    """

    #: the action spaces the agent handles (a builder refuses an env with others in one line)
    action_kinds = ("discrete",)

    def __init__(self, state_dim: int | None = None, hidden_size: int | Sequence[int] | None = None,
                 action_dim: int | None = None,
                 gamma: float = 0.99, tau: float = 1.0, loss: str = "mse", double: bool = True,
                 env: Any = None, seed: int | None = None, activation: str = "relu",
                 ortho_init: bool = False, max_grad_norm: float | None = None,
                 device: str | None = "auto", processes: int | None = None,
                 hidden_dim: int | Sequence[int] | None = None, linear_decay: bool = False,
                 network: Any = None) -> None:
        super().__init__()  # the backend's base class (RL_pytorch / RL)
        gamma, self.processes = pool_form("DQN", gamma, processes)
        if network is not None and hidden_size is None and hidden_dim is None:
            hidden_size = 64  # not read: the network's encoder replaces the hidden layers
        hidden_size = seed_hidden("DQN", hidden_size, hidden_dim, action_dim)
        self.device = self.backend.resolve_device(device)
        init = self._setup_dqn(state_dim, hidden_size, action_dim, gamma, tau, loss, double, env, seed,
                               activation, ortho_init, max_grad_norm, linear_decay, network)
        self._build_networks(init, self.activation)
        self._finish_init(gamma, seed)

    def _build_networks(self, q: list[np.ndarray], activation: str) -> None:  # pragma: no cover - per backend
        """``q_net``, ``target_q_net`` (both from ``q``) and ``self.param``."""
        raise NotImplementedError

    def _setup_dqn(self, state_dim: int | None, hidden_size: int | Sequence[int], action_dim: int,
                   gamma: float, tau: float, loss: str, double: bool, env: Any,
                   seed: int | None, activation: str = "relu",
                   ortho_init: bool = False, max_grad_norm: float | None = None,
                   linear_decay: bool = False, network: Any = None) -> list[np.ndarray]:
        if loss not in ("mse", "huber"):
            raise ValueError(f"DQN(loss={loss!r}): use 'mse' or 'huber'")
        check_args("DQN", gamma=gamma, tau=tau, activation=activation, numbers={"max_grad_norm": max_grad_norm},
                   state_dim=state_dim, action_dim=action_dim)
        self.activation = activation
        self.state_dim = None if state_dim is None else int(state_dim)
        self.action_dim = int(action_dim)
        self.hidden = hidden_sizes(hidden_size)
        self.tau = float(tau)
        self.loss_type = loss
        self.double = bool(double)
        if max_grad_norm is not None and not max_grad_norm > 0:
            raise ValueError(f"DQN(max_grad_norm={max_grad_norm!r}): must be > 0 or None")
        self.max_grad_norm = max_grad_norm
        self.env = discrete_env("DQN", env)
        check_env_dims("DQN", self.env, state_dim, action_dim)
        self._setup_network("DQN", network, self.env, state_dim)
        self.ortho_init = bool(ortho_init)
        if not isinstance(linear_decay, (bool, np.bool_)):
            raise ValueError(f"DQN(linear_decay={linear_decay!r}): must be True or False")
        self._init_schedules(linear_decay)  # the lr's, set before each round of gradient steps
        return self.initial_weights(seed)[0]

    def initial_weights(self, seed: int | None) -> tuple[list[np.ndarray]]:
        """``(q_weights,)`` drawn from ``seed``; the target network starts as a copy."""
        rng, gain = np.random.default_rng(seed), 1.0 if self.ortho_init else None
        if self.uses_encoder():
            return (self.net_weights(rng, self.action_dim, gain, seed),)
        return (init_mlp([self.state_dim, *self.hidden, self.action_dim], rng, gain),)

    def update_spec(self) -> UpdateSpec:
        """One group (the Q-network), one loss (the TD loss, clipped to ``max_grad_norm``), and the
        target network moved by ``tau`` whenever ``update_param()`` runs (Note_rl's cadence:
        ``update_steps`` env steps, rl-zoo's ``target_update_interval``)."""
        return UpdateSpec(
            groups=[ParamGroup("q", self.param)],
            terms=[LossTerm(self.__call__, ["q"], max_grad_norm=self.max_grad_norm, name="td")],
            targets=[TargetUpdate(self.target_q_net, self.q_net, self.tau, every=None)])

    def q_weights(self) -> list[np.ndarray]:  # pragma: no cover - implemented per backend
        raise NotImplementedError

    def numpy_actor(self) -> LiveActor | None:
        """The numpy copy of the MLP (``None`` for an encoder network: it acts through the framework)."""
        return None if self.uses_encoder() else LiveActor(self, self.q_weights, "linear", self.activation)

    def worker_actor(self) -> MLPActor | None:
        """Snapshot of the acting network for pool workers (``None`` for an encoder network: the
        training process then acts for the workers)."""
        return None if self.uses_encoder() else MLPActor(self.q_weights(), "linear", self.activation)
