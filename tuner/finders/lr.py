"""LRFinder: Note_rl's learning-rate range test, rebuilt as an Optuna study.

``LRFinder(agent).find(...)`` trains a copy of the agent in a fresh process while the learning
rate grows by ``factor = (end_lr / start_lr) ** (1 / N)`` per episode that trains (or per update).
Note_rl's normalised reward (or the loss) of each episode is reported as the trial's intermediate
values; the arrays go to ``finder.npz`` in the trial's run dir.  The suggested learning rate is
where the reward curve (mean episode reward per lr, smoothed; episodes before the first gradient
step left out) rises fastest (the loss falls fastest, with ``metrics="loss"``), and the suggested
search interval spans half a decade on each side of it.
The agent itself is not modified (Note_rl restored weights and lr after its in-process test).
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from ..common.messages import TrialSpec
from ..logs.curves import reward_curve
from .common import as_list, dumps_agent, optimizer_spec, python_api_study, strategy_spec, wandb_options
from .runner import Candidate, failure, run_candidates

__all__ = ["LRFinder", "lagged_change", "suggest_lr", "lr_search_override", "plot_curve"]


def lagged_change(values: Sequence[float], sma: int = 1) -> np.ndarray:
    """Note_rl's "rate of change": ``d_i = (v_i - v_{i - sma}) / sma`` (0 for the first ``sma``)."""
    v = np.asarray(values, dtype=np.float64)
    d = np.zeros(len(v))
    if len(v) > sma:
        d[sma:] = (v[sma:] - v[:-sma]) / sma
    return d


def _trim(n: int, skip_begin: int, skip_end: int) -> slice:
    if n - skip_begin - skip_end < 2:  # too few points to skip any
        return slice(0, n)
    return slice(skip_begin, n - skip_end)


def suggest_lr(lrs: Sequence[float], values: Sequence[float], sma: int = 1, n_skip_beginning: int = 10,
               n_skip_end: int = 5, rising: bool = True) -> tuple[float, tuple[float, float]]:
    """Learning rate where ``values`` change fastest in the good direction (rising reward or
    falling loss), and an interval of half a decade on each side (within the tested range)."""
    lrs = np.asarray(lrs, dtype=np.float64)[: len(values)]
    change = lagged_change(values, sma)[: len(lrs)]
    window = _trim(len(lrs), n_skip_beginning, n_skip_end)
    part = change[window] if rising else -change[window]
    best = float(lrs[window][int(np.nanargmax(part))])
    low, high = max(best / 10 ** 0.5, float(lrs.min())), min(best * 10 ** 0.5, float(lrs.max()))
    return best, (low, high)


def lr_search_override(interval: tuple[float, float]) -> str:
    """The command-line override that makes a ``tuner=optuna`` study search this lr interval."""
    return f'search.values.optimizer.lr="tag(log, interval({interval[0]:.3g}, {interval[1]:.3g}))"'


def plot_curve(x: Sequence[float], y: Sequence[float], path: str, xlabel: str, ylabel: str,
               n_skip_beginning: int = 0, n_skip_end: int = 0, x_scale: str = "log",
               y_lim: tuple[float, float] | None = None, mark: float | None = None) -> str:
    """Write one curve to a PNG (and show it when there is a display); returns the path."""
    from note_rl.core.plots import _pyplot, has_display

    plt = _pyplot()
    n = min(len(x), len(y))
    window = _trim(n, n_skip_beginning, n_skip_end)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(np.asarray(x[:n])[window], np.asarray(y[:n])[window])
    ax.set_xscale(x_scale)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if y_lim is not None:
        ax.set_ylim(*y_lim)
    if mark is not None:
        ax.axvline(mark, color="tab:red", linestyle="--", label=f"suggested {mark:.3g}")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    if has_display():
        plt.show()
    plt.close(fig)
    return path


def before_collapse(curve: Sequence[float]) -> int:
    """How many points of a reward curve come before it collapses: the first point that falls
    below halfway between its start and its best so far (Smith's range test stops when the loss
    diverges; a policy trained at too high an lr collapses, and a later recovery at a still higher
    lr is the lagged effect of the earlier training, not a usable lr)."""
    c = np.asarray(curve, dtype=np.float64)
    if not len(c):
        return 0
    best = np.maximum.accumulate(c)
    # a fall only counts after a real rise (a quarter of the curve's range), not start-up noise
    risen = best - c[0] > 0.25 * (c.max() - c.min())
    fallen = np.flatnonzero(risen & (c < c[0] + 0.5 * (best - c[0])))
    return int(fallen[0]) if len(fallen) else len(c)


MIN_LR_POINTS = 10  # distinct learning rates the trained episodes must see to draw a curve


