"""The Hydra application: ``python -m tuner`` / ``note-tune``.

* ``tuner=none`` (default): one training run; ``result.json`` goes to the Hydra run dir.  In a
  ``-m`` multirun every job trains in its own fresh process.
* ``tuner=optuna``: an Optuna study (:mod:`tuner.study`), followed by its report (:mod:`tuner.report`).
* ``note-tune report ...`` / ``note-tune dashboard ...``: commands on an existing study storage
  (:mod:`tuner.subcommands`), dispatched before Hydra parses the command line.

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

from .schema import ConfigError, register, validate

__all__ = ["main"]

FINDERS = ("lr_finder", "opt_finder", "parallel_finder")
CONF_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conf")


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _run_plain(cfg: DictConfig, run_dir: str, isolated: bool) -> dict[str, Any]:
    plain = OmegaConf.to_container(cfg, resolve=True)
    if not isolated:
        from .train import run_training

        result = run_training(plain, run_dir)
    else:
        from .launcher import context_for
        from .study_jobs import run_in_fresh_process

        result = run_in_fresh_process(plain, run_dir, context_for(plain["backend"]["name"]))
    print(f"final mean return {result['final_mean_return']:.2f} over the last "
          f"{cfg.objective.last_k} episodes; best {result['best_mean_return']:.2f}; "
          f"{result['env_steps']} env steps in {result['wall_time_s']:.1f} s -> {run_dir}/result.json")
    return result


def _run_study(cfg: DictConfig) -> dict[str, Any]:
    from hydra import compose

    from .outputs import summary_table, write_outputs
    from .settings import tuner_settings
    from .study import Driver
    from .study_progress import StudyProgress

    settings = tuner_settings(cfg.tuner)
    hc = HydraConfig.get()
    overrides = list(hc.overrides.task)
    driver = Driver(cfg, settings, lambda extra: compose(hc.job.config_name, overrides=extra), overrides)
    print(f"study {settings.study_name!r} in {driver.study_dir} (storage {driver.storage_desc})", flush=True)
    progress = StudyProgress(driver.study, settings.n_trials, quiet=cfg.logger.name == "none")
    try:
        driver.run(on_change=progress.update)
    finally:
        progress.close()
        summary = write_outputs(driver.study, driver.study_dir, driver.storage_desc)
        _report(driver, cfg)
        print(summary_table(driver.study))
        print(f"complete {summary['n_complete']}  pruned {summary['n_pruned']}  failed {summary['n_failed']}"
              f"  best {summary['best_value']} {summary['best_params']}")
        if summary["rerun_command"]:
            print(f"re-run the best configuration: {summary['rerun_command']}")
    return summary


def _run_finder(cfg: DictConfig) -> dict[str, Any]:
    from hydra import compose

    from .finders.config import run_finder

    hc = HydraConfig.get()
    overrides = [o for o in hc.overrides.task if not o.startswith("tuner")]
    return run_finder(cfg, lambda extra: compose(hc.job.config_name, overrides=extra), overrides)


def _report(driver: Any, cfg: DictConfig) -> None:
    """The end-of-study report (PNGs, report.md) and, with logger=wandb, the study's wandb run."""
    from .report import log_study_run, write_report

    try:
        report = write_report(driver.study, driver.study_dir, driver.storage_desc)
    except Exception as exc:  # noqa: BLE001 - a plotting problem must not hide the study's results
        print(f"warning: study report not written: {type(exc).__name__}: {exc}", file=sys.stderr)
        return
    print(f"report: {report['markdown']} ({len(report['images'])} plots)")
    if cfg.logger.name == "wandb":
        plain = OmegaConf.to_container(cfg, resolve=True)
        path = log_study_run(driver.study, report, plain["logger"], driver.study_dir, plain)
        if path:
            print(f"wandb: runs under {driver.study_dir} (upload later: "
                  f"wandb sync {driver.study_dir}/wandb/offline-run-* {driver.study_dir}/trials/*/wandb/offline-run-*)")


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def _app(cfg: DictConfig) -> Any:
    try:
        typed = validate(cfg)
        mode = typed.tuner.get("name", "none")
        if mode == "none":
            hc = HydraConfig.get()
            return _run_plain(typed, hc.runtime.output_dir, isolated=hc.mode == RunMode.MULTIRUN)
        if mode == "optuna":
            return _run_study(typed)
        if mode in FINDERS:
            return _run_finder(typed)
        _fail(f"tuner.name: {mode!r} is not one of none, optuna, {', '.join(FINDERS)}")
    except ConfigError as exc:
        _fail(str(exc))


def main() -> None:
    """Console entry point (``note-tune``)."""
    if len(sys.argv) > 1 and sys.argv[1] in ("report", "dashboard"):
        from .subcommands import main as subcommand

        raise SystemExit(subcommand(sys.argv[1], sys.argv[2:]))
    register()
    _app()


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
