"""Ctrl-C and SIGTERM end every command cleanly (tuner.common.interrupts): real processes, real signals.

Each test starts ``python -m tuner`` in its own session (as a terminal's foreground job: Ctrl-C is
SIGINT to the whole process group, ``kill <pid>`` is SIGTERM to the driver alone), waits for a line
that says it reached the stage under test, signals it, and checks exit status 130 / 143, one line on
stderr and no traceback, the files that must be kept, and that no process of its session is left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from omegaconf import OmegaConf

from tests.tuner.conftest import REPO, TINY, journal_of
from tests.tuner.study.test_runner import _gone

pytestmark = pytest.mark.slow

# a DQN on CartPole that sleeps 4 ms per env step (tests/tuner/faulty_envs.py): a run of N steps
# lasts about N * 4 ms, long enough to be caught mid-way
SLOW = [*TINY, "env.module=tests.tuner.faulty_envs", "env.id=Slow-v0"]
STUDY = ["tuner=optuna", "search=none", "tuner.study_dir=study"]


def _start(args: list[str], cwd: Path, pythonpath: str = REPO) -> tuple[subprocess.Popen, Path, Path]:
    """``python -m tuner <args>`` in a session of its own, stdout and stderr to files."""
    out, err = cwd / "stdout.txt", cwd / "stderr.txt"
    env = dict(os.environ, PYTHONPATH=pythonpath, HYDRA_FULL_ERROR="0", PYTHONUNBUFFERED="1")
    with open(out, "w") as o, open(err, "w") as e:
        proc = subprocess.Popen([sys.executable, "-m", "tuner", *args], cwd=str(cwd), env=env, stdout=o, stderr=e,
                                start_new_session=True)
    return proc, out, err


def _wait_for(proc: subprocess.Popen, path: Path, text: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in path.read_text():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    _kill(proc)
    raise AssertionError(f"never printed {text!r} (exit {proc.returncode}):\n{path.read_text()[-3000:]}")


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait(timeout=30)


def _ended(proc: subprocess.Popen, err: Path, status: int, name: str) -> str:
    """Wait for the command; check its status, its one stderr line (no traceback) and that nothing
    of its session is left (trials, held-out runs, their workers); return that line."""
    try:
        proc.wait(timeout=120)
    finally:
        left = _gone(set(), 15, sid=proc.pid)
        _kill(proc)
    stderr = err.read_text()
    assert proc.returncode == status and "Traceback" not in stderr, (proc.returncode, stderr[-3000:])
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"interrupted ({name}): "), stderr
    assert not left, f"processes of the session still alive: {left}"
    return lines[0]


def _trials(folder: Path) -> list[optuna.trial.FrozenTrial]:
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(journal_of(folder)))
    (summary,) = optuna.get_all_study_summaries(storage)
    return optuna.load_study(study_name=summary.study_name, storage=storage).trials


@pytest.mark.parametrize("strategy", [[], ["strategy=pool_network", "strategy.processes=2"]], ids=["single", "pool"])
def test_ctrl_c_stops_a_plain_run_and_keeps_its_model(strategy, tmp_path) -> None:
    """Ctrl-C mid-training: training stops at the next env step, model.npz and result.json
    (``"interrupted": true``, the steps trained so far) are written, exit 130, one line (pool-network
    workers, in the run's process group, get the Ctrl-C too and leave it to the run)."""
    proc, out, err = _start([*SLOW, *strategy, "budget.steps=100000", "logger=console", "logger.p=1",
                             "hydra.run.dir=run"], tmp_path)
    _wait_for(proc, out, "episode:")
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends to its foreground job
    line = _ended(proc, err, 130, "SIGINT")
    assert "model.npz" in line and "result.json" in line
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["interrupted"] is True and result["interrupted_by"] == "SIGINT"
    assert result["status"] == "interrupted" and 0 < result["env_steps"] < 100000
    assert len(result["returns"]) == result["episodes"] >= 1
    assert (tmp_path / "run" / "model.npz").stat().st_size > 0


def test_sigterm_stops_a_plain_run_too(tmp_path) -> None:
    proc, out, err = _start([*SLOW, "budget.steps=100000", "logger=console", "logger.p=1", "hydra.run.dir=run"],
                            tmp_path)
    _wait_for(proc, out, "episode:")
    proc.send_signal(signal.SIGTERM)
    _ended(proc, err, 143, "SIGTERM")
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["interrupted"] is True and result["interrupted_by"] == "SIGTERM"


def test_ctrl_c_of_a_study_fails_its_trial_and_writes_the_outputs(tmp_path) -> None:
    """Ctrl-C while a trial trains: the trial is killed and failed, study.json and the report are
    written, exit 130 without a traceback."""
    proc, out, err = _start([*STUDY, "tuner.n_trials=3", "budget.steps=20000", *SLOW], tmp_path)
    _wait_for(proc, out, "study '")
    deadline = time.monotonic() + 120  # until the first trial process writes its run dir
    while not list((tmp_path / "study").glob("trials/*/config.yaml")) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGINT)
    _ended(proc, err, 130, "SIGINT")
    summary = json.loads((tmp_path / "study" / "study.json").read_text())
    assert summary["n_failed"] >= 1 and summary["n_running"] == 0
    assert (tmp_path / "study" / "report" / "report.md").exists()
    assert all(t.state.name != "RUNNING" for t in _trials(tmp_path / "study"))
    assert any(t.user_attrs.get("fail_reason") == "driver interrupted (Ctrl-C)" for t in _trials(tmp_path / "study"))