def _check_points(episode_lrs: Sequence[float], finder: dict[str, Any]) -> None:
    """Refuse a reward curve drawn from fewer than MIN_LR_POINTS learning rates (one message per
    cause, naming the setting to change)."""
    seen = len(np.unique(np.asarray(episode_lrs)))
    if seen >= min(MIN_LR_POINTS, int(finder.get("N", MIN_LR_POINTS))):  # (end_lr itself is never played)
        return
    if finder.get("per") == "update":
        raise ValueError(f"per: the trained episodes saw only {seen} learning rates: the N={finder.get('N')} lr "
                         "steps (one per gradient step) fell inside a few training rounds, so the reward has no "
                         "curve; use per=episode (one lr step per episode that trains) or metrics=loss")
    if not len(episode_lrs):
        raise ValueError(f"episodes: no episode followed a gradient step within {finder.get('episodes', 'the')} "
                         "episodes (the agent had not started learning); raise episodes")
    raise ValueError(f"episodes: only {seen} learning rates were tried before {finder.get('episodes', 'the')} "
                     f"episodes ran out (need {MIN_LR_POINTS}); raise episodes")


class LRFinder:
    """Learning-rate range test for a Note_rl agent (Keras or PyTorch).

    :param agent: the agent; ``agent.optimizer`` must be set (one optimizer or a list - all of
        them follow the schedule, unlike Note_rl which only changed the last one)
    """

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.lrs: list[float] = []
        self.rewards: list[float] = []
        self.normalized: list[float] = []
        self.curve_lrs: list[float] = []  # the reward curve (reward_curve), after the first gradient step
        self.curve: list[float] = []
        self.losses: list[float] = []
        self.episode_lrs: list[float] = []
        self.step_losses: list[float] = []
        self.metrics = "reward"
        self.suggestion: dict[str, Any] = {}
        self.study_dir = ""

    def find(self, train_loss: Any = None, pool_network: bool = False, processes: int | None = None,
             processes_her: int | None = None, processes_pr: int | None = None, strategy: Any = None,
             random: bool = True, num_updates: int | None = None, N: int = 77, window_size: int = 7,
             start_lr: float = 1e-4, end_lr: float = 1.0, episodes: int = 77, metrics: str = "reward",
             per: str | None = None, jit_compile: bool = True, storage: str | None = None,
             study_name: str | None = None, study_dir: str | None = None,
             trial_timeout: float | None = None, wandb: Any = None) -> dict[str, Any]:
        """Run the range test (arguments as Note_rl's; ``processes_her`` / ``processes_pr`` go to
        the candidate's ``train()``).  Returns the suggestion.  ``per`` (``"episode"`` or
        ``"update"``) defaults to Note_rl's: per episode for ``metrics="reward"``, per update for
        ``"loss"``; ``episodes`` caps the test, which ends when the lr reaches ``end_lr``.

        ``wandb=True`` or ``wandb=dict(project=..., mode="offline", ...)`` (keys of
        ``conf/logger/wandb.yaml``) logs the trial as a wandb run of ``job_type=lr_finder`` in its
        run dir (reward and loss against lr), as the config path does; off by default."""
        strategy = strategy_spec(self.agent, strategy, "LRFinder")
        study, folder, _ = python_api_study("lr_finder", storage, study_name, study_dir, "maximize"
                                            if metrics == "reward" else "minimize")
        per = per or ("episode" if metrics == "reward" else "update")
        finder = {"kind": "lr", "start_lr": start_lr, "end_lr": end_lr, "N": N, "window_size": window_size,
                  "per": per, "metrics": metrics, "episodes": episodes}
        spec = agent_spec(self.agent, episodes, finder, dict(pool_network=pool_network, processes=processes,
                                                             processes_her=processes_her, processes_pr=processes_pr,
                                                             random=random, jit_compile=jit_compile), num_updates,
                          wandb=wandb, strategy=strategy)
        trial = run_candidates(study, folder, [Candidate({}, spec)],
                               trial_timeout=trial_timeout, user_attrs={"finder": finder})[0]
        reason = failure(trial)
        if reason:
            raise RuntimeError(f"LR range test failed: {reason}")
        self.study_dir = folder
        try:
            return self.load(trial.user_attrs["run_dir"], metrics, study, trial.number, finder)
        except ValueError as exc:
            raise ValueError(f"LRFinder.find() {exc}") from None

    def load(self, run_dir: str, metrics: str, study: Any = None, number: int | None = None,
             finder: dict[str, Any] | None = None) -> dict[str, Any]:
        """Read a finished test's arrays and compute the suggestion (also stored in the study).

        The reward curve starts at the first episode that followed a gradient step (the episodes
        before it played an untrained policy, whatever the lr).  A test whose trained episodes saw
        fewer than :data:`MIN_LR_POINTS` learning rates has no curve: ``ValueError`` naming the
        setting to change (``finder``: the test's settings, for the message)."""
        with np.load(os.path.join(run_dir, "finder.npz")) as data:
            self.lrs = data["lrs"].tolist()
            self.rewards = data["rewards"].tolist()
            self.normalized = data["normalized"].tolist()
            self.losses = data["losses"].tolist()
            self.episode_lrs = data["episode_lrs"].tolist()
            self.step_losses = data["step_losses"].tolist()
            updates = data["episode_updates"] if "episode_updates" in data.files else np.ones(len(self.rewards))
        self.metrics = metrics
        if metrics == "reward" or not self.step_losses:
            first = int(np.argmax(updates > 0)) if np.any(updates > 0) else len(self.episode_lrs)
            _check_points(self.episode_lrs[first:], finder or {})
            levels, curve = reward_curve(self.episode_lrs[first:], self.rewards[first:],
                                         int((finder or {}).get("window_size", 7)))
            self.curve_lrs, self.curve = levels.tolist(), curve.tolist()
            usable = max(2, before_collapse(curve))
            best, interval = suggest_lr(levels[:usable], curve[:usable], rising=True, n_skip_beginning=0,
                                        n_skip_end=0)
        else:
            best, interval = suggest_lr(self.lrs, self.step_losses, rising=False)
        self.suggestion = {"suggested_lr": best, "interval": list(interval),
                           "search_override": lr_search_override(interval),
                           "lr_reached": float(max(self.lrs or self.episode_lrs or [0.0]))}
        if study is not None and number is not None:
            study.set_user_attr(f"lr_finder_{number}", self.suggestion)
        return self.suggestion

    # -- Note_rl's plots ---------------------------------------------------------------------
    def _path(self, name: str, path: str | None) -> str:
        return path or os.path.join(self.study_dir or ".", name)

    def plot_reward(self, n_skip_beginning: int = 10, n_skip_end: int = 5, x_scale: str = "log",
                    path: str | None = None) -> str:
        """The reward curve (:func:`reward_curve`: mean episode reward per lr, smoothed) against the
        learning rate, with the suggestion marked."""
        return plot_curve(self.curve_lrs, self.curve, self._path("lr_reward.png", path), "learning rate",
                          "episode reward (mean per lr, smoothed)", n_skip_beginning, n_skip_end, x_scale,
                          mark=self.suggestion.get("suggested_lr"))

    def plot_reward_change(self, sma: int = 1, n_skip_beginning: int = 10, n_skip_end: int = 5,
                           y_lim: tuple[float, float] = (-0.01, 0.01), path: str | None = None) -> str:
        """Rate of change of the reward curve (``sma``-lagged difference) against the lr."""
        return plot_curve(self.curve_lrs, lagged_change(self.curve, sma),
                          self._path("lr_reward_change.png", path), "learning rate", "reward change",
                          n_skip_beginning, n_skip_end, "log", y_lim)

    def plot_loss(self, n_skip_beginning: int = 10, n_skip_end: int = 5, x_scale: str = "log",
                  path: str | None = None) -> str:
        """Loss of each update against the learning rate."""
        return plot_curve(self.lrs, self.step_losses, self._path("lr_loss.png", path), "learning rate",
                          "loss", n_skip_beginning, n_skip_end, x_scale)

    def plot_loss_change(self, sma: int = 1, n_skip_beginning: int = 10, n_skip_end: int = 5,
                         y_lim: tuple[float, float] = (-0.01, 0.01), path: str | None = None) -> str:
        return plot_curve(self.lrs, lagged_change(self.step_losses, sma), self._path("lr_loss_change.png", path),
                          "learning rate", "loss change", n_skip_beginning, n_skip_end, "log", y_lim)

    def get_best_lr(self, sma: int = 1, n_skip_beginning: int = 10, n_skip_end: int = 5) -> float:
        """The learning rate where the reward curve rises fastest."""
        return suggest_lr(self.curve_lrs, self.curve, sma, n_skip_beginning, n_skip_end)[0]


