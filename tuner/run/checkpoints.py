"""Periodic run checkpoints (``checkpoint.every``), ``resume=<run dir>`` and ``init_from=<model>``.

A run checkpoint is the folder ``<run dir>/checkpoint/``:

* ``state.npz``: the agent's full checkpoint (:func:`note_rl.core.checkpoint.snapshot`: weights,
  optimizer state, replay buffer, counters, histories, exploration and env generator states) plus
  what belongs to the *run* rather than the agent, under the metadata key ``run`` and arrays
  ``rng/...``: the evaluator's history and best score, the trainer's episode index and step origin,
  the training cadence's owed gradient steps, the digest of the run's initial weights, the wall time
  so far, and the random generators outside the agent (numpy's and Python's global ones, torch's CPU
  generator through the backend, the env action space's).  One file, written to a temporary name and renamed
  (:func:`note_rl.core.checkpoint.write_npz`), so a kill at any moment leaves the previous checkpoint
  or the new one whole; each save replaces the last.
* ``config.yaml``: the run's resolved config (secrets masked), written once when training starts;
  ``resume`` reads it back as data (:func:`tuner.config.untrusted.load_run_config`).

Checkpoints are taken at the end of the first episode after every ``every`` env steps: at an episode
boundary a single-env run has no env mid-episode, so nothing the checkpoint cannot hold (a
simulator's internal state) is lost, and an off-policy run resumed from it continues exactly as the
uninterrupted one would.  An on-policy run (``n_envs`` envs, rollouts) is checkpointed mid-rollout:
its resumed run drops that rollout and restarts the other envs' episodes (docs/guide/checkpoints.md,
"Checkpoints, resume and warm starts").
"""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np

from note_rl.callbacks import Callback
from note_rl.core.run_context import current

from ..common.errors import ConfigError
from ..config.schema import init_model_path

__all__ = ["FOLDER", "STATE", "RunCheckpoint", "Resumed", "state_path", "checkpoint_state", "resume_config",
           "restore_run", "init_weights"]

FOLDER = "checkpoint"
STATE = "state.npz"
CONFIG = "config.yaml"
RUN_FORMAT = 1


def state_path(run_dir: str) -> str:
    return os.path.join(run_dir, FOLDER, STATE)


