"""PPO (Schulman et al. 2017, https://arxiv.org/abs/1707.06347), framework-free: arguments, action
spaces, initial weights, the update spec, the objective, numpy acting; ``torch.py`` and ``keras.py``
hold its networks and the log-probabilities, ratio and entropy the objective is made of.

Two classes, one per way of training, built by ``PPO(...)`` from ``n_steps`` (both are
subclasses of the backend's ``PPO``, named ``PPO.Replay`` and ``PPO.Rollout``, and both say ``PPO``
in messages, run names, checkpoints and exports):

* ``n_steps=None`` (Note_rl style, :class:`ReplayMode`): transitions go to the replay buffer, the
  advantage is the TD error ``r + gamma**n * V(s') * (1 - d) - V(s)`` (``n = num_steps``, 1 without
  n-step returns), the ratio is taken against ``actor_old`` (synchronised by ``update_param()``,
  i.e. every ``update_steps`` / ``update_batches``), which also acts.  Works with ``PR=True``
  (score from TD and ratio) and ``pool_network=True``.  Discrete actions.
* ``n_steps=k`` (:class:`RolloutMode`): on-policy rollouts of ``k`` steps in ``n_envs`` vectorised
  envs, GAE(``lam``), ``n_epochs`` passes of mini-batches of ``batch``, advantages normalised per
  mini-batch, value loss weighted by ``vf_coef``, optional gradient-norm clip ``max_grad_norm`` and
  linear decay of the learning rate and clip range over the ``steps`` budget (rl-zoo's CartPole
  settings).

The loss is ``-mean(min(ratio * A, clip(ratio, 1 - c, 1 + c) * A)) + vf_coef * value_loss
- entropy_coef * mean(entropy)``; the entropy term is a bonus (Note_rl's sign was inverted).

Actions: a softmax over a ``Discrete`` space, or for a ``Box`` space a diagonal Gaussian whose mean
is the actor's output and whose log standard deviation is one learned vector, independent of the
state (``log_std_init`` to start; SB3's ``MlpPolicy``).  Gaussian actions are stored as sampled
and clipped to the env's bounds only when played; they need rollouts (``n_steps``).

With ``use_sde=True`` (Box actions, rollouts) the Gaussian is gSDE's (Raffin et al. 2022,
https://jmlr.org/papers/v23/21-0360.html; SB3's ``use_sde`` for PPO and A2C)::

    z = phi(s)                          # the actor's last hidden layer, held constant for the noise
    E_i ~ N(0, exp(log_std)**2)         # one (len(z), action_dim) matrix per env copy, log_std learned
    a = mu(s) + z E_i                   # held E_i: drawn at each rollout's start, or every sde_sample_freq steps
    log pi(a|s) = log N(a; mu(s), z**2 exp(log_std)**2 + 1e-6),   H = its (state-dependent) entropy

so an env copy's exploration is a smooth function of the state over a rollout, not white noise (what
rl-zoo3's presets use on MountainCarContinuous, Pendulum and the walkers).

Per update, on a mini-batch, both classes minimise the same objective (:class:`PPOLoss`)::

    ratio = exp(log pi(a|s) - log pi_old(a|s))
    L     = -mean(min(ratio * A, clip(ratio, 1 - c, 1 + c) * A))        # clipped surrogate
            + vf_coef * mean((V(s) - V_target)**2) - entropy_coef * mean(H(pi(.|s)))
    step actor and critic on L (one optimizer or one per group), clipped to max_grad_norm

and differ only in where ``A``, ``V_target`` and ``pi_old`` come from: replay: ``A = V_target -
V(s)`` with ``V_target = r + gamma**n V(s') (1 - d)``, ``pi_old`` = ``actor_old``, copied from the
actor at ``update_param()``; rollouts: ``A`` = GAE(``lam``), ``V_target = A + V_old(s)``, ``pi_old`` =
the policy that collected the rollout.

A2C (Mnih et al. 2016, https://arxiv.org/abs/1602.01783; :mod:`note_rl.agents.a2c`) is ``PPO.Rollout``
with one gradient step per rollout on the plain policy gradient ``-mean(log pi(a|s) * A)``; TRPO
(:mod:`note_rl.agents.trpo`) is ``PPO.Rollout`` with a natural-gradient policy step.
"""

