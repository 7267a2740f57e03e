"""Framework-free halves of the built-in continuous-control agents: DDPG, TD3 and SAC.

Actions live in ``[-1, 1]``: the agent's env is wrapped with gymnasium's ``RescaleAction`` so the
env sees its own bounds, while the actor (a ``tanh`` output), the exploration noise (added in the
normalised scale, as SB3 does, then clipped to the bounds) and the replay buffer all work in
``[-1, 1]``.

* TD3 (Fujimoto et al. 2018, https://arxiv.org/abs/1802.09477): twin critics, the target action
  smoothed by clipped Gaussian noise, the actor and both targets updated every ``policy_delay``
  critic updates.  DDPG (Lillicrap et al. 2015, https://arxiv.org/abs/1509.02971) is the same update
  with one critic, no smoothing and no delay (SB3 implements it that way too).
* SAC (Haarnoja et al. 2018, https://arxiv.org/abs/1812.05905): a squashed Gaussian actor, twin
  critics with a Polyak target, and the entropy temperature ``alpha`` tuned towards
  ``target_entropy`` (``-action_dim`` by default) when ``ent_coef="auto"``.
"""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from ..core.envs import space_dims
from ..update import LossTerm, ParamGroup, TargetUpdate, UpdateSpec
from .common import LiveActor, SeededInit, check_args, hidden_sizes, init_mlp, make_env

__all__ = ["BoxActions", "TD3Mixin", "SACMixin", "LOG_STD_MIN", "LOG_STD_MAX", "squashed_log_prob"]

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # SB3's clip of the actor's log standard deviation


class BoxActions:
    """Acting in a Box action space normalised to ``[-1, 1]`` (see the module docstring)."""

    #: the action spaces the agent handles (a builder refuses an env with others in one line)
    action_kinds = ("continuous",)

    def _setup_box(self, env: Any, state_dim: int | None, action_dim: int | None) -> tuple[int, int]:
        name = type(self).__name__
        env = make_env(env if env is not None else "Pendulum-v1")
        space = env.action_space
        if not isinstance(space, gym.spaces.Box):
            raise ValueError(f"{name} needs a Box (continuous) action space; the env has {space}")
        if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
            raise ValueError(f"{name} needs finite action bounds; the env has {space}")
        if not (np.all(space.low == -1.0) and np.all(space.high == 1.0)):
            ones = np.ones(space.shape, dtype=space.dtype)
            env = gym.wrappers.RescaleAction(env, -ones, ones)
        self.env = env
        dims = space_dims(env)
        if None in dims:
            raise ValueError(f"{name} needs flat observations and actions; the env has {env.observation_space}, {space}")
        for arg, given, found in (("state_dim", state_dim, dims[0]), ("action_dim", action_dim, dims[1])):
            if given is not None and int(given) != found:
                raise ValueError(f"{name}({arg}={given}): the env has {found}")
        return dims

    def _noise_for(self, index: int | None) -> Any:
        noise = self.noise
        return noise[index or 0] if isinstance(noise, (list, tuple)) else noise

    def explore(self, output: np.ndarray, p: int | None = None, i: int | None = None) -> Any:
        """The action to play: the actor's (sampled) action plus the noise process, if any, clipped
        to ``[-1, 1]`` (the env's bounds after rescaling).

        Before training starts (the first ``learning_starts`` env steps, see ``training_starts``)
        the actor's action is replaced by one drawn uniformly from ``[-1, 1]``, as SB3 and the TD3
        and SAC authors' code do: the first updates then learn from transitions spread over the
        whole action space, not from the narrow band of one untrained actor (rl-zoo3's TD3 preset
        on Pendulum-v1 takes 10,000 such steps).  ``learning_starts=0`` acts with the actor from
        the first step."""
        if self.step_counter < self.training_starts():
            action = self._action_generator().uniform(-1.0, 1.0, self.action_dim).astype(np.float32)
        else:
            action = self.sample_action(np.asarray(output, dtype=np.float32))
        noise = self._noise_for(p if i is None else i)
        if noise is not None:
            action = action + noise.sample()
        return np.clip(action, -1.0, 1.0).astype(np.float32)

    def sample_action(self, output: np.ndarray) -> np.ndarray:
        """The action the policy takes from the network output (deterministic policies: itself)."""
        return output

    def _action_generator(self) -> np.random.Generator:
        """The generator of the agent's own random actions (warm-up, SAC's samples), from the seed."""
        rng = getattr(self, "_action_rng", None)
        if rng is None:
            rng = self._action_rng = np.random.default_rng(None if self.seed is None else self.seed + 17)
        return rng

    def apply_seed(self, seed: int) -> None:
        super().apply_seed(seed)  # type: ignore[misc]
        self._action_rng = None  # restarts from the new seed

    def greedy_action(self, output: np.ndarray) -> np.ndarray:
        """The action without exploration (evaluation, ``run_agent``)."""
        return np.clip(output, -1.0, 1.0)


