"""``agent.normalize`` in a config run: the run trains with normalised observations and rewards, its
model.npz carries the statistics, and ``eval`` / ``note_rl.load`` / ``export`` use them frozen."""

from __future__ import annotations

import json

import numpy as np

from tests.tuner.conftest import run_app

RUN = ["agent=ppo", "env=pendulum", "agent.normalize={obs: true, reward: true, clip_obs: 5.0}", "budget.steps=2048",
       "agent.n_steps=256", "agent.n_envs=2", "eval.episodes=2", "logger=none"]


def test_a_normalised_run_trains_and_its_model_evaluates_loads_and_exports(tmp_path) -> None:
    import note_rl
    from note_rl.evaluation import evaluate

    run_app(RUN, cwd=str(tmp_path))
    result_path = next(tmp_path.glob("outputs/*/*/result.json"))
    result = json.loads(result_path.read_text())
    run_dir = result_path.parent
    assert result["config"]["agent"]["normalize"] == {"obs": True, "reward": True, "clip_obs": 5.0}
    with np.load(run_dir / "model.npz") as data:
        assert {"normalize/obs_mean", "normalize/obs_var", "normalize/ret_var"} <= set(data.files)
    # Pendulum's returns are hundreds below zero: the evaluations report the env's rewards
    assert all(e["mean"] < -50 for e in result["evaluations"])

    agent = note_rl.load(str(run_dir))
    n = agent.normalizer
    assert n.clip_obs == 5.0 and n.gamma == result["config"]["agent"]["gamma"] and n.obs_rms.count > 2048
    count = n.obs_rms.count
    obs = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32) * 4
    actions = agent.predict(obs)[0]
    mean = float(np.mean(evaluate(agent, 2, seed=0)))
    assert n.obs_rms.count == count  # frozen outside training
    again = note_rl.load(str(run_dir / "model.npz"))
    np.testing.assert_array_equal(again.predict(obs)[0], actions)

    out = run_app(["eval", f"model={run_dir / 'model.npz'}", "episodes=2", "seeds=0"], cwd=str(tmp_path))
    assert f"per seed: 0: {mean:.2f}" in out.stdout

    run_app(["export", f"model={run_dir}", "format=torchscript", f"out={tmp_path / 'p.pt'}"], cwd=str(tmp_path))
    import torch

    scripted = torch.jit.load(str(tmp_path / "p.pt"))
    np.testing.assert_allclose(scripted(torch.from_numpy(obs)).numpy(), actions, atol=1e-5)


def test_a_bad_normalize_value_is_one_config_error(tmp_path) -> None:
    out = run_app(["agent=ppo", "env=pendulum", "agent.normalize={clip: 3}", "budget.steps=8192"],
                  cwd=str(tmp_path), check=False)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "agent.normalize:" in text and "unknown key" in text and "Traceback" not in text
