"""The Hydra application: ``python -m tuner`` / ``note-tune``.

* ``tuner=none`` (default): one training run; ``result.json`` goes to the Hydra run dir.  In a
  ``-m`` multirun every job trains in its own fresh process.
* ``tuner=optuna``: an Optuna study (:mod:`tuner.study.driver`), followed by its report (:mod:`tuner.report.report`).
* ``tuner=pbt``: population-based training on an Optuna study (:mod:`tuner.study.pbt`).
* ``note-tune report ...`` / ``note-tune dashboard ...``: commands on an existing study storage
  (:mod:`tuner.cli.subcommands`), dispatched before Hydra parses the command line.

A bad config value stops before any training with one line naming the key and exit status 2 (the
command line's checks: :mod:`tuner.cli.precheck`).  The study runners live in :mod:`tuner.cli.studies`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from ..common.errors import ConfigError, error_line
from ..common.files import CONF_DIR  # re-exported: tests and tools import it from here
from ..common.redact import redact_text
from ..config.schema import name_part, register, validate
from .precheck import _fail, _precheck, _protect_secrets, _short
from .studies import _run_pbt, _run_study

__all__ = ["main"]

FINDERS = ("lr_finder", "opt_finder", "parallel_finder")


def _run_plain(cfg: DictConfig, run_dir: str, isolated: bool, resume: bool = False) -> dict[str, Any]:
    plain = OmegaConf.to_container(cfg, resolve=True)
    label = ""
    if not isolated:
        from ..run.launcher import free_cores
        from ..run.train import run_training
        from ..run.trial_worker import default_threads

        default_threads(free_cores())  # backend.threads, when set, wins (tuner.run.build.set_threads)
        from note_rl.core.learner import NonFiniteLossError

        try:
            # Ctrl-C: stop, save, then exit 130
            result = run_training(plain, run_dir, interruptible=True, resume=resume)
        except NonFiniteLossError as exc:  # a divergent config (agent.lr=1e5): one line, not Hydra's trace
            print(f"error: training diverged: {error_line(exc)} (lower agent.lr / optimizer.lr, or set "
                  f"agent.max_grad_norm)", file=sys.stderr, flush=True)
            raise SystemExit(1) from None
    else:
        from ..run.launcher import context_for
        from ..study.jobs import run_in_fresh_process

        at_once = _parallel_jobs()
        if at_once > 1:  # jobs that share a terminal: every line says whose it is
            label = f"[job {HydraConfig.get().job.num}] "
        _quiet_off_terminal(plain)
        result = run_in_fresh_process(plain, run_dir, context_for(plain["backend"]["name"]), at_once,
                                      prefix=label or None)
    evaluated = "interrupted before the final evaluation" if result.get("interrupted") and \
        result["final_eval_mean_return"] is None else _num(result["final_eval_mean_return"])
    print(f"{label}evaluation {evaluated} ({cfg.eval.episodes} greedy episodes); "
          f"final mean return {_num(result['final_mean_return'])} over the last "
          f"{cfg.objective.last_k} episodes; best {_num(result['best_mean_return'])}; "
          f"{result['env_steps']} env steps in {result['wall_time_s']:.1f} s -> {run_dir}/result.json")
    if result.get("test_mean_return") is not None:
        print(f"{label}test {_num(result['test_mean_return'])} ({cfg.eval.test_episodes} greedy episodes of the "
              f"{result['answer']} weights, reset seeds {cfg.eval.test_seed} onwards)")
    _plot_run(result, run_dir)
    if result.get("interrupted"):
        from ..common.interrupts import keep

        keep(f"training stopped after {result['env_steps']} env steps; {_short(result['model'] or run_dir)} and "
             f"{_short(os.path.join(run_dir, 'result.json'))} (\"interrupted\": true) kept")
    elif not isolated:  # a multirun prints one line per job; the guide is for a single run
        print(_next_steps(result, run_dir))
    if not isolated:
        from ..common.interrupts import keep, raise_held

        if not result.get("interrupted"):
            keep(f"the run had finished: {_short(run_dir)}/result.json and its model kept")
        raise_held()  # a signal held while the run trained or saved ends the command now (130 / 143)
    return result


def _quiet_off_terminal(plain: dict[str, Any]) -> None:
    """A multirun job whose output is not a terminal (a CI log, a file) prints no per-episode progress
    unless the command set ``logger.p`` itself: six jobs' progress made 834 lines of a log; each job's
    summary line and its run dir's files say how it went."""
    if sys.stdout.isatty():
        return
    task = [o.split("=", 1)[0].lstrip("+~") for o in HydraConfig.get().overrides.task]
    if "logger.p" not in task:
        plain["logger"]["p"] = 0


