"""The Hydra application: ``python -m tuner`` / ``note-tune``.

* ``tuner=none`` (default): one training run; ``result.json`` goes to the Hydra run dir.  In a
  ``-m`` multirun every job trains in its own fresh process.
* ``tuner=optuna``: an Optuna study (:mod:`tuner.study.driver`), followed by its report (:mod:`tuner.report.report`).
* ``tuner=pbt``: population-based training on an Optuna study (:mod:`tuner.study.pbt`).
* ``note-tune report ...`` / ``note-tune dashboard ...``: commands on an existing study storage
  (:mod:`tuner.cli.subcommands`), dispatched before Hydra parses the command line.

A bad config value stops before any training with one line naming the key and exit status 2.
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

__all__ = ["main"]

FINDERS = ("lr_finder", "opt_finder", "parallel_finder")


def _fail(message: str) -> None:
    from ..common.redact import mask_argv_secrets

    print(f"error: {mask_argv_secrets(message)}", file=sys.stderr)
    raise SystemExit(2)


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


def _short(path: str) -> str:
    """``path`` relative to the working directory when it lies below it (what a user types)."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


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


def _run_study(cfg: DictConfig) -> dict[str, Any]:
    from hydra import compose

    from ..common.interrupts import held, keep, raise_held
    from ..report.report import report_study
    from ..study.driver import Driver
    from ..study.outputs import summary_table, write_outputs
    from ..study.progress import StudyProgress
    from ..study.outputs import describe_answer
    from ..study.protocol import format_test, run_test
    from ..study.reevaluate import Trust, format_reevaluation, reevaluate
    from ..study.settings import tuner_settings

    settings = tuner_settings(cfg.tuner)
    if settings.workers > 1:
        from ..study.workers import check_launcher

        check_launcher(settings)  # before the study is opened
    hc = HydraConfig.get()
    overrides = list(hc.overrides.task)
    # with Hydra's node: each trial records its groups' options (best_config.yaml's defaults list)
    driver = Driver(cfg, settings, lambda extra: compose(hc.job.config_name, overrides=extra, return_hydra_config=True),
                    overrides)
    print(f"study {settings.study_name!r} in {driver.study_dir} (storage {driver.storage_desc})", flush=True)
    if settings.worker:  # one of the drivers a tuner.workers command started: trials only
        return _run_worker(driver, settings)
    pool = _start_workers(settings, overrides, hc.runtime.cwd)
    progress = StudyProgress(driver.study, settings.n_trials)  # the driver's output, whatever the logger
    heldout = test = None
    trust = Trust.of(OmegaConf.to_container(cfg, resolve=True))
    jobs = dict(n_jobs=settings.n_jobs, job_timeout=settings.trial_timeout, memory_mb=settings.trial_memory_mb,
                trust=trust)
    def on_change() -> None:
        progress.update()
        if pool is not None:
            pool.poll()

    try:
        driver.run(on_change=on_change)
        if pool is not None:
            _wait_workers(pool, driver)
        progress.close()
        heldout = reevaluate(driver.study, driver.study_dir, settings.reevaluate, **jobs)
        test = run_test(driver.study, driver.study_dir, settings.seeds, settings.reevaluate, heldout, **jobs)
    except KeyboardInterrupt as exc:  # Ctrl-C / SIGTERM: the held-out and test stages hand over what they scored
        heldout = getattr(exc, "heldout", heldout)
        test = getattr(exc, "test", test)
        raise
    finally:
        if pool is not None:
            pool.stop()  # on Ctrl-C / SIGTERM / an error: no worker outlives the command
        progress.close()
        with held():  # a first signal now waits until study.json, best_config.yaml and the report are written
            summary = write_outputs(driver.study, driver.study_dir, driver.storage_desc, heldout, test)
            report_study(driver.study, driver.study_dir, driver.storage_desc,
                         OmegaConf.to_container(cfg, resolve=True))
            keep(_study_kept(summary, driver.study_dir, heldout))
        print(summary_table(driver.study))
        print(f"complete {summary['n_complete']}  pruned {summary['n_pruned']}  failed {summary['n_failed']}"
              f"  best tuning score {summary['best_value']} (trial {summary['best_trial']})")
        if heldout is not None:
            print(format_reevaluation(heldout))
        if test is not None:
            print(format_test(test))
        if summary["answer"] is not None:
            print(describe_answer(summary["answer"]))
        if summary["rerun_command"]:
            print(f"re-run the answer (trial {summary['best_config_trial']}, "
                  f"{'held-out winner' if summary['best_config_source'] == 'heldout' else 'best tuning score'}): "
                  f"{summary['rerun_command']}")
    raise_held()  # a signal held while the outputs were written ends the command now (130 / 143)
    return summary


