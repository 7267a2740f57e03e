"""One training run from a resolved config: build, train, score, write ``result.json``."""

from __future__ import annotations

import math
import os
import shutil
import time
from typing import Any, Callable

import numpy as np

from ..common.interrupts import held, held_signal, signal_name
from ..common.redact import scrub
from ..config.strategies import strategy_of
from ..logs.results import moving_best, weights_digest, write_json
from .checkpoints import Resumed, RunCheckpoint, Spanned, init_weights, restore_run, state_path
from .build import attach_adjuster, build_agent, build_optimizer, logger_callbacks, set_threads, train_kwargs
from .replicas import fit_replicated

__all__ = ["run_training", "Reporter"]

# (step, value) -> True when the run should stop (pruned)
Reporter = Callable[[int, float], bool]


class _Hooks:
    """Callbacks that enforce ``budget.max_updates`` and relay intermediate scores: training means
    every ``report_every`` episodes (``objective.source=train``) or each evaluation's mean
    (``source=eval``, :meth:`on_evaluation`)."""

    def __init__(self, agent: Any, last_k: int, max_updates: int | None, report_every: int,
                 reporter: Reporter | None, source: str = "train") -> None:
        self.agent, self.last_k, self.max_updates = agent, last_k, max_updates
        self.report_every, self.reporter, self.source = max(1, report_every), reporter, source
        self.pruned = False
        self.reports = 0
        self.evaluator: Any = None

    def _report(self, value: float) -> None:
        self.reports += 1
        if self.reporter(self.reports - 1, value):
            self.pruned = True
            self.agent.stop_training = True
            if self.evaluator is not None:
                self.evaluator.final = False  # a pruned run needs no final evaluation

    def on_evaluation(self, record: dict[str, Any]) -> None:
        if self.reporter is not None and self.source == "eval" and not self.pruned:
            self._report(record["mean"])

    def on_batch_end(self, batch: int, logs: dict[str, Any]) -> None:
        if self.max_updates and self.agent.batch_counter >= self.max_updates:
            self.agent.stop_training = True

    def on_episode_end(self, episode: int, logs: dict[str, Any]) -> None:
        if self.reporter is None or self.source != "train" or (episode + 1) % self.report_every:
            return
        self._report(float(np.mean(self.agent.reward_list[-self.last_k:])))


def run_training(cfg: dict[str, Any], run_dir: str | None, reporter: Reporter | None = None,
                 report_every: int = 5, callbacks: list[Any] | None = None,
                 meta: dict[str, Any] | None = None,
                 safe_nan: bool = False, evaluation: bool = True, interruptible: bool = False,
                 resume: bool = False) -> dict[str, Any]:
    """Train the agent ``cfg`` describes; returns (and writes to ``run_dir/result.json``) the
    final and best mean return over ``objective.last_k`` episodes, env steps and wall time.
    ``safe_nan`` ends training quietly when the loss diverges (the LR range test expects it);
    ``evaluation=False`` plays no evaluation episodes (the LR range test: every episode has another
    learning rate, so there is no policy to evaluate).  ``interruptible`` (a plain run in the
    driver's own process): Ctrl-C or SIGTERM stops training at the next env step, without the final
    evaluation; the model and ``result.json`` (``"interrupted": true``) are still written and the
    caller raises the signal afterwards (:func:`tuner.common.interrupts.raise_held`).  A trial never sets
    it: its driver kills it, and a partial run must not score as a finished one.  ``resume``: continue
    from ``run_dir``'s checkpoint (:mod:`tuner.run.checkpoints`; ``cfg`` is the config saved with it)."""
    if not interruptible:
        return _train(cfg, run_dir, reporter, report_every, callbacks, meta, safe_nan, evaluation, False, resume)
    with held():  # a signal before the agent exists is held too: nothing to stop, the run ends at once
        return _train(cfg, run_dir, reporter, report_every, callbacks, meta, safe_nan, evaluation, True, resume)