def test_sigterm_during_the_heldout_stage_keeps_the_study_answer(tmp_path) -> None:
    """SIGTERM while the held-out runs train: they are killed with their process groups, and
    study.json (the stage marked interrupted), best_config.yaml (the tuning best: no config was
    scored on every held-out seed) and the report are written; exit 143."""
    proc, out, err = _start([*STUDY, "tuner.n_trials=1", "tuner.reevaluate.top_k=1", "tuner.reevaluate.seeds=2",
                             "tuner.reevaluate.episodes=2", *SLOW, "budget.steps=1500"], tmp_path)
    _wait_for(proc, out, "held-out re-evaluation:")
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    line = _ended(proc, err, 143, "SIGTERM")
    assert "held-out stage cut short" in line
    study = tmp_path / "study"
    summary = json.loads((study / "study.json").read_text())
    heldout = summary["reevaluation"]
    assert heldout["interrupted"] == "SIGTERM" and heldout["complete"] is False
    assert heldout["winner"] is None and heldout["answer"].startswith("best tuning trial")
    assert summary["best_config_source"] == "tuning" and summary["best_config_trial"] == 0
    assert "interrupted (SIGTERM)" in json.dumps(heldout["configs"][0]["errors"])
    assert (study / "best_config.yaml").exists() and (study / "report" / "report.md").exists()


SLOW_REPORT = '''
import time

import tuner.report.report as report

_write = report.write_report


def write_report(*args, **kwargs):
    print("writing the report", flush=True)
    time.sleep(3)
    return _write(*args, **kwargs)


report.write_report = write_report
'''