def agent_spec(agent: Any, episodes: int, finder: dict[str, Any], train: dict[str, Any],
               num_updates: int | None = None, optimizers: Any = None, wandb: Any = None,
               strategy: dict[str, Any] | None = None) -> TrialSpec:
    """The trial spec of a Python-API finder: the pickled agent (without its optimizer, which is
    rebuilt from its description in the child) plus what to run; ``logger`` holds the wandb
    options (:func:`~tuner.finders.common.wandb_options`) or ``None``."""
    logger = wandb_options(wandb)  # a bad wandb= fails here, before anything is pickled or run
    opts = as_list(optimizers if optimizers is not None else agent.optimizer)
    if not opts or opts[0] is None:
        raise ValueError("set agent.optimizer (or pass optimizers) before running a finder")
    saved = agent.optimizer, agent.callbacks
    agent.optimizer, agent.callbacks = None, []
    try:
        if num_updates is not None:
            agent.set(num_updates=num_updates)
        blob = dumps_agent(agent, distributed=strategy is not None)
    except Exception as exc:  # noqa: BLE001 - any pickling failure means the same to the user
        raise ValueError(f"the finder runs the agent in a fresh process and could not pickle it: {exc}") from None
    finally:
        agent.optimizer, agent.callbacks = saved
    payload = {"agent": blob, "optimizers": [optimizer_spec(agent, o) for o in opts], "episodes": episodes,
               "train": train, "logger": logger, "strategy": strategy}
    return TrialSpec(trial=None, backend=agent.backend_name, run_dir="", report_every=1, finder=finder,
                     pickled=payload)