def _plot_run(result: dict[str, Any], run_dir: str) -> None:
    """``training.png`` in the run dir: returns and loss per episode."""
    from ..logs.curves import pyplot, training_figure

    try:
        fig = training_figure(result, f"{result['config']['agent']['name']} on {result['config']['env']['id']}, "
                                      f"seed {result['seed']}")
        fig.savefig(os.path.join(run_dir, "training.png"), dpi=100)
        pyplot().close(fig)
    except Exception as exc:  # noqa: BLE001 - the run and its result.json stand without the picture
        print(f"warning: training.png not written: {type(exc).__name__}: {exc}", file=sys.stderr)


def _next_steps(result: dict[str, Any], run_dir: str) -> str:
    """Where this run's files went, and the commands a user runs next."""
    run, model = _short(run_dir), _short(result.get("model") or os.path.join(run_dir, "model.npz"))
    files = [(f"{run}/result.json", "returns, evaluations, losses, config"),
             (model, "the final weights"),
             *([(_short(result["best_eval_model"]), "the weights of the best evaluation")]
               if result.get("best_eval_model") else []),
             (f"{run}/training.png", "return and loss per episode")]
    cfg = result.get("config") or {}
    study = f"{cfg.get('agent', {}).get('name', 'agent')}_{name_part(cfg.get('env', {}).get('id', 'env'))}"
    tool, trust = _tool_command(cfg)
    commands = [(f"{tool} eval model={model}{trust}", "evaluate the saved model"),
                (f"{tool} play model={model} out=episode.gif{trust}", "record a greedy episode"),
                (f"{tool} export model={run}{trust}", "export the policy (TorchScript / SavedModel) for other tools"),
                (" ".join([tool, *_config_dir(), *_run_overrides(), "tuner=optuna", "tuner.n_trials=20"]),
                 "tune this agent with an Optuna study"),
                (f"note-tune dashboard study_dir=studies/{study}", "watch that study in optuna-dashboard")]
    # an override that set a secret is printed masked (the user types it again, it is not kept anywhere)
    return redact_text("\n".join(["files:", *_columns(files), "next:", *_columns(commands)]))


def _columns(rows: list[tuple[str, str]], cap: int = 60) -> list[str]:
    """Two columns; a left cell longer than ``cap`` (a study command with many overrides) pushes
    only its own description right instead of padding every line to its length."""
    width = min(cap, max(len(left) for left, _ in rows)) + 3
    return [f"  {left:<{width}}{right}" if len(left) < width else f"  {left}   {right}" for left, right in rows]


def _tool_command(cfg: dict[str, Any]) -> tuple[str, str]:
    """``note-tune`` as this run must be called again, and its extra argument: for a run that names code
    that is not note_rl's (a user's own agent), ``PYTHONPATH=...`` in front when the command had one (the
    package is found through it) and `` trust_code=true`` (eval / play / export read a run dir as data
    and refuse other code otherwise)."""
    import shlex

    from ..config.untrusted import UntrustedFileError, check_code_refs

    try:
        check_code_refs(cfg, "result.json")
        return "note-tune", ""  # note_rl's own classes: found anywhere, read back without trust_code
    except UntrustedFileError:
        pass
    path = os.environ.get("PYTHONPATH")
    return (f"PYTHONPATH={shlex.quote(path)} note-tune" if path else "note-tune"), " trust_code=true"


def _config_dir() -> list[str]:
    """``--config-dir DIR`` when this run had one (a user's own agent and search configs live there)."""
    import shlex

    try:
        sources = HydraConfig.get().runtime.config_sources
    except ValueError:  # no Hydra context (called from a test)
        return []
    dirs = [s.path for s in sources if s.provider == "command-line" and s.schema == "file"]
    return ["--config-dir", shlex.quote(_short(dirs[0]))] if dirs else []


