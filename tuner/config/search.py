"""Search spaces as data, written in Hydra's sweep grammar.

A search config has ``groups`` (config-group choices, e.g. ``optimizer: choice(adam, adamw, sgd)``)
and ``values`` (nested fields, e.g. ``optimizer: {lr: tag(log, interval(1e-5, 1e-2))}``).  Each
expression maps to an Optuna distribution the way hydra-optuna-sweeper maps them:

=================================  =========================================
``choice(a, b, ...)``              ``CategoricalDistribution``
``interval(a, b)``                 ``FloatDistribution(a, b)``
``int(interval(a, b))``            ``IntDistribution(a, b)``
``tag(log, interval(a, b))``       ``log=True`` (float or int)
``range(a, b, step)``              ``IntDistribution`` (``FloatDistribution`` with a float bound), ``b`` excluded
a plain value                      fixed, not searched
=================================  =========================================

A sampled trial becomes a list of Hydra overrides (group choices first), which the driver composes
into the trial's config.

Conditional parameters: ``when`` maps a parameter to the condition under which it is searched,
``"<other parameter>=<value>[,<value>...]"``, e.g. ``when: {buffer.alpha: "buffer=prioritized"}``
(prioritised replay's exponent only matters with prioritised replay).  A conditional parameter is
sampled define-by-run after the others (:func:`suggest_conditional`), only in trials whose other
parameter took one of the values; elsewhere the config's own value stands.  A parameter conditional on a
config group may name a key that only that group's options have.

A condition on ``actions`` (``"actions=continuous"``, ``"actions=discrete"``) is on the env's kind of
action, not on a parameter: it is settled when the space is parsed for a config whose env checks found its
actions (:func:`tuner.config.env_check.env_actions`).  Where it holds the parameter is searched as any other;
elsewhere (and where the actions are unknown) it is not searched, nor are the parameters conditional on it.
So one space serves an agent on Box and Discrete envs, e.g. PPO's gSDE (``agent.use_sde: actions=continuous``,
then ``agent.sde_sample_freq: agent.use_sde=true``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Collection, Mapping

import optuna
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, RangeSweep
from omegaconf import DictConfig, OmegaConf

from ..common.errors import ConfigError
from .bounds import bound_violation

__all__ = ["Param", "parse_space", "group_options", "suggest", "to_overrides", "format_value", "distributions",
           "suggest_conditional", "encode_choice", "decode_choice"]

Distribution = optuna.distributions.BaseDistribution
ACTIONS = "actions"  # search.when's name for the env's kinds of action
ACTION_KINDS = ("discrete", "continuous")


@dataclass(frozen=True)
class Param:
    """One searched (or fixed) entry: a dotted config path or a config-group name."""

    name: str
    distribution: Distribution | None  # None: fixed value
    fixed: Any = None
    is_group: bool = False
    #: ``(other parameter, values)``: searched only in trials where the other one took one of the values
    when: tuple[str, tuple[Any, ...]] | None = None


def _flatten(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, path + "."))
        else:
            out[path] = value
    return out


def _parse(name: str, expr: Any) -> tuple[Distribution | None, Any]:
    """``(distribution, None)`` for a sweep expression, ``(None, value)`` for a fixed value."""
    if not isinstance(expr, str):
        return None, expr
    try:
        override = OverridesParser.create().parse_overrides([f"{name}={expr}"])[0]
    except Exception as exc:  # noqa: BLE001 - Hydra raises several parser error types
        raise ConfigError(f"search.{name}: cannot parse {expr!r} ({str(exc).splitlines()[0]})") from None
    if not override.is_sweep_override():
        return None, override.value()
    return _distribution(name, expr, override.value()), None


def encode_choice(value: Any) -> Any:
    """A choice as Optuna stores it: a list (``[64, 64]``, a network's hidden sizes) becomes its text
    ``"[64, 64]"``, since Optuna's storages keep only None, bool, int, float and str choices."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(encode_choice(v)) for v in value) + "]"
    return value


def decode_choice(value: Any) -> Any:
    """The value a choice stands for (:func:`encode_choice` undone): ``"[64, 64]"`` is ``[64, 64]``."""
    if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
        import yaml

        try:
            return yaml.safe_load(value)
        except yaml.YAMLError:
            return value
    return value


def _distribution(name: str, expr: str, sweep: Any) -> Distribution:
    log = "log" in getattr(sweep, "tags", set())
    if isinstance(sweep, ChoiceSweep):
        return optuna.distributions.CategoricalDistribution([encode_choice(v) for v in sweep.list])
    if isinstance(sweep, IntervalSweep):
        return _interval(name, sweep.start, sweep.end, log)
    if isinstance(sweep, RangeSweep):
        return _range(name, sweep.start, sweep.stop, sweep.step, log)
    raise ConfigError(f"search.{name}: {expr!r} is not supported (use choice, interval, range, tag, int)")


def _interval(name: str, low: Any, high: Any, log: bool) -> Distribution:
    if low > high:
        raise ConfigError(f"search.{name}: low {low} > high {high}")
    if log and low <= 0:
        raise ConfigError(f"search.{name}: a log interval needs low > 0, got {low}")
    if isinstance(low, int) and isinstance(high, int):
        return optuna.distributions.IntDistribution(low, high, log=log)
    return optuna.distributions.FloatDistribution(float(low), float(high), log=log)


def _range(name: str, start: Any, stop: Any, step: Any, log: bool) -> Distribution:
    if step <= 0 or start >= stop:
        raise ConfigError(f"search.{name}: range({start}, {stop}, {step}) is empty")
    if all(isinstance(v, int) for v in (start, stop, step)):
        last = start + ((stop - 1 - start) // step) * step  # Hydra's range excludes stop
        return optuna.distributions.IntDistribution(start, last, step=step, log=log and step == 1)
    n = int((stop - start) / step - 1e-9)
    return optuna.distributions.FloatDistribution(float(start), float(start + n * step), step=float(step))


def group_options(group: str) -> list[str]:
    """Options of a config group: from Hydra's search path when Hydra is running, else from ``conf/``."""
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        return list(GlobalHydra.instance().config_loader().get_group_options(group))
    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "conf", group)
    return sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".yaml")) if os.path.isdir(folder) else []