def _train(cfg: dict[str, Any], run_dir: str | None, reporter: Reporter | None, report_every: int,
           callbacks: list[Any] | None, meta: dict[str, Any] | None, safe_nan: bool, evaluation: bool,
           interruptible: bool = False, resume: bool = False) -> dict[str, Any]:
    """:func:`run_training`'s body."""
    from note_rl import LambdaCallback, NonFiniteLossError

    import contextlib

    set_threads(cfg)
    plan = strategy_of(cfg["strategy"])
    # a tf.distribute strategy (None for the others), made before TensorFlow runs anything (logical CPUs)
    strategy = plan.make(cfg["backend"])
    with strategy.scope() if strategy is not None else contextlib.nullcontext():  # the seeds' order
        agent = build_agent(cfg)
        attach_adjuster(agent, cfg)
        init_from = init_weights(agent, cfg["init_from"]) if cfg.get("init_from") and not resume else None
        optimizer = build_optimizer(cfg, agent)
    run_state = restore_run(agent, optimizer, state_path(run_dir)) if resume and run_dir else None
    if cfg.get("continue_from"):  # population-based training: continue a member's (or its parent's) checkpoint
        continue_from(agent, optimizer, cfg["continue_from"])
    last_k = int(cfg["objective"]["last_k"])
    source = cfg["objective"].get("source", "eval")
    hooks = _Hooks(agent, last_k, cfg["budget"]["max_updates"], report_every, reporter, source)
    cb = LambdaCallback(on_batch_end=hooks.on_batch_end if hooks.max_updates else None,
                        on_episode_end=hooks.on_episode_end)
    loggers = logger_callbacks(cfg, run_dir, meta, pruned=lambda: hooks.pruned)
    listeners = [hooks.on_evaluation, *(c.log_evaluation for c in loggers if hasattr(c, "log_evaluation"))]
    best_path = os.path.join(run_dir, BEST_MODEL) if run_dir else None
    evaluator = hooks.evaluator = _evaluator(cfg, lambda record: [f(record) for f in listeners], best_path)
    kwargs = train_kwargs(cfg)
    digest = weights_digest(agent) if run_state is None else run_state.get("digest")
    before = float(run_state.get("wall_time_s") or 0.0) if run_state else 0.0  # trained before the resume
    clock = {"started": time.perf_counter()}
    saving = _checkpoints(cfg, run_dir, {"evaluator": evaluator if evaluation else None, "digest": digest,
                                         "wall": lambda: before + time.perf_counter() - clock["started"]})
    if run_state is not None:
        evaluator.history, evaluator.best = list(run_state.get("evaluations") or []), run_state.get("best_eval")
        hooks.reports = len(evaluator.history) if source == "eval" else hooks.reports
    elif cfg.get("best_so_far") and best_path and evaluation:
        carry_best(evaluator, cfg["best_so_far"], best_path)
    kwargs["callbacks"] = [cb, *([evaluator] if evaluation else []), *saving, *(callbacks or []), *loggers,
                           *([Resumed(run_state)] if run_state is not None else []),
                           *([Spanned(cfg["schedule_steps"])] if cfg.get("schedule_steps") else [])]
    episodes = cfg["budget"]["episodes"]
    started = clock["started"] = time.perf_counter()
    with _stop_on_signal(agent, evaluator) if interruptible else contextlib.nullcontext():
        interrupted = held_signal() if interruptible else None  # a signal while the agent was built
        try:
            if interrupted is not None:
                pass  # nothing trained: the empty run is saved and reported as interrupted
            elif plan.replicated:  # this process is rank 0 of strategy.replicas
                fit_replicated(agent, cfg, optimizer, episodes, kwargs)
            elif strategy is not None:
                agent.distributed_training(optimizer, strategy, episodes, **kwargs)
            else:
                agent.fit(optimizer, episodes, **kwargs)
        except NonFiniteLossError:
            if not safe_nan:
                raise
    interrupted = held_signal() if interruptible else None
    wall = before + time.perf_counter() - started
    model = agent.save_param(os.path.join(run_dir, "model.npz")) if run_dir else None
    # population-based training: a full checkpoint (weights, optimizer state, buffer, counters) that the
    # member's next segment, or a member exploiting it, continues from
    checkpoint = agent.save(os.path.join(run_dir, "checkpoint.npz")) if run_dir and cfg.get("save_checkpoint") else None
    returns = [float(r) for r in agent.reward_list]
    final = float(np.mean(returns[-last_k:])) if returns else None
    final_eval = evaluator.history[-1]["mean"] if evaluator.history else None
    # the score of the run's answer on the evaluation episodes: the last evaluation's (final weights)
    # or, with eval.answer=best, the best one's (the weights kept as the answer)
    answer_eval = evaluator.best if (cfg.get("eval") or {}).get("answer") == "best" else final_eval
    result = {
        "status": "interrupted" if interrupted else "pruned" if hooks.pruned else "complete",
        # Ctrl-C / SIGTERM stopped training early: every figure below is of the steps trained so far
        "interrupted": interrupted is not None,
        **({"interrupted_by": signal_name(interrupted)} if interrupted is not None else {}),
        "objective": answer_eval if source == "eval" else final,
        "objective_source": source,
        "final_eval_mean_return": final_eval,
        "best_eval_mean_return": evaluator.best,
        "final_mean_return": final,
        "best_mean_return": moving_best(returns, last_k),
        "episodes": agent.total_episode,
        "env_steps": agent.step_counter,
        "gradient_steps": agent.batch_counter,
        "wall_time_s": wall,
        "env_steps_per_s": agent.step_counter / wall if wall > 0 else None,
        "seed": cfg["seed"],
        "pid": os.getpid(),  # the process that trained (each trial / multirun job has its own)
        "threads": agent.backend.framework_threads(),
        "device": str(getattr(agent, "device", "") or "") or None,  # where the weights lived (backend.device resolved)
        "compile_s": getattr(agent, "compile_time", None),  # jit_compile on torch: the first step's compile
        # strategy=ddp: replicas that trained together (each ran the budget; counts above are rank 0's)
        "replicas": plan.replica_count(strategy),
        "initial_weights_sha256": digest,
        **({"init_from": init_from} if init_from else {}),
        **({"resumed_at_step": int(run_state["resumed_at_step"])} if run_state and "resumed_at_step" in run_state else {}),
        "mean_loss": _mean_loss(agent.loss_list),
        "returns": returns,
        "evaluations": evaluator.history,
        "model": model,  # the final weights (note-tune eval model=...)
        **({"checkpoint": checkpoint, "continued_from": cfg.get("continue_from")} if cfg.get("save_checkpoint") else {}),
        "best_eval_model": best_path if best_path and os.path.exists(best_path) else None,
        **(_test_answer(agent, cfg, best_path, model) if evaluation and not hooks.pruned and not interrupted else {}),
        "losses": [None if v is None else float(v) for v in agent.loss_list],
        # the config as a run dir records it (note-tune eval rebuilds the agent from it); PBT's hook keys are above
        **({"best_carried_from": cfg["best_so_far"]["model"]} if cfg.get("best_so_far") else {}),
        "config": {k: v for k, v in cfg.items() if k not in HOOK_KEYS},
    }
    if final is not None and not math.isfinite(final):
        raise FloatingPointError(f"mean return is {final}")
    if run_dir:
        # a secret-named key's value never reaches the file (restore_secrets gives it back on reading)
        write_json(os.path.join(run_dir, "result.json"), {**result, "config": scrub(result["config"], ())})
    return result


