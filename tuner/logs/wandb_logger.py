"""Our wandb integration: one wandb run per training run, per trial and per finder trial.

Optuna's ``WeightsAndBiasesCallback`` is deprecated (optuna-integration 4.9) and runs in the driver;
here every trial process logs its own run, so the per-episode curves live next to the trial.

* :class:`WandbSession` wraps one wandb run.  Any wandb error (no network, bad key, unwritable
  dir, a full disk) prints one warning and turns the session into a no-op: logging must never
  cost a training result.
* :class:`WandbCallback` is a :class:`note_rl.Callback` that ``run_training`` adds when
  ``logger=wandb``.  Every ``log_every`` episodes it logs one history row whose x-axis is
  ``env_steps``: ``return``, ``mean_return``, ``loss``, ``lr``, ``batch``, ``eps``,
  ``env_steps_per_s``, ``episode`` and every adjuster value as ``adjust/<key>`` (``ess``,
  ``ess_ema``, ``noise``, ``b_simple``, the changed ``batch``/``lr``/``eps``...).  It keeps the
  weights of the best ``last_k`` window in ``best_model.npz`` and, when training ends, writes the
  summary (final / best mean return, ``state`` complete / pruned / failed, ``fail_reason``) and
  logs the checkpoint (and the GIF with ``log_gif``) as artifacts.
* The run's identity comes from ``meta`` (a plain dict, picklable for trial processes):
  ``job_type`` (train, trial, lr_finder, opt_finder, parallel_finder), ``group`` (the study name),
  ``name``, ``params`` (sampled values), ``trial`` (number), ``tags`` and ``x_axis`` (default
  ``env_steps``; an LR finder trial passes ``"lr"``).
* LR finder trials: the range test (:class:`tuner.finders.LRRangeTest`, earlier in the callback
  list) puts each episode's point into the episode logs as ``logs["lr_finder"]``; the row is then
  logged with :meth:`WandbCallback.log_point`: ``lr`` (the lr in force at the episode's end, the
  x-axis), ``normalized_reward``, ``loss`` and the usual ``return``, ``env_steps``...

wandb is imported here only, and this module is imported only when ``logger=wandb``.
"""

from __future__ import annotations

import math
import os
import re
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np

from note_rl import Callback, NonFiniteLossError

from ..common.redact import find_secrets, known_secrets, redact_text, remember, scrub
from .metrics import RowMaker, eval_row
from .results import moving_best

__all__ = ["WandbSession", "WandbCallback", "trial_meta", "run_name", "set_process_meta", "JOB_TYPES", "warn_once"]

JOB_TYPES = ("train", "trial", "lr_finder", "opt_finder", "parallel_finder", "study")
MODES = ("offline", "online", "disabled")

# the identity of a trial process (set by tuner.run.trial_worker from the driver's spec): the default
# `meta` of every run this process trains, so that finder trials need no extra plumbing
_process_meta: dict[str, Any] | None = None
# set once wandb failed to start in this process: later runs skip it instead of failing again
_disabled_reason: str | None = None
_warned = False


def warn_once(message: str) -> None:
    """Print ``warning: wandb ...`` once per process (later failures stay quiet)."""
    global _warned
    if not _warned:
        print(redact_text(f"warning: wandb logging disabled, training continues: {message}"), file=sys.stderr,
              flush=True)
        _warned = True


def _short(key: str) -> str:
    return key.rsplit(".", 1)[-1]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def run_name(study_name: str, number: int, params: dict[str, Any], limit: int = 120) -> str:
    """``<study>#0003 lr=0.00032 gamma=0.98``: study, trial number and the sampled values."""
    name = f"{study_name}#{number:04d}"
    for key, value in sorted(params.items()):
        part = f" {_short(key)}={_fmt(value)}"
        if len(name) + len(part) > limit:
            break
        name += part
    return name


