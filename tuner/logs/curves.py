"""Training curves of one run (returns and loss per episode), drawn from its ``result.json`` data.

Used for a single run's ``training.png`` and for the best trial's panel of a study report; and the
LR range test's reward curve (:func:`reward_curve`), read by the LR finder and its report.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["pyplot", "training_figure", "reward_curve"]


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (never open a window from the app)."""
    import logging

    # Hydra's job logging passes INFO on: matplotlib's first-run "generated new fontManager" would
    # read like one of the run's own lines
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def training_figure(data: dict[str, Any], title: str) -> Any:
    """Two panels sharing the episode axis: each episode's return with the mean of the last
    ``objective.last_k``, and the mean loss of the episodes that made gradient steps.

    Off-policy agents train every ``train_freq`` steps, so most short episodes make no gradient
    step (their loss is ``None``): the loss is drawn as one line through the episodes that have
    one, not as isolated dots."""
    plt = pyplot()
    returns = np.asarray(data.get("returns") or [], dtype=float)
    k = int((data.get("config") or {}).get("objective", {}).get("last_k", 20))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    episodes = np.arange(1, len(returns) + 1)
    top.plot(episodes, returns, lw=0.8, alpha=0.5, label="episode return")
    if len(returns):
        mean = np.array([returns[max(0, i - k + 1):i + 1].mean() for i in range(len(returns))])
        top.plot(episodes, mean, lw=1.8, label=f"mean of last {k}")
    evals = data.get("evaluations") or []
    if evals:
        top.axhline(evals[-1]["mean"], color="tab:green", ls="--", lw=1.0,
                    label=f"final evaluation {evals[-1]['mean']:.4g}")
    top.set_ylabel("return")
    top.legend(loc="best")
    top.set_title(title)
    with_loss = [(i + 1, float(v)) for i, v in enumerate(data.get("losses") or []) if v is not None]
    if with_loss:
        x, y = zip(*with_loss)
        bottom.plot(x, y, color="tab:red", lw=1.0, marker="." if len(x) < 50 else None)
        bottom.set_ylabel("loss (episode mean)")
    else:
        bottom.text(0.5, 0.5, "no loss recorded", ha="center", va="center", transform=bottom.transAxes)
    bottom.set_xlabel("episode")
    fig.tight_layout()
    return fig


def reward_curve(episode_lrs: Sequence[float], rewards: Sequence[float],
                 smooth: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """The range test's reward curve: the mean raw reward of the episodes played at each learning
    rate (sorted), smoothed by a centred moving average over ``smooth`` neighbouring lrs (fewer at
    the ends).  Note_rl's windowed z-score of single episodes is kept as the trial's intermediate
    values, but it is noise around 0 by construction; the suggestion reads this curve."""
    lrs, rewards = np.asarray(episode_lrs, dtype=np.float64), np.asarray(rewards, dtype=np.float64)
    levels = np.unique(lrs)
    means = np.array([rewards[lrs == lr].mean() for lr in levels])
    half = max(0, int(smooth) // 2)
    smoothed = np.array([means[max(0, i - half): i + half + 1].mean() for i in range(len(means))])
    return levels, smoothed
