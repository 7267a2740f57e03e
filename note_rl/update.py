"""How an algorithm updates its parameters: parameter groups, loss terms and target networks.

An algorithm describes one gradient update as data (:class:`UpdateSpec`) and the training loop runs
it on every mini-batch:

* **parameter groups** (:class:`ParamGroup`): named lists of variables, each stepped by its own
  optimizer (``actor``, ``critic``, ``temperature``), optionally with its own gradient-norm clip;
* **loss terms** (:class:`LossTerm`), run in order on the same batch: each computes a loss (or one
  loss per group) and steps the optimizers of its groups before the next term runs, so a later term
  sees the parameters the earlier ones just updated (TD3's actor loss uses the updated critic); a
  term with ``every=k`` runs on every k-th update only (TD3's delayed actor);
* **target networks** (:class:`TargetUpdate`): ``target <- (1 - tau) * target + tau * source`` (a hard
  copy with ``tau=1``) every ``every`` updates, or, with ``every=None``, whenever ``update_param()``
  runs (Note_rl's ``update_steps`` / ``update_batches`` cadence, e.g. DQN's target network).

The numpy core decides *when* each term and target update is due; the backend decides *how*
(differentiation, optimizer steps, device, compilation).  An agent provides its spec through
``update_spec()``; the default one (:func:`default_spec`) is Note_rl's contract: ``self.param`` (one
group, or one group per optimizer) and the loss returned by ``__call__`` (one loss for every group,
or a list / dict of losses matched to the groups).

Optimizers are given to ``train()``: one per group (a list in group order, or a dict by group
name), or a single one shared by every group (each term then steps it with its own groups'
gradients only).  See :func:`bind_optimizers`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .backends.base import distinct

__all__ = ["ParamGroup", "LossTerm", "TargetUpdate", "UpdateSpec", "default_spec", "bind_optimizers",
           "param_groups", "optimizer_list", "shared_groups"]


@dataclass
class ParamGroup:
    """Variables stepped together by one optimizer.

    :param name: the group's name (``actor``, ``critic``, ...); losses and optimizers given as
        dicts are matched to groups by this name, lists by position
    :param params: the group's variables (a list, possibly nested)
    :param max_grad_norm: rescale this group's gradient to at most this global norm (``None``: no clip)
    """

    name: str
    params: Any
    max_grad_norm: float | None = None


@dataclass
class LossTerm:
    """One differentiation pass of an update.

    :param fn: ``fn(*batch)`` (``fn(*batch, weights)`` when it takes one more argument than the
        batch has fields: importance-sampling weights) returning one loss, which every group in
        ``groups`` is stepped on (Note_rl's rule for several optimizers), or a list / dict of losses,
        one per group (matched by position / by group name): each loss is differentiated only with
        respect to its own group
    :param groups: names of the groups this term steps
    :param every: run on every ``every``-th gradient update only (the first on update ``every``)
    :param max_grad_norm: rescale the term's whole gradient (all its groups together) to at most this
        global norm, as SB3 clips a policy's parameters jointly
    :param name: label of the term's loss in logs (default: the function's name)
    """

    fn: Callable[..., Any]
    groups: Sequence[str]
    every: int = 1
    max_grad_norm: float | None = None
    name: str | None = None

    @property
    def label(self) -> str:
        return self.name or getattr(self.fn, "__name__", "loss")

    def due(self, update: int) -> bool:
        """Whether the term runs on (1-based) gradient update ``update``."""
        return update % self.every == 0


@dataclass
class TargetUpdate:
    """A target network that follows a source network.

    :param target: the target network (a Keras layer / torch module) or a list of its variables
    :param source: the network it follows (same structure)
    :param tau: Polyak rate; ``1.0`` copies the source
    :param every: gradient updates between two target updates; ``None``: on ``update_param()``
    """

    target: Any
    source: Any
    tau: float = 1.0
    every: int | None = 1

    def due(self, update: int) -> bool:
        return self.every is not None and update % self.every == 0


@dataclass
class UpdateSpec:
    """An algorithm's gradient update: parameter groups, loss terms in order, target networks."""

    groups: list[ParamGroup]
    terms: list[LossTerm]
    targets: list[TargetUpdate] = field(default_factory=list)

    def __post_init__(self) -> None:
        names = [g.name for g in self.groups]
        if not names:
            raise ValueError("UpdateSpec: at least one parameter group is needed")
        if len(set(names)) != len(names):
            raise ValueError(f"UpdateSpec: group names must be unique, got {names}")
        if not self.terms:
            raise ValueError("UpdateSpec: at least one loss term is needed")
        for term in self.terms:
            unknown = [g for g in term.groups if g not in names]
            if unknown or not term.groups:
                raise ValueError(f"UpdateSpec: term {term.label!r} steps unknown groups {unknown or '[]'} "
                                 f"(groups: {names})")
            if not isinstance(term.every, int) or term.every < 1:
                raise ValueError(f"UpdateSpec: term {term.label!r} every={term.every!r} must be a positive int")
        for t in self.targets:
            if not 0.0 < float(t.tau) <= 1.0:
                raise ValueError(f"UpdateSpec: target tau={t.tau!r} must be in (0, 1]")
            if t.every is not None and (not isinstance(t.every, int) or t.every < 1):
                raise ValueError(f"UpdateSpec: target every={t.every!r} must be a positive int or None")

    def group(self, name: str) -> ParamGroup:
        return next(g for g in self.groups if g.name == name)


