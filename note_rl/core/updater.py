"""Runs an algorithm's :class:`~note_rl.update.UpdateSpec` on mini-batches.

The numpy side of the update seam: it binds the optimizers given to ``train()`` to the spec's
parameter groups, asks the backend for one compiled step per loss term, and on every gradient
update runs the terms that are due (in order), then the target-network updates that are due.
Targets declared with ``every=None`` run from ``update_param()`` instead (:func:`sync_targets`).
"""

from __future__ import annotations

import inspect
from typing import Any, Sequence

import numpy as np

from ..backends.base import BoundGroup, StepResult
from ..update import TargetUpdate, UpdateSpec, bind_optimizers, optimizer_list

__all__ = ["Updater", "sync_targets", "accepts_weights", "optimizer_variables"]


def accepts_weights(fn: Any, n_fields: int = 5) -> bool:
    """Whether ``fn`` takes importance-sampling weights after the ``n_fields`` batch arrays."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    return len(params) > n_fields


def _variables(backend: Any, obj: Any) -> list[Any]:
    """Variables of a network object, or of a (nested) list of networks or variables."""
    if backend.is_variable(obj):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [v for item in obj for v in _variables(backend, item)]
    return backend.module_variables(obj)


def _target_pairs(backend: Any, target: TargetUpdate) -> tuple[list[Any], list[Any]]:
    t, s = _variables(backend, target.target), _variables(backend, target.source)
    if len(t) != len(s):
        raise ValueError(f"target network has {len(t)} variables, its source {len(s)}")
    return t, s


def optimizer_variables(agent: Any, optimizer: Any, spec: UpdateSpec | None = None) -> list[tuple[Any, list[Any]]]:
    """``(optimizer, the variables it steps)`` for each distinct optimizer of ``train(optimizer=...)``
    bound to the agent's parameter groups (the order optimizer states are checkpointed in)."""
    spec = spec or agent.update_spec()
    by_group = bind_optimizers(spec.groups, optimizer)
    flat = agent.backend.flatten
    return [(opt, [v for g in spec.groups if by_group[g.name] is opt for v in flat(g.params)])
            for opt in optimizer_list(list(by_group.values()))]


def sync_targets(agent: Any, spec: UpdateSpec | None = None) -> None:
    """Run the spec's ``every=None`` target updates (what ``update_param()`` does by default)."""
    spec = spec or agent.update_spec()
    for target in spec.targets:
        if target.every is None:
            agent.backend.update_targets(*_target_pairs(agent.backend, target), target.tau)


class Updater:
    """One ``train()`` call's gradient updates.

    :param agent: the agent (its ``update_spec()`` and backend)
    :param optimizer: what ``train()`` received: one optimizer, a list or a dict (see
        :func:`note_rl.update.bind_optimizers`)
    :param jit: compile each term (``tf.function(jit_compile=True)`` / ``torch.compile``)
    :param n_fields: arrays in a batch before the optional importance weights
    """

    def __init__(self, agent: Any, optimizer: Any, jit: bool, n_fields: int = 5) -> None:
        backend = agent.backend
        self.spec = spec = agent.update_spec()
        self.by_group = bind_optimizers(spec.groups, optimizer)
        self.group_vars = {g.name: backend.flatten(g.params) for g in spec.groups}
        self.optimizer_groups = optimizer_variables(agent, optimizer, spec)
        for opt, variables in self.optimizer_groups:
            backend.prepare_optimizer(opt, variables)
        self.terms = []
        for term in spec.terms:
            bound = [BoundGroup(name, self.group_vars[name], self.by_group[name], spec.group(name).max_grad_norm)
                     for name in term.groups]
            step = backend.make_update(term.fn, bound, agent.prioritized_replay, jit, term.max_grad_norm,
                                       every_group=len(set(term.groups)) == len(spec.groups))
            self.terms.append((term, step, accepts_weights(term.fn, n_fields)))
        self.targets = [(t, _target_pairs(backend, t)) for t in spec.targets if t.every is not None]
        self.backend = backend

    @property
    def compile_time(self) -> float | None:
        """Seconds the terms' first, compiling steps took (``jit_compile=True`` on PyTorch; ``None``
        when nothing was compiled)."""
        times = [step.compile_s for _, step, _ in self.terms if getattr(step, "compile_s", None) is not None]
        return float(sum(times)) if times else None

    def __call__(self, update: int, arrays: Sequence[np.ndarray], weights: np.ndarray | None) -> StepResult:
        """Gradient update number ``update`` (1-based) on one batch: the due terms in order, then
        the due target updates.  ``weights`` go to the terms that take them."""
        results = []
        for term, step, takes_weights in self.terms:
            if not term.due(update):
                continue
            if takes_weights:
                w = weights if weights is not None else np.ones(len(arrays[0]), np.float32)
                results.append((term, step([*arrays, w])))
            else:
                results.append((term, step(arrays)))
        for target, (t, s) in self.targets:
            if target.due(update):
                self.backend.update_targets(t, s, target.tau)
        if len(results) == 1 and len(self.terms) == 1:
            return results[0][1]
        return _combine(results)


def _combine(results: list[tuple[Any, StepResult]]) -> StepResult:
    """One result for several terms: losses summed and listed by label, TD / ratio from the term
    that recorded them."""
    losses: dict[str, float] = {}
    td = ratio = None
    for term, r in results:
        if r.losses:
            losses.update(r.losses)
        else:
            losses[term.label] = r.loss
        td = r.td if r.td is not None else td
        ratio = r.ratio if r.ratio is not None else ratio
    return StepResult(float(sum(losses.values())), td, ratio, losses)