from __future__ import annotations

import inspect
from typing import Any, Self, Sequence

import gymnasium as gym
import numpy as np

from ...core.runners import StateDependentNoise, sample_rollout_actions
from ...policy import SoftmaxPolicy
from ...utils import log_softmax
from ...update import LossTerm, ParamGroup, TargetUpdate, UpdateSpec
from ..common import (LinearDecay, LiveActor, MLPActor, SeededInit, check_args, check_env_dims, check_sde,
                      hidden_sizes, init_mlp, make_env, with_features)
from ..nets import NetworkSetup

__all__ = ["PPOLoss", "PPOMixin", "ReplayMode", "RolloutMode", "entropy_np"]


class PPOLoss:
    """The loss both classes minimise, from the pieces each backend computes on its tensors
    (``_log_prob``, ``_surrogate``, ``_entropy``)::

        L = policy_loss(log pi(a|s), log pi_old(a|s), A) + vf_coef * value_loss - entropy_coef * H

    ``policy_loss`` is PPO's clipped surrogate (A2C overrides it with the plain policy gradient)."""

    vf_coef: float
    entropy_coef: float

    def objective(self, policy_loss: Any, value_loss: Any, out: Any) -> Any:
        """``policy_loss + vf_coef * value_loss - entropy_coef * entropy(out)`` (``out``: the actor's
        output on the mini-batch; the entropy term is a bonus, Note_rl's sign was inverted, and is
        left out of the graph when its weight is 0)."""
        loss = policy_loss + self.vf_coef * value_loss
        return loss - self.entropy_coef * self._entropy(out) if self.entropy_coef else loss

    def policy_loss(self, logp: Any, logp_old: Any, adv: Any) -> Any:
        """PPO's clipped surrogate ``-mean(min(ratio * A, clip(ratio, 1 - c, 1 + c) * A))``."""
        return self._surrogate(logp, logp_old, adv)[0]

    # per backend, on its tensors
    def _log_prob(self, out: Any, a: Any) -> Any:  # pragma: no cover
        """``log pi(a|s)`` from the actor's output (logits, or the Gaussian's mean)."""
        raise NotImplementedError

    def _surrogate(self, logp: Any, logp_old: Any, adv: Any) -> tuple[Any, Any]:  # pragma: no cover
        """The clipped surrogate loss and the ratio (replay mode scores PR items with it)."""
        raise NotImplementedError

    def _entropy(self, out: Any) -> Any:  # pragma: no cover
        raise NotImplementedError


