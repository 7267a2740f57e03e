"""``AgentSettings``: what ``set()`` configures, one field per argument, validated where it is declared.

An agent holds one frozen :class:`AgentSettings` as ``agent.settings``.  ``set()`` builds a new one
with :meth:`AgentSettings.updated`, which checks the values given and the combination of flags, and
swaps it in only once every check has passed, so a refused ``set()`` leaves the agent as it was.

Note_rl's user contract reads and writes the settings as plain attributes (``self.batch`` in a
subclass's loss, ``agent.batch = ...`` in an adjuster), so :func:`setting_attributes` gives the agent
class one property per field that reads ``agent.settings`` and, on a write, swaps in a copy holding
the new value.  Attribute writes are not validated: they were plain ``setattr`` before, and the
adjusters, checkpoint restore and distributed training write through them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar

from ..buffers import ReplayBuffer
from . import marl_rules, set_args
from .her_rules import her_conflict

__all__ = ["ATTRIBUTES", "BUFFER_KEYS", "AgentSettings", "param_docs", "setting_attributes"]


def _field(default: Any, doc: str, arg: str | None = None, attribute: bool = True) -> Any:
    """A settings field: ``doc`` is its ``set()`` parameter text; ``arg`` the ``set()`` argument name
    when it differs from the field's; ``attribute=False`` for a field with no attribute on the agent."""
    return field(default=default, metadata={"doc": doc, "arg": arg, "attribute": attribute})


