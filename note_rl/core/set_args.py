"""Arguments of ``set()``: the seed documents' other names, value checks, ``set(buffer=...)``
and the rules that keep ``TRL`` apart from what it cannot run with."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..buffers import ReplayBuffer

__all__ = ["POSITIVE_INTS", "SEED_LIMIT", "aliases", "apply_buffer_class", "check_value", "check_pool_memory",
           "trl_conflict"]

#: seeds are below this: Keras seeds numpy's legacy generator (``keras.utils.set_random_seed``),
#: which takes only ``0 <= seed < 2**32``; a larger one was a traceback from deep inside ``set()``
SEED_LIMIT = 2**32

FLAGS = ("PPO", "HER", "TRL", "MARL", "PR", "IRL", "MA")
POSITIVE_INTS = ("pool_size", "batch", "num_updates", "num_steps", "update_batches",
                 "update_steps", "trial_count", "train_freq", "n_envs")


def trl_conflict(values: dict[str, Any], rollout: bool = False) -> str | None:
    """Why ``TRL=True`` cannot run with these settings (``None`` when it can): trajectory triplets
    are drawn by their own buffer, so not by priority (``PR``) or with relabelled goals (``HER``),
    and on-policy rollouts have no replay to draw from."""
    if not values.get("TRL"):
        return None
    for flag in ("PR", "HER"):
        if values.get(flag):
            return f"TRL=True cannot be combined with {flag}=True (each picks how mini-batches are drawn)"
    if rollout:
        return "TRL=True cannot be combined with rollout (on-policy) training"
    return None


def apply_buffer_class(given: dict[str, Any]) -> dict[str, Any]:
    """``set(buffer=cls)``: ``given`` with the flags the class stands for added (a flag passed in the
    same call that contradicts the class is an error)."""
    cls = given["buffer"]
    flags = dict(cls.flags) if cls is not None else {}
    for flag, value in flags.items():
        if flag in given and bool(given[flag]) != value:
            raise ValueError(f"set(buffer={cls.__name__}, {flag}={given[flag]!r}): the buffer class "
                             f"stands for {flag}={value}")
    return {**given, **flags}


def aliases(given: dict[str, Any]) -> dict[str, Any]:
    """The seed documents' other names for ``set()`` arguments: ``MA`` (001) is ``MARL``;
    ``epsilon`` (001) builds or adjusts the epsilon-greedy policy."""
    if "MA" in given:
        value = given.pop("MA")
        if "MARL" in given and bool(given["MARL"]) != bool(value):
            raise ValueError(f"set(MA={value!r}, MARL={given['MARL']!r}): MA is another name for MARL; give one")
        given["MARL"] = value
    epsilon = given.pop("epsilon", None)
    if epsilon is None:
        return given
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating)) or not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"set(epsilon={epsilon!r}): must be a probability in [0, 1]")
    policy = given.get("policy")
    if policy is None:
        from ..policy import EpsGreedyQPolicy

        given["policy"] = EpsGreedyQPolicy(float(epsilon))
    elif hasattr(policy, "eps"):
        policy.eps = float(epsilon)
    else:
        raise ValueError(f"set(epsilon={epsilon!r}): the policy given with it ({type(policy).__name__}) has no eps")
    return given


def check_value(name: str, value: Any) -> None:
    if value is None:
        return
    if name in ("policy", "noise"):
        need = ("act", "select_action") if name == "policy" else ("sample",)
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if item is not None and not any(callable(getattr(item, m, None)) for m in need):
                example = "EpsGreedyQPolicy(0.1) from note_rl.policy" if name == "policy" else \
                    "GaussianWhiteNoiseProcess() from note_rl.noise"
                raise ValueError(f"set({name}={item!r}): not a {name} object (e.g. {example}), or a list of them")
        return
    if name == "buffer":
        if not (isinstance(value, type) and issubclass(value, ReplayBuffer)):
            raise ValueError(f"set(buffer={value!r}): must be a ReplayBuffer subclass (or None)")
        return
    if name in FLAGS:
        if not (isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1))):
            raise ValueError(f"set({name}={value!r}): must be True or False")
        return
    if name == "seed" and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0
                           or value >= SEED_LIMIT):
        raise ValueError(f"set(seed={value!r}): must be a non-negative integer below 2**32 (or None)")
    if name in POSITIVE_INTS:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
            raise ValueError(f"set({name}={value!r}): must be a positive integer")
    elif name in ("alpha", "lambda_", "initial_TD", "initial_ratio", "beta", "criterion"):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise ValueError(f"set({name}={value!r}): must be a number")
        if not math.isfinite(value):  # NaN passes every comparison below and then poisons the priorities
            raise ValueError(f"set({name}={value!r}): must be a finite number")
        if name == "lambda_" and not 0.0 <= value <= 1.0:
            raise ValueError(f"set(lambda_={value!r}): must be within [0, 1]")
        if name in ("alpha", "beta") and value < 0:
            raise ValueError(f"set({name}={value!r}): must be >= 0")
    elif name == "her_k" and (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                              or value < 0):
        raise ValueError(f"set(her_k={value!r}): must be a non-negative integer")
    elif name == "learning_starts" and (not isinstance(value, (int, np.integer)) or value < 0):
        raise ValueError(f"set(learning_starts={value!r}): must be a non-negative integer")


def check_pool_memory(pool_size: int, state_dim: Any = None, action_dim: Any = None) -> None:
    """Refuse, before any buffer is allocated, a ``pool_size`` whose transitions cannot fit in this
    machine's memory.  A lower bound (float32 state and next state, action, reward and done; one
    value each when the agent has no ``state_dim``), so a pool that fits is never refused."""
    from ..utils import machine_memory_bytes

    dims = [int(d) if isinstance(d, (int, np.integer)) and d > 0 else 1 for d in (state_dim, action_dim)]
    need = int(pool_size) * (2 * dims[0] + dims[1] + 2) * 4
    limit = machine_memory_bytes()
    if need > limit:
        raise ValueError(f"set(pool_size={pool_size!r}): {pool_size} transitions need at least "
                         f"{need / 2**30:,.0f} GiB; this machine has {limit / 2**30:,.0f} GiB")
