"""``RLBase``: the framework-free half of Note_rl's ``RL`` / ``RL_pytorch`` classes.

A user agent subclasses :class:`note_rl.keras.RL` or :class:`note_rl.torch.RL_pytorch`, which bind
this class to a backend.  The subclass provides ``self.param``, ``self.env``, ``action(s)`` and
``__call__(s, a, next_s, r, d)`` (the loss), optionally ``update_param()``; it then calls
``set(...)`` and ``train(...)``.  Everything else (buffers, exploration, the loop, checkpoints,
plots) is here or in the modules this class delegates to.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from ..adjusters import AdjusterMixin
from ..backends import Backend, get_backend
from ..buffers import (HerReplayBuffer, PrioritizedReplayBuffer, PriorityRecorder, ReplayBuffer,
                       TrajectoryReplayBuffer)
from . import checkpoint, envs, marl_rules, plots, set_args
from .agent_settings import BUFFER_KEYS, AgentSettings, param_docs, setting_attributes
from ..update import UpdateSpec, default_spec
from .her_rules import check_her_env, her_conflict
from .settings import TrainSettings
from .updater import sync_targets
from ..utils import network_input, scalar

__all__ = ["RLBase", "her_conflict", "check_her_env"]

_UNSET: Any = object()


@setting_attributes  # agent.batch, agent.PR, ...: properties over agent.settings
class RLBase(AdjusterMixin):
    """Base class of every agent; see the module docstring for the subclass contract.

    ``agent.settings`` (:class:`~note_rl.core.agent_settings.AgentSettings`) holds what ``set()``
    configured; each of its fields but ``buffer`` is also an attribute of the agent (``agent.batch``,
    ``agent.priority_alpha``, ...) that reads and writes it.

    Note_rl's adjuster methods (``adjust``, ``adabatch``, ``adjust_batch_size``,
    ``adjust_window_size``, ``compute_ess_from_weights``) and ``agent.adjuster`` come from
    :class:`note_rl.adjusters.AdjusterMixin`.
    """

    #: backend name, set by the framework subclasses (``"tf"`` or ``"torch"``)
    backend_name: str = ""
    #: this process's replica in ``distributed_training`` (only rank 0 writes periodic checkpoints)
    rank: int = 0

    def __init__(self) -> None:
        #: the set() arguments (a new frozen object per set() or attribute write)
        self.settings = AgentSettings()
        self.param: Any = None
        self.env: Any = None
        self.optimizer: Any = None
        self.prioritized_replay = PriorityRecorder()
        self.buffer: ReplayBuffer | None = None
        # counters and history (all saved in checkpoints)
        self.step_counter = 0       # environment steps, all processes together
        self.batch_counter = 0      # gradient steps
        self.total_episode = 0
        self.total_time = 0.0
        self.reward_list: list[float] = []
        self.loss_list: list[float | None] = []
        # checkpointing (Note_rl attribute names)
        self.path: str | None = None
        self.save_freq = 1
        self.max_save_files: int | None = None
        self.save_best_only = False
        self.save_param_only = False
        self.path_list: list[str] = []
        self.best_avg_reward: float | None = None
        # training control
        self.callbacks: list[Any] = []
        self.stop_training = False
        self.jit_compile = True
        #: seconds the last ``train()`` spent in its compiling first steps (PyTorch ``jit_compile=True``)
        self.compile_time: float | None = None
        self.episode_seed: int | None = None  # seed of the next env reset, see reset_seed()
        self._weights_loaded = False  # restore()/restore_param(): set(seed) keeps these weights
        self._pending_optimizer_state: Any = None
        self._saver: Any = None  # train(parallel_training_and_save=True): the writer process
        self.processes: int | None = None  # pool workers when train() gives none (DQN(..., processes=7))
        self.normalizer: Any = None  # set(normalize=...): a note_rl.normalize.Normalizer
        self._init_adjusters()

    # -- backend -----------------------------------------------------------------------------
    @property
    def backend(self) -> Backend:
        return get_backend(self.backend_name)

    # -- configuration -----------------------------------------------------------------------
    def set(self, policy: Any = _UNSET, noise: Any = _UNSET, pool_size: Any = _UNSET,
            batch: Any = _UNSET, num_updates: Any = _UNSET, num_steps: Any = _UNSET,
            update_batches: Any = _UNSET, update_steps: Any = _UNSET, trial_count: Any = _UNSET,
            criterion: Any = _UNSET, PPO: Any = _UNSET, HER: Any = _UNSET, TRL: Any = _UNSET, MARL: Any = _UNSET,
            PR: Any = _UNSET, IRL: Any = _UNSET, initial_ratio: Any = _UNSET,
            initial_TD: Any = _UNSET, lambda_: Any = _UNSET, alpha: Any = _UNSET,
            beta: Any = _UNSET, seed: Any = _UNSET, train_freq: Any = _UNSET,
            learning_starts: Any = _UNSET, her_k: Any = _UNSET, buffer: Any = _UNSET,
            MA: Any = _UNSET, epsilon: Any = _UNSET, n_envs: Any = _UNSET, normalize: Any = _UNSET) -> None:
        """Configure the agent; arguments not passed keep their current value.

        {fields}
        :param MA: Note_rl 001's name for ``MARL``
        :param epsilon: Note_rl 001's epsilon-greedy shorthand: the policy becomes
            ``EpsGreedyQPolicy(epsilon)``, or the ``eps`` of the policy given with it is set
        :param normalize: running observation and reward normalisation (SB3's ``VecNormalize``; see
            :mod:`note_rl.normalize`): ``True``, a dict of :class:`~note_rl.normalize.Normalizer`
            arguments (``{"obs": True, "reward": False}``), a ``Normalizer``, or ``False`` / ``None``
            (off).  Its ``gamma`` defaults to the agent's.  The statistics are saved with the weights
            and used, frozen, by ``predict``, evaluation and exported policies.  Not with ``HER``,
            ``MARL`` or ``pool_network``
        """
        given = set_args.aliases({k: v for k, v in locals().items() if k != "self" and v is not _UNSET})
        normalizer = _UNSET
        if "normalize" in given:
            from ..normalize import make_normalizer

            gamma = getattr(self, "gamma", None)
            # the agent's gamma is a float32 variable: 0.99, not 0.9900000095
            gamma = None if gamma is None else float(str(np.float32(scalar(gamma))))
            normalizer = make_normalizer(given.pop("normalize"), gamma)
            if normalizer is not None and (given.get("HER", self.HER) or given.get("MARL", self.MARL)):
                raise ValueError("set(normalize=...): not with HER or MARL (goal and multi-agent observations)")
        # every check is made on a new settings object; the agent changes only once all have passed
        self.settings = self.settings.updated(given, rollout=bool(getattr(self, "n_steps", None)),
                                              dims=(getattr(self, "state_dim", None),
                                                    getattr(self, "action_dim", None)))
        if normalizer is not _UNSET:
            self.normalizer = normalizer
        if BUFFER_KEYS & given.keys():
            self.buffer = None  # rebuilt with the new settings when training starts
        if given.get("seed") is not None:
            self.apply_seed(int(given["seed"]))
        elif self.seed is not None and ({"policy", "noise"} & given.keys()):
            self._seed_exploration(self.seed)  # a policy given after the seed is seeded too

    def apply_seed(self, seed: int) -> None:
        """Seed the framework, policies, noise, the replay sampler and the next env reset
        (built-in agents extend it to re-draw untrained weights, see ``agents.common.SeededInit``)."""
        self.seed = seed
        self.backend.seed(seed)
        self._seed_exploration(seed)
        if self.buffer is not None:
            self.buffer.seed(seed + 7)
        self.episode_seed = seed
        for env in _as_list(self.env):
            # PettingZoo-style envs have action_space(name) methods, not a seedable space
            if callable(getattr(getattr(env, "action_space", None), "seed", None)):
                env.action_space.seed(seed)

    def _seed_exploration(self, seed: int) -> None:
        for i, obj in enumerate(_as_list(self.policy) + _as_list(self.noise)):
            if callable(getattr(obj, "seed", None)):
                obj.seed(seed + 101 * (i + 1))

    # -- buffers -----------------------------------------------------------------------------
    @property
    def buffer_class(self) -> type[ReplayBuffer]:
        """The replay buffer class of this agent: the one given to ``set(buffer=...)``, else the
        one Note_rl's flags pick (``HER=True``: HER storage, ``PR=True``: prioritized, else uniform).
        This is the only place that turns those flags into a component."""
        if self.settings.buffer is not None:
            return self.settings.buffer
        if self.HER:
            return HerReplayBuffer
        if self.TRL:
            return TrajectoryReplayBuffer
        return PrioritizedReplayBuffer if self.PR else ReplayBuffer

    def make_buffer(self, n_segments: int = 1, window_size: Any = None,
                    clearing_freq: int | None = None, window_size_: int | None = None) -> ReplayBuffer:
        """Build the replay buffer described by ``set()`` (:attr:`buffer_class`)."""
        return self.buffer_class.for_agent(self, n_segments=n_segments, window_size=window_size,
                                           clearing_freq=clearing_freq, window_size_=window_size_)

    def her_reward_done(self, achieved_goal: np.ndarray, desired_goal: np.ndarray) -> tuple[Any, Any]:
        """Reward and done of relabelled HER items, on batches ``(B, goal_dim)``: the agent's
        ``reward_done_func(achieved_goal, desired_goal)`` if it defines one (Note_rl's contract),
        else the env's ``compute_reward(achieved, desired, {})`` (gymnasium-robotics GoalEnv) with
        done = 0, as SB3 does: a reached goal then only shows in the reward."""
        func = getattr(self, "reward_done_func", None)
        if callable(func):
            reward, done = func(achieved_goal, desired_goal)
            n = len(achieved_goal)
            return (np.broadcast_to(np.asarray(reward, np.float32), (n,)),
                    np.broadcast_to(np.asarray(done, np.float32), (n,)))
        env = self.env[0] if isinstance(self.env, (list, tuple)) else self.env
        reward = env.unwrapped.compute_reward(achieved_goal, desired_goal, {})
        return np.asarray(reward, np.float32), np.zeros(len(achieved_goal), np.float32)

    def marl_reward_done(self, rewards: list[float], dones: list[bool]) -> tuple[float, bool]:
        """Scalar ``(r, done)`` stored for one joint MARL step (lists in ``possible_agents``
        order): the agent's ``reward_done_func_ma(rewards, dones)`` if it defines one (Note_rl's
        hook), else the sum of the rewards and whether any agent terminated."""
        func = getattr(self, "reward_done_func_ma", None)
        if callable(func):
            r, done = func(rewards, dones)
            return float(np.asarray(r)), bool(np.asarray(done))
        return marl_rules.default_reward_done(rewards, dones)

    # -- acting ------------------------------------------------------------------------------
    def numpy_actor(self) -> Callable[[np.ndarray], np.ndarray] | None:
        """Optional numpy copy of ``action`` (built-in agents): used by pool workers and for fast
        acting.  Return ``None`` (the default) to act through the framework."""
        return None

    def act_output(self, s: np.ndarray, i: int | None = None) -> np.ndarray:
        """Network output for a batch of states (numpy in, numpy out); with ``i`` (MARL) the
        output of ``action(s, i)`` for agent ``i``."""
        actor = getattr(self, "_actor", None)
        if i is not None:
            # MARL: one compiled actor per agent index, kept in a dict under the same cache
            # attribute so every place that resets ``_actor`` (train, restore) resets these too
            if not isinstance(actor, dict):
                actor = self._actor = {}
            if i not in actor:
                actor[i] = self.backend.make_act(lambda x, _i=i: self.action(x, _i), self.jit_compile,
                                                 self._variables())
            return actor[i](network_input(s))
        if isinstance(actor, dict):  # left by a MARL run
            actor = None
        if actor is None:
            if self.IRL:
                actor = IrlActor(self)
            else:
                actor = self.numpy_actor() or self.backend.make_act(self.action, self.jit_compile, self._variables())
            self._actor = actor
        return actor(network_input(s))

    def policy_obs(self, obs: np.ndarray) -> np.ndarray:
        """Raw env observations (a batch) as the networks read them outside training: normalised with
        the frozen statistics of ``set(normalize=...)`` (never updated here), else unchanged.
        ``predict``, evaluation, ``run_agent`` / ``animate_agent`` and exported policies go through it;
        ``select_action`` / ``act_output`` take what the networks read (training's collectors
        normalise before acting)."""
        norm = getattr(self, "normalizer", None)
        return obs if norm is None else norm.normalize_obs(obs)

    def _variables(self) -> list[Any]:
        return self.backend.flatten(self.param) if self.param is not None else []

    def select_action(self, s: np.ndarray, i: int | None = None, p: int | None = None) -> Any:
        """Action for one state ``s`` (Note_rl signature; ``s`` may carry a leading batch axis).
        With ``MARL`` set, ``i`` is the agent index: the output of ``action(s, i)`` goes through
        ``policy[i]`` / ``noise[i]`` (a single policy / noise serves every agent)."""
        s = network_input(s)
        agent_index = i if self.MARL else None
        # one observation has obs_ndim axes (1, or 3 for the images of an encoder network)
        batch = s if s.ndim > getattr(self, "obs_ndim", 1) else s[None]
        output = self.act_output(batch, agent_index)[0]
        action = self.explore(output, p, agent_index)
        if self.IRL:  # Note_rl: [aux, action], the aux output passed through untouched
            return [self._actor.aux(batch)[0], action]
        return action

    def explore(self, output: np.ndarray, p: int | None = None, i: int | None = None) -> Any:
        """Apply the policy (discrete) or the noise (continuous) to one network output; lists
        are indexed by the agent ``i`` (MARL) or else by the process ``p``."""
        index = p if i is None else i
        policy = _pick(self.policy, index)
        if policy is not None:
            return policy.act(output, self.step_counter)
        noise = _pick(self.noise, index)
        if noise is not None:
            return output + noise.sample()
        if i is not None:
            return int(np.argmax(output)) if marl_rules.is_discrete_agent(self.env, i) else output
        if envs.is_discrete(self.env):
            return int(np.argmax(output))
        return output

    def predict(self, obs: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = True) -> tuple[Any, None]:
        """``(action, None)`` for one observation, ``(actions, None)`` for a batch: the greedy action
        in the env's own action space, as Stable-Baselines3's ``predict`` returns it (``state`` /
        ``episode_start``: SB3's recurrent arguments, unused); see :mod:`note_rl.inference`."""
        from ..inference import predict

        return predict(self, obs, state, episode_start, deterministic)

    def greedy_action(self, output: np.ndarray) -> Any:
        """The action without exploration for one network output (``run_agent``, evaluation): the
        best discrete action, or the output itself for continuous actions."""
        return int(np.argmax(output)) if envs.is_discrete(self.env) else output

    def training_starts(self) -> int:
        """Env steps taken before the first gradient step: ``learning_starts``, by default ``batch``
        (SB3 counts them the same way; see ``TrainingCadence.started``)."""
        return self.learning_starts if self.learning_starts is not None else (self.batch or 0)

    def pool_below_batch(self) -> bool:
        """Whether the replay pool cannot hold one mini-batch: such a run collects but never trains
        (``train()`` warns of it)."""
        return self.pool_size is not None and self.batch is not None and self.pool_size < self.batch

    def reset_seed(self) -> int | None:
        """Seed for the next env reset: the ``set(seed=...)`` value the first time after seeding,
        then ``None`` so that later episodes continue the env's own generator.  (Note_rl reset
        every episode with ``self.seed``, so all episodes started from the same state.)  Every
        reset in the training loop and in :meth:`env_` takes its seed from here."""
        seed, self.episode_seed = self.episode_seed, None
        return seed

    def copies_seed(self) -> int | None:
        """Seed for the first reset of the env copies a ``train()`` call builds (a vector env, pool
        workers): :meth:`reset_seed`, and once that is spent (a later ``train()`` call, or a run restored
        from a checkpoint) and the agent has a seed, one drawn from (seed, step counter).  New copies
        have generators nothing restored; unseeded they would draw from the OS, and a continued run
        would not repeat (PBT segments of A2C scored differently from run to run)."""
        seed = self.reset_seed()
        if seed is None and self.seed is not None:
            seed = int(np.random.SeedSequence([int(self.seed), int(self.step_counter)]).generate_state(1)[0] >> 1)
        return seed

    def env_(self, a: Any = None, initial: bool | None = None, p: int | None = None) -> Any:
        """Note_rl helper: reset (``initial=True``; seeded as :meth:`reset_seed` says) or step
        the (``p``-th) env; a step returns ``(next_state, reward, terminated or truncated)``."""
        env = _pick(self.env, p)
        if initial:
            return env.reset(seed=self.reset_seed())[0]
        next_state, reward, terminated, truncated, _ = env.step(a)
        return next_state, reward, terminated or truncated

    # -- pickling (finders send agents to fresh processes) ----------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for cache in ("_actor", "_critic_actor"):  # rebuilt on demand
            state.pop(cache, None)
        state["_saver"] = None  # a train() call's checkpoint writer process stays with that call
        state["_param_refs"] = _param_refs(self)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        refs = state.pop("_param_refs", None)
        self.__dict__.update(state)
        if refs is not None:
            # frameworks that pickle a network and a list of its variables separately (Keras)
            # would leave self.param pointing at copies; re-point it at the networks' variables
            self.param = _resolve_refs(refs, self.param, self.backend.modules(self), self.backend)

    # -- hooks a subclass may override -------------------------------------------------------
    def update_spec(self) -> UpdateSpec:
        """The gradient update (parameter groups, loss terms, target networks; see
        :mod:`note_rl.update`).  Default: Note_rl's contract, the groups of ``self.param`` and the
        loss of ``__call__`` (``rollout_loss`` for agents with rollouts, i.e. an ``n_steps``)."""
        return default_spec(self, self.rollout_loss if getattr(self, "n_steps", None) else None)

    def update_param(self) -> None:
        """Target-network / old-policy synchronisation, called on Note_rl's cadence
        (``update_steps`` / ``update_batches``).  Default: the spec's targets declared with
        ``every=None`` (none for a plain subclass, which overrides this method itself)."""
        sync_targets(self)

    # -- training ----------------------------------------------------------------------------
    def _train(self, optimizer: Any, episodes: int | None, settings: TrainSettings) -> Any:
        from .loop import Trainer

        _check_optimizer(optimizer)
        if settings.train_loss is not None and not callable(settings.train_loss):
            raise ValueError(f"train(train_loss={settings.train_loss!r}): not a loss metric (e.g. "
                             "keras.metrics.Mean()); the optimizer is train()'s second argument in Keras")
        if optimizer is not None:
            self.optimizer = optimizer
        if self.optimizer is None:
            raise ValueError("train(): no optimizer given and self.optimizer is not set")
        with self.backend.training_numerics():
            return Trainer(self, episodes, settings).run()

    def fit(self, optimizer: Any = None, episodes: int | None = None, **options: Any) -> float | None:
        """``train()`` with one signature in both backends: the optimizer (one, a list or a dict),
        the episode count, then any ``train()`` option by name (``train_loss`` included).  Options
        left out take this backend's ``train()`` defaults (``jit_compile`` differs by backend)."""
        if "jit_compile" not in options:
            options["jit_compile"] = inspect.signature(self.train).parameters["jit_compile"].default
        options["processes"] = self.default_processes(options.get("processes"))
        return self._train(optimizer, episodes, TrainSettings(**options))

    def default_processes(self, processes: int | None) -> int | None:
        """``train(processes=...)``, else the constructor's ``processes`` (Note_rl's pool-network
        agents took it there: ``DQN(state_dim=4, hidden_size=128, action_dim=2, processes=7)``)."""
        return processes if processes is not None else getattr(self, "processes", None)

    def loss_accepts_weights(self) -> bool:
        """Whether ``__call__`` takes importance-sampling weights as a sixth argument."""
        params = list(inspect.signature(self.__call__).parameters.values())
        return len(params) >= 6

    # -- checkpoints (see checkpoint.py) -----------------------------------------------------
    def save(self, path: str | None = None, save_data: bool = True) -> str:
        """Full checkpoint: weights, optimizer state, buffers, counters, histories."""
        return checkpoint.save_agent(self, path or self.path, full=True, save_data=save_data)

    def restore(self, path: str, optimizer: Any = None) -> None:
        """Load a :meth:`save` file; the optimizer state goes into ``optimizer`` (or
        ``self.optimizer``, or the first optimizer passed to ``train``)."""
        checkpoint.restore_agent(self, path, optimizer)
        self._weights_loaded = True

    def save_param(self, path: str | None = None) -> str:
        """Weights only."""
        return checkpoint.save_agent(self, path or self.path, full=False)

    def restore_param(self, path: str) -> None:
        """Load the weights of a :meth:`save` or :meth:`save_param` file."""
        checkpoint.restore_params(self, path)
        self._weights_loaded = True

    # -- plots (see plots.py) ----------------------------------------------------------------
    def visualize_reward(self, path: str | None = None) -> str | None:
        return plots.visualize(self, ("reward",), path)

    def visualize_loss(self, path: str | None = None) -> str | None:
        return plots.visualize(self, ("loss",), path)

    def visualize_reward_loss(self, path: str | None = None) -> str | None:
        return plots.visualize(self, ("reward", "loss"), path)

    def run_agent(self, max_steps: int, seed: int | None = None,
                  env: Any = None) -> tuple[list[Any], float, int]:
        """One greedy episode on ``env`` (default ``self.env``): ``(states, return, steps)``."""
        return plots.run_agent(self, max_steps, seed, env)

    def animate_agent(self, max_steps: int, mode: str = "rgb_array", save_path: str | None = None,
                      fps: int | None = None, writer: str | None = None, seed: int | None = None) -> str:
        """Record one greedy episode to ``save_path`` (``.gif``, or ``.mp4`` with ffmpeg); see
        :func:`note_rl.core.plots.animate_agent`."""
        return plots.animate_agent(self, max_steps, save_path, fps, mode=mode, writer=writer, seed=seed)


if RLBase.set.__doc__:  # None under python -OO
    # each argument's text is written once, beside its AgentSettings field
    RLBase.set.__doc__ = RLBase.set.__doc__.replace(
        "{fields}", param_docs().replace("\n", "\n" + " " * 8))


class IrlActor:
    """``set(IRL=True)``: acting through an ``action(s)`` that returns ``[aux, policy_output]``.
    Calling it gives ``policy_output`` (what the policy / noise act on); :meth:`aux` gives ``aux``.
    Each is its own compiled function of ``action``, so a step runs the network twice."""

    def __init__(self, agent: Any) -> None:
        variables = agent._variables()

        def part(k: int) -> Callable[[Any], Any]:
            def fn(x: Any) -> Any:
                out = agent.action(x)
                if not isinstance(out, (list, tuple)) or len(out) != 2:
                    raise ValueError("set(IRL=True): action(s) must return a pair [aux, policy_output], "
                                     f"got {type(out).__name__}")
                return out[k]
            return fn

        self._output = agent.backend.make_act(part(1), agent.jit_compile, variables)
        self.aux = agent.backend.make_act(part(0), agent.jit_compile, variables)

    def __call__(self, s: np.ndarray) -> np.ndarray:
        return self._output(s)


def _param_refs(agent: Any) -> Any:
    """``self.param`` with each variable replaced by ``(network attribute, index)`` when it
    belongs to one of the agent's networks (``None`` entries are pickled as they are)."""
    if agent.param is None or not agent.backend_name:
        return None
    backend = agent.backend
    where = {id(v): (name, i) for name, module in backend.modules(agent).items()
             for i, v in enumerate(backend.module_variables(module))}

    def walk(node: Any) -> Any:
        if backend.is_variable(node):
            return where.get(id(node))
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        return [walk(item) for item in node]

    return walk(agent.param)


def _resolve_refs(refs: Any, param: Any, modules: dict[str, Any], backend: Any) -> Any:
    if refs is None:  # not a network variable: keep the unpickled object
        return param
    if isinstance(refs, tuple):  # (network attribute, index)
        return backend.module_variables(modules[refs[0]])[refs[1]]
    if isinstance(refs, dict):
        return {k: _resolve_refs(refs[k], param[k], modules, backend) for k in refs}
    return [_resolve_refs(r, p, modules, backend) for r, p in zip(refs, param)]


def _check_optimizer(optimizer: Any) -> None:
    """``train(optimizer=...)`` holds optimizers (one, a list or a dict of them): a framework optimizer
    (``step`` in PyTorch, ``apply_gradients`` in Keras), a :class:`note_rl.optim.OptimizerSpec` or a
    factory.  A name such as ``'adam'`` used to fail deep inside the first gradient step."""
    from collections.abc import Mapping

    from ..optim import OptimizerSpec

    items = list(optimizer.values()) if isinstance(optimizer, Mapping) else \
        list(optimizer) if isinstance(optimizer, (list, tuple)) else [optimizer]
    for item in items:
        if item is None and optimizer is None:
            continue
        if not (isinstance(item, OptimizerSpec) or callable(item)
                or any(callable(getattr(item, m, None)) for m in ("step", "apply_gradients", "apply"))):
            raise ValueError(f"train(optimizer={item!r}): not an optimizer; pass the framework's optimizer over "
                             "the agent's parameters (e.g. torch.optim.Adam(agent.param) or keras.optimizers.Adam()), "
                             "a list or a dict of them")


def _as_list(obj: Any) -> list[Any]:
    if obj is None:
        return []
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def _pick(obj: Any, p: int | None) -> Any:
    if isinstance(obj, (list, tuple)):
        return obj[p or 0]
    return obj
