"""Experience collection in the training process.

* :class:`EpisodeCollector` - one env, off-policy: act, step, store (n-step aware; its subclass
  :class:`HerEpisodeCollector` acts on ``concat(observation, desired_goal)`` and commits each
  episode to the :class:`~note_rl.buffers.HerReplayBuffer` when it ends), and train on
  the cadence ``train_freq`` / ``num_updates`` / ``learning_starts``; ``update_param()`` every
  ``update_steps`` env steps (or after every training round when neither ``update_steps`` nor
  ``update_batches`` is set, as Note_rl does).
* :class:`RolloutCollector` - ``n_envs`` vectorised envs, on-policy: ``n_steps`` per env, GAE,
  then ``n_epochs`` passes of mini-batches (PPO as in rl-zoo / SB3).

Collectors get the call's :class:`~note_rl.core.run_context.RunContext` (``run``): they report finished
episodes through ``run.end_episode(return)``, test the step budget with ``run.out_of_steps()`` and call
``run.begin_round()`` where a training round starts (the one point where scheduled values are set).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..buffers import NStepAccumulator, compute_gae, flatten_goal_obs, rollout_minibatches
from ..buffers.nstep import stack_transitions
from .envs import EnvFactory, make_vec_env, step_env
from .her_rules import check_her_env, her_conflict
from ..utils import scalar
from .run_context import RunContext
from .runners import RolloutRunner, next_values

__all__ = ["Collector", "EpisodeCollector", "HerEpisodeCollector", "RolloutCollector", "TrainingCadence", "train_on_rollout"]


class TrainingCadence:
    """Decides, after each batch of new env steps, how many gradient steps to run and when to
    call ``update_param()``.  Shared by the single-env and the pool collectors."""

    def __init__(self, agent: Any, learner: Any, run: RunContext | None = None) -> None:
        self.agent = agent
        self.learner = learner
        self.run = run  # the train() call: its schedules and progress_remaining (1 -> 0)
        self.owed = 0.0  # gradient steps earned by env steps but not yet run
        self.sync_due = False

    def started(self, env_steps: int) -> bool:
        """Whether training has started after ``env_steps`` env steps: ``learning_starts`` of them were
        taken (env steps, as SB3 counts them, not stored items: n-step windows, HER's staged episodes
        and dropped truncated windows store later or fewer, and every worker of a multi-worker run
        must start its rounds at the same step) and the buffer has something to draw from.  A pool
        smaller than one mini-batch never trains (``train()`` warns of it): with the default
        ``learning_starts`` (``batch``) a capped buffer could otherwise start drawing 64-item batches
        from 10 transitions once 64 env steps were taken."""
        agent = self.agent
        if agent.pool_below_batch():
            return False
        return env_steps >= agent.training_starts() and agent.buffer.can_sample(1)

    def after_steps(self, n_new: int, step_before: int) -> None:
        """Account for ``n_new`` env steps and run the training they earned right away."""
        self.account(n_new, step_before)
        self.run_owed()

    def account(self, n_new: int, step_before: int) -> None:
        """Record that ``n_new`` env steps happened (the counter was ``step_before``)."""
        agent = self.agent
        freq = agent.train_freq or 1
        rounds = (step_before + n_new) // freq - step_before // freq
        if rounds > 0 and self.started(step_before + n_new):
            self.owed += rounds * (agent.num_updates or 1)
        if agent.update_steps:
            step = agent.update_steps
            self.sync_due = self.sync_due or (step_before + n_new) // step > step_before // step

    def run_owed(self) -> None:
        """Run the gradient steps earned so far, then ``update_param()`` if it is due."""
        agent = self.agent
        n = int(self.owed)
        self.owed -= n
        if n > 0 and self.run is not None:
            self.run.begin_round()  # scheduled values (DQN's lr decay) set before the round's steps
            hook = getattr(agent, "on_train_round", None)
            if callable(hook):  # an agent's own per-round hook (none of the built-in agents has one)
                hook(self.run.progress_remaining())
        trained = n > 0 and self.learner.train_round(n) > 0
        if agent.update_steps:
            if self.sync_due:
                self.sync_due = False
                self.learner.sync_params()
                self.run_adjust_hook()
        elif trained and not agent.update_batches:
            self.learner.sync_params()

    def run_adjust_hook(self) -> None:
        hook = getattr(self.agent, "adjust_func", None)
        if callable(hook):
            hook()


class Collector:
    """How one ``train()`` call gathers experience; the trainer calls :meth:`run_unit` until the
    budget is spent.  Built by ``Collector(agent, learner, run, settings)`` (``run``: the call's
    :class:`~note_rl.core.run_context.RunContext`)."""

    #: whether the collector stores into the agent's replay buffer (built before it starts)
    uses_replay = True

    @classmethod
    def check(cls, agent: Any, settings: Any) -> None:
        """Raise a one-line ``ValueError`` if this collector cannot run the agent with these
        ``train()`` options (called before anything is built).  Here: the env's observations are
        flat (a goal env's dict observations need HER's collector)."""
        import gymnasium as gym

        env = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
        if isinstance(getattr(env, "observation_space", None), gym.spaces.Dict):
            raise ValueError("train(): the env's observations are dicts (a goal env); train it with HER=True "
                             "(config: buffer=her) or flatten its observations")

    def run_unit(self) -> None:  # pragma: no cover - every collector defines it
        raise NotImplementedError

    def close(self) -> None:
        """Release processes and envs the collector started."""


class EpisodeCollector(Collector):
    """Single-process, single-env, off-policy collection (one unit = one episode); n-step returns
    when the agent sets ``num_steps``.  Subclasses change how a state is acted on and stored
    (:class:`HerEpisodeCollector`, :class:`~note_rl.core.marl.MultiAgentCollector`)."""

    def __init__(self, agent: Any, learner: Any, run: RunContext, settings: Any = None) -> None:
        self.agent = agent
        self.run = run
        self.cadence = TrainingCadence(agent, learner, run)
        self.env = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
        gamma = scalar(agent.gamma) if getattr(agent, "gamma", None) is not None else 1.0
        self.nstep = NStepAccumulator(agent.num_steps, gamma) if agent.num_steps else None
        self.norm = getattr(agent, "normalizer", None)  # set(normalize=...); refused with HER / MARL
        if self.norm is not None:
            self.norm.reset_returns(1)

    def _reset(self) -> np.ndarray:
        agent = self.agent
        state, _ = self.env.reset(seed=agent.reset_seed())  # only the first reset after set(seed)
        for noise in (agent.noise if isinstance(agent.noise, (list, tuple)) else [agent.noise]):
            if noise is not None:
                noise.reset_states()
        if self.nstep is not None:
            self.nstep.reset()
        if self.norm is not None:  # the reset observation enters the statistics (SB3's VecNormalize)
            state = self.norm.observe(np.asarray(state)[None])[0]
        return state

    def run_unit(self) -> None:
        agent, run, buffer = self.agent, self.run, self.agent.buffer
        state = self._reset()
        episode_return = 0.0
        while True:
            action, next_state, reward, terminated, end = self._step(state)
            stored = reward if self.norm is None else float(self.norm.scale_reward([reward], [end])[0])
            self._store(state, action, next_state, stored, terminated, end, buffer)
            episode_return += reward  # the env's own reward
            agent.step_counter += 1
            self.cadence.after_steps(1, agent.step_counter - 1)
            if end:
                run.end_episode(episode_return)
                return
            if agent.stop_training or run.out_of_steps():
                self._cut_short()
                return
            state = next_state

    def _step(self, state: Any) -> tuple[Any, Any, float, bool, bool]:
        """Act and step the env: ``(action, next_state, reward, terminated, episode_end)``."""
        action = self.agent.select_action(state)
        next_state, reward, terminated, truncated = step_env(self.env, action)
        if self.agent.IRL:  # the env got Note_rl's [aux, action] pair; replay keeps the action
            action = action[1]
        if self.norm is not None:  # an episode's last observation is normalised without entering the
            # statistics (SB3's terminal_observation); the next reset's observation enters them
            raw = np.asarray(next_state)[None]
            ended = terminated or truncated
            next_state = (self.norm.normalize_obs(raw) if ended else self.norm.observe(raw))[0]
        return action, next_state, reward, terminated, terminated or truncated

    def _store(self, s: Any, a: Any, s2: Any, r: float, terminated: bool, end: bool, buffer: Any) -> None:
        if self.nstep is None:
            buffer.add(s, a, s2, r, float(terminated))
            return
        ready = self.nstep.push(s, a, r, s2, terminated, end)
        if ready:
            buffer.add_batch(*stack_transitions(ready))

    def _cut_short(self) -> None:
        """The episode stops unfinished (step budget, ``stop_training``)."""


class HerEpisodeCollector(EpisodeCollector):
    """Collection for HER (``set(HER=True)``) on a goal env: the agent acts on
    ``concat(observation, desired_goal)``, and each episode is staged in the
    :class:`~note_rl.buffers.HerReplayBuffer` and committed when it ends (before the training it
    earns, so its own steps count already) or is cut short."""

    @classmethod
    def check(cls, agent: Any, settings: Any) -> None:
        """HER runs off-policy agents in one process on a goal env, without trimming options."""
        values = {k: getattr(agent, k) for k in ("HER", "PR", "PPO", "num_steps")}
        conflict = her_conflict(values, settings.pool_network, bool(getattr(agent, "n_steps", None)))
        if conflict is None and (settings.window_size is not None or settings.clearing_freq):
            # trimming would cut episodes at arbitrary points; the ring already drops oldest first
            conflict = "HER=True cannot be combined with window_size / clearing_freq trimming"
        if conflict:
            raise ValueError(f"train(): {conflict}")
        check_her_env(agent.env)

    def _reset(self) -> np.ndarray:
        self.agent.buffer.end_episode()  # a leftover of a run cut short (steps budget, stop_training, restore)
        return super()._reset()

    def _step(self, state: Any) -> tuple[Any, Any, float, bool, bool]:
        action = self.agent.select_action(flatten_goal_obs(state))
        next_state, reward, terminated, truncated = step_env(self.env, action)
        return action, next_state, reward, terminated, terminated or truncated

    def _store(self, s: Any, a: Any, s2: Any, r: float, terminated: bool, end: bool, buffer: Any) -> None:
        buffer.add_step(s["observation"], s["desired_goal"], s2["achieved_goal"], a,
                        s2["observation"], r, float(terminated))
        if end:
            buffer.end_episode()

    def _cut_short(self) -> None:
        self.agent.buffer.end_episode()


class RolloutCollector(Collector):
    """On-policy vectorised collection for agents implementing the rollout protocol:
    ``n_envs``, ``n_steps``, ``n_epochs``, ``gamma``, ``lam``, ``rollout_act(obs) -> (actions,
    log_probs, values)``, ``rollout_values(obs)``, ``rollout_loss(s, a, logp, adv, ret)`` and
    optionally ``on_rollout_start(progress_remaining)`` (before the rollout's scheduled values
    are set) and ``policy_step(whole_rollout)``.
    """

    on_policy = True  # trains on its own rollouts: no replay pool_size / batch to check

    uses_replay = False

    def __init__(self, agent: Any, learner: Any, run: RunContext, settings: Any = None) -> None:
        self.agent = agent
        self.learner = learner
        self.run = run
        env = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
        self.runner = RolloutRunner(make_vec_env(EnvFactory(env), agent.n_envs), agent.rollout_act,
                                    agent.rollout_values, seed=agent.copies_seed(),
                                    bounds=getattr(agent, "action_bounds", None),
                                    normalizer=getattr(agent, "normalizer", None))
        self.rng = np.random.default_rng(None if agent.seed is None else agent.seed + 11)

    def run_unit(self) -> None:
        hook = getattr(self.agent, "on_rollout_start", None)
        if callable(hook):
            hook(self.run.progress_remaining())
        self.run.begin_round()  # PPO's / A2C's lr and clip decay, at the rollout's start
        fields, finished = self.runner.collect(self.agent.n_steps)
        train_on_rollout(self.agent, self.learner, self.run, fields, finished, self.rng)

    def close(self) -> None:
        self.runner.vec.close()


def train_on_rollout(agent: Any, learner: Any, run: Any, fields: dict[str, np.ndarray],
                     finished: list[float], rng: np.random.Generator) -> None:
    """Count the rollout's steps and episodes, compute GAE, run the agent's ``policy_step`` on the
    whole rollout if it has one (TRPO), then ``n_epochs`` of mini-batches; finished episodes go to
    ``run.end_episode``."""
    agent.step_counter += fields["reward"].size
    for episode_return in finished:
        run.end_episode(episode_return)
    fields["advantage"], fields["returns"] = compute_gae(
        fields["reward"], fields["value"], next_values(fields), fields["terminated"],
        fields["episode_end"], scalar(agent.gamma), agent.lam)
    n = fields["reward"].size
    batch = min(agent.batch or n, n)  # no batch size: one gradient step on the whole rollout (A2C)
    normalize = getattr(agent, "normalize_advantage", False)
    # one mini-batch holding the whole rollout is the same batch every epoch (a mean does not
    # depend on the order): built once instead of shuffled and gathered n_epochs times
    whole = rollout_minibatches(fields, n, None, normalize) if batch == n else None
    policy_step = getattr(agent, "policy_step", None)
    if callable(policy_step) and not agent.stop_training:
        # a policy step on the whole rollout before the mini-batches (TRPO's natural-gradient step;
        # the mini-batches then train what the spec's terms step: TRPO's critic)
        policy_step((whole or rollout_minibatches(fields, n, None, normalize))[0])
    for _ in range(agent.n_epochs):
        for mb in whole or rollout_minibatches(fields, batch, rng, normalize):
            if agent.stop_training:
                return
            learner.rollout_update(mb)