def param_groups(param: Any, is_variable: Callable[[Any], bool]) -> list[ParamGroup]:
    """Note_rl's ``self.param`` as groups: a dict gives one group per key; a list whose items are
    all lists gives one group per item (named ``"0"``, ``"1"``, ...); anything else is one group."""
    if isinstance(param, Mapping):
        return [ParamGroup(str(k), v) for k, v in param.items()]
    if isinstance(param, (list, tuple)) and len(param) > 1 and \
            all(isinstance(p, (list, tuple)) and not is_variable(p) for p in param):
        return [ParamGroup(str(i), p) for i, p in enumerate(param)]
    return [ParamGroup("0", param)]


def default_spec(agent: Any, loss_fn: Callable[..., Any] | None = None) -> UpdateSpec:
    """Note_rl's contract as a spec: the groups of ``agent.param``, one term running ``loss_fn``
    (default ``agent.__call__``) on all of them, clipped jointly by ``agent.max_grad_norm`` if the
    agent has one; targets are the agent's own business (``update_param()``)."""
    groups = param_groups(agent.param, agent.backend.is_variable)
    term = LossTerm(loss_fn or agent.__call__, [g.name for g in groups],
                    max_grad_norm=getattr(agent, "max_grad_norm", None), name="loss")
    return UpdateSpec(groups, [term])


def optimizer_list(optimizer: Any) -> list[Any]:
    """The distinct optimizer objects of ``train(optimizer=...)`` (one, a list or a dict)."""
    if optimizer is None:
        return []
    items = list(optimizer.values()) if isinstance(optimizer, Mapping) else \
        list(optimizer) if isinstance(optimizer, (list, tuple)) else [optimizer]
    return distinct(items)


def bind_optimizers(groups: Sequence[ParamGroup], optimizer: Any) -> dict[str, Any]:
    """The optimizer of every group: a dict by group name, a list in group order, or one optimizer
    for all groups.  Raises ``ValueError`` naming what does not match."""
    names = [g.name for g in groups]
    if isinstance(optimizer, Mapping):
        missing = [n for n in names if n not in optimizer]
        extra = [k for k in optimizer if k not in names]
        if missing or extra:
            raise ValueError(f"optimizer dict keys {sorted(map(str, optimizer))} do not match the "
                             f"parameter groups {names}")
        return {n: optimizer[n] for n in names}
    if isinstance(optimizer, (list, tuple)):
        if len(optimizer) == 1:
            return {n: optimizer[0] for n in names}
        if len(optimizer) != len(names):
            raise ValueError(f"{len(optimizer)} optimizers need self.param to be a list of "
                             f"{len(optimizer)} groups (the agent has {len(names)}: {names})")
        return dict(zip(names, optimizer))
    if optimizer is None:
        raise ValueError("no optimizer given")
    return {n: optimizer for n in names}


def shared_groups(spec: UpdateSpec) -> list[list[str]]:
    """The groups that always step together (every term steps all of them or none of them): each
    such set can share one optimizer with nothing changed, since optimizers keep per-parameter
    state (DQN: one set; PPO's joint actor-critic loss: one set; TD3's critic and delayed actor:
    two).  A builder that makes one optimizer per set steps each optimizer once per term."""
    steppers = {g.name: frozenset(i for i, t in enumerate(spec.terms) if g.name in t.groups) for g in spec.groups}
    sets: dict[frozenset[int], list[str]] = {}
    for name, terms in steppers.items():
        sets.setdefault(terms, []).append(name)
    return list(sets.values())
