"""What every built-in agent shares, framework-free: argument checks, weight initialisation, the
numpy copies of the acting networks that pool workers (and fast single-process acting) use, and the
tail of every constructor.  ``common/torch.py`` and ``common/keras.py`` hold the shared networks
(an MLP, a set of critics with their targets) of each backend; ``common/box.py`` the acting in a
normalised Box action space that DDPG, TD3 and SAC share."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np

from ...core.envs import flat_observations, space_dims
from ...core.schedule import Schedule
from ...utils import log_softmax

__all__ = ["hidden_sizes", "make_env", "init_mlp", "MLPActor", "LiveActor", "SeededInit", "check_args", "check_sde",
           "with_features", "check_env_dims", "LinearDecay", "public_module"]


ACTIVATIONS = ("relu", "tanh")


def public_module(module: str) -> Callable[[type], type]:
    """Class decorator: the class's ``__module__`` becomes ``module``, the public module users import
    it from (``note_rl.agents.torch``), not the file that defines it (``note_rl.agents.dqn.torch``).
    Pickles (pool workers, spawned trials), ParallelFinder's records and saved ``result.json`` files
    name the class by that path, which stays the same when the file that defines it moves."""

    def mark(cls: type) -> type:
        cls.__module__ = module
        return cls

    return mark


def check_args(name: str, gamma: float | None = None, tau: float | None = None,
               activation: str | None = None, numbers: dict[str, Any] | None = None, **dims: Any) -> None:
    """The constructor arguments every built-in agent shares, checked with one-line errors that
    name the agent and the argument; ``dims`` (``state_dim=...``) must be positive integers and
    ``numbers`` (``{"clip": clip}``) finite numbers where given (NaN passes every range test after
    it, then trains on NaN weights)."""
    for arg, value in {"gamma": gamma, "tau": tau, **(numbers or {})}.items():
        if value is None or isinstance(value, str):  # None: unused; a str ("auto") is checked by its agent
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value):
            raise ValueError(f"{name}({arg}={value!r}): must be a finite number")
    for arg, value in dims.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0):
            raise ValueError(f"{name}({arg}={value!r}): must be a positive integer")
    if gamma is not None and not 0.0 < gamma <= 1.0:
        raise ValueError(f"{name}(gamma={gamma!r}): must be in (0, 1]")
    if tau is not None and not 0.0 < tau <= 1.0:
        raise ValueError(f"{name}(tau={tau!r}): must be in (0, 1]")
    if activation is not None and activation not in ACTIVATIONS:
        raise ValueError(f"{name}(activation={activation!r}): use one of {ACTIVATIONS}")


def check_sde(name: str, use_sde: Any, sde_sample_freq: Any) -> tuple[bool, int]:
    """gSDE's two switches (SAC, PPO, A2C), checked with one-line errors: ``(use_sde, sde_sample_freq)``."""
    if not isinstance(use_sde, (bool, np.bool_)):
        raise ValueError(f"{name}(use_sde={use_sde!r}): must be true or false")
    if isinstance(sde_sample_freq, bool) or not isinstance(sde_sample_freq, (int, np.integer)) \
            or sde_sample_freq == 0 or sde_sample_freq < -1:
        raise ValueError(f"{name}(sde_sample_freq={sde_sample_freq!r}): -1 (once per training round) or "
                         "a positive number of env steps")
    return bool(use_sde), int(sde_sample_freq)


def with_features(weights: list[np.ndarray]) -> list[np.ndarray]:
    """An MLP's weights with the output layer widened by an identity block, so that one numpy pass
    gives ``[output, z]``, ``z`` the last hidden layer (``z @ I + 0`` is ``z`` exactly): what gSDE's
    noise ``z E`` needs while acting."""
    *body, w, b = weights
    width = w.shape[0]
    return [*body, np.concatenate([w, np.eye(width, dtype=np.float32)], axis=1),
            np.concatenate([b, np.zeros(width, np.float32)])]


def pool_form(name: str, gamma: Any, processes: Any, default_gamma: float = 0.99) -> tuple[Any, int | None]:
    """``(gamma, processes)`` of a constructor call.  Note_rl's pool-network examples pass the number
    of processes as the 4th positional argument, ``DQN(4, 128, 2, 7)``, where this project's DQN has
    ``gamma``: an integer >= 2 there cannot be a discount, so it is read as ``processes``."""
    if isinstance(gamma, (int, np.integer)) and not isinstance(gamma, bool) and gamma >= 2:
        if processes is not None:
            raise ValueError(f"{name}(gamma={gamma!r}, processes={processes!r}): an integer >= 2 in gamma's "
                             "place is Note_rl's processes; give processes once")
        gamma, processes = default_gamma, int(gamma)
    if processes is not None and (isinstance(processes, bool) or not isinstance(processes, (int, np.integer))
                                  or processes < 1):
        raise ValueError(f"{name}(processes={processes!r}): must be a positive integer (pool-network workers)")
    return gamma, None if processes is None else int(processes)


