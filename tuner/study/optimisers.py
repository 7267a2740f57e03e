"""A study's sampler and pruner as ``_target_`` nodes (Hydra's convention, as in hydra-optuna-sweeper's
``sampler: {_target_: optuna.samplers.TPESampler, seed: 0}``).

``tuner.sampler`` / ``tuner.pruner`` is either a shorthand (``tpe``, ``median``, ...: :data:`SAMPLERS`,
:data:`PRUNERS`, the one table of names) or a node of the user's own, ``{_target_: optuna.samplers.NSGAIISampler,
...}``.  A shorthand resolves to the node it stands for, whose arguments come from the flat study
settings (``tuner.sampler_seed``, ``tuner.n_startup_trials``, ``tuner.wilcoxon_p``, ...), so the commands
and saved configs of existing studies build exactly the objects they built before.  Both forms are built
by :func:`tuner.config.targets.build`; a bad name, a class that does not import, a class that is not a
sampler (pruner) or a key its constructor does not take is one :class:`ConfigError` line naming the key.
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

import optuna

from ..common.errors import ConfigError
from ..config.search import Param
from ..config.targets import TargetError, check_target, construct, constructor_kwargs, import_target

__all__ = ["Shorthand", "SAMPLERS", "PRUNERS", "GRID", "WILCOXON", "THRESHOLD", "sampler_node", "pruner_node",
           "build_sampler", "build_pruner", "check_optimisers", "target_of", "is_grid"]

GRID = "optuna.samplers.GridSampler"
WILCOXON = "optuna.pruners.WilcoxonPruner"
THRESHOLD = "optuna.pruners.ThresholdPruner"


class Shorthand(NamedTuple):
    """What a name stands for: the class, fixed arguments, and arguments taken from the study's
    settings (constructor argument -> :class:`tuner.study.settings.TunerSettings` field)."""

    target: str
    fixed: Mapping[str, Any] = {}
    settings: Mapping[str, str] = {}


_STARTUP = {"seed": "sampler_seed", "n_startup_trials": "n_startup_trials"}
#: ``tuner.sampler`` names.  Random, QMC and grid samplers take no ``n_startup_trials``
SAMPLERS: dict[str, Shorthand] = {
    # multivariate: TPE models the parameters jointly (Optuna's recommendation for a few correlated ones)
    "tpe": Shorthand("optuna.samplers.TPESampler", {"multivariate": True}, _STARTUP),
    "random": Shorthand("optuna.samplers.RandomSampler", {}, {"seed": "sampler_seed"}),
    "cmaes": Shorthand("optuna.samplers.CmaEsSampler", {}, _STARTUP),
    "gp": Shorthand("optuna.samplers.GPSampler", {}, _STARTUP),
    "grid": Shorthand(GRID, {}, {"seed": "sampler_seed"}),
    "qmc": Shorthand("optuna.samplers.QMCSampler", {}, {"seed": "sampler_seed"}),
}
_WARMUP = {"n_startup_trials": "n_startup_trials", "n_warmup_steps": "n_warmup_steps"}
#: ``tuner.pruner`` names.  The halving pruners and the threshold pruner were always built with
#: Optuna's defaults apart from ``lower``: they take no settings beyond that
PRUNERS: dict[str, Shorthand] = {
    "median": Shorthand("optuna.pruners.MedianPruner", {}, _WARMUP),
    "percentile": Shorthand("optuna.pruners.PercentilePruner", {}, {"percentile": "percentile", **_WARMUP}),
    "successive_halving": Shorthand("optuna.pruners.SuccessiveHalvingPruner"),
    "hyperband": Shorthand("optuna.pruners.HyperbandPruner"),
    "threshold": Shorthand(THRESHOLD, {}, {"lower": "threshold_lower"}),
    # each seed's final score is an instance; n_warmup_steps: the seeds a trial runs before it can stop
    "wilcoxon": Shorthand(WILCOXON, {}, {"p_threshold": "wilcoxon_p", "n_startup_steps": "n_warmup_steps"}),
    "none": Shorthand("optuna.pruners.NopPruner"),
}
#: the settings a user's own sampler node takes where it leaves them out and its class takes them:
#: the study's seed and start-up trials apply whatever the sampler (pruner nodes take only their own keys)
_USER_SAMPLER = {"seed": "sampler_seed", "n_startup_trials": "n_startup_trials"}

_KINDS = {"sampler": (SAMPLERS, optuna.samplers.BaseSampler), "pruner": (PRUNERS, optuna.pruners.BasePruner)}


def _node(kind: str, value: Any, settings: Any) -> dict[str, Any]:
    """The ``_target_`` node that ``tuner.<kind>`` (a name or a node) stands for, its arguments filled
    from ``settings``; raises ``ConfigError`` naming ``tuner.<kind>`` for a name not in the table or a
    value that is neither."""
    table, _ = _KINDS[kind]
    if isinstance(value, str):
        if value not in table:
            raise ConfigError(f"tuner.{kind}: {value!r} is not one of {', '.join(table)} "
                              f"(or give a node: tuner.{kind}={{_target_: optuna.{kind}s.<Class>, ...}})")
        short = table[value]
        return {"_target_": short.target, **short.fixed,
                **{arg: getattr(settings, field) for arg, field in short.settings.items()}}
    if not isinstance(value, Mapping) or not isinstance(value.get("_target_"), str):
        raise ConfigError(f"tuner.{kind}: {value!r} is neither a name ({', '.join(table)}) nor a "
                          f"{{_target_: ...}} node")
    node = dict(value)
    if kind == "sampler":
        try:
            takes = constructor_kwargs(import_target(node["_target_"]), {}, dict.fromkeys(_USER_SAMPLER))
        except TargetError:
            takes = {}  # reported by the check, naming the key
        node.update({arg: getattr(settings, _USER_SAMPLER[arg]) for arg in takes if arg not in node})
    return node


def sampler_node(settings: Any) -> dict[str, Any]:
    """``tuner.sampler`` as a ``_target_`` node (see :data:`SAMPLERS`)."""
    return _node("sampler", settings.sampler, settings)


def pruner_node(settings: Any) -> dict[str, Any]:
    """``tuner.pruner`` as a ``_target_`` node (see :data:`PRUNERS`)."""
    return _node("pruner", settings.pruner, settings)


def target_of(kind: str, value: Any) -> str:
    """The class path a ``tuner.<kind>`` value names (a shorthand's, or the node's ``_target_``);
    ``""`` for a value that is neither."""
    table, _ = _KINDS[kind]
    if isinstance(value, str):
        return table[value].target if value in table else ""
    return str(value.get("_target_") or "") if isinstance(value, Mapping) else ""


def is_grid(sampler: Any) -> bool:
    """Whether a sampler (a name or a node) is Optuna's grid sampler, which enumerates its points itself."""
    return target_of("sampler", sampler) == GRID


