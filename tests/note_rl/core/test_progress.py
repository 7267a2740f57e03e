"""Progress output of a training run: Note_rl's plain lines, or a tqdm bar on a terminal."""

import io

from note_rl.core.progress import Progress, use_bar


class _Agent:
    step_counter = 100
    total_episode = 10


def _feed(progress: Progress, episodes: int = 10, steps_per_episode: int = 10) -> None:
    for i in range(episodes):
        progress.episode(i, {"reward": 10.0 + i, "loss": 0.5, "mean_reward": 9.0 + i,
                             "env_steps": (i + 1) * steps_per_episode})
    progress.finish(_Agent(), 1.5)


def test_plain_lines_on_note_rl_cadence_when_not_a_terminal(monkeypatch) -> None:
    monkeypatch.delenv("NOTE_RL_PROGRESS", raising=False)
    out = io.StringIO()  # not a terminal
    assert not use_bar(out)
    progress = Progress(p=3, episodes=10, steps=None, stream=out)
    _feed(progress)
    lines = out.getvalue().splitlines()
    assert progress.bar is None and progress.period == 3
    assert [line.split()[0] for line in lines if "average reward" in line] == [f"episode:{e}" for e in (1, 4, 7, 10)]
    assert lines[-1] == "time:1.5s   env steps:100   episodes:10"


def test_bar_over_the_step_budget_with_return_loss_and_rate(monkeypatch) -> None:
    monkeypatch.setenv("NOTE_RL_PROGRESS", "bar")
    monkeypatch.setenv("COLUMNS", "200")  # the bar's width: room for the whole postfix
    out = io.StringIO()
    progress = Progress(p=10, episodes=None, steps=100, stream=out)
    _feed(progress)
    text = out.getvalue()
    final = text.replace("\r", "\n").splitlines()
    assert "100/100" in text and "step/s" in text
    assert any("ep=10" in line and "return=19.0" in line and "loss=0.5" in line for line in final)
    assert final[-1] == "time:1.5s   env steps:100   episodes:10"


def test_episode_bar_shows_env_steps_per_second(monkeypatch) -> None:
    monkeypatch.setenv("NOTE_RL_PROGRESS", "bar")
    monkeypatch.setenv("COLUMNS", "200")
    out = io.StringIO()
    _feed(Progress(p=10, episodes=10, steps=None, stream=out))
    assert "10/10" in out.getvalue() and "steps/s=" in out.getvalue()


def test_silent_with_p_zero(monkeypatch) -> None:
    monkeypatch.setenv("NOTE_RL_PROGRESS", "bar")
    out = io.StringIO()
    _feed(Progress(p=0, episodes=10, steps=100, stream=out))
    assert out.getvalue() == ""
