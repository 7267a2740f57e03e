"""One history row per logged episode, shared by every metrics logger (wandb, csv, TensorBoard).

A row's x-axis is ``env_steps``; it holds ``episode``, ``return``, ``mean_return``, ``loss``,
``env_steps_per_s``, the hyperparameters in force (``lr``, ``lr/1``..., ``batch``, ``eps``) and every
adjuster value as ``adjust/<key>``.  An evaluation is a row of its own: ``env_steps``,
``eval/mean_return``, ``eval/std_return``.
"""

from __future__ import annotations

import math
import time
from typing import Any

from ..config.bounds import LOGGER_KINDS as KINDS
from ..config.loggers import selected

__all__ = ["RowMaker", "number", "hparams", "eval_row", "logger_kinds", "KINDS"]

# counters the adjusters add to their logs; the row has env_steps already
_COUNTERS = ("env_steps", "batch_counter")


def logger_kinds(logger: dict[str, Any] | None) -> list[str]:
    """The loggers a ``logger`` config node selects, in :data:`KINDS` order (then any of the user's own):
    every ``kinds`` entry set true or to a ``_target_`` node (``logger=[wandb,csv]`` merges both configs,
    so their ``kinds`` maps add up) plus ``name`` (configs written before ``kinds`` existed, and the
    finders' Python-API options); see :mod:`tuner.config.loggers`."""
    return selected(logger)


def number(value: Any) -> float | None:
    """``value`` as a finite float, else ``None``."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def hparams(agent: Any) -> dict[str, float]:
    """Learning rate(s) (``lr``, and ``lr/1``, ``lr/2``... for further optimizers), batch size and
    epsilon as they are now (adjusters change them)."""
    out: dict[str, float] = {}
    from note_rl.update import optimizer_list

    opts = optimizer_list(agent.optimizer)
    for i, opt in enumerate(opts):
        try:
            lr = agent.backend.get_hparam(opt, "lr")
        except Exception:  # noqa: BLE001 - an optimizer without lr
            lr = None
        if lr is not None:  # plain `lr` is the first optimizer's, so that it can be an x-axis
            out["lr" if i == 0 else f"lr/{i}"] = float(lr)
    if getattr(agent, "batch", None) is not None:
        out["batch"] = float(agent.batch)
    policies = agent.policy if isinstance(agent.policy, (list, tuple)) else [agent.policy]
    eps = [float(p.eps) for p in policies if p is not None and number(getattr(p, "eps", None)) is not None]
    if len(eps) == 1:
        out["eps"] = eps[0]
    else:
        out.update({f"eps/{i}": e for i, e in enumerate(eps)})
    return out


def eval_row(record: dict[str, Any]) -> dict[str, Any]:
    """The row of one evaluation (:mod:`note_rl.evaluation`'s record)."""
    return {"env_steps": int(record["step"]), "eval/mean_return": float(record["mean"]),
            "eval/std_return": float(record["std"])}


class RowMaker:
    """Builds the episode rows of one run: remembers the adjusters' last values (``on_adjust``) and
    the previous row's clock and step count (for ``env_steps_per_s``)."""

    def __init__(self) -> None:
        self.adjust: dict[str, Any] = {}
        self._last: tuple[float, int | None] = (time.perf_counter(), None)

    def on_adjust(self, logs: dict[str, Any] | None) -> None:
        self.adjust.update(logs or {})

    def row(self, agent: Any, logs: dict[str, Any]) -> dict[str, Any]:
        steps = int(logs.get("env_steps", agent.step_counter))
        now = time.perf_counter()
        t0, s0 = self._last
        s0 = s0 if s0 is not None else 0
        self._last = (now, steps)
        row: dict[str, Any] = {"env_steps": steps, "episode": int(logs.get("total_episode", agent.total_episode)),
                               "return": float(logs["reward"])}
        if logs.get("mean_reward") is not None:
            row["mean_return"] = float(logs["mean_reward"])
        if logs.get("loss") is not None:
            row["loss"] = float(logs["loss"])
        if now > t0:
            row["env_steps_per_s"] = (steps - s0) / (now - t0)
        row.update(hparams(agent))
        adjust = {k[len("adjust/"):]: v for k, v in logs.items() if k.startswith("adjust/")}
        adjust.update(self.adjust)
        row.update({f"adjust/{k}": number(v) for k, v in adjust.items()
                    if k not in _COUNTERS and number(v) is not None})
        return row
