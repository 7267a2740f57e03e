"""Every run saves its final and best-by-evaluation models; ``note-tune eval model=...`` evaluates
one on held-out seeds and refuses a missing or corrupt file in one line (exit 2)."""

import json

import numpy as np

from tests.tuner.conftest import run_app
from tuner.model_commands import SEED_STRIDE

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
    from tuner.build import build_agent

    agent = build_agent(result["config"])
    agent.restore_param(str(run_dir / "model.npz"))
    per_seed = [np.mean(evaluate(agent, 2, seed=s * SEED_STRIDE)) for s in (0, 1)]
    assert f"0: {per_seed[0]:.2f}, 1: {per_seed[1]:.2f}" in line
    agent.restore_param(str(run_dir / "best_eval_model.npz"))
    assert np.mean(evaluate(agent, 2)) == best  # the best evaluation's weights, replayed on its seeds


def test_eval_refuses_missing_and_corrupt_models_in_one_line(tmp_path) -> None:
    out = run_app(["eval", f"model={tmp_path / 'none.npz'}"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and out.stderr.strip().startswith("error: model: no such file")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    out = run_app(["eval", f"model={bad}"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and "no result.json or config.yaml beside" in out.stderr
    from omegaconf import OmegaConf

    from tests.tuner.conftest import compose_cfg
    from tuner.schema import validate

    cfg = OmegaConf.to_container(validate(compose_cfg(["logger=none"])), resolve=True)
    (tmp_path / "result.json").write_text(json.dumps({"config": cfg}))
    out = run_app(["eval", f"model={bad}"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "does not load into this agent" in out.stderr and "not a note_rl checkpoint" in out.stderr
    out = run_app(["eval", f"model={bad}", "seeds=a"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and "seeds: expected integers" in out.stderr