def seed_hidden(name: str, hidden_size: Any, hidden_dim: Any, action_dim: Any) -> Any:
    """``hidden_size``, or Note_rl 001's ``hidden_dim`` (``DQN(state_dim=4, hidden_dim=128,
    action_dim=2)``); one of them and ``action_dim`` are required."""
    if hidden_dim is not None and hidden_size is not None:
        raise ValueError(f"{name}(hidden_size={hidden_size!r}, hidden_dim={hidden_dim!r}): two names for one "
                         "argument; give one")
    hidden = hidden_size if hidden_size is not None else hidden_dim
    for arg, value in (("hidden_size", hidden), ("action_dim", action_dim)):
        if value is None:
            raise TypeError(f"{name}() missing required argument: {arg!r}")
    return hidden


class LinearDecay:
    """The ``linear_decay`` flag of an agent's constructor as :class:`~note_rl.core.schedule.Schedule`
    objects: with it, each value in ``SCHEDULED`` falls linearly to 0 over ``train(steps=...)``
    (rl-zoo's ``lin_`` schedules), set by the loop at the start of each training round.

    The learning rates' starting values are read from the optimizers at the first round and kept
    (checkpoints' ``extra_state()["initial_lrs"]``).  A value an online adjuster changes
    (``lr_params``) is the adjuster's for the whole call (:func:`note_rl.core.schedule.owners`)."""

    #: the values ``linear_decay=True`` schedules
    SCHEDULED: tuple[str, ...] = ("lr",)
    linear_decay: bool = False

    def _init_schedules(self, linear_decay: bool) -> None:
        self.linear_decay = bool(linear_decay)  # read at each train() call: turning it on later works
        # built whatever the flag: the kept starts live here (and in checkpoints) either way
        self._schedules = {name: Schedule(name, "linear") for name in self.SCHEDULED}

    @property
    def schedules(self) -> dict[str, Schedule]:
        """The schedules a ``train()`` call applies (none without ``linear_decay``)."""
        return dict(self._schedules) if self.linear_decay else {}

    def extra_state(self) -> dict[str, Any]:
        """The learning rates' kept starting values (``None`` before the first decayed round)."""
        return {"initial_lrs": self._schedules["lr"].start}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        self._schedules["lr"].start = state.get("initial_lrs")


def hidden_sizes(hidden_size: int | Sequence[int]) -> list[int]:
    """``128`` -> one hidden layer of 128 units; ``[256, 256]`` -> two layers."""
    try:
        sizes = [int(hidden_size)] if isinstance(hidden_size, (int, np.integer)) else [int(h) for h in hidden_size]
    except (TypeError, ValueError):
        sizes = []
    if not sizes or min(sizes) <= 0:
        raise ValueError(f"hidden_size={hidden_size!r}: must be a positive int or a list of them")
    return sizes


def make_env(env: Any) -> Any:
    """``None`` -> CartPole-v1; an id string -> ``gym.make(id)``; an env instance -> itself.  A
    ``Discrete`` observation space is one-hot encoded (:class:`note_rl.core.envs.OneHotObservation`)."""
    if env is None:
        return gym.make("CartPole-v1")
    if isinstance(env, str) and env.startswith("note_rl/"):
        from ... import goal_envs  # noqa: F401 - registers note_rl's own envs
    return flat_observations(gym.make(env) if isinstance(env, str) else env)


def check_env_dims(name: str, env: Any, state_dim: Any, action_dim: Any) -> None:
    """``state_dim`` and ``action_dim`` match ``env`` where its spaces have such sizes: a mismatch
    built networks of the wrong shape and failed at the first forward pass inside ``train()``."""
    for arg, given, found in zip(("state_dim", "action_dim"), (state_dim, action_dim), space_dims(env)):
        if given is not None and found is not None and int(given) != found:
            raise ValueError(f"{name}({arg}={given}): the env has {found}")


def discrete_env(name: str, env: Any) -> Any:
    """``make_env(env)``, refused in one line when its actions are continuous (a Box space)."""
    env = make_env(env)
    if isinstance(getattr(env, "action_space", None), gym.spaces.Box):
        raise ValueError(f"{name} needs a Discrete action space; the env has {env.action_space} "
                         "(PPO, A2C, DDPG, TD3 and SAC take continuous actions)")
    return env


