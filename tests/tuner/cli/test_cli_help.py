"""``--help`` says what the app and each subcommand do; the printed re-run command can be pasted."""

from __future__ import annotations

import os

import pytest

from tests.tuner.conftest import run_app
from tuner.cli.subcommands import USAGE, main
from tuner.study.outputs import rerun_command


def test_app_help_lists_subcommands_and_groups(tmp_path) -> None:
    out = run_app(["--help"], cwd=str(tmp_path), check=True).stdout
    assert "powered by Hydra" not in out
    for command in USAGE:
        assert f"note-tune {command} " in out
    for group in ("agent: a2c, acer, ddpg, dqn, maddpg, ppo, sac, td3, trpo", "backend: tf, torch",
                  "tuner: lr_finder, none, opt_finder, optuna, parallel_finder"):
        assert group in out
    assert "note-tune --hydra-help" in out


def test_subcommand_help_from_the_console(tmp_path) -> None:
    proc = run_app(["report", "--help"], cwd=str(tmp_path), check=True)
    assert proc.stdout.startswith("usage: note-tune report study_name=NAME")
    assert not proc.stderr.strip()


@pytest.mark.parametrize("command", sorted(USAGE))
def test_every_subcommand_has_help(command, capsys) -> None:
    assert main(command, ["-h"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: note-tune {command}") and len(out.splitlines()) >= 3


def test_rerun_command_is_relative_below_the_current_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    inside = os.path.join(str(tmp_path), "studies", "s1")
    assert rerun_command(inside) == f"note-tune --config-dir {os.path.join('studies', 's1')} --config-name best_config"
    outside = os.path.dirname(str(tmp_path))
    assert rerun_command(outside) == f"note-tune --config-dir {outside} --config-name best_config"


def test_free_cores_leaves_out_busy_ones(monkeypatch) -> None:
    from tuner.run import launcher

    monkeypatch.setattr(launcher.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(launcher.os, "getloadavg", lambda: (1.4, 0.0, 0.0))
    assert launcher.free_cores() == 3
    monkeypatch.setattr(launcher.os, "getloadavg", lambda: (9.0, 0.0, 0.0))
    assert launcher.free_cores() == 1  # never below one


def test_joblib_launcher_runs_parallel_jobs_sharing_the_cores(tmp_path) -> None:
    """``hydra/launcher=joblib``: each job trains in a fresh process started from a loky worker
    (whose default start method a plain child does not know) with the cores shared out."""
    import json

    run_app(["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "seed=0,1", "agent=dqn", "budget.steps=300",
             "agent.learning_starts=100", "logger=none", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
            cwd=str(tmp_path))
    results = [json.loads((tmp_path / "sweep" / str(i) / "result.json").read_text()) for i in (0, 1)]
    assert [r["config"]["seed"] for r in results] == [0, 1]
    assert all(r["env_steps"] == 300 for r in results)
    assert all(r["threads"] == max(1, (os.cpu_count() or 1) // 2) for r in results)


def test_submitit_local_launcher_runs_the_sweep_sharing_the_cores(tmp_path) -> None:
    """``hydra/launcher=submitit_local`` (the ``cluster`` extra): each job is a submitit process
    that trains in a fresh child, as on a SLURM node with ``submitit_slurm``; it starts both jobs at
    once, so each gets half the cores."""
    import json

    run_app(["-m", "hydra/launcher=submitit_local", "seed=0,1", "agent=dqn", "budget.steps=300", "agent.learning_starts=100",
             "logger=none", f"hydra.sweep.dir={tmp_path / 'sweep'}"], cwd=str(tmp_path))
    results = [json.loads((tmp_path / "sweep" / str(i) / "result.json").read_text()) for i in (0, 1)]
    assert [r["config"]["seed"] for r in results] == [0, 1] and all(r["env_steps"] == 300 for r in results)
    assert all(r["threads"] == max(1, (os.cpu_count() or 1) // 2) for r in results)


@pytest.mark.parametrize("launcher,sweeper,task,expected", [
    ({"_target_": "hydra._internal.core_plugins.basic_launcher.BasicLauncher"}, {}, ["seed=0,1,2"], [1, 1, 1]),
    ({"n_jobs": 2}, {}, ["seed=0,1,2"], [2, 2, 2]),
    ({"n_jobs": -1}, {}, ["seed=0,1,2"], [8] * 3),  # joblib: all cores
    ({"_target_": "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher", "tasks_per_node": 1},
     {}, ["seed=0,1", "optimizer=adam,sgd", "agent=dqn"], [4] * 4),
    ({"_target_": "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher", "tasks_per_node": 2},
     {"params": {"agent.batch": "32,64"}}, ["seed=0"], [4, 4]),
    ({"_target_": "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher", "tasks_per_node": 1},
     {"max_batch_size": 2}, ["seed=0,1,2"], [2, 2, 1]),  # batches of 2 and 1
])
def test_multirun_jobs_at_once_per_launcher(tmp_path, monkeypatch, launcher, sweeper, task, expected) -> None:
    """What a multirun job divides the cores by: joblib's n_jobs, submitit_local's batch (every job of
    a sweep batch starts at once, each tasks_per_node times), 1 for the sequential basic launcher."""
    from omegaconf import OmegaConf

    from tuner.run import launcher as launcher_mod

    monkeypatch.setattr(launcher_mod.os, "cpu_count", lambda: 8)
    sweeper = {"_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper", "max_batch_size": None,
               "params": None, **sweeper}
    master = {"sweep": {"dir": str(tmp_path)}, "launcher": launcher, "sweeper": sweeper, "overrides": {"task": task}}
    OmegaConf.save(OmegaConf.create({"hydra": master}), tmp_path / "multirun.yaml")
    got = [launcher_mod.multirun_jobs_at_once(OmegaConf.create({**master, "job": {"num": num}}))
           for num in range(len(expected))]
    assert got == expected


def test_tensorflow_start_up_lines_are_silenced(tmp_path) -> None:
    out = run_app(["backend=tf", "agent=dqn", "budget.steps=200", "agent.learning_starts=100", "logger=none",
                   f"hydra.run.dir={tmp_path / 'run'}"], cwd=str(tmp_path))
    noise = [line for line in (out.stdout + out.stderr).splitlines()
             if line.startswith(("I0000", "W0000", "E0000", "WARNING: All log messages", "To enable the following"))]
    assert noise == [] and out.stdout.startswith("evaluation ")


def test_parallel_jobs_label_every_line_and_keep_quiet_off_a_terminal(tmp_path) -> None:
    """Two joblib jobs share one output: every line a job prints (its training process's lines too)
    starts with ``[job N] ``.  Off a terminal a job prints no per-episode progress unless the command
    sets ``logger.p`` itself."""
    common = ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "seed=0,1", "agent=dqn", "budget.steps=300",
              "agent.learning_starts=100", "logger=console"]
    quiet = run_app([*common, f"hydra.sweep.dir={tmp_path / 'quiet'}"], cwd=str(tmp_path))
    loud = run_app([*common, "logger.p=5", f"hydra.sweep.dir={tmp_path / 'loud'}"], cwd=str(tmp_path))
    for out, jobs_lines in ((quiet, 2), (loud, None)):
        lines = [line for line in out.stdout.splitlines() if line.startswith("[job ")]
        summaries = [line for line in lines if " evaluation " in line]
        assert sorted(line[:8] for line in summaries) == ["[job 0] ", "[job 1] "]
        if jobs_lines is not None:  # quiet: nothing but the two summary lines comes from the jobs
            assert len(lines) == jobs_lines, out.stdout
    progress = [line for line in loud.stdout.splitlines() if line.startswith(("[job 0] ", "[job 1] "))
                and " evaluation " not in line]
    assert len(progress) >= 4 and {line[:8] for line in progress} == {"[job 0] ", "[job 1] "}
    # nothing a job printed escaped its label (Hydra's own launcher lines name the jobs themselves)
    unlabelled = [line for line in loud.stdout.splitlines() if not line.startswith("[") and line.strip()]
    assert not [line for line in unlabelled if "episode" in line.lower()], unlabelled