def _context(node: Mapping[str, Any], space: list[Param]) -> dict[str, Any]:
    """Arguments that come from the search space, passed where the constructor takes them and the
    node does not give them: a grid sampler's points, and TPE's ``group``."""
    out: dict[str, Any] = {}
    # group=True: a conditional space (search.when) is sampled per group of parameters that occur together
    # (TPE allows it only with multivariate=True)
    if node.get("multivariate") and "group" not in node:
        out["group"] = any(p.when for p in space)
    target = import_target(node["_target_"])
    if "search_space" not in node and "search_space" in constructor_kwargs(target, {}, {"search_space": None}):
        out["search_space"] = _grid(space)
    return out


def _check(kind: str, node: Mapping[str, Any], skip: tuple[str, ...] = ()) -> None:
    """The node's class imports, is a sampler (pruner), and takes the node's keys."""
    _, base = _KINDS[kind]
    check_target(node, f"tuner.{kind}", skip=skip, base=base,
                 what=f"an Optuna {kind} (a subclass of optuna.{kind}s.{base.__name__})")


def check_optimisers(settings: Any) -> None:
    """Refuse, in one line naming the key, a sampler or pruner that cannot be built from the settings."""
    _check("sampler", sampler_node(settings), skip=("search_space",))  # the grid's points: from the space
    _check("pruner", pruner_node(settings))


def build_sampler(settings: Any, space: list[Param]) -> optuna.samplers.BaseSampler:
    """The study's sampler, built from its ``_target_`` node."""
    node = sampler_node(settings)
    _check("sampler", node, skip=("search_space",))  # settings made in Python (the sweeper) were not checked
    return _built("sampler", node, _context(node, space))


def build_pruner(settings: Any) -> optuna.pruners.BasePruner:
    """The study's pruner, built from its ``_target_`` node."""
    node = pruner_node(settings)
    _check("pruner", node)
    return _built("pruner", node, {})


def _built(kind: str, node: Mapping[str, Any], context: dict[str, Any]) -> Any:
    try:
        return construct(node, **context)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - a constructor refusing its arguments (Optuna's ValueError)
        cause = str(getattr(exc, "__cause__", None) or exc).splitlines()[0]
        raise ConfigError(f"tuner.{kind}: {node['_target_']} refused its arguments ({cause})") from None


def _grid(space: list[Param]) -> dict[str, list[Any]]:
    grid: dict[str, list[Any]] = {}
    for p in space:
        d = p.distribution
        if d is None:
            continue
        if isinstance(d, optuna.distributions.CategoricalDistribution):
            grid[p.name] = list(d.choices)
        elif isinstance(d, optuna.distributions.IntDistribution) and not d.log:
            grid[p.name] = list(range(d.low, d.high + 1, d.step))
        else:
            raise ConfigError(f"search.{p.name}: the grid sampler needs choice() or range() values")
    return grid