def init_mlp(sizes: Sequence[int], rng: np.random.Generator, ortho_gain: float | None = None) -> list[np.ndarray]:
    """``[W0, b0, W1, b1, ...]`` with ``W`` of shape ``(in, out)``.

    Default: torch's ``Linear`` rule, ``U(-1/sqrt(in), 1/sqrt(in))`` for weights and biases.  With
    ``ortho_gain`` (SB3's ``ortho_init``): orthogonal weights with gain ``sqrt(2)`` for hidden
    layers and ``ortho_gain`` for the output layer, zero biases.  Both backends start from these
    arrays, so the same seed gives the same initial network in Keras and PyTorch."""
    weights: list[np.ndarray] = []
    n = len(sizes) - 1
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        if ortho_gain is None:
            bound = 1.0 / np.sqrt(fan_in)
            weights.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
            weights.append(rng.uniform(-bound, bound, (fan_out,)).astype(np.float32))
        else:
            gain = ortho_gain if i == n - 1 else np.sqrt(2.0)
            weights.append((gain * _orthogonal(fan_in, fan_out, rng)).astype(np.float32))
            weights.append(np.zeros(fan_out, dtype=np.float32))
    return weights


def _orthogonal(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    a = rng.normal(size=(max(rows, cols), min(rows, cols)))
    q, r = np.linalg.qr(a)
    q *= np.sign(np.diag(r))  # make the decomposition unique (Saxe et al. 2013)
    return q if rows >= cols else q.T


class SeededInit:
    """``set(seed=s)`` on a built-in agent re-draws its starting weights from ``s``.

    The agents draw their initial weights with numpy (:func:`init_mlp`), not with the framework's
    generator, so seeding the framework alone would not make them reproducible.  As long as the
    agent has taken no gradient step (``batch_counter == 0``) and no weights were loaded into it
    (``restore`` / ``restore_param``), ``apply_seed(s)`` assigns every network (target and old-policy
    copies included) the weights the constructor would have drawn with ``seed=s``, in place, so an
    optimizer built on ``self.param`` beforehand keeps working.  Later calls only reseed the rest.
    """

    def initial_weights(self, seed: int | None) -> tuple[list[np.ndarray], ...]:  # pragma: no cover
        """Starting weights of each network group drawn from ``seed``."""
        raise NotImplementedError

    def load_initial_weights(self, *weights: list[np.ndarray]) -> None:  # pragma: no cover
        """Assign the arrays of :meth:`initial_weights` to the networks (per backend)."""
        raise NotImplementedError

    def _finish_init(self, gamma: float, seed: int | None) -> None:
        """The tail of every built-in constructor: the discount as a backend variable (adjusters and
        checkpoints change it in place), then ``set(seed=seed)`` when a seed was given."""
        self.gamma = self.backend.make_variable(gamma)  # type: ignore[attr-defined]
        if seed is not None:
            self.set(seed=seed)  # type: ignore[attr-defined]

    def apply_seed(self, seed: int) -> None:
        super().apply_seed(seed)  # type: ignore[misc]
        self._rng = None  # the rollout sampler restarts from the new seed
        if self.batch_counter == 0 and not getattr(self, "_weights_loaded", False):
            self.load_initial_weights(*self.initial_weights(seed))
            self._actor = self._critic_actor = None  # numpy copies re-read the new weights


class MLPActor:
    """Numpy forward pass of a ReLU MLP (picklable; holds plain arrays).

    :param weights: ``[W0, b0, W1, b1, ...]`` with ``W`` of shape ``(in, out)``
    :param output: ``"linear"`` (Q-values, logits), ``"softmax"`` (probabilities) or ``"tanh"``
        (actions in ``[-1, 1]``)
    :param activation: hidden activation, ``"relu"`` or ``"tanh"``
    """

    def __init__(self, weights: Sequence[np.ndarray], output: str = "linear",
                 activation: str = "relu") -> None:
        self.weights = [np.asarray(w, dtype=np.float32) for w in weights]
        self.output = output
        self.activation = activation

    def set_weights(self, weights: Sequence[np.ndarray]) -> None:
        self.weights = [np.asarray(w, dtype=np.float32) for w in weights]

    def __call__(self, s: np.ndarray) -> np.ndarray:
        x = np.asarray(s, dtype=np.float32)
        n = len(self.weights) // 2
        for i in range(n):
            x = x @ self.weights[2 * i] + self.weights[2 * i + 1]
            if i < n - 1:
                if self.activation == "tanh":
                    np.tanh(x, out=x)
                else:
                    np.maximum(x, 0.0, out=x)
        if self.output == "softmax":
            x = np.exp(log_softmax(x))
        elif self.output == "tanh":
            np.tanh(x, out=x)
        return x


class LiveActor:
    """An :class:`MLPActor` that re-reads the framework weights whenever the agent has taken a
    gradient step (or its weights were loaded) since the last call."""

    def __init__(self, agent: Any, read: Any, output: str = "linear", activation: str = "relu") -> None:
        self.agent = agent
        self.read = read  # () -> list of numpy arrays in (in, out) layout
        self.actor = MLPActor(read(), output, activation)
        self.version = agent.batch_counter

    def __call__(self, s: np.ndarray) -> np.ndarray:
        if self.agent.batch_counter != self.version:
            self.actor.set_weights(self.read())
            self.version = self.agent.batch_counter
        return self.actor(s)