def _check_group(group: str, dist: Distribution | None, fixed: Any) -> None:
    options = group_options(group)
    if not options:
        raise ConfigError(f"search.groups.{group}: no config group {group!r}")
    chosen = list(dist.choices) if isinstance(dist, optuna.distributions.CategoricalDistribution) else [fixed]
    if dist is not None and not isinstance(dist, optuna.distributions.CategoricalDistribution):
        raise ConfigError(f"search.groups.{group}: a config group needs choice(...) of its options")
    for name in chosen:
        if str(name) not in options:
            raise ConfigError(f"search.groups.{group}: no option {name!r} in group {group!r} "
                              f"(available: {', '.join(options)})")


def parse_space(search: DictConfig | Mapping[str, Any], cfg: DictConfig | None = None,
                actions: Collection[str] | None = None) -> list[Param]:
    """Parameters of a ``search`` node; with ``cfg``, every value path must exist in it and every
    group (and each option a group choice names) must exist among the config groups.  ``actions``: the
    env's kinds of action, which settle ``actions=`` conditions (None: unknown, so those parameters are
    checked but not searched)."""
    node = OmegaConf.to_container(search, resolve=True) if isinstance(search, DictConfig) else dict(search)
    groups = node.get("groups") or {}
    when, dropped = _conditions(node.get("when") or {}, groups, _flatten(node.get("values") or {}), actions)
    params: list[Param] = []
    for group, expr in groups.items():
        dist, fixed = _parse(group, expr)
        if cfg is not None:
            _check_group(group, dist, fixed)
        params.append(Param(group, dist, fixed, is_group=True, when=when.get(group)))
    for path, expr in _flatten(node.get("values") or {}).items():
        on_group = path in when and when[path][0] in groups  # its key may exist only under that option
        if cfg is not None and not on_group and OmegaConf.select(cfg, path, default="__missing__") == "__missing__":
            raise ConfigError(f"search.values.{path}: no such config key")
        dist, fixed = _parse(path, expr)
        if cfg is not None and not on_group:
            _check_bounds(path, expr, dist, fixed)
        params.append(Param(path, dist, fixed, when=when.get(path)))
    return [p for p in params if p.name not in dropped]


def _conditions(when: Mapping[str, Any], groups: Mapping[str, Any], values: Mapping[str, Any],
                actions: Collection[str] | None) -> tuple[dict[str, tuple[str, tuple[Any, ...]]], set[str]]:
    """``search.when`` as ``{parameter: (other parameter, allowed values)}``, and the parameters not
    searched for these ``actions`` (an ``actions=`` condition that does not hold, and the parameters
    conditional on those); one line for a condition that names an unknown parameter or kind of action, is
    not ``other=value[,value...]``, or depends on a conditional parameter."""
    import yaml

    parsed = {name: _condition(name, cond, groups, values) for name, cond in when.items()}
    out: dict[str, tuple[str, tuple[Any, ...]]] = {}
    dropped: set[str] = set()
    for name, (other, text) in parsed.items():
        if other == ACTIONS:
            if not set(actions or ()) & set(text):
                dropped.add(name)
            continue
        if other in parsed and parsed[other][0] != ACTIONS:  # settled at parse time: no condition at run time
            raise ConfigError(f"search.when.{name}: {other} is conditional itself; conditions are one level deep")
        out[name] = (other, tuple(encode_choice(yaml.safe_load(v)) for v in text))
    dropped |= {name for name, (other, _) in out.items() if other in dropped}
    return {name: c for name, c in out.items() if name not in dropped}, dropped


