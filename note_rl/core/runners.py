"""Env-stepping routines shared by the training process and pool workers (numpy + gymnasium only,
so worker processes never import a deep-learning framework)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..buffers.nstep import NStepAccumulator

__all__ = ["EpisodeRunner", "RolloutRunner", "StateDependentNoise", "explore_action", "sample_rollout_actions",
           "gaussian_log_prob", "sde_log_prob", "SDE_EPS"]

SDE_EPS = 1e-6  # gSDE: added to the state-dependent variance (SB3's epsilon)

# (obs batch) -> (actions, log_probs, values)
RolloutAct = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


def explore_action(output: np.ndarray, policy: Any, noise: Any, step_counter: int, discrete: bool) -> Any:
    """The exploration rule of ``RLBase.explore`` for one network output."""
    if policy is not None:
        return policy.act(output, step_counter)
    if noise is not None:
        return output + noise.sample()
    return int(np.argmax(output)) if discrete else output


def gaussian_log_prob(actions: np.ndarray, mean: np.ndarray, log_std: np.ndarray) -> np.ndarray:
    """Log density of ``actions`` under a diagonal Gaussian, summed over the action axis."""
    z = (actions - mean) * np.exp(-log_std)
    return (-0.5 * z * z - log_std - 0.5 * np.log(2.0 * np.pi)).sum(axis=-1)


def sde_log_prob(actions: np.ndarray, mean: np.ndarray, features: np.ndarray, log_std: np.ndarray) -> np.ndarray:
    """Log density of ``actions`` under gSDE's Gaussian: per action dimension ``N(mean, features**2 @
    exp(log_std)**2 + 1e-6)`` (``log_std`` a ``(len(features), action_dim)`` matrix), summed."""
    var = (np.asarray(features, np.float64) ** 2) @ np.exp(2.0 * np.asarray(log_std, np.float64)) + SDE_EPS
    return (-0.5 * (actions - mean) ** 2 / var - 0.5 * np.log(var) - 0.5 * np.log(2.0 * np.pi)).sum(axis=-1)


class StateDependentNoise:
    """gSDE's exploration for a batch of env copies (Raffin et al. 2022, on-policy as in SB3's PPO
    and A2C): copy ``i`` plays ``mean + z_i @ E_i`` where ``z`` is the actor's last hidden layer and
    ``E_i ~ N(0, exp(log_std)**2)`` is held fixed for ``every`` steps (``-1``: the whole rollout), so
    that an env copy's action is a smooth function of its state over that stretch.

    :param log_std: the ``(features, action_dim)`` log standard deviations at the rollout's start
    :param n_envs: env copies (one matrix each)
    :param rng: the generator the matrices are drawn from
    :param every: steps between two draws (``-1``: one draw, at construction)
    """

    def __init__(self, log_std: np.ndarray, n_envs: int, rng: np.random.Generator, every: int = -1) -> None:
        self.log_std = np.asarray(log_std, np.float32)
        self.n_envs, self.rng, self.every = int(n_envs), rng, int(every)
        self.steps = 0
        self.draw()

    def draw(self) -> None:
        """New matrices ``E_i`` for every env copy."""
        std = np.exp(self.log_std.astype(np.float64))
        self.matrices = (std * self.rng.standard_normal((self.n_envs, *std.shape))).astype(np.float32)

    def sample(self, output: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Actions (unclipped, as :func:`sample_rollout_actions`) and their log-probabilities from
        acting outputs ``[mean, z]`` (one row per env copy; the mean has ``log_std``'s columns)."""
        if self.every > 0 and self.steps and self.steps % self.every == 0:
            self.draw()
        self.steps += 1
        output = np.asarray(output, np.float32)
        action_dim = self.log_std.shape[1]
        mean, features = output[:, :action_dim], output[:, action_dim:]
        actions = mean + np.einsum("bi,bij->bj", features, self.matrices)
        return actions.astype(np.float32), sde_log_prob(actions, mean, features, self.log_std).astype(np.float32)