#: the file in a run dir holding the weights of its best evaluation (eval.answer=best's answer)
BEST_MODEL = "best_eval_model.npz"
#: keys a study driver adds to a run's config for tuner.run.train alone (not part of the recorded config)
HOOK_KEYS = ("continue_from", "save_checkpoint", "best_so_far", "schedule_steps")


def carry_best(evaluator: Any, carried: dict[str, Any], best_path: str) -> None:
    """Start ``evaluator`` from a best evaluation made before this run (a PBT replay's earlier segments:
    ``{"score": mean, "model": weights}``): its weights become this run's best-evaluation weights, replaced
    only by an evaluation at least as good, so ``eval.answer=best`` picks over the whole replay."""
    shutil.copyfile(carried["model"], best_path)
    evaluator.best = float(carried["score"])


#: optimizer hyperparameters a config sets and a checkpoint must not override on :func:`continue_from`
OPTIMIZER_HPARAMS = ("lr", "weight_decay", "momentum", "beta1", "beta2", "eps")


def continue_from(agent: Any, optimizer: Any, path: str) -> None:
    """Load the full checkpoint ``path`` (weights, optimizer slots, replay buffer, counters, exploration
    state) into a freshly built ``agent`` and ``optimizer``, keeping the hyperparameters this config
    gives: ``restore()`` also brings back the saved ``set()`` settings and optimizer hyperparameters
    (the learning rate in the optimizer's state), which would silently undo a PBT perturbation
    (ray#62173), so both are put back to the config's values afterwards."""
    from note_rl.core.checkpoint import _SETTINGS
    from note_rl.update import optimizer_list

    backend = agent.backend
    settings = {k: getattr(agent, k) for k in _SETTINGS if hasattr(agent, k)}
    hparams = [(opt, {n: backend.get_hparam(opt, n) for n in OPTIMIZER_HPARAMS})
               for opt in optimizer_list(optimizer)]
    agent.restore(path, optimizer)
    for key, value in settings.items():
        setattr(agent, key, value)
    for opt, values in hparams:
        for name, value in values.items():
            if value is not None:
                backend.set_hparam(opt, name, value)