class PPOMixin(PPOLoss, NetworkSetup, SeededInit, LinearDecay):
    """PPO with a softmax (discrete) or state-independent Gaussian (Box) actor and a value critic;
    shared by ``note_rl.agents.torch.PPO`` and ``note_rl.agents.keras.PPO``, which add the networks.
    ``PPO(...)`` builds ``PPO.Replay`` (``n_steps=None``, :class:`ReplayMode`) or ``PPO.Rollout``
    (``n_steps=k``, :class:`RolloutMode`), both subclasses of ``PPO``.  ``set(seed=s)`` before the
    first gradient step re-draws the networks from ``s`` (see :class:`SeededInit`).

    :param state_dim: observation size (``None`` with a ``network`` for image observations)
    :param hidden_size: hidden units (int or list)
    :param action_dim: number of discrete actions, or the size of a Box action
    :param clip: clip range of the probability ratio
    :param entropy_coef: weight of the entropy bonus
    :param gamma: discount
    :param lam: GAE lambda (rollout mode)
    :param n_steps: rollout length per env; ``None`` trains from the replay buffer (Note_rl style)
    :param n_envs: vectorised envs in rollout mode
    :param n_epochs: passes over each rollout
    :param vf_coef: weight of the value loss
    :param normalize_advantage: normalise advantages per mini-batch (rollout mode)
    :param max_grad_norm: clip the global gradient norm (``None``: no clipping)
    :param linear_decay: decay lr and clip linearly to 0 over ``train(steps=...)`` (rollout mode)
    :param env: env instance or gymnasium id (default ``CartPole-v1``)
    :param seed: same as ``set(seed=seed)`` right after construction: the initial weights and
        everything else (without it, ``set(seed=...)`` before training re-draws the weights)
    :param activation: hidden activation, ``"relu"`` or ``"tanh"``
    :param ortho_init: SB3's orthogonal initialisation
    :param log_std_init: starting log standard deviation of the Gaussian policy (Box actions)
    :param use_sde: explore with gSDE (Box actions on rollouts, MLP actor; see the module docstring)
    :param sde_sample_freq: gSDE: env steps between two exploration matrices (-1: one per rollout)
    :param device: ``auto`` (a GPU when one is present), ``cpu``, ``cuda``, ``cuda:N`` or ``mps``
    :param network: ``None`` (the MLPs of ``hidden_size`` / ``activation``) or a network spec or
        ``_target_`` node (:mod:`note_rl.agents.nets`): the actor and the critic each get their own
        encoder (``NatureCNN``, ``MinAtarCNN``, a user's module) then a linear head; ``hidden_size`` is
        then unused
    """

    SCHEDULED = ("lr", "clip")  # linear_decay decays both (rl-zoo's lin_ lr and clip_range)
    use_sde, sde_sample_freq = False, -1  # class defaults: an agent pickled before gSDE loads without it
    _sde: StateDependentNoise | None = None  # the rollout's exploration matrices (drawn by sde_noise())

    #: the action spaces the agent handles (a builder refuses an env with others in one line)
    action_kinds = ("discrete", "continuous")
    #: the backend's two classes (set by :meth:`name_modes` in ``torch.py`` / ``keras.py``)
    Replay: type
    Rollout: type

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        """``PPO(...)`` is an instance of ``PPO.Rollout`` when ``n_steps`` is given, else of
        ``PPO.Replay``; a class whose mode is decided (those two, A2C, TRPO) builds itself."""
        return super().__new__(cls.mode_class(_given_n_steps(cls, args, kwargs) is not None))

    @classmethod
    def mode_class(cls, rollout: bool) -> type:
        """The class an instance of ``cls`` is built as: ``cls`` when its mode is decided, the
        backend's ``PPO.Rollout`` / ``PPO.Replay`` for ``PPO`` itself, and for a user's subclass of
        ``PPO`` their class over the mode's (built once), so that their overrides come first."""
        if issubclass(cls, (ReplayMode, RolloutMode)):
            return cls
        mode = cls.Rollout if rollout else cls.Replay
        if cls in mode.__bases__:
            return mode
        key = (cls, rollout)
        if key not in _USER_MODES:
            _USER_MODES[key] = type(cls.__name__, (cls, mode), {
                "__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
                "_written_class": cls})
        return _USER_MODES[key]

    @classmethod
    def name_modes(cls, replay: type, rollout: type) -> None:
        """Make the backend's two subclasses ``cls.Replay`` and ``cls.Rollout``.  They keep ``cls``'s
        name, so messages (``PPO(clip=-1): ...``), run names, checkpoints and exports say ``PPO`` as
        before the split, and their qualified names resolve (``note_rl.agents.torch.PPO.Rollout``)."""
        for attr, mode in (("Replay", replay), ("Rollout", rollout)):
            mode.__name__, mode.__module__ = cls.__name__, cls.__module__
            mode.__qualname__ = f"{cls.__qualname__}.{attr}"
            mode._written_class = cls
            setattr(cls, attr, mode)

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        # a pickle names the class the user wrote (PPO, their subclass, A2C) and the mode: a user's
        # subclass in one mode is built at run time, so it has no import path of its own
        written = vars(type(self)).get("_written_class", type(self))  # its own: A2C inherits PPO.Rollout's
        return _new_in_mode, (written, isinstance(self, RolloutMode)), self.__getstate__()

    def __init__(self, state_dim: int | None = None, hidden_size: int | Sequence[int] | None = None,
                 action_dim: int | None = None,
                 clip: float = 0.2, entropy_coef: float = 0.0, gamma: float = 0.99,
                 lam: float = 0.95, n_steps: int | None = None, n_envs: int = 1, n_epochs: int = 10,
                 vf_coef: float = 0.5, normalize_advantage: bool = True,
                 max_grad_norm: float | None = None, linear_decay: bool = False, env: Any = None,
                 seed: int | None = None, activation: str = "relu", ortho_init: bool = False,
                 log_std_init: float = 0.0, device: str | None = "auto", network: Any = None,
                 use_sde: bool = False, sde_sample_freq: int = -1) -> None:
        super().__init__()  # the backend's base class (RL_pytorch / RL)
        self.device = self.backend.resolve_device(device)
        if hidden_size is None and network is not None:
            hidden_size = 64  # not read: the network's encoder replaces the hidden layers
        for arg, value in (("hidden_size", hidden_size), ("action_dim", action_dim)):
            if value is None:
                raise TypeError(f"{type(self).__name__}() missing required argument: {arg!r}")
        actor, critic = self._setup_ppo(state_dim, hidden_size, action_dim, clip, entropy_coef,
                                        gamma, lam, n_steps, n_envs, n_epochs, vf_coef,
                                        normalize_advantage, max_grad_norm, linear_decay, env, seed,
                                        activation, ortho_init, log_std_init, network, use_sde, sde_sample_freq)
        self._build_networks(actor, critic, self.activation)
        self.gamma = self.backend.make_variable(gamma)
        self.clip = self.backend.make_variable(clip, self.device)  # torch.clamp's bounds: on the loss's device
        if seed is not None:
            self.set(seed=seed)

    def _build_networks(self, actor: list[np.ndarray], critic: list[np.ndarray],
                        activation: str) -> None:  # pragma: no cover - per backend
        """``actor``, ``actor_old`` (from ``actor``), ``critic``, the Gaussian's ``log_std`` (Box
        actions, in the actor's group) and ``self.param = [actor_params, critic_params]``."""
        raise NotImplementedError

    def _setup_ppo(self, state_dim: int | None, hidden_size: int | Sequence[int], action_dim: int,
                   clip: float, entropy_coef: float, gamma: float, lam: float,
                   n_steps: int | None, n_envs: int, n_epochs: int, vf_coef: float,
                   normalize_advantage: bool, max_grad_norm: float | None, linear_decay: bool,
                   env: Any, seed: int | None, activation: str = "relu",
                   ortho_init: bool = False,
                   log_std_init: float = 0.0, network: Any = None, use_sde: bool = False,
                   sde_sample_freq: int = -1) -> tuple[list[np.ndarray], list[np.ndarray]]:
        name = type(self).__name__
        check_args(name, gamma=gamma, activation=activation, state_dim=state_dim,
                   numbers={"clip": clip, "entropy_coef": entropy_coef, "lam": lam, "vf_coef": vf_coef,
                            "max_grad_norm": max_grad_norm, "log_std_init": log_std_init})
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"{name}(lam={lam!r}): must be in [0, 1]")
        if clip <= 0:
            raise ValueError(f"{name}(clip={clip!r}): must be > 0")
        for arg, value in (("n_envs", n_envs), ("n_epochs", n_epochs)):
            if int(value) <= 0:
                raise ValueError(f"{name}({arg}={value!r}): must be a positive integer")
        self._setup_mode(n_steps)
        self.env = make_env(env)
        action_dim = self._setup_actions(action_dim, log_std_init)
        check_env_dims(name, self.env, state_dim, action_dim)
        self.activation = activation
        self.state_dim = None if state_dim is None else int(state_dim)
        self.action_dim = int(action_dim)
        self.hidden = hidden_sizes(hidden_size)
        self._setup_network(name, network, self.env, state_dim)
        self._setup_sde(use_sde, sde_sample_freq, network)
        self.clip_init = float(clip)
        self.entropy_coef = float(entropy_coef)
        self.lam = float(lam)
        self.n_envs = int(n_envs)
        self.n_epochs = int(n_epochs)
        self.vf_coef = float(vf_coef)
        self.normalize_advantage = bool(normalize_advantage)
        self.max_grad_norm = max_grad_norm
        self._init_schedules(linear_decay)  # lr and clip, set at the start of each rollout (rollout mode)
        self.ortho_init = bool(ortho_init)
        return self.initial_weights(seed)

    def _setup_mode(self, n_steps: int | None) -> None:  # pragma: no cover - per mode
        """Check ``n_steps`` and set ``n_steps`` and the ``PPO`` flag of this mode."""
        raise NotImplementedError

    def _setup_actions(self, action_dim: int, log_std_init: float) -> int:
        """Discrete (softmax) or Box (Gaussian) actions, from the env's action space."""
        name, space = type(self).__name__, self.env.action_space
        self.continuous = isinstance(space, gym.spaces.Box)
        self.log_std_init = float(log_std_init)
        self.action_bounds: tuple[np.ndarray, np.ndarray] | None = None
        if not self.continuous:
            if not isinstance(space, gym.spaces.Discrete):
                raise ValueError(f"{name} needs a Discrete or Box action space; the env has {space}")
            return action_dim
        size = int(np.prod(space.shape))
        if int(action_dim) != size:
            raise ValueError(f"{name}(action_dim={action_dim}): the env's actions have {size} dimensions")
        self.action_bounds = (space.low.astype(np.float32).ravel(), space.high.astype(np.float32).ravel())
        return size

    def _setup_sde(self, use_sde: bool, sde_sample_freq: int, network: Any) -> None:
        name = type(self).__name__
        self.use_sde, self.sde_sample_freq = check_sde(name, use_sde, sde_sample_freq)
        if self.use_sde and not self.continuous:
            raise ValueError(f"{name}(use_sde=True): gSDE explores Box actions; the env has {self.env.action_space}")
        if self.use_sde and self.uses_encoder():
            raise ValueError(f"{name}(use_sde=True, network={network!r}): gSDE reads the MLP actor's last hidden "
                             "layer; use network=null (hidden_size, activation)")

    def log_std_shape(self) -> tuple[int, ...]:
        """The shape of the learned ``log_std``: one per action dimension, or gSDE's ``(features,
        action_dim)`` matrix."""
        return (self.hidden[-1], self.action_dim) if self.use_sde else (self.action_dim,)

    def initial_weights(self, seed: int | None) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """``(actor, critic)`` weights drawn from ``seed``; ``actor_old`` starts as the actor."""
        rng = np.random.default_rng(seed)
        ortho = self.ortho_init
        # SB3's ortho_init gains: 0.01 for the policy head, 1 for the value head
        if self.uses_encoder():
            return (self.net_weights(rng, self.action_dim, 0.01 if ortho else None, seed),
                    self.net_weights(rng, 1, 1.0 if ortho else None, seed))
        actor = init_mlp([self.state_dim, *self.hidden, self.action_dim], rng, 0.01 if ortho else None)
        critic = init_mlp([self.state_dim, *self.hidden, 1], rng, 1.0 if ortho else None)
        return actor, critic

    def update_spec(self) -> UpdateSpec:
        """Two groups (actor, critic) stepped on one loss (the mode's :meth:`update_loss`: the
        clipped surrogate plus the weighted value loss, minus the entropy bonus), clipped jointly to
        ``max_grad_norm`` as SB3 does; ``actor_old`` (replay mode's acting and ratio reference)
        copies the actor whenever ``update_param()`` runs."""
        actor, critic = self.param
        return UpdateSpec(
            groups=[ParamGroup("actor", actor), ParamGroup("critic", critic)],
            terms=[LossTerm(self.update_loss(), ["actor", "critic"], max_grad_norm=self.max_grad_norm, name="ppo")],
            targets=[TargetUpdate(self.actor_old, self.actor, 1.0, every=None)])

    # per mode (ReplayMode / RolloutMode): the loss of its batches, and the actor that acts
    def update_loss(self) -> Any:  # pragma: no cover
        """The loss function the update steps on (the mode's batches: transitions or rollouts)."""
        raise NotImplementedError

    def acting_actor(self) -> Any:  # pragma: no cover
        """The network that acts (``action(s)`` through the framework)."""
        raise NotImplementedError

    def acting_weights(self) -> list[np.ndarray]:  # pragma: no cover
        """Numpy copies of the acting network's weights (the numpy actor, pool workers)."""
        raise NotImplementedError

    # per backend: numpy copies of the networks' weights
    def actor_weights(self, old: bool = False) -> list[np.ndarray]:  # pragma: no cover
        raise NotImplementedError

    def critic_weights(self) -> list[np.ndarray]:  # pragma: no cover
        raise NotImplementedError

    def log_std_weights(self) -> np.ndarray:  # pragma: no cover
        """The Gaussian policy's log standard deviations (continuous actions)."""
        raise NotImplementedError

    def rollout_log_std(self) -> np.ndarray | None:
        """What sampling needs besides the actor's output (rollout workers, ``predict``): the
        Gaussian's log std (gSDE's: a matrix, see :func:`~note_rl.core.runners.sample_rollout_actions`),
        or ``None``."""
        return self.log_std_weights() if self.continuous else None

    # -- acting ------------------------------------------------------------------------------
    def _output(self) -> str:
        return "linear" if self.continuous else "softmax"  # the Gaussian's mean, or probabilities

    def numpy_actor(self) -> LiveActor | None:
        """The numpy copy of the acting actor MLP (``None`` for an encoder network: it acts through
        the framework)."""
        if self.uses_encoder():
            return None
        return LiveActor(self, self.acting_weights, self._output(), self.activation)

    def worker_actor(self) -> MLPActor | None:
        if self.uses_encoder():
            return None
        return MLPActor(self.acting_weights(), self._output(), self.activation)

    def greedy_action(self, output: np.ndarray) -> Any:
        """The mean action clipped to the bounds (Box; with gSDE the output's first ``action_dim``
        columns), or the most probable action."""
        if self.continuous:
            return np.clip(np.asarray(output)[..., :self.action_dim], *self.action_bounds)
        return int(np.argmax(output))