@dataclass(frozen=True)
class AgentSettings:
    """The ``set()`` arguments of one agent (``agent.settings``); a ``None`` value means "not used".

    Fields are in ``set()``'s order; each field's ``metadata["doc"]`` is its ``set()`` documentation
    (rendered by :func:`param_docs`).  ``set()``'s other arguments are not fields: ``MA`` and
    ``epsilon`` are other names for ``MARL`` and ``policy``, and ``normalize`` builds
    ``agent.normalizer``, whose running statistics are training state saved with the weights.
    Constructing one checks every value, with ``set()``'s messages; :meth:`updated` (``set()``) checks
    the values given, and :meth:`with_value` (an attribute write) none.
    """

    policy: Any = _field(None, "exploration policy (or one per process in a list)")
    noise: Any = _field(None, "action noise for continuous actions (or one per process)")
    pool_size: int | None = _field(None, "replay capacity in transitions")
    batch: int | None = _field(None, "mini-batch size")
    num_updates: int | None = _field(None, "gradient steps per training round (default 1)")
    num_steps: int | None = _field(None, "n-step returns: rewards summed over this many steps per transition")
    update_batches: int | None = _field(None, "call ``update_param()`` every this many gradient steps")
    update_steps: int | None = _field(None, "call ``update_param()`` every this many environment steps")
    trial_count: int | None = _field(None, "episodes averaged for ``criterion`` and ``save_best_only``")
    criterion: float | None = _field(None, "stop once the mean of the last ``trial_count`` returns reaches this")
    PPO: bool = _field(False, "prioritized replay scores items by TD error and policy ratio; after each "
                              "``update_param()`` the (non-prioritized) buffer is cleared, as on-policy data expires")
    HER: bool = _field(False, "Hindsight Experience Replay for goal envs (dict observations with "
                              "``observation``, ``achieved_goal``, ``desired_goal``; the agent sees "
                              "``concat(observation, desired_goal)``); off-policy, single-process collection only, "
                              "and not with ``PR``, ``PPO`` or ``num_steps`` "
                              "(see :func:`~note_rl.core.her_rules.her_conflict`)")
    TRL: bool = _field(False, "trajectory-triplet sampling (Note_rl HEAD): each mini-batch item is a pair of "
                              "transitions built from three time steps of one stored episode, every field with an "
                              "axis of 2 after the batch axis (:class:`~note_rl.buffers.TrajectoryReplayBuffer`); "
                              "not with ``PR``, ``HER`` or rollouts")
    MARL: bool = _field(False, "multi-agent RL on a PettingZoo-parallel-style env (see :mod:`note_rl.core.marl`): "
                               "agent ``i`` acts with ``action(s_i, i)`` and ``policy[i]`` / ``noise[i]`` when a "
                               "list; joint transitions ``(n_agents, ...)`` are stored with the scalar "
                               "``reward_done_func_ma(rewards, dones)``; off-policy, single-process only, not with "
                               "``HER``, ``PR``, ``PPO`` or ``num_steps`` "
                               "(see :func:`~note_rl.core.marl_rules.marl_conflict`)")
    PR: bool = _field(False, "prioritized replay")
    IRL: bool = _field(False, "Note_rl's IRL action plumbing (no inverse-RL algorithm; its reward learning is the "
                              "user's): ``action(s)`` returns a pair ``[aux, policy_output]``, the policy / noise act "
                              "on ``policy_output``, ``select_action`` returns ``[aux, action]`` and the env's "
                              "``step`` receives that pair (e.g. a wrapper using ``aux`` as a learned reward); the "
                              "replay buffer stores the action.  Single-process, non-HER, non-MARL collection only")
    initial_ratio: float = _field(1.0, "policy ratio of the first stored items (PR)")
    initial_TD: float = _field(7.0, "``|TD|`` of the first stored items (PR)")
    lambda_: float = _field(0.5, "weight of ``|TD|`` against ``|ratio - 1|`` in the PPO score")
    priority_alpha: float = _field(0.7, "priority exponent; stored as ``priority_alpha`` so it never overwrites "
                                        "an agent's own ``alpha`` (e.g. an entropy coefficient, as Note_rl's PPO "
                                        "examples had)", arg="alpha")
    beta: float | None = _field(None, "importance-sampling exponent; ``None`` (default) gives no IS weights")
    seed: int | None = _field(None, "seeds the framework, policies, noise, sampling and the first env reset "
                                    "(later episodes continue the env's generator).  A built-in agent that has "
                                    "not trained yet also re-draws its starting weights from it.  A custom "
                                    "subclass builds its networks itself: the framework generator "
                                    "(``torch.manual_seed`` / ``keras.utils.set_random_seed``) is seeded here, so "
                                    "networks built *after* ``set(seed=...)`` are reproducible; networks built "
                                    "before keep their weights")
    train_freq: int = _field(1, "environment steps between training rounds (default 1)")
    learning_starts: int | None = _field(None, "env steps taken before training starts (default ``batch``; "
                                               "SB3's meaning)")
    her_k: int = _field(4, "HER relabelled goals per real goal (SB3's ``n_sampled_goal``, default 4): "
                           "``her_k / (her_k + 1)`` of each batch gets a \"future\" achieved goal; 0 relabels none")
    buffer: type[ReplayBuffer] | None = _field(
        None, "the replay buffer class (a :class:`~note_rl.buffers.ReplayBuffer` subclass with a ``for_agent`` "
              "constructor), instead of the one ``PR`` / ``HER`` pick; it sets those flags to what the class "
              "stands for (``None``: back to the flags' choice)",
        attribute=False)  # ``agent.buffer`` is the buffer itself; ``agent.buffer_class`` reads this
    n_envs: int = _field(1, "copies of the env stepped together in this process (gymnasium's vector API), "
                            "acted on with one forward pass; off-policy agents store every copy's transitions in "
                            "one replay buffer (:class:`~note_rl.core.vec_collect.VecEpisodeCollector`), "
                            "on-policy ones collect their rollouts from them.  ``train_freq`` and ``update_steps`` "
                            "count env steps of all copies, so the gradient steps per env step do not change "
                            "with ``n_envs``")

    def __post_init__(self) -> None:
        for f in fields(self):
            set_args.check_value(_arg(f), getattr(self, f.name))

    # -- set() -----------------------------------------------------------------------------------
    def updated(self, given: dict[str, Any], rollout: bool = False,
                dims: tuple[Any, Any] = (None, None)) -> AgentSettings:
        """A new settings object with ``set()``'s arguments ``given`` (argument names, aliases already
        resolved; ``buffer`` adds the flags its class stands for) over these; raises ``ValueError``,
        with ``set()``'s message, for a bad value or a combination the flags cannot run with
        (``rollout``: the agent trains from on-policy rollouts; ``dims``: its ``(state_dim,
        action_dim)``, to refuse a ``pool_size`` beyond this machine's memory).  ``self`` is never
        changed."""
        for name, value in given.items():  # the given ones first, in call order: the first bad one is named
            if name not in _FIELD_OF:
                raise TypeError(f"set() got an unexpected keyword argument {name!r}")
            set_args.check_value(name, value)
        if given.get("pool_size") is not None:
            set_args.check_pool_memory(given["pool_size"], *dims)
        if "buffer" in given:
            given = set_args.apply_buffer_class(given)
        # only the given values are checked (above), as set() always did: a field written earlier as a
        # plain attribute (unchecked) does not make a later set() of other arguments fail
        new = self._copy({_FIELD_OF[k]: v for k, v in given.items()})
        conflict = new.conflict(rollout)
        if conflict:
            raise ValueError(f"set(): {conflict}")
        return new

    def conflict(self, rollout: bool = False) -> str | None:
        """Why these flags cannot run together (``None`` when they can); see ``marl_conflict``,
        ``her_conflict`` and ``trl_conflict``."""
        values = {k: getattr(self, k) for k in ("HER", "TRL", "MARL", "PR", "PPO", "num_steps")}
        return (marl_rules.marl_conflict(values, rollout=rollout) or her_conflict(values, rollout=rollout)
                or set_args.trl_conflict(values, rollout=rollout))

    def set_args(self) -> dict[str, Any]:
        """These settings as ``set()`` keyword arguments (``priority_alpha`` as ``alpha``):
        ``other.set(**agent.settings.set_args())`` gives ``other`` the same settings."""
        return {_arg(f): getattr(self, f.name) for f in fields(self)}

    def with_value(self, name: str, value: Any) -> AgentSettings:
        """A copy with field ``name`` set to ``value``, unchecked: what an attribute write
        (``agent.batch = 32``) stores, as unchecked as the plain attribute it replaces."""
        if name not in _FIELDS:
            raise AttributeError(f"AgentSettings has no field {name!r}")
        return self._copy({name: value})

    def _copy(self, changes: dict[str, Any]) -> AgentSettings:
        new = object.__new__(AgentSettings)  # no __init__: no checks of the other fields, and fast
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)         # frozen: __setattr__ refuses
        return new


