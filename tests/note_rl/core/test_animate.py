"""``animate_agent``: GIF through Pillow, MP4 through matplotlib's FFMpegWriter (only with ffmpeg
on PATH), clear errors for everything else."""

import os
import stat

import pytest

from tests.conftest import agents_module


@pytest.fixture(scope="module")
def agent():
    return agents_module("torch").DQN(4, 8, 2, seed=0)  # CartPole-v1, untrained: a short episode


def test_gif(agent, tmp_path) -> None:
    from PIL import Image

    path = agent.animate_agent(5, save_path=str(tmp_path / "a.gif"), fps=10)
    with Image.open(path) as img:
        assert img.format == "GIF" and img.n_frames >= 2
        total = 0
        for i in range(img.n_frames):  # Pillow merges identical neighbours, adding their durations
            img.seek(i)
            total += img.info["duration"]
    assert total == 6 * 100  # 5 steps: the start frame + one per step, 1000 / fps ms each
    assert agent.animate_agent(3, mode="rgb_array", save_path=str(tmp_path / "b.gif"),
                               writer="pillow").endswith("b.gif")


def test_mp4_without_ffmpeg_is_one_clear_error(agent, tmp_path, monkeypatch) -> None:
    import note_rl.core.plots as plots

    monkeypatch.setattr(plots.shutil, "which", lambda name: None)
    path = str(tmp_path / "a.mp4")
    with pytest.raises(RuntimeError) as err:
        agent.animate_agent(5, save_path=path)
    message = str(err.value)
    assert path in message and "ffmpeg" in message and "\n" not in message
    assert not os.path.exists(path)


def test_mp4_goes_through_ffmpeg(agent, tmp_path, monkeypatch) -> None:
    """A stand-in ``ffmpeg`` that copies the raw RGBA frames it is piped into the output file:
    the MP4 path hands every frame to ffmpeg (no real encoder is installed here)."""
    fake = tmp_path / "bin" / "ffmpeg"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nfor out; do :; done\ncat > "$out"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    path = agent.animate_agent(4, save_path=str(tmp_path / "a.mp4"), fps=5)
    # CartPole renders 600x400 frames; 4 steps -> 5 frames of 600*400 RGBA bytes
    assert os.path.getsize(path) == 5 * 600 * 400 * 4


def test_bad_arguments_are_rejected(agent, tmp_path) -> None:
    with pytest.raises(ValueError, match="mode='human'"):
        agent.animate_agent(5, mode="human", save_path=str(tmp_path / "a.gif"))
    with pytest.raises(ValueError, match=r"\.gif or \.mp4"):
        agent.animate_agent(5, save_path=str(tmp_path / "a.avi"))
    with pytest.raises(ValueError, match="writer='ffmpeg'"):
        agent.animate_agent(5, save_path=str(tmp_path / "a.gif"), writer="ffmpeg")
    with pytest.raises(ValueError, match="writer='imagemagick'"):
        agent.animate_agent(5, save_path=str(tmp_path / "a.mp4"), writer="imagemagick")
    assert not list(tmp_path.iterdir())
