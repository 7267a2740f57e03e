"""The study runners of the Hydra app (:mod:`tuner.cli.app`): ``tuner=optuna`` (:func:`_run_study`,
an Optuna study with its ``tuner.workers`` drivers, held-out and test stages and report) and
``tuner=pbt`` (:func:`_run_pbt`, population-based training and its test stage).
"""

from __future__ import annotations

import os
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from .precheck import _fail, _short


def _run_study(cfg: DictConfig) -> dict[str, Any]:
    from hydra import compose

    from ..common.interrupts import held, keep, raise_held
    from ..report.report import report_study
    from ..study.driver import Driver
    from ..study.outputs import SOURCES, describe_answer, summary_table, write_outputs
    from ..study.progress import StudyProgress
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
    # the driver's output, whatever the logger
    progress = StudyProgress(driver.study, settings.n_trials, max_cpu_s=settings.max_cpu_s)
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
            _fail_left_running(driver)  # by a worker killed after its grace to stop
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
                  f"{SOURCES.get(summary['best_config_source'], summary['best_config_source'])}): "
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
    _fail_left_running(driver)
    if pool.dead:
        print(f"{len(pool.dead)} worker(s) died ({', '.join(map(str, pool.dead))}); the study was finished by the "
              f"other drivers", flush=True)


def _fail_left_running(driver: Any) -> None:
    """Fail the trials a stopped or dead worker left RUNNING (the runner's zombie check, under the
    study's lock); nothing when the driver never started its runner."""
    if getattr(driver, "runner", None) is not None:
        with driver.lock:
            driver.runner.fail_zombies()


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
    """``tuner.reevaluate.top_k`` and ``tuner.seeds.test`` of ``tuner=pbt``: the held-out stage chooses the
    answer among the top members' schedules and the starting config (:mod:`tuner.study.pbt_heldout`), then
    the answer's schedule is replayed on the test seeds (:mod:`tuner.study.pbt_test`); the summaries go
    into ``pbt.json`` and the study report."""
    from ..common.interrupts import held, keep, raise_held
    from ..report.report import report_study
    from ..study.pbt_heldout import run_pbt_heldout
    from ..study.pbt_test import run_pbt_test
    from ..study.protocol import format_test

    def outputs(test: dict[str, Any] | None) -> dict[str, Any] | None:
        summary = driver.write_outputs(test)
        report_study(driver.study, driver.study_dir, driver.storage_desc, OmegaConf.to_container(cfg, resolve=True))
        return summary

    heldout = run_pbt_heldout(driver)
    if heldout is not None:
        with held():  # the answer's files follow the held-out choice before the test stage starts
            summary = outputs(None)
        print(f"answer (held-out seeds): member {summary['winner']}'s schedule "
              f"{'(the starting config held constant) ' if summary['winner_checkpoint'] is None else ''}"
              f"in {_short(os.path.join(driver.study_dir, 'pbt_schedule.yaml'))}", flush=True)
        raise_held()
    test = None
    try:
        test = run_pbt_test(driver)
    except KeyboardInterrupt as exc:  # the replays that finished are scored: written below
        test = getattr(exc, "test", None)
        raise
    finally:
        if test is not None:
            with held():  # a first signal waits until pbt.json and the report are written
                outputs(test)
                if test["interrupted"]:
                    keep(f"pbt.json and the report of the test seeds scored so far written to "
                         f"{_short(driver.study_dir)} (the same command resumes the test stage)")
    if test is not None:
        print(format_test(test), flush=True)
    raise_held()
    return test