def _arg(f: Any) -> str:
    return f.metadata.get("arg") or f.name


_FIELDS: frozenset[str] = frozenset(f.name for f in fields(AgentSettings))
#: ``set()`` argument -> field name
_FIELD_OF: dict[str, str] = {_arg(f): f.name for f in fields(AgentSettings)}
#: the fields an agent reads and writes as attributes of its own (all but ``buffer``)
ATTRIBUTES: tuple[str, ...] = tuple(f.name for f in fields(AgentSettings) if f.metadata["attribute"])
#: ``set()`` arguments after which the replay buffer is rebuilt
BUFFER_KEYS = frozenset({"pool_size", "PR", "PPO", "initial_TD", "initial_ratio", "lambda_", "alpha", "beta",
                         "HER", "her_k", "TRL", "buffer"})


def param_docs() -> str:
    """The ``:param name: doc`` lines of every field, by ``set()`` argument name (for ``set()``'s
    docstring, so each argument's text is written once, beside its field)."""
    return "\n".join(textwrap.fill(f":param {_arg(f)}: {f.metadata['doc']}", width=92, subsequent_indent="    ")
                     for f in fields(AgentSettings))


T = TypeVar("T", bound=type)


def setting_attributes(cls: T) -> T:
    """Class decorator: one property per field in :data:`ATTRIBUTES` on ``cls``, reading
    ``self.settings.<name>`` and writing a copy of ``self.settings`` with the new value (see
    :meth:`AgentSettings.with_value`)."""
    for f in fields(AgentSettings):
        if f.name in ATTRIBUTES:
            setattr(cls, f.name, _attribute(f.name, f.metadata["doc"]))
    return cls


def _attribute(name: str, doc: str) -> property:
    def write(agent: Any, value: Any) -> None:
        # a subclass may write a setting before calling RLBase.__init__ (which then resets it to the
        # default, as its setattr loop did): start from the defaults then
        current = agent.__dict__.get("settings")
        agent.settings = (current if current is not None else AgentSettings()).with_value(name, value)

    # attrgetter reads in C: the collectors read these settings on every env step
    read: Callable[[Any], Any] = attrgetter(f"settings.{name}")
    return property(read, write, doc=f"``agent.settings.{name}``: {doc}")