def _stop_on_signal(agent: Any, evaluator: Any) -> Any:
    """While training, a first Ctrl-C / SIGTERM stops the agent at its next env step (where the loop
    checks ``stop_training``: a safe point, no update half-applied) and skips the final evaluation."""
    def stop(signum: int) -> None:
        agent.stop_training = True
        evaluator.final = False

    return held(stop)


def _test_answer(agent: Any, cfg: dict[str, Any], best_path: str | None, model: str | None) -> dict[str, Any]:
    """``eval.test_episodes`` greedy episodes of the run's answer (``eval.answer``: the final weights,
    or the best evaluation's, loaded into ``agent``) on reset seeds ``eval.test_seed`` onwards:
    episodes apart from the evaluations that picked the best weights, so the score is not their max."""
    from note_rl.evaluation import evaluate

    spec = cfg.get("eval") or {}
    episodes = int(spec.get("test_episodes") or 0)
    answer = spec.get("answer", "final")
    out: dict[str, Any] = {"answer": answer, "answer_model": model}
    if answer == "best" and best_path and os.path.exists(best_path):
        agent.restore_param(best_path)  # the final weights are already saved (model.npz)
        out["answer_model"] = best_path
    elif answer == "best":  # no evaluation saved weights (none ran): the final weights are the answer
        out["answer"] = "final"
    if episodes:
        returns = evaluate(agent, episodes, seed=int(spec.get("test_seed", 1_500_000)))
        out.update(test_mean_return=float(np.mean(returns)), test_returns=returns)
    return out


def _checkpoints(cfg: dict[str, Any], run_dir: str | None, run: dict[str, Any]) -> list[Any]:
    """``checkpoint.every``: the callback writing ``<run dir>/checkpoint/`` (none without a run dir)."""
    spec = cfg.get("checkpoint") or {}
    if not run_dir or not spec.get("every"):
        return []
    return [RunCheckpoint(run_dir, int(spec["every"]), cfg, run, bool(spec.get("buffer", True)))]


def _evaluator(cfg: dict[str, Any], on_evaluation: Callable[[dict[str, Any]], None],
               best_model_path: str | None = None) -> Any:
    """The run's :class:`~note_rl.evaluation.EvalCallback`: ``eval.every`` env steps (default: five
    evaluations over ``budget.steps``, or only the final one without a step budget)."""
    from note_rl.evaluation import EvalCallback

    spec, steps = cfg.get("eval") or {}, cfg["budget"]["steps"]
    every = spec.get("every") or (max(1, int(steps) // 5) if steps else None)
    return EvalCallback(every=every, episodes=int(spec.get("episodes", 5)), seed=int(spec.get("seed", 1_000_000)),
                        on_evaluation=on_evaluation, best_model_path=best_model_path)


def _mean_loss(losses: list[float | None]) -> float | None:
    values = [v for v in losses if v is not None]
    return float(np.mean(values)) if values else None