def trial_meta(study_name: str, number: int, params: dict[str, Any], job_type: str = "trial") -> dict[str, Any]:
    """``meta`` of one trial's wandb run (group = study name); an LR finder's x-axis is the lr."""
    meta = {"job_type": job_type, "group": study_name, "name": run_name(study_name, number, params),
            "params": dict(params), "trial": number, "study_name": study_name, "tags": [job_type]}
    if job_type == "lr_finder":
        meta["x_axis"] = "lr"
    return meta


def set_process_meta(meta: dict[str, Any] | None) -> None:
    """Make ``meta`` the default identity of the runs this process trains (trial processes)."""
    global _process_meta
    _process_meta = dict(meta) if meta else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _check_dir(path: str) -> None:
    """Fail clearly when ``path`` cannot hold the run (wandb would silently fall back to /tmp)."""
    os.makedirs(path, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path, prefix=".wandb-check-"):
        pass


class WandbSession:
    """One guarded wandb run.

    :param opts: the ``logger`` config node (project, entity, mode, tags, dir, init_timeout)
    :param run_dir: where the run goes when ``opts["dir"]`` is null (``<dir>/wandb/...``)
    :param meta: job_type, group, name, tags, x_axis (see the module docstring)
    :param config: the run's config (the resolved Hydra config plus the sampled parameters)
    """

    def __init__(self, opts: dict[str, Any], run_dir: str | None, meta: dict[str, Any] | None,
                 config: dict[str, Any]) -> None:
        # a storage URL's password (or any credential in the config) never reaches wandb: the config's
        # secrets are remembered, so the summaries and artifact metadata mask them too
        remember(find_secrets(config))
        self.opts, self.meta, self.config = opts, scrub(dict(meta or {})), scrub(config, known_secrets())
        self.dir = os.path.abspath(opts.get("dir") or run_dir or os.getcwd())
        self.run: Any = None
        self.wandb: Any = None

    @property
    def active(self) -> bool:
        return self.run is not None

    def start(self) -> bool:
        """Start the run; False (after one warning) when wandb is disabled or fails."""
        global _disabled_reason
        mode = self.opts.get("mode", "offline")
        if mode == "disabled" or _disabled_reason is not None:
            return False
        try:
            self.run = self._init(mode)
        except Exception as exc:  # noqa: BLE001 - any wandb failure must leave training alone
            _disabled_reason = _first_line(exc)
            warn_once(_disabled_reason)
            self.run = None
        return self.active

    def _init(self, mode: str) -> Any:
        _check_dir(self.dir)
        import wandb

        self.wandb = wandb
        job_type = self.meta.get("job_type", "train")
        if job_type not in JOB_TYPES:
            raise ValueError(f"job_type {job_type!r} is not one of {', '.join(JOB_TYPES)}")
        tags = list(dict.fromkeys([*(self.opts.get("tags") or []), *(self.meta.get("tags") or [])]))
        settings = wandb.Settings(silent=True, init_timeout=float(self.opts.get("init_timeout") or 90.0))
        run = wandb.init(project=self.opts.get("project") or "note-rl-tuner", entity=self.opts.get("entity"),
                         mode=mode, dir=self.dir, group=self.meta.get("group"), job_type=job_type,
                         name=self.meta.get("name"), tags=tags or None, config=self.config,
                         settings=settings, reinit="create_new", id=self.meta.get("run_id"),
                         resume="allow" if self.meta.get("run_id") else None)
        x_axis = self.meta.get("x_axis", "env_steps")
        run.define_metric(x_axis)
        run.define_metric("*", step_metric=x_axis)
        return run

    def _guard(self, what: str, fn: Callable[[], Any]) -> Any:
        if self.run is None:
            return None
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001
            warn_once(f"{what}: {_first_line(exc)}")
            run, self.run = self.run, None
            try:
                run.finish(exit_code=1, quiet=True)
            except Exception:  # noqa: BLE001 - already broken
                pass
            return None

    def log(self, row: dict[str, Any]) -> None:
        self._guard("log", lambda: self.run.log(row))

    def summary(self, values: dict[str, Any]) -> None:
        clean = scrub(values)  # a fail reason may quote a URL or a secret
        self._guard("summary", lambda: self.run.summary.update(clean))

    def artifact(self, name: str, type_: str, paths: list[str], metadata: dict[str, Any] | None = None,
                 aliases: list[str] | None = None) -> None:
        """Log the files ``paths`` as one artifact (files are referenced in place, not copied)."""
        def log() -> None:
            art = self.wandb.Artifact(_artifact_name(name), type=type_, metadata=scrub(metadata or {}))
            for path in paths:
                art.add_file(path, policy="immutable")
            self.run.log_artifact(art, aliases=aliases)

        self._guard("artifact", log)

    def finish(self, exit_code: int = 0) -> str | None:
        """Finish the run; returns its directory (``None`` when logging was off)."""
        if self.run is None:
            return None
        path = os.path.dirname(self.run.dir)  # run.dir is <run>/files
        self._guard("finish", lambda: self.run.finish(exit_code=exit_code))
        self.run = None
        return path