class ReplayMode(PPOMixin):
    """Note_rl's PPO (``PPO(n_steps=None)``, the backend's ``PPO.Replay``): per update, on a batch of
    replayed transitions ``(s, a, s', r, d)``::

        V_target = r + gamma**n * V(s') * (1 - d)                 # n-step bootstrap, no gradient
        A        = V_target - V(s)                                 # the TD error, no gradient
        L        = objective(surrogate(log pi(a|s), log actor_old(a|s), A), mean((V_target - V(s))**2))
        PR items are scored from TD and ratio; actor_old <- actor at update_param()

    ``actor_old`` also acts.  The backend class supplies ``__call__``, the loss above (Note_rl's
    contract: the agent's call is its loss)."""

    def _setup_mode(self, n_steps: int | None) -> None:
        if n_steps is not None:  # a subclass that set n_steps itself after PPO(...) chose this class
            raise ValueError(f"{type(self).__name__}(n_steps={n_steps!r}): this class trains from replay "
                             "(n_steps=None); build it with PPO(..., n_steps=...) or subclass PPO.Rollout")
        self.n_steps = None
        self.PPO = True  # Note_rl's flag: the buffer clears at update_param(), PR scores by TD and ratio

    def _setup_actions(self, action_dim: int, log_std_init: float) -> int:
        space = self.env.action_space
        if isinstance(space, gym.spaces.Box):
            raise ValueError(f"{type(self).__name__} with Box actions ({space}) trains on rollouts: give n_steps "
                             "(n_steps=None, Note_rl's replay mode, is for discrete actions)")
        return super()._setup_actions(action_dim, log_std_init)

    @property
    def schedules(self) -> dict[str, Any]:
        """None: ``linear_decay`` schedules rollouts (their lr and clip at each rollout's start); replay
        mode has no rollouts and never decayed."""
        return {}

    def update_loss(self) -> Any:
        return self.__call__

    def acting_actor(self) -> Any:
        return self.actor_old

    def acting_weights(self) -> list[np.ndarray]:
        return self.actor_weights(old=True)