def _condition(name: str, cond: Any, groups: Mapping[str, Any], values: Mapping[str, Any]) -> tuple[str, list[str]]:
    """One ``search.when`` entry as (the other parameter or ``actions``, its allowed values as text)."""
    if name not in groups and name not in values:
        raise ConfigError(f"search.when.{name}: not a parameter of this search space")
    other, sep, text = str(cond).partition("=")
    other, allowed = other.strip(), [v.strip() for v in text.split(",")]
    if other == ACTIONS and sep and not set(allowed) - set(ACTION_KINDS):
        return other, allowed
    if other == ACTIONS:
        raise ConfigError(f"search.when.{name}: expected 'actions=<kind>[,<kind>...]' with kinds "
                          f"{' or '.join(ACTION_KINDS)}, got {cond!r}")
    if not sep or not text.strip() or (other not in groups and other not in values):
        raise ConfigError(f"search.when.{name}: expected '<searched parameter>=<value>[,<value>...]', got {cond!r}")
    return other, allowed


def _check_bounds(path: str, expr: Any, dist: Distribution | None, fixed: Any) -> None:
    """Every value the search can give ``path`` keeps the schema's bound on that key (the rule that
    refuses ``agent.gamma=1.5`` on the command line): a range reaching outside it would fail each
    trial that samples there, and one entirely outside would fail every trial of the study.  An
    interval is checked at its ends (each bound is an interval too), a choice at every option."""
    if dist is None:
        values = [fixed]
    elif isinstance(dist, optuna.distributions.CategoricalDistribution):
        values = list(dist.choices)
    else:
        values = [dist.low, dist.high]
    bad = [problem for problem in (bound_violation(path, v) for v in values) if problem]
    if bad:
        how = "is outside" if len(bad) == len(values) else "goes outside"
        raise ConfigError(f"search.values.{path}: {expr} {how} {path}'s bound: {bad[0]}")


def default_params(space: list[Param], cfg: DictConfig) -> dict[str, Any]:
    """The config's own values of the searched parameters (a group's: its chosen option;
    ``optimizer.lr: null``: ``agent.lr``), each kept only where its distribution contains it."""
    out: dict[str, Any] = {}
    for p in space:
        d = p.distribution
        if d is None:
            continue
        value = OmegaConf.select(cfg, f"{p.name}.name" if p.is_group else p.name)
        if value is None and p.name == "optimizer.lr":
            value = OmegaConf.select(cfg, "agent.lr")
        value = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
        if value is not None and _contains(d, value):
            out[p.name] = encode_choice(value)
    return out


def _contains(d: Distribution, value: Any) -> bool:
    if isinstance(d, optuna.distributions.CategoricalDistribution):
        return encode_choice(value) in d.choices
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(d, optuna.distributions.IntDistribution) and value != int(value):
        return False
    return d.low <= value <= d.high


def distributions(space: list[Param], conditional: bool = False) -> dict[str, Distribution]:
    """The searched parameters as ``{name: distribution}`` (for ``study.ask``): the unconditional ones,
    and with ``conditional`` the conditional ones too (every distribution a trial may hold)."""
    return {p.name: p.distribution for p in space if p.distribution is not None and (conditional or p.when is None)}


def suggest_conditional(trial: optuna.trial.BaseTrial, space: list[Param]) -> dict[str, Any]:
    """Sample the conditional parameters whose condition the trial's other parameters meet (an
    enqueued trial's fixed values are taken as given); returns them."""
    out: dict[str, Any] = {}
    for p in space:
        if p.when is None or p.distribution is None:
            continue
        other, allowed = p.when
        if other in trial.params and encode_choice(trial.params[other]) in allowed:
            out.update(suggest(trial, [Param(p.name, p.distribution)]))
    return out


def suggest(trial: optuna.trial.BaseTrial, space: list[Param]) -> dict[str, Any]:
    """Define-by-run sampling (also works with ``optuna.trial.FixedTrial``)."""
    out: dict[str, Any] = {}
    for p in space:
        d = p.distribution
        if d is None:
            continue
        if isinstance(d, optuna.distributions.CategoricalDistribution):
            out[p.name] = trial.suggest_categorical(p.name, d.choices)
        elif isinstance(d, optuna.distributions.IntDistribution):
            out[p.name] = trial.suggest_int(p.name, d.low, d.high, step=d.step, log=d.log)
        else:
            out[p.name] = trial.suggest_float(p.name, d.low, d.high, step=d.step, log=d.log)
    return out


def format_value(value: Any) -> str:
    """A Python value as a Hydra override value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(format_value(v) for v in value) + "]"
    if isinstance(value, str) and not value.replace("_", "").replace("-", "").replace(".", "").isalnum():
        return "'" + value.replace("'", "\\'") + "'"
    return str(value)


def to_overrides(params: Mapping[str, Any], space: list[Param]) -> list[str]:
    """Hydra overrides for sampled ``params`` plus the space's fixed values (groups first)."""
    values = dict(params)
    for p in space:
        if p.distribution is None:
            values[p.name] = p.fixed
    groups = [p.name for p in space if p.is_group]
    ordered = [k for k in values if k in groups] + [k for k in values if k not in groups]
    encoded = {p.name for p in space if isinstance(p.distribution, optuna.distributions.CategoricalDistribution)}
    return [f"{k}={format_value(decode_choice(values[k]) if k in encoded else values[k])}" for k in ordered]
