"""Every run saves its final and best-by-evaluation models; ``note-tune eval model=...`` evaluates
one on held-out seeds and refuses a missing or corrupt file in one line (exit 2)."""

import json

import numpy as np
import pytest

from tests.tuner.conftest import run_app
from tuner.cli.model_commands import SEED_STRIDE

RUN = ["agent=ppo", "agent.n_envs=2", "agent.n_steps=64", "agent.batch=64", "agent.n_epochs=1",
       "budget.steps=1024", "eval.episodes=2", "backend.threads=1", "logger=none"]


def test_run_saves_models_and_eval_reads_them_back(tmp_path) -> None:
    run_app(RUN, cwd=str(tmp_path))
    result_path = next(tmp_path.glob("outputs/*/*/result.json"))
    result = json.loads(result_path.read_text())
    run_dir = result_path.parent
    assert result["model"].endswith("model.npz") and (run_dir / "model.npz").exists()
    assert (run_dir / "best_eval_model.npz").exists()
    best = max(e["mean"] for e in result["evaluations"])

    out = run_app(["eval", f"model={run_dir / 'model.npz'}", "episodes=2", "seeds=0,1"], cwd=str(tmp_path))
    line = out.stdout.strip().splitlines()[-1]
    assert line.startswith("ppo on CartPole-v1: mean ") and "per seed: 0: " in line and ", 1: " in line

    # the same numbers in-process: the final weights, seeds s * SEED_STRIDE + k, greedy episodes
    from note_rl.evaluation import evaluate
    from tuner.run.build import build_agent

    agent = build_agent(result["config"])
    agent.restore_param(str(run_dir / "model.npz"))
    per_seed = [np.mean(evaluate(agent, 2, seed=s * SEED_STRIDE)) for s in (0, 1)]
    assert f"0: {per_seed[0]:.2f}, 1: {per_seed[1]:.2f}" in line
    agent.restore_param(str(run_dir / "best_eval_model.npz"))
    assert np.mean(evaluate(agent, 2)) == best  # the best evaluation's weights, replayed on its seeds

    # max_steps cuts every episode: CartPole pays 1 per step, so no mean can pass it (by hand: 3 steps, 3.0)
    out = run_app(["eval", f"model={run_dir / 'model.npz'}", "episodes=2", "seeds=0,1", "max_steps=3"],
                  cwd=str(tmp_path))
    assert out.stdout.strip().splitlines()[-1].endswith("per seed: 0: 3.00, 1: 3.00")
    out = run_app(["eval", f"model={run_dir / 'model.npz'}", "max_steps=0"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and out.stderr.strip().startswith("error: max_steps:")


@pytest.mark.parametrize("answer", ["final", "best"])
def test_test_episodes_score_the_runs_answer(tmp_path, answer) -> None:
    """``eval.test_episodes`` after training: the answer (final weights, or the best evaluation's)
    plays greedy episodes reset with seeds ``eval.test_seed`` onwards, apart from the evaluations."""
    from omegaconf import OmegaConf

    from note_rl.evaluation import evaluate
    from tests.tuner.conftest import compose_cfg
    from tuner.config.schema import validate
    from tuner.run.build import build_agent
    from tuner.run.train import run_training

    overrides = [*RUN, f"eval.answer={answer}", "eval.test_episodes=3", "eval.test_seed=777"]
    cfg = OmegaConf.to_container(validate(compose_cfg(overrides)), resolve=True)
    result = run_training(cfg, str(tmp_path))
    chosen = tmp_path / ("best_eval_model.npz" if answer == "best" else "model.npz")
    assert result["answer"] == answer and result["answer_model"] == str(chosen)
    assert json.loads((tmp_path / "result.json").read_text())["test_returns"] == result["test_returns"]
    agent = build_agent(result["config"])
    agent.restore_param(str(chosen))
    assert result["test_returns"] == evaluate(agent, 3, seed=777)
    assert result["test_mean_return"] == np.mean(result["test_returns"])
    best = max(e["mean"] for e in result["evaluations"])
    assert result["best_eval_mean_return"] == best
    # the run's score is its answer's on the evaluation episodes
    assert result["objective"] == (best if answer == "best" else result["evaluations"][-1]["mean"])
    if answer == "best":
        assert np.mean(evaluate(agent, 2)) == best


def test_eval_refuses_missing_and_corrupt_models_in_one_line(tmp_path) -> None:
    out = run_app(["eval", f"model={tmp_path / 'none.npz'}"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and out.stderr.strip().startswith("error: model: no such file")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    out = run_app(["eval", f"model={bad}"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and "no result.json or config.yaml beside" in out.stderr
    from omegaconf import OmegaConf

    from tests.tuner.conftest import compose_cfg
    from tuner.config.schema import validate

    cfg = OmegaConf.to_container(validate(compose_cfg(["logger=none"])), resolve=True)
    (tmp_path / "result.json").write_text(json.dumps({"config": cfg}))
    out = run_app(["eval", f"model={bad}"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "does not load into this agent" in out.stderr and "not a note_rl checkpoint" in out.stderr
    out = run_app(["eval", f"model={bad}", "seeds=a"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and "seeds: expected integers" in out.stderr
    # a user's agent class whose module does not import here (docs/guide/config-objects.md: examples/custom_agent run
    # without its PYTHONPATH): one line naming the class, not Hydra's log lines and a traceback
    # (trust_code=true: without it the file may name only note_rl's own classes)
    cfg["agent"]["_target_"] = "my_missing_agents.DuelingDQN"
    (tmp_path / "result.json").write_text(json.dumps({"config": cfg}))
    out = run_app(["eval", f"model={bad}", "trust_code=true"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "cannot import 'my_missing_agents.DuelingDQN'" in out.stderr and "PYTHONPATH" in out.stderr


def test_play_records_a_greedy_episode_as_gif_and_mp4(tmp_path) -> None:
    from PIL import Image

    run_app(RUN, cwd=str(tmp_path))
    run_dir = next(tmp_path.glob("outputs/*/*/result.json")).parent
    model = run_dir / "model.npz"
    out = run_app(["play", f"model={model}", "seed=3", "max_steps=40"], cwd=str(tmp_path))
    assert "XDG_RUNTIME_DIR" not in out.stderr  # frames drawn off-screen: no SDL complaint about a display
    gif = run_dir / "model.gif"  # default: beside the model
    assert out.stdout.strip().splitlines()[-1].endswith(f"(reset seed 3) -> {gif}")
    # the same greedy episode in-process: its length + 1 frames (the last state is drawn too)
    from note_rl.evaluation import evaluate
    from tuner.run.build import build_agent

    agent = build_agent(json.loads((run_dir / "result.json").read_text())["config"])
    agent.restore_param(str(model))
    _, total, steps = agent.run_agent(40, seed=3, env=__import__("gymnasium").make("CartPole-v1"))
    assert f"steps:{steps}   reward:{total}" in out.stdout
    image = Image.open(gif)
    durations = []  # Pillow merges identical consecutive frames, adding up their durations
    for i in range(image.n_frames):
        image.seek(i)
        durations.append(image.info["duration"])
    assert sum(durations) == (steps + 1) * (1000 // 50)  # CartPole's render_fps is 50
    assert evaluate(agent, 1, seed=3, max_steps=40) == [total]

    mp4 = tmp_path / "episode.mp4"
    run_app(["play", f"model={model}", f"out={mp4}", "max_steps=10"], cwd=str(tmp_path))
    assert mp4.read_bytes()[4:8] == b"ftyp"  # an MP4 container, written by ffmpeg


def test_play_refuses_bad_input_in_one_line(tmp_path) -> None:
    cases = [(["model=missing.npz"], "error: model: no such file"),
             (["model=m.npz", "out=x.avi"], "error: out: 'x.avi' must end in .gif or .mp4"),
             (["model=m.npz", "out=nodir/x.gif"], "error: out: no such directory"),
             (["model=m.npz", "seed=-1"], "error: seed: expected non-negative integers"),
             (["model=m.npz", "speed=2"], "error: play: unknown argument 'speed=2'")]
    (tmp_path / "m.npz").write_bytes(b"not a zip")
    for args, message in cases:
        out = run_app(["play", *args], cwd=str(tmp_path), check=False)
        assert out.returncode == 2 and out.stderr.strip().startswith(message), (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1
