"""How unequal a search space makes its trials: the estimated cost of the cheapest and the dearest trial.

A trial's budget bounds its env steps (``budget.steps``) and gradient updates (``budget.max_updates``),
but inside those bounds the searched values decide the work: ``train_freq=1`` with ``num_updates=8``
makes 2,000 times the updates of ``train_freq=256`` with ``num_updates=1``.  A study whose trials differ
that much spends its time on a few of them and its pruner compares unlike things, so the driver refuses a
space whose dearest trial is estimated at more than ``tuner.max_cost_ratio`` (100) times the cheapest,
naming both; raising the setting is how a user says the spread is intended.

The estimate is CPU time (:func:`trial_seconds`): a cost per env step, per gradient update and per
multiply-add of the hidden layers, fitted on measured runs of DQN, SAC, PPO and A2C (BENCHMARKS.md, "A
run's cost").  The multiply-adds (:func:`trial_cost`): one forward pass per env step, three per sample
of a gradient update (forward and backward).  Updates are ``(steps - learning_starts) / train_freq *
num_updates`` of ``batch`` samples for off-policy agents and ``n_epochs`` passes over every rollout in
minibatches of ``batch`` for on-policy ones (PPO; TRPO's ``n_critic_updates``, plus a pass over the
rollout per conjugate-gradient step and two more for its policy step; ACER's ``1 + replay_ratio``
passes: its on-policy update and the replayed ones; A2C's one pass, one update per rollout of
``n_steps x n_envs``), capped by ``budget.max_updates``.  Only searched values that enter this formula
are varied, each at its extremes; group choices (another agent or optimizer) are not estimated.
Counting multiply-adds alone, as the guard did before, missed that an update of these small networks
costs about as much as its arithmetic whatever its size: its rank correlation with measured wall time
was 0.79 on PPO's runs and negative on A2C's, and it put a lopsided DQN ``train_freq`` space at 2202x
where time says about 190x.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any, Callable

import optuna
import yaml

from ..common.errors import ConfigError
from .search import Param

__all__ = ["trial_cost", "trial_seconds", "seconds_with", "trial_work", "cost_base", "cost_spread", "check_cost"]

# One framework thread's wall time, fitted on measured runs (BENCHMARKS.md, "A run's cost"): a
# gradient update costs about 0.8 ms whatever its size (optimizer step, framework overhead), plus its
# forward and backward passes' multiply-adds (what trial_cost counts); an env step 125 us on
# LunarLander (Box2D) with one env, less on classic control.  Of those 125 us the env's own step is
# about 25 and the action call (the policy's forward pass, the framework and Python around it) about
# 100, which one call shares among the agent.n_envs copies it steps at once: with 16 copies an env step
# costs about 31 us (LunarLander PPO studies: 7.2 s per 196,608 steps, "Predicting a sampled config's CPU")
ENV_STEP_S = 25e-6
ACT_S = 100e-6
UPDATE_S = 0.8e-3
MAC_S = 0.1e-9

COST_KEYS = ("budget.steps", "budget.max_updates", "agent.batch", "agent.train_freq", "agent.num_updates",
             "agent.learning_starts", "agent.n_epochs", "agent.n_critic_updates", "agent.cg_max_steps",
             "agent.replay_ratio",
             "agent.n_steps", "agent.n_envs", "agent.hidden_size")
MAX_COMBINATIONS = 4096
_FRACTION = re.compile(r"\$\{train_freq_fraction:\s*([0-9.eE+-]+)\s*\}")


def _get(values: dict[str, Any], key: str, default: Any = None) -> Any:
    value = values.get(key, default)
    return default if value is None else value


def _num_updates(value: Any, train_freq: float) -> float:
    match = _FRACTION.fullmatch(value.strip()) if isinstance(value, str) else None
    if match:  # the config's own ${train_freq_fraction:f}, evaluated at this trial's train_freq
        return max(1.0, float(int(float(match.group(1)) * train_freq)))
    return 1.0 if value is None else float(value)


def trial_cost(values: dict[str, Any]) -> float:
    """Estimated multiply-adds of one trial's hidden layers, from dotted keys (``agent.batch``,
    ``budget.steps``, ...); ``agent.num_updates`` may be ``${train_freq_fraction:f}`` (a fraction of
    the trial's ``train_freq``)."""
    return trial_work(values)[2]


def trial_seconds(values: dict[str, Any]) -> float:
    """Estimated CPU seconds of one trial: per env step :data:`ENV_STEP_S` plus :data:`ACT_S` shared by
    ``agent.n_envs`` copies, :data:`UPDATE_S` per gradient update and :data:`MAC_S` per multiply-add of
    the hidden layers (:func:`trial_cost`).  For comparing runs (the cost guard's ratio; PBT starts a
    generation's dearest members first; ``tuner.max_cpu_s`` calibrates it on completed trials), not for
    promising a time: the constants come from one machine."""
    steps, updates, macs = trial_work(values)
    copies = max(1.0, float(_get(values, "agent.n_envs", 1)))
    return steps * (ENV_STEP_S + ACT_S / copies) + updates * UPDATE_S + macs * MAC_S


def seconds_with(base: dict[str, Any]) -> Callable[[dict[str, Any]], float]:
    """:func:`trial_seconds` of ``base`` (a config's :func:`cost_base`) with a trial's searched values in
    it: how the driver, the sweeper and PBT estimate a sampled trial or a member's segment."""
    return lambda values: trial_seconds({**base, **values})


def trial_work(values: dict[str, Any]) -> tuple[float, float, float]:
    """``(env steps, gradient updates, multiply-adds)`` of one trial, from the keys :func:`trial_cost` reads."""
    steps = float(_get(values, "budget.steps", 0))
    hidden = values.get("agent.hidden_size") or [64]
    hidden = [int(h) for h in (yaml.safe_load(hidden) if isinstance(hidden, str) else hidden)]
    # per-sample work of the hidden layers: h0 + h0*h1 + ... (input and output widths are the env's)
    net = float(hidden[0] + sum(a * b for a, b in zip(hidden, hidden[1:])) + hidden[-1])
    epochs = values.get("agent.n_epochs")
    if epochs is None:
        epochs = values.get("agent.n_critic_updates")  # TRPO: its critic's passes over each rollout
    if epochs is None and values.get("agent.replay_ratio") is not None:  # ACER: each segment on-policy, then
        epochs = 1.0 + float(values["agent.replay_ratio"])  # Poisson(replay_ratio) replayed segments
    policy = 0.0  # TRPO's policy step: a pass over the rollout per conjugate-gradient step, two more
    if epochs is not None:  # on-policy: n_epochs passes over each rollout
        samples = steps * float(epochs)
        updates = samples / max(1.0, float(_get(values, "agent.batch", 1)))
        if values.get("agent.cg_max_steps") is not None:
            policy = steps * (float(values["agent.cg_max_steps"]) + 2.0)
    elif values.get("agent.n_steps") is not None and values.get("agent.batch") is None:
        samples = steps  # A2C: one update on each rollout of n_steps x n_envs env steps
        updates = steps / max(1.0, float(values["agent.n_steps"]) * float(_get(values, "agent.n_envs", 1)))
    else:
        learn = max(0.0, steps - float(_get(values, "agent.learning_starts", 0)))
        every = float(_get(values, "agent.train_freq", 1))
        updates = learn / max(1.0, every) * _num_updates(values.get("agent.num_updates"), every)
        samples = updates * float(_get(values, "agent.batch", 1))
    cap = values.get("budget.max_updates")
    if cap is not None and updates > cap:  # the run stops there, its policy steps with it
        samples *= cap / updates
        policy *= cap / updates
        updates = float(cap)
    samples += policy
    return steps, updates, net * (steps + 3.0 * samples)


def _extremes(param: Param) -> list[Any]:
    d = param.distribution
    if isinstance(d, optuna.distributions.CategoricalDistribution):
        return list(d.choices)
    if isinstance(d, (optuna.distributions.FloatDistribution, optuna.distributions.IntDistribution)):
        return [d.low, d.high]
    return []


Spread = tuple[float, dict[str, Any], dict[str, Any]]


def cost_spread(space: list[Param], base: dict[str, Any],
                cost_of: Callable[[dict[str, Any]], float] | None = None) -> Spread | None:
    """``(ratio, dearest values, cheapest values)`` by ``cost_of`` (default :func:`trial_seconds`)
    over the extremes of the searched cost keys, or ``None`` when the space varies none of them."""
    cost_of = cost_of or trial_seconds
    varied = [(p.name, _extremes(p)) for p in space if not p.is_group and p.name in COST_KEYS and _extremes(p)]
    if not varied:
        return None
    names = [n for n, _ in varied]
    best: tuple[float, dict[str, Any]] | None = None
    worst: tuple[float, dict[str, Any]] | None = None
    for combo in itertools.islice(itertools.product(*(v for _, v in varied)), MAX_COMBINATIONS):
        picked = dict(zip(names, combo))
        cost = cost_of({**base, **picked})
        if best is None or cost < best[0]:
            best = (cost, picked)
        if worst is None or cost > worst[0]:
            worst = (cost, picked)
    assert best is not None and worst is not None
    ratio = worst[0] / best[0] if best[0] > 0 else math.inf
    return ratio, worst[1], best[1]


def cost_base(cfg: Any) -> dict[str, Any]:
    """The config's values of :data:`COST_KEYS` (a trial's searched values replace some of them)."""
    from omegaconf import OmegaConf

    base = {k: OmegaConf.select(cfg, k) for k in COST_KEYS}
    agent = cfg.get("agent") if OmegaConf.is_config(cfg) else None
    raw = OmegaConf.to_container(agent, resolve=False).get("num_updates") if OmegaConf.is_config(agent) else None
    if isinstance(raw, str) and _FRACTION.fullmatch(raw):
        base["agent.num_updates"] = raw  # the interpolation itself: it varies with the trial's train_freq
    return {k: OmegaConf.to_container(v) if OmegaConf.is_config(v) else v for k, v in base.items()}


def check_cost(space: list[Param], cfg: Any, max_ratio: float) -> float | None:
    """Raise a one-line :class:`ConfigError` when the space's dearest trial is estimated at more than
    ``max_ratio`` times its cheapest; returns the ratio (``None``: the space varies no cost key)."""
    spread = cost_spread(space, cost_base(cfg))
    if spread is None:
        return None
    ratio, dear, cheap = spread
    if ratio > max_ratio:
        def show(values: dict[str, Any]) -> str:
            return ", ".join(f"{k}={v}" for k, v in values.items())

        raise ConfigError(f"search: one trial may cost {ratio:.0f}x another ({show(dear)} against {show(cheap)}); "
                          f"narrow the space, cap budget.max_updates, or allow it with "
                          f"tuner.max_cost_ratio={math.ceil(ratio)}")
    return ratio
