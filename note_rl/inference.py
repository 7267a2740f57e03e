"""Acting with a trained agent outside training: ``agent.predict(obs)`` and the framework-free
description of a greedy policy that :mod:`note_rl.export` writes as TorchScript or a TF SavedModel.

``predict`` follows Stable-Baselines3's habit: it takes one observation or a batch (a leading axis)
and returns ``(action, None)`` (the ``None`` is SB3's recurrent state; no agent here has one).  A goal env's
dict observation (HER) is read as the agent reads it, ``concat(observation, desired_goal)``; the
exported files take that vector.  The
actions are the env's own: a continuous agent (DDPG, TD3, SAC) acts in ``[-1, 1]`` internally and its
env is wrapped with ``RescaleAction``; ``predict`` returns actions in the bounds of the env the agent
was given (``gym.make("Pendulum-v1")``'s ``[-2, 2]``), as SB3 does.

A :class:`PolicySpec` is the greedy policy of a built-in agent as plain arrays: the MLP of its
numpy actor (weights, hidden activation, output), and the head that turns the output into an action
(argmax; clip; SAC's ``tanh`` of the mean half), then the rescaling to the env's bounds.  Each
exporter builds the same computation in its framework from it, and :func:`check_spec` compares it
with the agent's own ``predict`` before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .buffers.her import flatten_goal_obs
from .utils import log_softmax

__all__ = ["PolicySpec", "policy_spec", "predict", "spec_forward", "check_spec", "ExportError"]


class ExportError(ValueError):
    """The agent's policy cannot be described or exported (one line: what and why)."""


#: the heads a built-in agent's ``greedy_action`` applies, by the class that defines it
_HEADS = {"DQNMixin": "argmax", "PPOMixin": "ppo", "A2CMixin": "ppo", "BoxActions": "tanh_clip",
          "TD3Mixin": "tanh_clip", "SACMixin": "sac"}


@dataclass
class PolicySpec:
    """A greedy MLP policy as arrays.

    :param weights: ``[W0, b0, W1, b1, ...]``, ``W`` of shape ``(in, out)``
    :param activation: hidden activation, ``"relu"`` or ``"tanh"``
    :param output: applied to the last layer: ``"linear"``, ``"softmax"`` or ``"tanh"``
    :param discrete: the action is the argmax of the output (an ``int64`` index)
    :param half: keep the first half of the output (SAC's mean; the second half is its log std)
    :param squash: ``tanh`` after ``half``
    :param clip: ``(low, high)`` the action is clipped to, in the network's scale
    :param rescale: ``((low, high) of the network's scale, (low, high) of the env)``: the affine map of
        gymnasium's ``RescaleAction``
    :param obs_norm: ``(mean, scale, clip)``: the observations are first normalised,
        ``clip((obs - mean) / scale, -clip, clip)`` (the frozen statistics of ``set(normalize=...)``),
        so the policy takes the env's raw observations
    """

    weights: list[np.ndarray]
    activation: str = "relu"
    output: str = "linear"
    discrete: bool = True
    half: bool = False
    squash: bool = False
    clip: tuple[np.ndarray, np.ndarray] | None = None
    rescale: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    obs_norm: tuple[np.ndarray, np.ndarray, float] | None = None

    @property
    def state_dim(self) -> int:
        return int(self.weights[0].shape[0])


def _chain(env: Any) -> list[Any]:
    """``env`` and the envs it wraps, outermost first."""
    out = []
    while env is not None and len(out) < 64:
        out.append(env)
        env = getattr(env, "env", None)
    return out


def _env(agent: Any) -> Any:
    env = agent.env
    return env[0] if isinstance(env, (list, tuple)) else env


def _rescaler(agent: Any) -> Any:
    """The agent's ``RescaleAction`` wrapper (continuous agents), or ``None``."""
    import gymnasium as gym

    return next((e for e in _chain(_env(agent)) if isinstance(e, gym.wrappers.RescaleAction)), None)


def _one_hot(agent: Any) -> Any:
    from .core.envs import OneHotObservation

    return next((e for e in _chain(_env(agent)) if isinstance(e, OneHotObservation)), None)


def _as_batch(agent: Any, obs: Any) -> tuple[np.ndarray, bool]:
    """``obs`` as a float32 batch ``(n, state_dim)`` and whether it was one observation."""
    one_hot = _one_hot(agent)
    if one_hot is not None:  # Discrete observations: indices, one-hot encoded as the agent saw them
        idx = np.asarray(obs)
        single = idx.ndim == 0
        idx = idx.reshape(-1).astype(np.int64) - one_hot.start
        if idx.size and (idx.min() < 0 or idx.max() >= one_hot.n):
            raise ValueError(f"predict(obs): observations must be in [{one_hot.start}, {one_hot.start + one_hot.n})")
        return np.eye(one_hot.n, dtype=np.float32)[idx], single
    if isinstance(obs, dict):  # a goal env's observation (HER): the agent reads concat(observation, goal)
        x = flatten_goal_obs(obs)
        return (x[None], True) if x.ndim == 1 else (x, False)
    x = np.asarray(obs, dtype=np.float32)
    shape = getattr(getattr(_env(agent), "observation_space", None), "shape", None)
    single = x.ndim == (len(shape) if shape else 1)
    batch = x[None] if single else x
    return batch.reshape(len(batch), -1), single