def _run_overrides() -> list[str]:
    """This run's command-line overrides (shell-quoted), so that the printed study tunes the same
    agent, env and backend; a seed is left out (a study samples its own)."""
    import shlex

    try:
        task = list(HydraConfig.get().overrides.task)
    except ValueError:  # no Hydra context (called from a test)
        return []
    return [shlex.quote(o) for o in task if not o.lstrip("+~").startswith(("seed=", "hydra.", "tuner", "resume="))]


def _parallel_jobs() -> int:
    """How many multirun jobs the Hydra launcher runs at once (joblib's ``n_jobs``, submitit_local's
    whole sweep batch); 1 for sequential launchers."""
    from ..run.launcher import multirun_jobs_at_once

    return multirun_jobs_at_once(HydraConfig.get())


def _num(value: float | None) -> str:
    """A return for the summary line; ``n/a`` when the run finished no episode."""
    return "n/a (no finished episode)" if value is None else f"{value:.2f}"


def _run_finder(cfg: DictConfig) -> dict[str, Any]:
    from hydra import compose

    from ..finders.config import run_finder

    hc = HydraConfig.get()
    overrides = [o for o in hc.overrides.task if not o.startswith("tuner")]
    return run_finder(cfg, lambda extra: compose(hc.job.config_name, overrides=extra), overrides)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def _app(cfg: DictConfig) -> Any:
    try:
        typed = validate(cfg)
        _protect_secrets(typed)
        mode = typed.tuner.get("name", "none")
        if typed.get("resume"):
            return _run_resumed(str(typed.resume))
        if typed.get("init_from"):
            from ..config.schema import init_model_path

            init_model_path(str(typed.init_from))  # missing: one line before anything trains
        if mode == "none":
            hc = HydraConfig.get()
            return _run_plain(typed, hc.runtime.output_dir, isolated=hc.mode == RunMode.MULTIRUN)
        if mode == "optuna":
            return _run_study(typed)
        if mode == "pbt":
            return _run_pbt(typed)
        if mode in FINDERS:
            return _run_finder(typed)
        _fail(f"tuner.name: {mode!r} is not one of none, optuna, pbt, {', '.join(FINDERS)}")
    except ConfigError as exc:
        _remove_untouched_run_dir()
        _fail(str(exc))


def _run_resumed(folder: str) -> dict[str, Any]:
    """``resume=<run dir>``: the run continues from its checkpoint with the config saved there, in
    its own dir (:func:`_resume_argv` pointed Hydra's run dir at it and kept Hydra from rewriting
    its ``.hydra/``)."""
    from ..run.checkpoints import resume_config

    run_dir = os.path.abspath(folder)
    saved = resume_config(run_dir, trust_code=_RESUME_TRUST_CODE)
    print(f"resuming {_short(run_dir)} from its checkpoint", flush=True)
    return _run_plain(OmegaConf.create(saved), run_dir, isolated=False, resume=True)


_RESUME_TRUST_CODE = False


def _resume_argv(argv: list[str]) -> list[str]:
    """``resume=<run dir>`` on the command line: checked before Hydra creates anything (a dir
    without a checkpoint is one line, exit 2), then Hydra's run dir is set to that dir and its
    ``.hydra/`` left alone (``hydra.output_subdir=null``: the saved config stays the run's).  The
    run's own config is used: other overrides are refused, not silently ignored.  ``trust_code=true``
    (as with ``note-tune eval``) lets the saved config name code other than note_rl's own."""
    global _RESUME_TRUST_CODE
    given = [a for a in argv if a.lstrip("+").startswith("resume=")]
    if not given:
        return argv
    trust = [a for a in argv if a.startswith("trust_code=")]
    if trust:
        _RESUME_TRUST_CODE = trust[-1].split("=", 1)[1].strip().lower() in ("true", "1", "yes")
        argv = [a for a in argv if a not in trust]
    value = given[-1].split("=", 1)[1].strip().strip("'\"")
    if value in ("", "null"):
        return argv
    if any(a in ("-m", "--multirun") for a in argv):
        _fail("resume: continues one run; it cannot be combined with -m")
    others = [a for a in argv if a not in given and not a.startswith("-") and not a.lstrip("+~").startswith("hydra")]
    if others:
        _fail(f"resume: the run continues with the config saved in its checkpoint; drop the other overrides "
              f"({' '.join(others)})")
    from ..run.checkpoints import checkpoint_state

    run_dir = os.path.abspath(os.path.expanduser(value))
    try:
        checkpoint_state(run_dir)
    except ConfigError as exc:
        _fail(str(exc))
    quoted = run_dir.replace("\\", "\\\\").replace("'", "\\'")
    return [*[a for a in argv if a not in given], f"resume='{quoted}'", f"hydra.run.dir='{quoted}'",
            "hydra.output_subdir=null"]


