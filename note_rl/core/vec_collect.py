"""Off-policy collection from ``n_envs`` copies of the env in one process (``set(n_envs=k)``).

One unit is one vectorised step: a single forward pass gives every copy's network output, each
copy explores with its own noise process (copies of the agent's, seeded apart) or the shared
policy, and all transitions go into the one replay buffer together.  Where an episode ended, the
stored next state is the observation really reached (``info["final_obs"]`` of gymnasium's
same-step autoreset), not the reset state, so truncated episodes bootstrap correctly.  The
training cadence counts the steps of every copy, so ``train_freq`` / ``num_updates`` /
``update_steps`` give the same gradient steps per env step whatever ``n_envs`` is (SB3 counts
``train_freq`` in vector steps instead).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ..buffers import NStepAccumulator
from ..buffers.nstep import stack_transitions
from ..utils import scalar
from .collect import Collector, TrainingCadence
from .envs import EnvFactory, make_vec_env
from .run_context import RunContext

__all__ = ["VecEpisodeCollector"]


def noise_copies(noise: Any, n: int, seed: int | None) -> list[Any] | None:
    """One action-noise process per env copy: a list given by the user (one per copy), or the
    agent's process for copy 0 and re-seeded deep copies for the others (independent draws, and
    an Ornstein-Uhlenbeck state per copy)."""
    if noise is None:
        return None
    if isinstance(noise, (list, tuple)):
        if len(noise) < n:
            raise ValueError(f"train(): set(noise=[...]) gives {len(noise)} processes for n_envs={n}; "
                             "give one per env copy, or a single one")
        return list(noise[:n])
    rng = np.random.default_rng(None if seed is None else seed + 13)
    out = [noise]
    for _ in range(n - 1):
        twin = copy.deepcopy(noise)
        if callable(getattr(twin, "seed", None)):
            twin.seed(int(rng.integers(2**31)))
        out.append(twin)
    return out


class VecEpisodeCollector(Collector):
    """Off-policy collection from ``agent.n_envs`` vectorised copies of the env (see the module
    docstring); n-step returns are accumulated per copy."""

    @classmethod
    def check(cls, agent: Any, settings: Any) -> None:
        super().check(agent, settings)
        policy = agent.policy
        if isinstance(policy, (list, tuple)) and len(policy) < agent.n_envs:
            raise ValueError(f"train(): set(policy=[...]) gives {len(policy)} policies for n_envs={agent.n_envs}; "
                             "give one per env copy, or a single one")

    def __init__(self, agent: Any, learner: Any, run: RunContext, settings: Any = None) -> None:
        self.agent = agent
        self.run = run
        self.cadence = TrainingCadence(agent, learner, run)
        self.n = int(agent.n_envs)
        env = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
        self.vec = make_vec_env(EnvFactory(env), self.n)
        self.noises = noise_copies(agent.noise, self.n, agent.seed)
        gamma = scalar(agent.gamma) if getattr(agent, "gamma", None) is not None else 1.0
        self.nsteps = [NStepAccumulator(agent.num_steps, gamma) for _ in range(self.n)] if agent.num_steps else None
        self.obs, _ = self.vec.reset(seed=agent.copies_seed())
        self.norm = getattr(agent, "normalizer", None)  # set(normalize=...)
        if self.norm is not None:
            self.norm.reset_returns(self.n)
            self.obs = self.norm.observe(self.obs)
        for noise in self.noises or []:
            noise.reset_states()
        self.returns = np.zeros(self.n)

    def actions(self, obs: np.ndarray) -> np.ndarray:
        """One forward pass for all copies, then each copy's exploration (copy ``k`` uses
        ``policy[k]`` / its own noise process)."""
        agent = self.agent
        outputs = agent.act_output(obs)
        saved = agent.noise
        agent.noise = self.noises  # explore(p=k) picks copy k's process
        try:
            return np.stack([np.asarray(agent.explore(outputs[k], p=k)) for k in range(self.n)])
        finally:
            agent.noise = saved

    def run_unit(self) -> None:
        agent = self.agent
        actions = self.actions(self.obs)
        next_obs, rewards, terminated, truncated, info = self.vec.step(actions)
        ended = terminated | truncated
        stored = rewards
        if self.norm is not None:  # SB3's VecNormalize: new observations (resets included) enter the
            # statistics, final observations are only normalised; rewards scaled, returns stay raw
            stored = self.norm.scale_reward(rewards, ended)
            next_obs = self.norm.observe(next_obs)
        reached = np.array(next_obs, copy=True)
        for i in np.flatnonzero(ended):
            final = info["final_obs"][i]  # the reset state is next_obs[i]; store the state reached
            reached[i] = final if self.norm is None else self.norm.normalize_obs(final)
        self._store(actions, reached, stored, terminated, ended)
        self.obs = next_obs
        self.returns += rewards
        before = agent.step_counter
        agent.step_counter += self.n
        self.cadence.after_steps(self.n, before)
        for i in np.flatnonzero(ended):
            self.run.end_episode(float(self.returns[i]))
            self.returns[i] = 0.0
            if self.noises is not None:
                self.noises[i].reset_states()

    def _store(self, actions: np.ndarray, reached: np.ndarray, rewards: np.ndarray, terminated: np.ndarray,
               ended: np.ndarray) -> None:
        buffer = self.agent.buffer
        if self.nsteps is None:
            buffer.add_batch(_stored_obs(self.obs), actions, _stored_obs(reached),
                             np.asarray(rewards, dtype=np.float32), terminated.astype(np.float32))
            return
        ready = []
        for k, acc in enumerate(self.nsteps):
            ready += acc.push(self.obs[k], actions[k], float(rewards[k]), reached[k], bool(terminated[k]),
                              bool(ended[k]))
        if ready:
            buffer.add_batch(*stack_transitions(ready))

    def close(self) -> None:
        self.vec.close()


def _stored_obs(obs: Any) -> np.ndarray:
    """Observations as replay stores them: float32, except uint8 images, kept as uint8 so the
    buffer's frame pool stores each frame once (a float32 copy is 4x the bytes, and dense)."""
    obs = np.asarray(obs)
    return obs if obs.dtype == np.uint8 else obs.astype(np.float32, copy=False)