def _start_workers(settings: Any, overrides: list[str], cwd: str) -> Any:
    """The extra drivers of ``tuner.workers`` (:mod:`tuner.study.workers`), ``None`` for one driver."""
    if settings.workers <= 1:
        return None
    from ..study.workers import start_workers

    print(f"{settings.workers} drivers on this study: this command (worker 0, {_where()}) and "
          f"{settings.workers - 1} more ({settings.worker_launcher})", flush=True)
    return start_workers(settings, overrides, cwd)


def _where() -> str:
    import socket

    return f"pid {os.getpid()} on {socket.gethostname()}"


def _wait_workers(pool: Any, driver: Any) -> None:
    """The study is full (or this driver hit a limit): wait for the workers, then fail what a dead one
    left RUNNING (possible once ``max_total_trials`` is reached and no driver asks again)."""
    pool.wait()
    with driver.lock:
        driver.runner.fail_zombies()
    if pool.dead:
        print(f"{len(pool.dead)} worker(s) died ({', '.join(map(str, pool.dead))}); the study was finished by the "
              f"other drivers", flush=True)


def _run_worker(driver: Any, settings: Any) -> dict[str, Any]:
    """Worker ``tuner.worker`` of a ``tuner.workers`` command: run trials until the study is full, then
    end; the command that started it writes the study's outputs and runs its held-out stages."""
    print(f"worker {settings.worker}: {_where()}", flush=True)
    driver.run()
    mine = [n for n in driver.runner.started_here]
    print(f"worker {settings.worker}: done, ran trials {mine}", flush=True)
    return {"worker": settings.worker, "trials": mine}


def _study_kept(summary: dict[str, Any], study_dir: str, heldout: dict[str, Any] | None) -> str:
    """What an interrupted study kept, for the one line ``note-tune`` prints on its way out."""
    files = "study.json, best_config.yaml and the report" if summary.get("best_config_trial") is not None \
        else "study.json and the report"
    line = (f"{files} of {summary['n_complete']} complete trials written to {_short(study_dir)} "
            f"(the same command resumes the study)")
    if heldout is not None and heldout.get("interrupted"):
        line += f"; held-out stage cut short, best_config.yaml: {heldout['answer']}"
    return line


def _run_pbt(cfg: DictConfig) -> dict[str, Any] | None:
    """``tuner=pbt``: population-based training (:mod:`tuner.study.pbt`); re-running resumes it."""
    from hydra import compose

    from ..study.pbt import PbtDriver, pbt_settings

    settings = pbt_settings(cfg.tuner)
    hc = HydraConfig.get()
    driver = PbtDriver(cfg, settings, lambda extra: compose(hc.job.config_name, overrides=extra, return_hydra_config=True),
                       list(hc.overrides.task))
    print(f"PBT study {settings.study_name!r} in {driver.study_dir} (storage {driver.storage_desc}): "
          f"{settings.population} members x {settings.generations} generations of {settings.interval} env steps",
          flush=True)
    try:
        driver.run()
    finally:
        summary = driver.write_outputs()
    if summary is None or summary["generations_complete"] < settings.generations:
        failed = driver.runner.failures
        why = f"{failed} segment{'s' if failed != 1 else ''} failed (see members/*/gen_*/trial.log)" if failed else \
            "stopped early (tuner.timeout)"
        _fail(f"PBT study {settings.study_name!r}: {why}; "
              f"{summary['generations_complete'] if summary else 0} of {settings.generations} generations complete; "
              "the same command resumes")
    print(f"winner: member {summary['winner']} scored {summary['winner_score']} in generation "
          f"{summary['generations_complete'] - 1}; schedule: {_short(os.path.join(driver.study_dir, 'pbt_schedule.yaml'))}, "
          f"config: {_short(os.path.join(driver.study_dir, 'best_config.yaml'))}", flush=True)
    test = _pbt_test_stage(driver, cfg)
    return summary if test is None else {**summary, "test": test}


def _pbt_test_stage(driver: Any, cfg: DictConfig) -> dict[str, Any] | None:
    """``tuner.seeds.test`` of ``tuner=pbt``: the winner's schedule replayed on the test seeds
    (:mod:`tuner.study.pbt_test`); its summary goes into ``pbt.json`` and the study report."""
    from ..common.interrupts import held, keep, raise_held
    from ..report.report import report_study
    from ..study.pbt_test import run_pbt_test
    from ..study.protocol import format_test

    test = None
    try:
        test = run_pbt_test(driver)
    except KeyboardInterrupt as exc:  # the replays that finished are scored: written below
        test = getattr(exc, "test", None)
        raise
    finally:
        if test is not None:
            with held():  # a first signal waits until pbt.json and the report are written
                driver.write_outputs(test)
                report_study(driver.study, driver.study_dir, driver.storage_desc,
                             OmegaConf.to_container(cfg, resolve=True))
                if test["interrupted"]:
                    keep(f"pbt.json and the report of the test seeds scored so far written to "
                         f"{_short(driver.study_dir)} (the same command resumes the test stage)")
    if test is not None:
        print(format_test(test), flush=True)
    raise_held()
    return test


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


