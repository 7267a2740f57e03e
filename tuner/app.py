"""The Hydra application: ``python -m tuner`` / ``note-tune``.

* ``tuner=none`` (default): one training run; ``result.json`` goes to the Hydra run dir.  In a
  ``-m`` multirun every job trains in its own fresh process.
* ``tuner=optuna``: an Optuna study (:mod:`tuner.study`).

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

    settings = tuner_settings(cfg.tuner)
    hc = HydraConfig.get()
    overrides = list(hc.overrides.task)
    driver = Driver(cfg, settings, lambda extra: compose(hc.job.config_name, overrides=extra), overrides)
    print(f"study {settings.study_name!r} in {driver.study_dir} (storage {driver.storage_desc})", flush=True)
    try:
        driver.run()
    finally:
        summary = write_outputs(driver.study, driver.study_dir, driver.storage_desc)
        print(summary_table(driver.study))
        print(f"complete {summary['n_complete']}  pruned {summary['n_pruned']}  failed {summary['n_failed']}"
              f"  best {summary['best_value']} {summary['best_params']}")
        if summary["rerun_command"]:
            print(f"re-run the best configuration: {summary['rerun_command']}")
    return summary


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
        _fail(f"tuner.name: {mode!r} is not one of none, optuna")
    except ConfigError as exc:
        _fail(str(exc))


def main() -> None:
    """Console entry point (``note-tune``)."""
    register()
    _app()
