"""Gradient steps and the parameter-update cadence.

``Learner`` is the only place that runs the user's loss: it samples a mini-batch, runs the
agent's update (:class:`~note_rl.core.updater.Updater`: its loss terms and target networks),
writes the TD errors the loss pushed back into the prioritized buffer, counts the step, fires the batch callbacks, and calls ``update_param()`` on Note_rl's cadence
(every ``update_batches`` gradient steps).  After ``update_param()`` a prioritized buffer is trimmed
by ``window_size_func`` / the adjuster's window rule / ``window_size_ppo`` / ``window_size_pr``
and, with ``PPO=True`` and a uniform buffer, the expired on-policy data is cleared.  After each
replay step it calls Note_rl's ``adjust_func()`` hook when due and runs ``agent.adjuster`` every
``adjuster.every`` gradient steps.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np

from ..backends.base import StepResult
from ..buffers import HerReplayBuffer, PrioritizedReplayBuffer, RolloutBatch
from ..buffers.parallel_sampling import ParallelSampler
from ..callbacks import CallbackList
from .settings import TrainSettings
from .updater import Updater

__all__ = ["Learner", "NonFiniteLossError"]


class NonFiniteLossError(FloatingPointError):
    """The loss became NaN or infinite; training cannot continue meaningfully."""


class Learner:
    """Runs gradient steps for one agent during one ``train()`` call.

    :param agent: the agent (``RLBase`` subclass)
    :param optimizer: what ``train()`` received (one optimizer, a list or a dict; see
        :func:`note_rl.update.bind_optimizers`)
    :param settings: the ``train()`` options
    :param callbacks: dispatcher of the batch hooks
    """

    def __init__(self, agent: Any, optimizer: Any, settings: TrainSettings,
                 callbacks: CallbackList) -> None:
        self.agent = agent
        self.settings = settings
        self.callbacks = callbacks
        self.updater = Updater(agent, optimizer, settings.jit_compile)
        self._restore_pending_optimizer_state()
        self.losses: list[float] = []  # losses since the last episode ended
        self.updates_since_sync = 0

    def _restore_pending_optimizer_state(self) -> None:
        pending = self.agent._pending_optimizer_state
        if pending is None:
            return
        metas, arrays = pending
        pairs = self.updater.optimizer_groups
        if len(metas) != len(pairs):
            raise ValueError(f"checkpoint has {len(metas)} optimizer states, train() got "
                             f"{len(pairs)} optimizers")
        for (opt, variables), meta, arr in zip(pairs, metas, arrays):
            self.agent.backend.load_optimizer_state(opt, variables, meta, arr)
        self.agent._pending_optimizer_state = None

    def update(self, arrays: Sequence[np.ndarray], weights: np.ndarray | None = None) -> Any:
        """One gradient update (the due loss terms and target updates) on one batch."""
        return self.updater(self.agent.batch_counter + 1, arrays, weights)

    # -- replay training ---------------------------------------------------------------------
    def train_round(self, n_updates: int) -> int:
        """Up to ``n_updates`` replay steps (fewer if a callback stops training)."""
        done = 0
        for _ in range(n_updates):
            if self.agent.stop_training:
                break
            self.replay_update()
            done += 1
        return done

    def replay_update(self) -> float:
        agent, buffer = self.agent, self.agent.buffer
        self._batch_begin()
        batch = self._sample(buffer)
        result = self.update([batch.state, batch.action, batch.next_state, batch.reward, batch.done],
                             batch.weights)
        if isinstance(buffer, PrioritizedReplayBuffer):
            if result.td is None:
                raise ValueError("PR=True but the loss never called "
                                 "self.prioritized_replay.update(TD) with per-sample TD errors")
            buffer.update_priorities(batch.indices, result.td, result.ratio)
        self._batch_end(result)
        synced = bool(agent.update_batches) and agent.batch_counter % agent.update_batches == 0
        if synced:
            self.sync_params()
        self._run_adjusters(synced, buffer)
        return result.loss

    def _run_adjusters(self, synced: bool, buffer: Any) -> None:
        """Note_rl's ``adjust_func()`` hook, then the declarative ``agent.adjuster`` if it is due."""
        agent = self.agent
        hook = getattr(agent, "adjust_func", None)
        if callable(hook):
            # Note_rl: after update_param() on the update_batches cadence and, with PR, after every
            # step once the buffer holds pool_size_ = num_updates * batch items
            pool_size_ = (agent.num_updates or 1) * agent.batch
            if synced or (isinstance(buffer, PrioritizedReplayBuffer) and len(buffer) >= pool_size_):
                hook()
        adjuster = agent.adjuster
        if adjuster is not None and adjuster.due(agent.batch_counter):
            adjuster.run(agent)

    # -- on-policy training ------------------------------------------------------------------
    def rollout_update(self, mb: RolloutBatch) -> float:
        self._batch_begin()
        result = self.update(list(mb))
        self._batch_end(result)
        return result.loss

    # -- bookkeeping -------------------------------------------------------------------------
    def _batch_begin(self) -> None:
        if self.callbacks.wants("on_batch_begin"):
            self.callbacks.call("on_batch_begin", self.agent.batch_counter, {})

    def _batch_end(self, result: StepResult) -> None:
        agent, loss = self.agent, result.loss
        if not math.isfinite(loss):
            raise NonFiniteLossError(f"loss became {loss} at gradient step {agent.batch_counter}")
        self.losses.append(loss)
        agent.batch_counter += 1
        self.updates_since_sync += 1
        if self.callbacks.wants("on_batch_end"):
            logs = {"loss": loss}
            if result.losses:  # several losses: each as loss/<group or term>
                logs.update({f"loss/{k}": v for k, v in result.losses.items()})
            self.callbacks.call("on_batch_end", agent.batch_counter - 1, logs)

    #: the ``processes_pr`` / ``processes_her`` sampler, started at the first replay step
    _sampler: ParallelSampler | None = None
    _sampler_checked = False  # the options were looked at (a useless one was warned about)

    def _sample(self, buffer: Any) -> Any:
        """A mini-batch: ``buffer.sample(batch)``, or drawn by ``processes_pr`` / ``processes_her``
        worker processes (started lazily: most runs never reach a replay step this way)."""
        if not self._sampler_checked or (self._sampler is not None and self._sampler.buffer is not buffer):
            self._start_sampler(buffer)
        sampler = self._sampler
        return buffer.sample(self.agent.batch) if sampler is None else sampler.sample(self.agent.batch)

    def _start_sampler(self, buffer: Any) -> None:
        """Start the sampler the options ask for; warn once about an option this buffer ignores
        (Note_rl ignored ``processes_pr`` without ``PR=True`` silently)."""
        self.close()  # a sampler over a buffer the agent has since replaced
        first, self._sampler_checked = not self._sampler_checked, True
        settings = self.settings
        for option, n, cls, flag in (("processes_pr", settings.processes_pr, PrioritizedReplayBuffer, "PR=True"),
                                     ("processes_her", settings.processes_her, HerReplayBuffer, "HER=True")):
            if n is None:
                continue
            if isinstance(buffer, cls):
                self._sampler = ParallelSampler(buffer, n, settings.start_method)
            elif first:
                warnings.warn(f"train({option}={n}) has no effect: the agent's replay buffer is a "
                              f"{type(buffer).__name__}, not {flag}'s", UserWarning, stacklevel=5)

    def close(self) -> None:
        """Release what this call started (parallel samplers); the loop calls it once at the end."""
        sampler, self._sampler = self._sampler, None
        if sampler is not None:
            sampler.close()

    def pop_losses(self) -> list[float]:
        out, self.losses = self.losses, []
        return out

    def sync_params(self, segment: int | None = None) -> None:
        """``update_param()`` then the buffer's post-update maintenance (Note_rl's trims of a
        prioritized buffer, or expiring on-policy data; see ``ReplayBuffer.after_update_param``)."""
        agent, settings, buffer = self.agent, self.settings, self.agent.buffer
        agent.update_param()
        self.updates_since_sync = 0
        if buffer is not None:
            buffer.after_update_param(lambda seg: _post_update_window(agent, settings, seg, buffer))


def window_hook(agent: Any) -> Any:
    """The agent's trimming hook under either seed name; defining both is ambiguous."""
    funcs = {name: getattr(agent, name, None) for name in ("window_size_func", "window_size_fn")}
    funcs = {name: f for name, f in funcs.items() if callable(f)}
    if len(funcs) > 1:
        raise ValueError("the agent defines both window_size_func and window_size_fn (two names for "
                         "one hook, from different Note_rl versions); keep one")
    return next(iter(funcs.values()), None)


def _post_update_window(agent: Any, settings: TrainSettings, segment: int, buffer: Any) -> int | None:
    """Items to drop from ``segment`` after ``update_param()``: the agent's ``window_size_func``
    (seed 000's name) or ``window_size_fn`` (seeds 002/003), else the adjuster's window rule, else
    the buffer's ``train()`` option."""
    func = window_hook(agent)
    single = buffer.n_segments == 1
    if callable(func):
        return func() if single else func(segment)
    adjuster = agent.adjuster
    if adjuster is not None and adjuster.window is not None:
        return adjuster.window.window(agent, None if single else segment)
    return buffer.post_update_window(settings)
