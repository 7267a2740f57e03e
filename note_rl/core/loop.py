"""The episode loop shared by every agent, backend and collection strategy.

``Trainer.run`` builds the learner and the collector for this ``train()`` call, then lets the
collector run units (an episode, a pool phase, or a rollout) until the episode or step budget is
spent, ``criterion`` is reached or ``stop_training`` is set.  The collector gets the call's
:class:`~note_rl.core.run_context.RunContext` (budget, progress, schedules) and reports each finished
episode through it to :meth:`Trainer.end_episode`, which does the bookkeeping Note_rl does at the end
of an episode: histories, callbacks, periodic checkpoints, progress lines and the criterion test.
While the call runs, ``run_context.current(agent)`` is its context (adjusters and callbacks reach it
there).
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from ..callbacks import CallbackList
from . import checkpoint
from .async_save import AsyncSaver
from .collect import EpisodeCollector, HerEpisodeCollector, RolloutCollector
from .learner import Learner, window_hook
from .progress import Progress
from .run_context import RunContext
from .settings import TrainSettings, vec_env_conflict

__all__ = ["Trainer"]


class Trainer:
    """One ``train()`` call.

    :param agent: the agent
    :param episodes: episode budget (``None``: until ``criterion``, ``steps`` or ``stop_training``)
    :param settings: the other ``train()`` options
    """

    def __init__(self, agent: Any, episodes: int | None, settings: TrainSettings) -> None:
        if episodes is not None and (not isinstance(episodes, int) or episodes < 0):
            raise ValueError(f"train(episodes={episodes!r}): must be a non-negative integer or None")
        self.agent = agent
        self.episodes = episodes
        self.settings = settings
        # the episode index, step origin and budget live in the run context, shared with the
        # collector, the adjusters and callbacks (resume restores them there)
        self.run_ctx = RunContext.start(agent, settings, episodes, on_episode_end=self.end_episode,
                                        on_adjust=self.report_adjust)
        self.last_loss: float | None = None
        self.callbacks = CallbackList(list(agent.callbacks) + list(settings.callbacks or []), agent)
        self.progress = Progress(settings.p, episodes, steps=settings.steps, start_steps=self.run_ctx.start_steps)
        self.adjust_logs: dict[str, float] = {}  # latest adjuster values, added to episode logs

    # -- run ---------------------------------------------------------------------------------
    def run(self) -> float | None:
        agent, settings = self.agent, self.settings
        collector = self._collector_class()
        collector.check(agent, settings)  # refuse what the collector cannot run, before anything is built
        if not getattr(collector, "on_policy", False):
            _check_replay(agent, settings)
        window_hook(agent)  # both seed names for the trimming hook defined: refused now
        if getattr(agent, "normalizer", None) is not None and (
                settings.pool_network or agent.HER or agent.MARL):
            raise ValueError("set(normalize=...) runs with in-process collection only (one env or n_envs copies; "
                             "not with pool_network, HER or MARL)")
        if agent.IRL and collector is not EpisodeCollector:
            raise ValueError("set(IRL=True) runs with single-process off-policy collection only (not with "
                             "pool_network, HER, MARL or rollouts)")
        agent.stop_training = False
        agent.jit_compile = settings.jit_compile
        agent._actor = None  # rebuilt for this run's jit setting and weights
        self.learner = Learner(agent, agent.optimizer, settings, self.callbacks)
        self.collector = self._make_collector(collector)
        run = self.run_ctx
        run.learner, run.cadence = self.learner, getattr(self.collector, "cadence", None)
        agent._run = run  # run_context.current(agent): adjusters report there, reach num_store
        self._check_adjuster()
        try:
            self.callbacks.call("on_train_begin", {})
        except BaseException:
            agent._run = None  # current(agent) is None outside train(), after a failed start too
            raise
        self.progress.start_steps = run.start_steps  # a resuming callback may have restored the origin
        started = time.perf_counter()
        try:
            # periodic checkpoints written by a separate process (parallel_training_and_save=True);
            # started inside the try so that the finally below always stops it
            agent._saver = AsyncSaver(settings.start_method) if settings.parallel_training_and_save else None
            if self.episodes != 0:
                self._begin_episode()
                while not run.finished:
                    if agent.stop_training or run.out_of_steps():
                        break
                    self.collector.run_unit()
        finally:
            agent._run = None
            self.collector.close()
            self.learner.close()
            saver, agent._saver = agent._saver, None
            if saver is not None:
                saver.close()  # waits for the last checkpoint; a failed write raises here
            elapsed = time.perf_counter() - started
            agent.total_time += elapsed
            agent.compile_time = self.learner.updater.compile_time
            self.progress.finish(agent, elapsed)
            self.callbacks.call("on_train_end", {"episodes": run.episode, "time": elapsed})
        return self.last_loss

    def _check_adjuster(self) -> None:
        """Fail before training if the adjuster cannot work with this agent."""
        if self.agent.adjuster is None:
            return
        try:
            self.agent.adjuster.check(self.agent)
        except Exception:
            self.agent._run = None
            self.collector.close()
            raise

    def _collector_class(self) -> Any:
        """The collector for this agent and these options: the only place that turns the
        ``MARL`` / ``HER`` flags, ``pool_network``, ``n_envs`` and the rollout protocol (``n_steps``)
        into a component."""
        agent, settings = self.agent, self.settings
        own = getattr(agent, "collector_class", None)
        if own is not None:  # an algorithm with its own master loop (ACER's replay of rollout segments)
            return own
        if getattr(agent, "n_steps", None):  # on-policy rollout protocol
            if settings.pool_network:
                from .pool import PoolRolloutCollector

                return PoolRolloutCollector
            return RolloutCollector
        n_envs = getattr(agent, "n_envs", 1) or 1
        conflict = vec_env_conflict(n_envs, agent.MARL, agent.HER, settings.pool_network)
        if conflict:
            raise ValueError(f"train(): {conflict}")
        if agent.MARL:
            from .marl import MultiAgentCollector

            return MultiAgentCollector
        if agent.HER:
            return HerEpisodeCollector
        if settings.pool_network:
            from .pool import PoolCollector

            return PoolCollector
        if n_envs > 1:
            from .vec_collect import VecEpisodeCollector

            return VecEpisodeCollector
        return EpisodeCollector

    def _make_collector(self, collector: Any) -> Any:
        agent, settings = self.agent, self.settings
        if collector.uses_replay:
            n_segments = settings.processes if settings.pool_network else 1
            if agent.buffer is None or agent.buffer.n_segments != n_segments:
                agent.buffer = agent.make_buffer(n_segments, settings.window_size,
                                                 settings.clearing_freq, settings.window_size_)
            else:  # the buffer persists across train() calls; refresh this call's trimming rules
                agent.buffer.window_size = settings.window_size
                agent.buffer.clearing_freq = settings.clearing_freq
                agent.buffer.window_size_ = settings.window_size_
            agent.buffer.shuffle = settings.shuffle
        return collector(agent, self.learner, self.run_ctx, settings)

    def report_adjust(self, logs: dict[str, float]) -> None:
        """One adjuster run: ``on_adjust(logs)``; the values also go into the next episode's logs
        (as ``adjust/<key>``) so episode-level loggers record them."""
        self.adjust_logs.update(logs)
        self.callbacks.call("on_adjust", logs)

    # -- per episode -------------------------------------------------------------------------
    def _begin_episode(self) -> None:
        if self.settings.train_loss is not None:
            self.settings.train_loss.reset_state()
        self.callbacks.call("on_episode_begin", self.run_ctx.episode, {})

    def end_episode(self, episode_return: float) -> None:
        """Bookkeeping for one finished episode with return ``episode_return`` (the run context's
        episode sink)."""
        run = self.run_ctx
        if run.finished:
            return
        agent = self.agent
        losses = self.learner.pop_losses()
        loss = self._episode_loss(losses)
        self.last_loss = loss if loss is not None else self.last_loss
        agent.reward_list.append(float(episode_return))
        agent.loss_list.append(loss)
        agent.total_episode += 1
        logs = {"reward": float(episode_return), "loss": loss, "mean_reward": self.mean_reward(),
                "env_steps": agent.step_counter, "total_episode": agent.total_episode}
        logs.update({f"adjust/{k}": v for k, v in self.adjust_logs.items()})
        self.callbacks.call("on_episode_end", run.episode, logs)
        checkpoint.periodic_save(agent, run.episode, self.mean_reward(), self.settings.save_data)
        self.progress.episode(run.episode, logs)
        run.episode += 1
        if self._criterion_met():
            self.progress.criterion(run.episode, self.mean_reward())
            run.finished = True
        elif self.episodes is not None and run.episode >= self.episodes:
            run.finished = True
        elif agent.stop_training or run.out_of_steps():
            run.finished = True
        else:
            self._begin_episode()

    def _episode_loss(self, losses: list[float]) -> float | None:
        if not losses:
            return None
        train_loss = self.settings.train_loss
        if train_loss is not None:
            train_loss.update_state(np.asarray(losses, dtype=np.float32))
            return float(np.asarray(train_loss.result()))
        return float(np.mean(losses))

    def mean_reward(self) -> float | None:
        rewards = self.agent.reward_list
        if not rewards:
            return None
        k = self.agent.trial_count or len(rewards)
        return float(np.mean(rewards[-k:]))

    def _criterion_met(self) -> bool:
        agent = self.agent
        if agent.criterion is None or not agent.trial_count:
            return False
        if len(agent.reward_list) < agent.trial_count:
            return False
        return float(np.mean(agent.reward_list[-agent.trial_count:])) >= agent.criterion


def _check_replay(agent: Any, settings: TrainSettings) -> None:
    """Replay training needs a ``batch`` (Note_rl's order: ``set(...)``, then ``train(...)``); a
    pool smaller than one batch never trains, which is said (a warning: collecting without
    training is a legitimate use)."""
    if getattr(agent, "batch", None) is None:
        raise ValueError("train(): batch is not set; call set(batch=..., pool_size=...) before train()")
    if settings.shuffle and (agent.PR or agent.HER):
        raise ValueError("train(shuffle=True) is for uniform replay; PR=True and HER=True draw their own "
                         "mini-batches (by priority / with relabelled goals)")
    if agent.pool_below_batch():
        warnings.warn(f"train(): pool_size={agent.pool_size} is smaller than batch={agent.batch}: no mini-batch "
                      "can be drawn, so this run makes no gradient step", stacklevel=4)