class RolloutMode(PPOMixin):
    """PPO on rollouts (``PPO(n_steps=k)``, the backend's ``PPO.Rollout``; A2C and TRPO build on
    it): the rollout collector (:class:`note_rl.core.collect.RolloutCollector`) acts with
    :meth:`rollout_act`, computes GAE(``lam``) from :meth:`rollout_values` and runs ``n_epochs``
    passes of mini-batches ``(s, a, log pi_old(a|s), A, V_target)`` through ``rollout_loss``::

        L = objective(policy_loss(log pi(a|s), log pi_old(a|s), A), mean((V_target - V(s))**2))

    with the learning rate(s) and clip range decayed linearly over the budget when
    ``linear_decay``."""

    def _setup_mode(self, n_steps: int | None) -> None:
        if n_steps is None or int(n_steps) <= 0:  # 0 is refused, not read as None
            raise ValueError(f"{type(self).__name__}(n_steps={n_steps!r}): must be a positive integer")
        self.n_steps = int(n_steps)
        self.PPO = False  # on-policy: the collector, not the replay buffer, holds the data

    def update_loss(self) -> Any:
        return self.rollout_loss

    def acting_actor(self) -> Any:
        return self.actor

    def acting_weights(self) -> list[np.ndarray]:
        """The actor's weights; with gSDE widened so that the numpy actor outputs ``[mean, z]``."""
        weights = self.actor_weights()
        return with_features(weights) if self.use_sde else weights

    def worker_critic(self) -> MLPActor | None:
        if self.uses_encoder():
            return None
        return MLPActor(self.critic_weights(), "linear", self.activation)

    def _critic(self) -> Any:
        critic = getattr(self, "_critic_actor", None)
        if critic is None:
            if self.uses_encoder():  # the critic's forward pass through the framework
                critic = self.backend.make_act(self.critic, self.jit_compile,
                                               self.backend.flatten(self.param[1]))
            else:
                critic = LiveActor(self, self.critic_weights, "linear", self.activation)
            self._critic_actor = critic
        return critic

    def rollout_act(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Actions, their log-probabilities and state values for a batch of observations."""
        if self.use_sde:
            actions, logp = self.sde_noise().sample(self.act_output(obs))
            return actions, logp, self.rollout_values(obs)
        actions, logp = sample_rollout_actions(self.act_output(obs), self._sample_rng(), self.rollout_log_std(),
                                               None if self.continuous else self.policy, self.step_counter)
        return actions, logp, self.rollout_values(obs)

    def _sample_rng(self) -> np.random.Generator:
        rng = getattr(self, "_rng", None)
        if rng is None:
            rng = self._rng = np.random.default_rng(self.seed)
        return rng

    def sde_noise(self) -> StateDependentNoise:
        """gSDE: the exploration matrices the rollout acts with (drawn at its start)."""
        if self._sde is None:
            self._sde = StateDependentNoise(self.log_std_weights(), self.n_envs, self._sample_rng(),
                                            self.sde_sample_freq)
        return self._sde

    def rollout_values(self, obs: np.ndarray) -> np.ndarray:
        return self._critic()(obs)[:, 0].astype(np.float32)

    def on_rollout_start(self, progress_remaining: float) -> None:
        """Refuse a policy the Gaussian actor cannot use; gSDE draws new exploration matrices, from
        the current ``log_std`` (SB3's ``reset_noise`` at each rollout).  The lr and clip schedules of
        ``linear_decay`` are set by the loop right after."""
        self._sde = None
        if self.continuous and self.policy is not None and not isinstance(self.policy, SoftmaxPolicy):
            raise ValueError(f"{type(self).__name__} samples Box actions from its Gaussian policy; "
                             f"policy={type(self.policy).__name__} applies to discrete actions only")


# inspect.signature(PPO) reads __new__ before __init__: let it show the constructor's arguments
# (config checks, the seed-contract tests and users read them)
PPOMixin.__new__.__signature__ = inspect.signature(PPOMixin.__init__)  # type: ignore[attr-defined]

#: a user's subclass of PPO over each mode's class, built once (see :meth:`PPOMixin.mode_class`)
_USER_MODES: dict[tuple[type, bool], type] = {}


def _given_n_steps(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The ``n_steps`` of a call ``cls(*args, **kwargs)``: named by ``cls``'s constructor (its
    default when not given) or, when that takes it through ``*args`` / ``**kwargs`` (a user's
    subclass), as PPO's constructor reads it."""
    for init in (cls.__init__, PPOMixin.__init__):  # type: ignore[misc]
        try:
            bound = inspect.signature(init).bind(None, *args, **kwargs)
        except TypeError:
            continue  # the constructor itself will say what is wrong with the call
        bound.apply_defaults()
        if "n_steps" in bound.arguments:
            return bound.arguments["n_steps"]
    return None


def _new_in_mode(cls: type[PPOMixin], rollout: bool) -> PPOMixin:
    """An empty instance for unpickling (the state follows): ``cls``'s class in that mode."""
    return object.__new__(cls.mode_class(rollout))


def entropy_np(logits: np.ndarray) -> np.ndarray:
    """Entropy of the softmax of each row (used by tests as a reference)."""
    logp = log_softmax(logits)
    return -(np.exp(logp) * logp).sum(axis=-1)