def _remove_untouched_run_dir() -> None:
    """A run refused by validation leaves nothing behind: Hydra created its run dir (``.hydra/``
    and an empty log) before the config could be checked, so that dir, and date folders above it
    left empty, are removed when nothing else is in them."""
    import shutil

    hc = HydraConfig.get()
    if hc.mode == RunMode.MULTIRUN:
        return
    out = hc.runtime.output_dir
    try:
        entries = os.listdir(out)
    except OSError:
        return
    own = all(e == ".hydra" or (e.endswith(".log") and os.path.getsize(os.path.join(out, e)) == 0) for e in entries)
    if not own:
        return
    shutil.rmtree(out, ignore_errors=True)
    parent, stop = os.path.dirname(os.path.abspath(out)), os.path.abspath(hc.runtime.cwd)
    for _ in range(2):  # outputs/<date>/ then outputs/, when empty and below the working directory
        if parent == stop or not parent.startswith(stop + os.sep):
            break
        try:
            os.rmdir(parent)
        except OSError:
            break
        parent = os.path.dirname(parent)


def main() -> None:
    """Console entry point (``note-tune``).  Ctrl-C and SIGTERM end every command with exit status
    130 / 143 and one line saying what was kept, never a traceback (:mod:`tuner.common.interrupts`)."""
    from ..common.interrupts import exit_line, exit_status, install

    install()
    try:
        _main()
    except KeyboardInterrupt as exc:  # each command has killed its children and written what it had
        print(exit_line(exc), file=sys.stderr, flush=True)
        raise SystemExit(exit_status(exc)) from None


def _main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("report", "dashboard", "eval", "play", "export", "reevaluate",
                                               "summary"):
        from .subcommands import main as subcommand

        raise SystemExit(subcommand(sys.argv[1], sys.argv[2:]))
    register()
    sys.argv[1:] = _resume_argv([_sweeper_param(arg) for arg in sys.argv[1:]])
    _precheck(sys.argv[1:])
    _app()


def _sweeper_param(arg: str) -> str:
    """``hydra.sweeper.params.<key>=<expr>`` as the published sweeper plugins document it.  Hydra's
    struct mode wants ``+`` for a key the sweeper's ``params`` does not hold yet, and refuses ``+``
    for one a config file set: ``++`` (add or override) accepts both.  An unquoted expression such
    as ``choice(0.9, 0.99)`` would be a sweep of a Hydra key, which Hydra refuses: it is quoted."""
    if not arg.startswith("hydra.sweeper.params.") or "=" not in arg:
        return arg
    key, value = arg.split("=", 1)
    if not value.startswith(("'", '"')):
        value = "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return f"++{key}={value}"


def _finder_main(name: str) -> None:
    sys.argv.insert(1, f"tuner={name}")
    main()


def lr_finder_main() -> None:
    """``note-lr-finder``: ``note-tune tuner=lr_finder ...``."""
    _finder_main("lr_finder")


def opt_finder_main() -> None:
    """``note-opt-finder``: ``note-tune tuner=opt_finder ...``."""
    _finder_main("opt_finder")


def parallel_finder_main() -> None:
    """``note-parallel-finder``: ``note-tune tuner=parallel_finder ...``."""
    _finder_main("parallel_finder")