def _protect_secrets(cfg: DictConfig) -> None:
    """Mask credentials (a storage URL's password, ...) in sys.argv and the run dir's Hydra files
    before anything else records them (:mod:`tuner.common.redact`)."""
    from ..common.redact import protect

    hc = HydraConfig.get()
    folders = [hc.runtime.output_dir] + ([hc.sweep.dir] if hc.mode == RunMode.MULTIRUN else [])
    protect(OmegaConf.to_container(cfg, resolve=True), folders)


def _precheck(argv: list[str], composed: list[Any] | None = None) -> None:
    """Compose the command line the way ``@hydra.main`` will, so that an unknown key, an unknown group
    option or an unparsable override is one line naming it (exit 2) instead of Hydra's multi-line
    error.  In a multirun every value of a sweep over a config group is tried, other sweeps at their
    first value.  Anything else (help, --info, a failure of this check itself) is left to Hydra.

    Why Hydra internals (and the ``hydra-core<1.4`` pin in pyproject.toml): the public API
    (``initialize_config_dir`` + ``compose``) composes overrides, but it cannot (1) parse Hydra's
    own command-line flags as ``@hydra.main`` does (``get_args_parser``), (2) put a ``--config-dir``
    ahead of the app's configs in the search path with ``@hydra.main``'s precedence, or (3) tell
    whether a swept key is a config group (``repository.group_exists``) before Hydra's own launcher
    runs.  Without them the check would differ from what ``@hydra.main`` then does."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.utils import create_automatic_config_search_path, get_args_parser
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    args = get_args_parser().parse_args(argv)  # bad flags / --version: argparse exits as Hydra would
    if args.help or args.hydra_help or args.shell_completion or args.info or \
            getattr(args, "experimental_rerun", None):
        return
    parser = OverridesParser.create()
    parsed = []
    for text in args.overrides:
        try:
            parsed.append(parser.parse_overrides([text])[0])
        except HydraException as exc:
            _fail(f"{text.split('=', 1)[0]}: cannot parse {text!r} ({error_line(exc)})")
    try:
        path = create_automatic_config_search_path(None, __name__, args.config_path or CONF_DIR)
        if args.config_dir is not None:
            from hydra.core.config_search_path import SearchPathQuery

            folder = os.path.abspath(args.config_dir)
            if not os.path.isdir(folder):
                _fail(f"--config-dir: {folder} is not a directory")
            _check_config_dir(folder, args.config_name or "config")
            path.prepend("command-line", f"file://{folder}", anchor=SearchPathQuery(provider="schema"))
        _check_search_path(path, parsed, args.config_name or "config",
                           os.path.realpath(args.config_dir) if args.config_dir else None)
        loader = ConfigLoaderImpl(config_search_path=path)
        for overrides in _variants(parsed, loader, args.multirun):
            cfg = loader.load_configuration(args.config_name or "config", overrides, run_mode=RunMode.RUN)
            if composed is not None:  # tests/test_readme_commands.py checks each one further
                composed.append(cfg)
        _check_output_dir(cfg, args.multirun)
        if not args.multirun and OmegaConf.select(cfg, "tuner.name") == "optuna":
            from ..study.settings import tuner_settings

            tuner_settings(cfg.tuner)
        elif not args.multirun and OmegaConf.select(cfg, "tuner.name") == "pbt":
            from ..study.pbt import pbt_settings

            pbt_settings(cfg.tuner)  # e.g. tuner.storage, before Hydra creates any directory
    except HydraException as exc:
        _fail(error_line(exc))
    except ConfigError as exc:
        _fail(str(exc))
    except SystemExit:
        raise
    except Exception:  # noqa: BLE001 - never worse than Hydra: let it report whatever this is
        return


def _check_output_dir(cfg: DictConfig, multirun: bool) -> None:
    """Hydra's run dir (its sweep dir with ``-m``) can be created: Hydra's own failure to make it is a
    traceback.  A dir whose path Hydra alone can resolve (``${hydra:...}``) is left to Hydra."""
    from hydra.core.utils import setup_globals

    from ..study.storage import existing_ancestor

    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    setup_globals()  # the ${now:...} resolver of the default dirs
    try:
        folder = os.path.abspath(str(OmegaConf.select(cfg, key, throw_on_resolution_failure=True)))
    except Exception:  # noqa: BLE001 - an interpolation only Hydra's own context resolves
        return
    parent = existing_ancestor(folder)
    if not os.path.isdir(parent):
        _fail(f"{key}: cannot create {folder} ({parent} is not a directory)")
    if not os.access(parent, os.W_OK | os.X_OK):
        _fail(f"{key}: cannot create {folder} ({parent} is not writable)")


def _check_config_dir(folder: str, name: str) -> None:
    """A user's config dir: every YAML file in it and in its group folders parses, and its primary config is not one the app's own
    ``conf/`` shadows (Hydra would silently use the app's ``config.yaml`` instead)."""
    _check_yaml_dir(folder, "--config-dir")
    if os.path.exists(os.path.join(folder, f"{name}.yaml")) and os.path.exists(os.path.join(CONF_DIR, f"{name}.yaml")):
        _fail(f"--config-dir: {folder}/{name}.yaml would be ignored (the app's own {name}.yaml comes first); "
              f"rename it and pass --config-name <its name>")


def _check_yaml_dir(folder: str, source: str) -> None:
    """Every YAML file in ``folder`` and in its group folders (not deeper: a study's ``trials/``) is
    a regular file that parses without expanding into a bomb; else one line naming it and ``source``
    (the flag or key that put the folder in Hydra's search path)."""
    import yaml

    from ..config.yaml_check import YamlRefused, check_yaml_file

    for root, dirs, files in os.walk(folder):
        if root != folder:
            dirs[:] = []
        for file in sorted(f for f in files if f.endswith((".yaml", ".yml"))):
            path = os.path.join(root, file)
            try:
                check_yaml_file(path)  # a FIFO or an alias bomb would hang Hydra: refused before it reads
            except YamlRefused as exc:
                _fail(f"{source}: {path} {exc}")
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" line {mark.line + 1}" if mark is not None else ""
                _fail(f"{source}: {path}{where}: {getattr(exc, 'problem', None) or error_line(exc)}")
            except (OSError, UnicodeDecodeError) as exc:
                _fail(f"{source}: cannot read {path} ({exc})")


def _check_search_path(path: Any, parsed: list[Any], name: str, checked: str | None = None) -> None:
    """The user's folders in Hydra's config search path, checked by :func:`_check_yaml_dir` before
    Hydra reads them: ``--config-path`` (and any ``file://`` entry but the app's own ``conf/``) and
    the folders a ``hydra.searchpath=[...]`` override adds; ``checked``: the ``--config-dir``, checked
    already."""
    own, added = os.path.realpath(CONF_DIR), []
    for element in path.get_path():
        if "://" not in element.path or element.path.startswith("file://"):  # a folder, not pkg:// or structured://
            folder = element.path.removeprefix("file://")
            if os.path.isdir(folder) and os.path.realpath(folder) != own:
                if os.path.realpath(folder) != checked:
                    _check_yaml_dir(folder, "--config-path")
                added += _primary_searchpath(os.path.join(folder, f"{name}.yaml"))
    for o in parsed:
        if o.get_key_element().lstrip("+~") == "hydra.searchpath" and not o.is_sweep_override():
            value = o.value()
            added += [str(v) for v in (value if isinstance(value, list) else [value])]
    for entry in added:
        if entry.startswith("file://") and os.path.isdir(entry[len("file://"):]):
            _check_yaml_dir(entry[len("file://"):], "hydra.searchpath")


def _primary_searchpath(file: str) -> list[str]:
    """The ``hydra.searchpath`` a user's primary config sets (read safely: the folder was checked)."""
    from ..config.yaml_check import check_yaml_file

    data = check_yaml_file(file) if os.path.isfile(file) else None
    hydra = data.get("hydra") if isinstance(data, dict) else None
    value = hydra.get("searchpath") if isinstance(hydra, dict) else None
    return [str(v) for v in value] if isinstance(value, list) else []


def _variants(parsed: list[Any], loader: Any, multirun: bool) -> list[list[str]]:
    """Override lists without sweeps: sweeps at their first value, plus one list per other option of a
    config-group sweep (``optimizer=adam,bogus`` checks ``bogus``).  Without -m sweeps stay as given."""
    if not multirun:
        return [[o.input_line for o in parsed]]
    base, extra = [], []
    for i, o in enumerate(parsed):
        if not o.is_sweep_override():
            base.append(o.input_line)
            continue
        try:
            values = list(o.sweep_string_iterator())
        except Exception:  # noqa: BLE001 - interval (or glob) sweeps: their start, or not checked here
            start = getattr(o.value(), "start", None)
            values = [] if start is None else [o._get_value_element_as_str(start)]
        if not values:
            base.append(None)
            continue
        base.append(f"{o.get_key_element()}={values[0]}")
        if loader.repository.group_exists(o.key_or_group):
            extra += [(i, f"{o.get_key_element()}={v}") for v in values[1:]]
    first = [b for b in base if b is not None]
    return [first] + [[v if j == i else b for j, b in enumerate(base) if b is not None] for i, v in extra]


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