class TD3Mixin(BoxActions, SeededInit):
    """Shared by the TD3 and DDPG classes of both backends (see the module docstring).

    Networks: an actor ``[state, *hidden, action]`` with a ``tanh`` output, ``n_critics`` critics
    ``[state + action, *hidden, 1]``, and a target copy of each.  Losses:
    ``critic_loss = sum_i mean((Q_i(s, a) - y)**2)`` with ``y = r + gamma * (1 - d) * min_i
    Q'_i(s', clip(mu'(s') + clip(N(0, sigma), -c, c), -1, 1))`` and ``actor_loss = -mean(Q_1(s, mu(s)))``.
    """

    def _setup_td3(self, state_dim: int | None, hidden_size: int | Sequence[int], action_dim: int | None,
                   gamma: float, tau: float, policy_delay: int, target_policy_noise: float,
                   target_noise_clip: float, n_critics: int, env: Any, seed: int | None,
                   activation: str) -> tuple[list[np.ndarray], ...]:
        name = type(self).__name__
        check_args(name, gamma=gamma, tau=tau, activation=activation,
                   numbers={"target_policy_noise": target_policy_noise, "target_noise_clip": target_noise_clip})
        if int(policy_delay) < 1 or int(n_critics) < 1:
            raise ValueError(f"{name}(policy_delay={policy_delay!r}, n_critics={n_critics!r}): must be >= 1")
        if target_policy_noise < 0 or target_noise_clip < 0:
            raise ValueError(f"{name}: target_policy_noise and target_noise_clip must be >= 0")
        self.state_dim, self.action_dim = self._setup_box(env, state_dim, action_dim)
        self.hidden = hidden_sizes(hidden_size)
        self.activation = activation
        self.tau, self.policy_delay, self.n_critics = float(tau), int(policy_delay), int(n_critics)
        self.target_policy_noise, self.target_noise_clip = float(target_policy_noise), float(target_noise_clip)
        return self.initial_weights(seed)

    def initial_weights(self, seed: int | None) -> tuple[list[np.ndarray], ...]:
        """``(actor, critic_1, ..., critic_n)`` drawn from ``seed``; targets start as copies."""
        rng = np.random.default_rng(seed)
        actor = init_mlp([self.state_dim, *self.hidden, self.action_dim], rng)
        critics = [init_mlp([self.state_dim + self.action_dim, *self.hidden, 1], rng) for _ in range(self.n_critics)]
        return (actor, *critics)

    def update_spec(self) -> UpdateSpec:
        actor, critic = self.param
        delay = self.policy_delay
        return UpdateSpec(
            groups=[ParamGroup("actor", actor), ParamGroup("critic", critic)],  # self.param order
            terms=[LossTerm(self.critic_loss, ["critic"]), LossTerm(self.actor_loss, ["actor"], every=delay)],
            targets=[TargetUpdate(self.critic_targets, self.critics, self.tau, every=delay),
                     TargetUpdate(self.actor_target, self.actor, self.tau, every=delay)])

    def actor_weights(self) -> list[np.ndarray]:  # pragma: no cover - per backend
        raise NotImplementedError

    def numpy_actor(self) -> LiveActor:
        return LiveActor(self, self.actor_weights, "tanh", self.activation)