def test_sigterm_while_the_report_is_written_finishes_it(tmp_path) -> None:
    """SIGTERM while the study's report is being written (made slow by a sitecustomize that wraps
    write_report): the signal waits, the report and study.json are finished, then exit 143."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SLOW_REPORT)
    proc, out, err = _start([*STUDY, "tuner.n_trials=1", "tuner.reevaluate.top_k=0", "tuner.seeds.test=0", *TINY], tmp_path,
                            pythonpath=os.pathsep.join([str(hooks), REPO]))
    _wait_for(proc, out, "writing the report")
    proc.send_signal(signal.SIGTERM)
    line = _ended(proc, err, 143, "SIGTERM")
    assert "study.json, best_config.yaml and the report of 1 complete trials" in line
    assert (tmp_path / "study" / "report" / "report.md").exists()
    assert json.loads((tmp_path / "study" / "study.json").read_text())["n_complete"] == 1


SECOND_SIGNAL = '''
import os, signal, sys, time
from tuner.common import interrupts

interrupts.install()
try:
    with interrupts.held():
        os.kill(os.getpid(), signal.SIGINT)  # held: the block goes on
        print("held", interrupts.held_signal() == signal.SIGINT, flush=True)
        os.kill(os.getpid(), signal.SIGINT)  # a second one ends the process at once
        time.sleep(5)
        print("not reached", flush=True)
except KeyboardInterrupt:
    print("not reached either", flush=True)
'''


def test_a_second_signal_while_saving_ends_at_once_without_traceback() -> None:
    out = subprocess.run([sys.executable, "-c", SECOND_SIGNAL], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=REPO))
    assert out.returncode == 130 and out.stdout == "held True\n", (out.stdout, out.stderr)
    assert out.stderr.startswith("interrupted again (SIGINT)") and len(out.stderr.splitlines()) == 1


def test_sigterm_of_a_sweeper_multirun_writes_its_results_and_report(tmp_path) -> None:
    """The Optuna sweeper (``-m hydra/sweeper=optuna``) interrupted while a trial trains: the trial
    is failed, optimization_results.yaml and the report of what finished are written, exit 143."""
    sweep = tmp_path / "sweep"
    proc, out, err = _start(["-m", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=3", f"hydra.sweep.dir={sweep}",
                             *SLOW, "budget.steps=20000", "agent.gamma=choice(0.9,0.99)"], tmp_path)
    deadline = time.monotonic() + 120  # until the first trial process writes its run dir
    while not list(sweep.glob("*/config.yaml")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    line = _ended(proc, err, 143, "SIGTERM")
    assert "optimization_results.yaml and the report" in line
    results = OmegaConf.load(sweep / "optimization_results.yaml")
    assert results.counts.get("fail", 0) >= 1 and "running" not in results.counts
    assert (sweep / "report" / "report.md").exists()


def test_ctrl_c_of_a_multirun_saves_the_running_jobs_model(tmp_path) -> None:
    """``-m`` (Hydra's basic sweeper): each job trains in a fresh process; Ctrl-C asks the running
    job to stop at its next env step, which saves model.npz and result.json marked interrupted,
    then the command ends with exit 130 and one line naming what was kept."""
    sweep = tmp_path / "multi"
    proc, out, err = _start(["-m", f"hydra.sweep.dir={sweep}", *SLOW, "budget.steps=20000", "logger=console",
                             "logger.p=1", "seed=0,1"], tmp_path)
    _wait_for(proc, out, "episode:")  # the job process prints its episodes: it is up and training
    os.killpg(proc.pid, signal.SIGINT)
    line = _ended(proc, err, 130, "SIGINT")
    assert "model.npz and result.json (\"interrupted\": true) kept" in line
    result = json.loads((sweep / "0" / "result.json").read_text())
    assert result["interrupted"] is True and 0 < result["env_steps"] < 20000
    assert (sweep / "0" / "model.npz").exists() and not (sweep / "1").exists()


def test_ctrl_c_of_a_finder_fails_its_candidate_without_traceback(tmp_path) -> None:
    """``tuner=opt_finder`` interrupted while a candidate trains: exit 130, one line, the running
    candidate failed (none left RUNNING), nothing of the session left alive."""
    proc, out, err = _start(["tuner=opt_finder", "tuner.episodes=400", "tuner.study_dir=finder", *SLOW], tmp_path)
    _wait_for(proc, out, "opt_finder study '")
    deadline = time.monotonic() + 120
    while not list((tmp_path / "finder").glob("trials/*")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGINT)
    _ended(proc, err, 130, "SIGINT")
    trials = _trials(tmp_path / "finder")
    assert trials and all(t.state.name != "RUNNING" for t in trials)


def test_sigterm_of_note_tune_reevaluate_keeps_its_scores(tmp_path) -> None:
    """``note-tune reevaluate`` (the subcommand) interrupted while its held-out runs train: exit 143,
    one line, study.json rewritten with the stage marked interrupted."""
    run = subprocess.run([sys.executable, "-m", "tuner", *STUDY, "tuner.n_trials=1", "tuner.reevaluate.top_k=0", "tuner.seeds.test=0",
                          *SLOW, "budget.steps=300"], cwd=str(tmp_path), capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=REPO, HYDRA_FULL_ERROR="0"), timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    proc, out, err = _start(["reevaluate", "study_dir=study", "top_k=1", "seeds=2", "episodes=2",
                             "trust_code=true"], tmp_path)
    _wait_for(proc, out, "held-out re-evaluation:")
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    _ended(proc, err, 143, "SIGTERM")
    heldout = json.loads((tmp_path / "study" / "study.json").read_text())["reevaluation"]
    assert heldout["interrupted"] == "SIGTERM" and heldout["complete"] is False