# -- saving ----------------------------------------------------------------------------------------
class RunCheckpoint(Callback):
    """Writes ``<run dir>/checkpoint/`` at the end of the first episode after every ``every`` env
    steps (after the evaluation due at that episode, which the checkpoint then holds).

    :param run_dir: the run dir
    :param every: env steps between checkpoints
    :param cfg: the run's resolved config (written as ``checkpoint/config.yaml``)
    :param run: the run's bookkeeping: a dict with ``evaluator``, ``digest`` and ``wall`` (a callable
        giving the wall time trained so far)
    :param save_buffer: include the replay buffer (needed for an exact continuation)
    """

    def __init__(self, run_dir: str, every: int, cfg: dict[str, Any], run: dict[str, Any],
                 save_buffer: bool = True) -> None:
        self.folder = os.path.join(run_dir, FOLDER)
        self.every, self.cfg, self.run, self.save_buffer = int(every), cfg, run, save_buffer
        self._next: int | None = None
        self.saved = 0

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._next = (self.model.step_counter // self.every + 1) * self.every
        config = os.path.join(self.folder, CONFIG)
        if not os.path.exists(config):
            _write_config(config, self.cfg)

    def on_episode_end(self, episode: int, logs: dict[str, Any] | None = None) -> None:
        agent = self.model
        if self._next is None or agent.step_counter < self._next:
            return
        self._next = (agent.step_counter // self.every + 1) * self.every
        self.save(episode)

    def save(self, episode: int) -> str:
        from note_rl.core.checkpoint import snapshot, write_npz

        agent = self.model
        meta, arrays = snapshot(agent, True, self.save_buffer)
        run_meta, rng_arrays = _run_state(agent, episode, self.run)
        meta["run"] = run_meta
        arrays.update(rng_arrays)
        self.saved += 1
        return write_npz(os.path.join(self.folder, STATE), meta, arrays)


def _write_config(path: str, cfg: dict[str, Any]) -> None:
    """The run's config, secrets masked (:func:`tuner.common.redact.scrub`), written atomically."""
    import yaml

    from ..common.redact import scrub

    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        yaml.safe_dump(scrub(cfg, ()), f, sort_keys=False)
    os.replace(tmp, path)


def _run_state(agent: Any, episode: int, run: dict[str, Any]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    context = current(agent)
    loop = context.loop_state() if context is not None else {}
    evaluator = run.get("evaluator")
    meta: dict[str, Any] = {
        "format": RUN_FORMAT,
        "episode": int(episode) + 1,  # the run's index of the next episode
        "start_steps": int(loop.get("start_steps", 0)),
        "owed": float(loop.get("owed", 0.0)), "sync_due": bool(loop.get("sync_due", False)),
        "updates_since_sync": int(loop.get("updates_since_sync", 0)),
        "evaluations": list(evaluator.history) if evaluator is not None else [],
        "best_eval": evaluator.best if evaluator is not None else None,
        "digest": run.get("digest"),
        "wall_time_s": float(run["wall"]()) if callable(run.get("wall")) else 0.0,
        "python_random": _python_state(),
        "action_space_rng": _action_space_rng(agent),
    }
    arrays: dict[str, np.ndarray] = {}
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    arrays["rng/numpy_keys"] = np.asarray(keys, dtype=np.uint32)
    meta["numpy_random"] = {"kind": str(kind), "pos": int(pos), "has_gauss": int(has_gauss), "cached": float(cached)}
    framework = agent.backend.rng_state()  # torch's CPU generator; None for TensorFlow (see its backend)
    if framework is not None:
        arrays["rng/framework"] = framework
    return meta, arrays


def _python_state() -> list[Any]:
    version, internal, gauss = random.getstate()
    return [version, list(internal), gauss]


def _env(agent: Any) -> Any:
    return agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env


def _action_space_rng(agent: Any) -> Any:
    try:
        return _env(agent).action_space.np_random.bit_generator.state
    except AttributeError:
        return None




# -- resuming --------------------------------------------------------------------------------------
def checkpoint_state(run_dir: str) -> str:
    """The checkpoint file of ``run_dir``; a ``ConfigError`` naming ``resume`` when there is none."""
    if not os.path.isdir(run_dir):
        raise ConfigError(f"resume: {run_dir} is not a directory (give the run dir of a run with checkpoint.every)")
    path = state_path(run_dir)
    if not os.path.isfile(path) or not os.path.isfile(os.path.join(run_dir, FOLDER, CONFIG)):
        raise ConfigError(f"resume: {run_dir} has no checkpoint ({FOLDER}/{STATE} and {FOLDER}/{CONFIG}); only a run "
                          f"trained with checkpoint.every=<env steps> can be resumed")
    return path


def resume_config(run_dir: str, trust_code: bool = False) -> dict[str, Any]:
    """The resolved config saved with ``run_dir``'s checkpoint, read as data (only note_rl's own
    classes unless ``trust_code``) and checked by the schema."""
    from omegaconf import OmegaConf

    from ..config.schema import validate
    from ..config.untrusted import UntrustedFileError, load_run_config

    checkpoint_state(run_dir)
    try:
        cfg, _ = load_run_config(os.path.join(run_dir, FOLDER), trust_code=trust_code, name=CONFIG)
    except UntrustedFileError as exc:
        raise ConfigError(f"resume: {exc}") from None
    try:
        typed = validate(OmegaConf.create(cfg))
    except ConfigError as exc:
        raise ConfigError(f"resume: {run_dir}/{FOLDER}/{CONFIG}: {exc}") from None
    plain = OmegaConf.to_container(typed, resolve=True)
    plain["resume"] = None
    return plain  # type: ignore[return-value]


def restore_run(agent: Any, optimizer: Any, path: str) -> dict[str, Any]:
    """Load ``path`` (a run checkpoint) into ``agent`` and ``optimizer`` and set the generators
    outside the agent; returns the run's bookkeeping (``meta['run']``) for :class:`Resumed`."""
    from note_rl.core.checkpoint import CheckpointError, read_npz

    try:
        meta, arrays = read_npz(path)
        run = meta.get("run")
        if not isinstance(run, dict) or run.get("format") != RUN_FORMAT:
            raise CheckpointError(f"{path}: not a run checkpoint (no 'run' metadata of format {RUN_FORMAT})")
        _check_run_meta(run, path)
        agent.restore(path, optimizer)
        _set_generators(agent, run, arrays, path)
        run["resumed_at_step"] = int(agent.step_counter)
    except (CheckpointError, FileNotFoundError) as exc:
        raise ConfigError(f"resume: {exc}") from None
    return run


_RUN_TYPES: dict[str, Any] = {"episode": int, "start_steps": int, "updates_since_sync": int, "owed": (int, float),
                              "sync_due": bool, "evaluations": list, "best_eval": (int, float, type(None)),
                              "digest": (str, type(None)), "wall_time_s": (int, float), "python_random": list,
                              "numpy_random": dict, "action_space_rng": (dict, type(None))}


def _check_run_meta(run: dict[str, Any], path: str) -> None:
    """The run metadata's schema: every key present with its type, counts non-negative, each
    evaluation a record of a step and a mean (they go into result.json as they are)."""
    from note_rl.core.checkpoint import CheckpointError

    for key, types in _RUN_TYPES.items():
        value = run.get(key, ...)
        if value is ... or not isinstance(value, types) or (types is int and isinstance(value, bool)):
            raise CheckpointError(f"{path}: run metadata {key!r} is {'missing' if value is ... else type(value).__name__}")
    if min(run["episode"], run["start_steps"], run["updates_since_sync"]) < 0:
        raise CheckpointError(f"{path}: run metadata holds a negative count")
    for record in run["evaluations"]:
        if not isinstance(record, dict) or not isinstance(record.get("step"), int) or \
                not isinstance(record.get("mean"), (int, float)):
            raise CheckpointError(f"{path}: run metadata 'evaluations' holds a record without a step and a mean")


def _set_generators(agent: Any, run: dict[str, Any], arrays: dict[str, np.ndarray], path: str) -> None:
    from note_rl.core.checkpoint import CheckpointError

    try:
        nr = run["numpy_random"]
        np.random.set_state((str(nr["kind"]), arrays["rng/numpy_keys"].astype(np.uint32), int(nr["pos"]),
                             int(nr["has_gauss"]), float(nr["cached"])))
        version, internal, gauss = run["python_random"]
        random.setstate((int(version), tuple(int(v) for v in internal), gauss))
        if run.get("action_space_rng") is not None:
            _env(agent).action_space.np_random.bit_generator.state = run["action_space_rng"]
        if "rng/framework" in arrays:
            agent.backend.set_rng_state(arrays["rng/framework"])
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as exc:
        raise CheckpointError(f"{path}: its random-generator states do not load ({type(exc).__name__}: {exc})") \
            from None


class Resumed(Callback):
    """Puts the resumed ``train()`` call where the checkpointed one was, through its run context
    (:meth:`note_rl.core.run_context.RunContext.restore`): its episode index, its step origin (so
    ``budget.steps`` and the learning-rate / clip schedules count from the run's start, not from the
    resume), the cadence's owed gradient steps and the learner's updates since the last target sync."""

    def __init__(self, run: dict[str, Any]) -> None:
        self.run = run

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        context = current(self.model)
        if context is not None:
            context.restore(self.run)


class Spanned(Callback):
    """Makes the ``train()`` call one part of a run of ``steps`` env steps counted from the agent's
    step 0 (a population-based training segment, which continues its parent's checkpoint for
    ``tuner.interval`` steps): ``linear_decay``'s schedules then fall over the whole run, as in one
    run of that length, instead of to 0 within every segment."""

    def __init__(self, steps: int) -> None:
        self.steps = int(steps)

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        context = current(self.model)
        if context is not None:
            context.span = self.steps


# -- warm starts -----------------------------------------------------------------------------------
def init_weights(agent: Any, value: str) -> str:
    """Load the weights of ``init_from`` into ``agent`` (every array's shape and dtype checked
    against the agent's first: a file of another architecture is refused whole)."""
    from note_rl.core.checkpoint import CheckpointError

    path = init_model_path(value)
    try:
        agent.restore_param(path)
    except (CheckpointError, FileNotFoundError) as exc:
        raise ConfigError(f"init_from: {exc}") from None
    return path