def predict(agent: Any, obs: Any, state: Any = None, episode_start: Any = None,
            deterministic: bool = True) -> tuple[Any, None]:
    """``(action, None)`` for one observation, or ``(actions, None)`` for a batch (see the module
    docstring); ``state`` and ``episode_start`` are SB3's recurrent arguments, accepted and unused.
    ``deterministic=True`` (the default; SB3's is False) plays the greedy action (argmax, the
    Gaussian's mean, SAC's ``tanh(mean)``); ``False`` samples the agent's stochastic policy where it
    has one (:func:`_sampled`)."""
    if getattr(agent, "MARL", False):
        raise ValueError("predict: not supported for MARL agents (one action(s, i) per agent)")
    batch, single = _as_batch(agent, obs)
    outputs = agent.act_output(agent.policy_obs(batch) if hasattr(agent, "policy_obs") else batch)
    actions = None if deterministic else _sampled(agent, outputs)
    if actions is None:
        actions = np.asarray([agent.greedy_action(o) for o in outputs])
    rescale = _rescaler(agent)
    if rescale is not None:
        actions = np.asarray([rescale.action(a) for a in actions], dtype=np.float32)
    elif actions.dtype.kind == "f":
        actions = actions.astype(np.float32)
    return (actions[0] if single else actions), None


def _sampled(agent: Any, outputs: np.ndarray) -> np.ndarray | None:
    """``deterministic=False``: actions drawn from the agent's own stochastic policy (PPO and A2C: the
    softmax or the Gaussian with its learned std, clipped to the bounds; SAC: its squashed Gaussian), or
    ``None`` for a deterministic policy (DQN, DDPG, TD3: no exploration is added, their greedy action
    is the policy).  Draws come from generators seeded from the agent's seed."""
    from .core.runners import sample_rollout_actions

    rng = getattr(agent, "_predict_rng", None)
    if rng is None:
        seed = getattr(agent, "seed", None)
        rng = agent._predict_rng = np.random.default_rng(None if seed is None else seed + 7919)
    if callable(getattr(agent, "rollout_log_std", None)):
        log_std = agent.rollout_log_std()
        actions, _ = sample_rollout_actions(np.asarray(outputs, np.float32), rng, log_std)
        bounds = getattr(agent, "action_bounds", None)
        return np.clip(actions, *bounds) if log_std is not None and bounds is not None else actions
    sample = getattr(agent, "sample_action", None)
    if not callable(sample) or _owner(agent, "sample_action") != "SACMixin":
        return None
    return np.asarray(sample(np.asarray(outputs, np.float32)), np.float32)  # its own generator, from its seed


def _owner(agent: Any, method: str) -> str:
    """The name of the class in ``agent``'s MRO that defines ``method``."""
    return next((k.__name__ for k in type(agent).__mro__ if method in vars(k)), "")


def policy_spec(agent: Any) -> PolicySpec:
    """The greedy policy of a built-in agent as a :class:`PolicySpec`; an agent without a numpy MLP
    actor (a user's own ``action(s)``), a MARL or IRL agent raises :class:`ExportError`."""
    import gymnasium as gym

    name = type(agent).__name__
    if getattr(agent, "MARL", False) or getattr(agent, "IRL", False):
        raise ExportError(f"{name}: MARL and IRL agents cannot be exported (one policy per agent / an aux output)")
    owner = _owner(agent, "greedy_action")
    head = _HEADS.get(owner, "argmax" if owner == "RLBase" else None)
    actor = agent.numpy_actor() if callable(getattr(agent, "numpy_actor", None)) else None
    mlp = getattr(actor, "actor", None)
    network = getattr(agent, "network", None)
    if network is not None and callable(getattr(agent, "uses_encoder", None)) and agent.uses_encoder():
        raise ExportError(f"{name} with network={network!r}: only MLP networks can be exported (the exported "
                          "policy is a numpy MLP); predict() works for every agent")
    if head is None or mlp is None or not hasattr(mlp, "weights"):
        raise ExportError(f"{name}: only agents with a built-in MLP actor can be exported "
                          "(DQN, PPO, A2C, DDPG, TD3, SAC); predict() works for every agent")
    spec = PolicySpec([np.asarray(w, np.float32).copy() for w in mlp.weights], mlp.activation, mlp.output,
                      meta={"agent": name})
    norm = getattr(agent, "normalizer", None)
    spec.obs_norm = None if norm is None else norm.obs_transform()
    space = _env(agent).action_space
    continuous = isinstance(space, gym.spaces.Box)
    if head == "argmax" and continuous:
        head = "identity"
    spec.discrete = head in ("argmax",) or (head == "ppo" and not continuous)
    if head == "ppo" and continuous:
        if getattr(agent, "use_sde", False):  # acts from [mean, features]; the greedy action is the mean
            _keep_columns(spec, agent.action_dim)
        low, high = agent.action_bounds
        spec.clip = (np.asarray(low, np.float32), np.asarray(high, np.float32))
    elif head in ("tanh_clip", "sac"):
        spec.half = spec.squash = head == "sac"
        ones = np.ones(agent.action_dim, np.float32)
        spec.clip = (-ones, ones)
        if head == "sac" and getattr(agent, "use_sde", False):
            _sde_head(spec, agent.action_dim)
    rescale = _rescaler(agent)
    if rescale is not None and not spec.discrete:
        inner = rescale.env.action_space
        outer = rescale.action_space  # the network's scale, [-1, 1]
        spec.rescale = ((outer.low.astype(np.float32).ravel(), outer.high.astype(np.float32).ravel()),
                        (inner.low.astype(np.float32).ravel(), inner.high.astype(np.float32).ravel()))
    return spec