class SACMixin(BoxActions, SeededInit):
    """Shared by the SAC classes of both backends (see the module docstring).

    Networks: an actor ``[state, *hidden, 2 * action]`` giving the mean and log standard deviation
    (clipped to ``[-20, 2]``) of a Gaussian squashed by ``tanh``; ``n_critics`` critics and their
    Polyak targets.  Losses: ``critic_loss = 0.5 * sum_i mean((Q_i(s, a) - y)**2)``, ``y = r + gamma
    * (1 - d) * (min_i Q'_i(s', a') - alpha * log pi(a'|s'))`` with ``a' ~ pi(s')``; ``actor_loss =
    mean(alpha * log pi(a|s) - min_i Q_i(s, a))`` with ``a ~ pi(s)`` (reparameterised); ``alpha_loss =
    -mean(log_alpha * (log pi(a|s) + target_entropy))``, on the same sample ``a`` (``policy_losses``)
    and with the temperature of before this update, as in SB3.
    """

    def _setup_sac(self, state_dim: int | None, hidden_size: int | Sequence[int], action_dim: int | None,
                   gamma: float, tau: float, ent_coef: float | str, target_entropy: float | str,
                   n_critics: int, target_update_interval: int, env: Any, seed: int | None,
                   activation: str) -> tuple[list[np.ndarray], ...]:
        name = type(self).__name__
        check_args(name, gamma=gamma, tau=tau, activation=activation,
                   numbers={"ent_coef": ent_coef, "target_entropy": target_entropy})
        self.state_dim, self.action_dim = self._setup_box(env, state_dim, action_dim)
        auto = isinstance(ent_coef, str)
        if auto and not ent_coef.startswith("auto"):
            raise ValueError(f"{name}(ent_coef={ent_coef!r}): a number, 'auto' or 'auto_<initial value>'")
        init = float(ent_coef.partition("_")[2] or 1.0) if auto else float(ent_coef)
        if init <= 0:
            raise ValueError(f"{name}(ent_coef={ent_coef!r}): the temperature must be > 0")
        self.auto_alpha, self.alpha_init = auto, init
        self.target_entropy = -float(self.action_dim) if target_entropy == "auto" else float(target_entropy)
        self.hidden = hidden_sizes(hidden_size)
        self.activation = activation
        self.tau, self.n_critics = float(tau), int(n_critics)
        self.target_update_interval = int(target_update_interval)
        if self.n_critics < 1 or self.target_update_interval < 1:
            raise ValueError(f"{name}: n_critics and target_update_interval must be >= 1")
        return self.initial_weights(seed)

    def initial_weights(self, seed: int | None) -> tuple[list[np.ndarray], ...]:
        """``(actor, critic_1, ..., critic_n)`` drawn from ``seed``; targets start as copies."""
        rng = np.random.default_rng(seed)
        actor = init_mlp([self.state_dim, *self.hidden, 2 * self.action_dim], rng)
        critics = [init_mlp([self.state_dim + self.action_dim, *self.hidden, 1], rng) for _ in range(self.n_critics)]
        return (actor, *critics)

    def update_spec(self) -> UpdateSpec:
        groups = [ParamGroup("actor", self.param[0]), ParamGroup("critic", self.param[1])]  # self.param order
        terms = [LossTerm(self.critic_loss, ["critic"]), LossTerm(self.actor_loss, ["actor"])]
        if self.auto_alpha:
            groups.append(ParamGroup("alpha", self.param[2]))
            # one squashed-Gaussian sample serves the actor's and the temperature's losses (as in
            # SB3): a separate temperature term would run the actor a third time per update
            terms[1] = LossTerm(self.policy_losses, ["actor", "alpha"])
        return UpdateSpec(groups, terms, [TargetUpdate(self.critic_targets, self.critics, self.tau,
                                                       every=self.target_update_interval)])

    def policy_losses(self, s: Any, a: Any, next_s: Any, r: Any, d: Any) -> dict[str, Any]:
        """``{"actor": actor_loss, "alpha": alpha_loss}`` from one sample of the policy at ``s`` (the
        temperature's gradient reaches ``log_alpha`` only; the actor's reaches the actor only)."""
        actor, logp = self._actor_terms(s)
        return {"actor": actor, "alpha": self._alpha_from(logp)}

    def actor_loss(self, s: Any, a: Any, next_s: Any, r: Any, d: Any) -> Any:
        """The actor's loss alone (``policy_losses`` gives it with the temperature's)."""
        return self._actor_terms(s)[0]

    def alpha_loss(self, s: Any, a: Any, next_s: Any, r: Any, d: Any) -> Any:
        """The temperature's loss alone, on a fresh sample of the policy at ``s`` (no critic pass)."""
        return self._alpha_from(self._sample(s)[1])

    def _actor_terms(self, s: Any) -> tuple[Any, Any]:  # pragma: no cover - per backend
        """``(actor_loss, log pi(a|s))`` for a reparameterised sample ``a ~ pi(s)``."""
        raise NotImplementedError

    def _alpha_from(self, logp: Any) -> Any:  # pragma: no cover - per backend
        """``-mean(log_alpha * (logp + target_entropy))`` with ``logp`` held constant."""
        raise NotImplementedError

    # -- acting (numpy) ----------------------------------------------------------------------
    def actor_weights(self) -> list[np.ndarray]:  # pragma: no cover - per backend
        raise NotImplementedError

    def numpy_actor(self) -> LiveActor:
        return LiveActor(self, self.actor_weights, "linear", self.activation)

    def sample_action(self, output: np.ndarray) -> np.ndarray:
        mean, log_std = np.split(output, 2, axis=-1)
        std = np.exp(np.clip(log_std, LOG_STD_MIN, LOG_STD_MAX))
        return np.tanh(mean + std * self._action_generator().standard_normal(mean.shape)).astype(np.float32)

    def greedy_action(self, output: np.ndarray) -> np.ndarray:
        return np.tanh(np.split(np.asarray(output), 2, axis=-1)[0])


def squashed_log_prob(u: np.ndarray, mean: np.ndarray, log_std: np.ndarray) -> np.ndarray:
    """``log pi(tanh(u))`` of the squashed Gaussian (numpy reference for the tests): the Gaussian's
    log density of ``u`` minus ``sum log(1 - tanh(u)**2 + 1e-6)``."""
    std = np.exp(log_std)
    gauss = -0.5 * ((u - mean) / std) ** 2 - log_std - 0.5 * np.log(2 * np.pi)
    return (gauss - np.log(1 - np.tanh(u) ** 2 + 1e-6)).sum(axis=-1)