def sample_rollout_actions(output: np.ndarray, rng: np.random.Generator, log_std: np.ndarray | None = None,
                           policy: Any = None, step_counter: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Actions and their log-probabilities for a batch of policy outputs.

    With ``log_std`` the policy is a diagonal Gaussian (continuous actions): ``output`` is its mean
    and the sampled actions are returned unclipped (the log-probability is of what was sampled; the
    env step clips).  Otherwise ``output`` holds action probabilities and an action is drawn from
    them, by ``policy`` when one is given.  A 2-D ``log_std`` is gSDE's matrix: ``output`` is ``[mean, z]``
    and each row draws its own exploration matrix (:class:`StateDependentNoise`, held for one step)."""
    if log_std is not None and np.ndim(log_std) == 2:
        return StateDependentNoise(log_std, len(output), rng).sample(output)
    if log_std is not None:
        log_std = np.asarray(log_std, dtype=np.float32)
        actions = output + np.exp(log_std) * rng.standard_normal(output.shape)
        return actions.astype(np.float32), gaussian_log_prob(actions, output, log_std).astype(np.float32)
    if policy is not None:
        actions = np.asarray(policy.act(output, step_counter), dtype=np.int64)
    else:
        cdf = np.cumsum(output, axis=1)
        u = rng.random((len(output), 1)) * cdf[:, -1:]
        actions = np.minimum((u > cdf).sum(axis=1), output.shape[1] - 1).astype(np.int64)
    logp = np.log(output[np.arange(len(actions)), actions] + 1e-12).astype(np.float32)
    return actions, logp


class EpisodeRunner:
    """Runs whole episodes of one env with a numpy actor and records the transitions.

    :param env: a gymnasium env
    :param act: ``(obs, step_counter) -> action``
    :param num_steps: n-step returns (``None``: one-step transitions)
    :param gamma: discount inside n-step windows
    :param seed: seed of the first reset (later episodes continue the env's generator)
    """

    def __init__(self, env: Any, act: Callable[[np.ndarray, int], Any], num_steps: int | None = None,
                 gamma: float = 1.0, seed: int | None = None, noise: Any = None) -> None:
        self.env = env
        self.act = act
        self.nstep = NStepAccumulator(num_steps, gamma) if num_steps else None
        self.seed = seed
        self.noise = noise

    def run(self, step_counter: int) -> tuple[dict[str, np.ndarray], float, int]:
        """One episode; returns ``(transitions, episode_return, env_steps)``."""
        state, _ = self.env.reset(seed=self.seed)
        self.seed = None
        if self.noise is not None:
            self.noise.reset_states()
        if self.nstep is not None:
            self.nstep.reset()
        rows: list[tuple[Any, ...]] = []
        total, steps = 0.0, 0
        while True:
            action = self.act(state, step_counter + steps)
            next_state, reward, terminated, truncated, _ = self.env.step(action)
            steps += 1
            total += float(reward)
            end = bool(terminated or truncated)
            if self.nstep is None:
                rows.append((state, action, next_state, float(reward), float(terminated)))
            else:
                rows.extend(self.nstep.push(state, action, float(reward), next_state, bool(terminated), end))
            if end:
                break
            state = next_state
        return _stack(rows, self.env), total, steps


def _stack(rows: list[tuple[Any, ...]], env: Any) -> dict[str, np.ndarray]:
    if not rows:
        # n-step returns store nothing for an episode truncated in fewer than n steps; the arrays
        # still need the field shapes, so that a worker can concatenate them with its other episodes
        obs = env.observation_space
        act = env.action_space
        return {"state": np.zeros((0, *obs.shape), np.float32), "action": np.zeros((0, *act.shape), act.dtype),
                "next_state": np.zeros((0, *obs.shape), np.float32), "reward": np.zeros(0, np.float32),
                "done": np.zeros(0, np.float32)}
    s, a, s2, r, d = zip(*rows)
    return {"state": np.asarray(s, dtype=np.float32), "action": np.asarray(a),
            "next_state": np.asarray(s2, dtype=np.float32), "reward": np.asarray(r, dtype=np.float32),
            "done": np.asarray(d, dtype=np.float32)}


class RolloutRunner:
    """Collects ``n_steps`` vectorised steps for on-policy training.

    :param vec: a gymnasium vector env with same-step autoreset
    :param act: ``obs -> (actions, log_probs, values)``
    :param values: ``obs -> values``
    :param seed: seed of the first reset
    :param bounds: ``(low, high)`` of a Box action space: the env receives the actions clipped to
        them while the rollout stores what the policy sampled (SB3's convention)
    :param normalizer: a :class:`~note_rl.normalize.Normalizer` (``set(normalize=...)``): the policy
        acts on, and the rollout stores, normalised observations and scaled rewards; the finished
        episodes' returns are the env's own rewards
    """

    def __init__(self, vec: Any, act: RolloutAct, values: Callable[[np.ndarray], np.ndarray],
                 seed: int | None = None, bounds: tuple[np.ndarray, np.ndarray] | None = None,
                 normalizer: Any = None) -> None:
        self.vec = vec
        self.act = act
        self.values = values
        self.bounds = bounds
        self.norm = normalizer
        self.obs, _ = vec.reset(seed=seed)
        if normalizer is not None:
            normalizer.reset_returns(vec.num_envs)
            self.obs = normalizer.observe(self.obs)
        self.returns = np.zeros(vec.num_envs)

    def step(self) -> tuple[dict[str, np.ndarray], list[float]]:
        """One vectorised step: the stored fields and the returns of episodes that ended."""
        actions, log_probs, values = self.act(self.obs)
        played = actions if self.bounds is None else np.clip(actions, *self.bounds)
        next_obs, rewards, terminated, truncated, info = self.vec.step(played)
        ended = terminated | truncated
        final_values = np.zeros(len(ended), dtype=np.float32)
        if truncated.any():  # bootstrap from the state really reached, not the reset state
            idx = np.flatnonzero(truncated)
            final = np.stack([info["final_obs"][i] for i in idx])
            final_values[idx] = self.values(final if self.norm is None else self.norm.normalize_obs(final))
        stored = rewards
        if self.norm is not None:  # (SB3's VecNormalize order: the new observations, the reset ones
            # included, enter the statistics; a final observation is only normalised)
            stored = self.norm.scale_reward(rewards, ended)
            next_obs = self.norm.observe(next_obs)
        fields = {"state": self.obs, "action": actions, "log_prob": log_probs, "value": values,
                  "reward": stored, "final_value": final_values, "terminated": terminated,
                  "episode_end": ended}
        self.obs = next_obs
        self.returns += rewards
        finished = [float(self.returns[i]) for i in np.flatnonzero(ended)]
        self.returns[ended] = 0.0
        return fields, finished

    def collect(self, n_steps: int) -> tuple[dict[str, np.ndarray], list[float]]:
        """``n_steps`` steps stacked to ``(n_steps, n_envs)`` arrays plus ``last_value`` (the value of
        the observation after the last step) and the finished episodes' returns."""
        steps: list[dict[str, np.ndarray]] = []
        finished: list[float] = []
        for _ in range(n_steps):
            fields, done = self.step()
            steps.append(fields)
            finished.extend(done)
        out = {k: np.stack([s[k] for s in steps]) for k in steps[0]}
        out["last_value"] = np.asarray(self.values(self.obs), dtype=np.float32)
        return out, finished


def next_values(fields: dict[str, np.ndarray]) -> np.ndarray:
    """``V`` of the state reached after each step: the next stored state's value, the final
    observation's value where an episode ended, and ``last_value`` after the last step."""
    following = np.concatenate([fields["value"][1:], fields["last_value"][None]])
    return np.where(fields["episode_end"], fields["final_value"], following)