def _sde_head(spec: PolicySpec, action_dim: int) -> None:
    """SAC with gSDE acts from ``[mean, features]`` (an identity block widens its output layer) and
    plays ``tanh(clip(mean, -c, c))``: the spec keeps the mean's columns, and since tanh is monotonic
    that action is ``clip(tanh(mean), -tanh c, tanh c)``, which every exporter already builds."""
    from .agents.sac import SDE_CLIP_MEAN

    _keep_columns(spec, action_dim)
    spec.half = False
    bound = np.full(action_dim, np.tanh(SDE_CLIP_MEAN), np.float32)
    spec.clip = (-bound, bound)


def _keep_columns(spec: PolicySpec, action_dim: int) -> None:
    """gSDE's actors act from ``[mean, features]`` (an identity block widens the output layer): keep
    the mean's columns."""
    spec.weights[-2] = spec.weights[-2][:, :action_dim].copy()
    spec.weights[-1] = spec.weights[-1][:action_dim].copy()


def spec_forward(spec: PolicySpec, obs: np.ndarray) -> np.ndarray:
    """The actions of ``spec`` for a batch (numpy reference of every exporter)."""
    x = np.asarray(obs, dtype=np.float32)
    if spec.obs_norm is not None:
        mean, scale, clip = spec.obs_norm
        x = np.clip((x - mean) / scale, -clip, clip).astype(np.float32)
    n = len(spec.weights) // 2
    for i in range(n):
        x = x @ spec.weights[2 * i] + spec.weights[2 * i + 1]
        if i < n - 1:
            x = np.tanh(x) if spec.activation == "tanh" else np.maximum(x, 0.0)
    if spec.output == "softmax":
        x = np.exp(log_softmax(x))
    elif spec.output == "tanh":
        x = np.tanh(x)
    if spec.discrete:
        return np.argmax(x, axis=-1).astype(np.int64)
    if spec.half:
        x = x[:, : x.shape[1] // 2]
    if spec.squash:
        x = np.tanh(x)
    if spec.clip is not None:
        x = np.clip(x, *spec.clip)
    if spec.rescale is not None:
        (lo, hi), (low, high) = spec.rescale
        x = low + (high - low) * ((x - lo) / (hi - lo))
    return x.astype(np.float32)


def sample_observations(agent: Any, n: int = 64, seed: int = 0) -> np.ndarray:
    """``n`` observations the agent's networks take: states of a few episodes of random actions on a
    fresh copy of its env (realistic ranges; CartPole's space spans +-3.4e38)."""
    from .core.envs import EnvFactory

    env = EnvFactory(_env(agent))()
    rng = np.random.default_rng(seed)
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    out = []
    while len(out) < n:
        out.append(flatten_goal_obs(obs) if isinstance(obs, dict) else np.asarray(obs, np.float32).ravel())
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset(seed=int(rng.integers(2**31)))
    env.close()
    return np.stack(out)


def check_spec(agent: Any, spec: PolicySpec, obs: np.ndarray | None = None) -> None:
    """Refuse a spec whose actions differ from ``predict(agent, obs)`` (an agent whose greedy action is
    not the one the spec describes): nothing is exported that would act differently."""
    if obs is None:
        obs = sample_observations(agent)
    expected = predict(agent, obs)[0]
    got = spec_forward(spec, obs)
    same = np.array_equal(expected, got) if spec.discrete else \
        expected.shape == got.shape and np.allclose(expected, got, atol=1e-5, rtol=1e-5)
    if not same:
        raise ExportError(f"{type(agent).__name__}: the exported policy would not act as predict() does "
                          "(its greedy action is not one the exporter knows)")
