"""An Atari model from the command line (issue 35): a few hundred steps of DQN (torch) and PPO (torch,
Keras) on env=atari_breakout, then ``note-tune eval`` and ``note-tune play out=....mp4`` of the saved
model.  The agents' learning is not the point; the image pipeline end to end is (frame pool, Nature
CNN, saving, rebuilding the env from the saved config, drawing ALE frames into an MP4)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.tuner.conftest import run_app

pytest.importorskip("ale_py")
pytest.importorskip("cv2")

TINY = {"dqn": ["agent=dqn", "budget.steps=300", "agent.learning_starts=100", "buffer.pool_size=1000",
                "agent.batch=16"],
        "ppo": ["agent=ppo", "budget.steps=256", "agent.n_envs=2", "agent.n_steps=64", "agent.batch=64",
                "agent.n_epochs=1"]}
# episodes capped at 4,000 ALE frames (1,000 agent steps): an untrained greedy PPO policy kept the ball in
# play up to ALE's default cap of 27,000 steps, minutes per evaluation episode
COMMON = ["env=atari_breakout", "+env.kwargs.max_frames=4000", "logger=none", "eval.episodes=1", "eval.every=null",
          "backend.threads=1"]


def _train(agent: str, backend: str, tmp_path) -> dict:
    """One tiny run from the command line; its result.json."""
    run_app([*TINY[agent], *COMMON, f"backend={backend}"], cwd=str(tmp_path))
    result = json.loads(next(tmp_path.glob("outputs/*/*/result.json")).read_text())
    assert result["env_steps"] >= 256 and result["model"].endswith("model.npz")
    return result


def _frames(mp4) -> int | None:
    """The MP4's video frame count by ffprobe (None where ffprobe is missing)."""
    if shutil.which("ffprobe") is None:
        return None
    out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                          "stream=nb_read_frames,width,height", "-of", "json", str(mp4)],
                         capture_output=True, text=True, check=True)
    stream = json.loads(out.stdout)["streams"][0]
    assert (stream["width"], stream["height"]) == (160, 210)  # ALE's own screen, not the agent's 84x84
    return int(stream["nb_read_frames"])


def _eval_and_play(result: dict, agent: str, tmp_path) -> None:
    """``eval`` prints the model's mean; ``play`` writes an MP4 of at most 200 steps (+1 frame)."""
    model = result["model"]
    out = run_app(["eval", f"model={model}", "episodes=1", "seeds=0"], cwd=str(tmp_path))
    assert out.stdout.strip().splitlines()[-1].startswith(f"{agent} on ALE/Breakout-v5: mean "), out.stdout
    mp4 = tmp_path / "episode.mp4"
    run_app(["play", f"model={model}", f"out={mp4}", "max_steps=200"], cwd=str(tmp_path))
    data = mp4.read_bytes()
    assert data[4:8] == b"ftyp" and len(data) > 1000  # an MP4 container with frames in it, written by ffmpeg
    frames = _frames(mp4)
    assert frames is None or 2 <= frames <= 201, frames


def test_dqn_trains_evaluates_and_plays_breakout(tmp_path) -> None:
    _eval_and_play(_train("dqn", "torch", tmp_path), "dqn", tmp_path)


@pytest.mark.slow  # 85-110 s each on 2 busy CPUs: three processes build two Nature CNNs (actor, critic)
@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_ppo_trains_evaluates_and_plays_breakout(backend, tmp_path) -> None:
    if backend == "tf":
        pytest.importorskip("tensorflow")
    _eval_and_play(_train("ppo", backend, tmp_path), "ppo", tmp_path)