def _artifact_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")[:120] or "artifact"


class WandbCallback(Callback):
    """Logs one training run to wandb (see the module docstring).

    :param cfg: the resolved config of the run (``logger`` holds the wandb options)
    :param run_dir: the run's directory (checkpoints, GIF, and the wandb run by default)
    :param meta: job_type, group, name, params, trial, tags, x_axis
    :param pruned: tells at the end of training whether the run was pruned
    """

    def __init__(self, cfg: dict[str, Any], run_dir: str | None, meta: dict[str, Any] | None = None,
                 pruned: Callable[[], bool] | None = None) -> None:
        self.cfg, self.opts = cfg, cfg["logger"]
        self.meta = dict(meta if meta is not None else (_process_meta or {}))
        self.meta["tags"] = [*(self.meta.get("tags") or []), cfg["agent"]["name"], cfg["backend"]["name"],
                             cfg["env"]["id"]]
        self.run_dir = run_dir
        self.pruned = pruned or (lambda: False)
        self.last_k = int(cfg["objective"]["last_k"])
        self.every = max(1, int(self.opts.get("log_every") or 1))
        self.session = WandbSession(self.opts, run_dir, self.meta, _run_config(cfg, self.meta))
        self.session.start()  # before the run's clock starts: wandb.init takes about a second
        self._rows = RowMaker()
        self._last_eval: dict[str, Any] | None = None
        self._best = -math.inf
        self._best_path: str | None = None
        self._started = time.perf_counter()
        self.rows = 0
        self.run_path: str | None = None

    # -- per episode -------------------------------------------------------------------------
    def on_adjust(self, logs: dict[str, Any] | None = None) -> None:
        self._rows.on_adjust(logs)

    def on_episode_end(self, episode: int, logs: dict[str, Any] | None = None) -> None:
        logs = logs or {}
        if self.opts.get("log_model", True):
            self._keep_best()
        if not self.session.active or (episode + 1) % self.every:
            return
        point = logs.get("lr_finder")
        if point is not None and self.meta.get("x_axis") == "lr":
            self.log_point({**self._row(logs), **point})  # the recorder's lr, not the next step's
            return
        self.session.log(self._row(logs))
        self.rows += 1

    def log_evaluation(self, record: dict[str, Any]) -> None:
        """One evaluation (see :mod:`note_rl.evaluation`): ``eval/mean_return``, ``eval/std_return``
        at its env step; the last one also goes to the summary."""
        self._last_eval = record
        if self.session.active:
            self.session.log(eval_row(record))
            self.rows += 1

    def log_point(self, row: dict[str, Any]) -> None:
        """Log one row of a finder (e.g. ``{"lr": 1e-3, "reward": ..., "loss": ...}`` when
        ``meta["x_axis"] == "lr"``)."""
        self.session.log(dict(row))
        self.rows += 1

    def _row(self, logs: dict[str, Any]) -> dict[str, Any]:
        return self._rows.row(self.model, logs)

    def _keep_best(self) -> None:
        """Save the weights whenever the mean of the last ``last_k`` returns is a new best."""
        rewards = self.model.reward_list
        if len(rewards) < self.last_k:
            return
        mean = float(np.mean(rewards[-self.last_k:]))
        if mean > self._best:
            self._best = mean
            self._save_best()

    def _save_best(self) -> None:
        folder = self.run_dir or self.session.dir
        try:
            os.makedirs(folder, exist_ok=True)
            self._best_path = self.model.save_param(os.path.join(folder, "best_model.npz"))
        except Exception as exc:  # noqa: BLE001 - a checkpoint for logging must not stop training
            warn_once(f"best checkpoint: {_first_line(exc)}")
            self.opts = {**self.opts, "log_model": False}

    # -- end ---------------------------------------------------------------------------------
    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        # on_train_end runs in the loop's `finally`: an exception in flight means training failed
        exc = sys.exc_info()[1]
        self.finish(exc)

    def finish(self, exc: BaseException | None = None) -> None:
        """Write the summary and artifacts and close the run (idempotent)."""
        if self.run_path is not None or not self.session.active:
            return
        summary = self._summary(exc)
        self.session.summary(summary)
        if summary["state"] != "failed":
            self._artifacts(summary)
        self.run_path = self.session.finish(exit_code=1 if summary["state"] == "failed" else 0) or ""
        if self.run_path and self.cfg["logger"].get("p", 0) and self.opts.get("mode") == "offline":
            print(f"wandb: offline run in {self.run_path} (upload later: wandb sync {self.run_path})")

    def _summary(self, exc: BaseException | None) -> dict[str, Any]:
        agent = self.model
        returns = [float(r) for r in agent.reward_list] if agent is not None else []
        final = float(np.mean(returns[-self.last_k:])) if returns else None
        wall = time.perf_counter() - self._started
        steps = int(agent.step_counter) if agent is not None else 0
        state, reason = "pruned" if self.pruned() else "complete", None
        diverged = isinstance(exc, NonFiniteLossError)
        if diverged and self.meta.get("job_type") == "lr_finder":
            exc = None  # the LR range test ends where the loss diverges: that is its normal end
        if exc is not None:
            state, reason = "failed", _first_line(exc)
        elif final is not None and not math.isfinite(final):
            state, reason = "failed", f"non-finite mean return {final}"
        out = {"state": state, "final_mean_return": final, "best_mean_return": moving_best(returns, self.last_k),
               "episodes": len(returns), "env_steps": steps, "wall_time_s": wall,
               "env_steps_per_s": steps / wall if wall > 0 else None}
        if self._last_eval is not None:
            out["eval_mean_return"] = self._last_eval["mean"]
        if reason:
            out["fail_reason"] = reason
        if diverged:
            out["diverged"] = True
        return {k: v for k, v in out.items() if v is not None}

    def _artifacts(self, summary: dict[str, Any]) -> None:
        agent = self.model
        if agent is None:
            return
        name = self.meta.get("name") or os.path.basename(os.path.abspath(self.run_dir or "run"))
        if self.opts.get("log_model", True):
            if self._best_path is None:  # fewer than last_k episodes: the final weights are the best
                self._save_best()
            if self._best_path:
                self.session.artifact(f"model-{name}", "model", [self._best_path],
                                      {"best_mean_return": summary.get("best_mean_return"),
                                       "env_steps": summary.get("env_steps"), **self.meta.get("params", {})},
                                      aliases=["best"])
        if self.opts.get("log_gif"):
            self._gif(name)

    def _gif(self, name: str) -> None:
        folder = self.run_dir or self.session.dir
        try:
            path = self.model.animate_agent(int(self.opts.get("gif_max_steps") or 500),
                                            save_path=os.path.join(folder, "agent.gif"))
        except Exception as exc:  # noqa: BLE001 - e.g. an env without rgb_array rendering
            warn_once(f"animated agent: {_first_line(exc)}")
            return
        self.session.artifact(f"agent-{name}", "animation", [path])


def _run_config(cfg: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """The resolved config plus the study's view of the run (sampled parameters, trial number)."""
    config = dict(cfg)
    if meta.get("params") is not None:
        config["params"] = dict(meta["params"])
    for key in ("trial", "study_name", "job_type"):
        if meta.get(key) is not None:
            config[key] = meta[key]
    return config
