"""Progress of a real run in a pseudo-terminal, and of a study."""

import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios

import optuna

from tests.tuner.conftest import REPO, TINY
from tuner.study.progress import StudyProgress


def test_training_in_a_terminal_draws_a_live_bar(tmp_path) -> None:
    parent, child = pty.openpty()  # a real terminal: the app must pick the bar by itself
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # 120 columns
    env = {k: v for k, v in os.environ.items() if k != "NOTE_RL_PROGRESS"}
    env["PYTHONPATH"] = REPO
    args = [a for a in TINY if not a.startswith("logger=")] + ["logger=console", "budget.steps=400"]
    proc = subprocess.Popen([sys.executable, "-m", "tuner", *args], cwd=str(tmp_path), stdout=child,
                            stderr=subprocess.DEVNULL, env=env)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(parent, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=300) == 0
    os.close(parent)
    text = b"".join(chunks).decode(errors="replace")
    assert "\r" in text and "400/400" in text and "step/s" in text and "return=" in text
    assert "average reward" not in text  # the plain lines are for logs, not terminals
    assert "final mean return" in text


def test_study_progress_lines_count_outcomes_and_best(monkeypatch) -> None:
    monkeypatch.delenv("NOTE_RL_PROGRESS", raising=False)
    study = optuna.create_study(direction="maximize")
    out = io.StringIO()
    progress = StudyProgress(study, n_trials=3, stream=out)
    progress.update()
    assert out.getvalue() == ""  # nothing finished yet
    for value in (5.0, 7.0):
        trial = study.ask()
        study.tell(trial, value)
    progress.update()
    progress.update()  # no change: no new line
    trial = study.ask()
    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    study.tell(study.ask(), state=optuna.trial.TrialState.FAIL)
    progress.update()
    progress.close()
    assert out.getvalue().splitlines() == [
        "[study] 2/3 finished: complete 2  pruned 0  failed 0  running 0  best 7 (trial 1)",
        "[study] 3/3 finished: complete 2  pruned 1  failed 1  running 0  best 7 (trial 1)"]


def test_study_progress_states_the_cpu_spent_against_a_cpu_budget(monkeypatch) -> None:
    """With ``tuner.max_cpu_s`` each line adds the trials' recorded CPU seconds against the budget."""
    monkeypatch.delenv("NOTE_RL_PROGRESS", raising=False)
    study = optuna.create_study(direction="maximize")
    out = io.StringIO()
    progress = StudyProgress(study, n_trials=1000, stream=out, max_cpu_s=1895.0)
    for value, cpu in ((5.0, 312.4), (7.0, 100.2)):
        trial = study.ask()
        trial.set_user_attr("cpu_time_s", cpu)
        study.tell(trial, value)
        progress.update()
    progress.close()
    assert out.getvalue().splitlines() == [
        "[study] 1/1000 finished: complete 1  pruned 0  failed 0  running 0  best 5 (trial 0)  CPU 312 of 1895 s",
        "[study] 2/1000 finished: complete 2  pruned 0  failed 0  running 0  best 7 (trial 1)  CPU 413 of 1895 s"]
