"""End to end: a plain training run and a Hydra multirun, checking their result.json files."""

import json

import pytest

from tests.tuner.conftest import TINY, run_app


def test_default_run_writes_result_json(tmp_path) -> None:
    # the default run with a smaller step budget (defaults: PPO, torch, CartPole-v1, rl-zoo settings)
    out = run_app(["budget.steps=2048"], cwd=str(tmp_path))
    results = list(tmp_path.glob("outputs/*/*/result.json"))
    assert len(results) == 1
    result = json.loads(results[0].read_text())
    assert result["env_steps"] == 2048 and result["status"] == "complete"
    assert result["final_mean_return"] > 0 and result["best_mean_return"] >= result["final_mean_return"]
    assert result["config"]["agent"]["name"] == "ppo" and result["config"]["backend"]["name"] == "torch"
    assert result["wall_time_s"] > 0 and "final mean return" in out.stdout
    # where the files went (paths relative to where the user ran it) and what to run next
    run = results[0].parent.relative_to(tmp_path)
    png = (results[0].parent / "training.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    lines = out.stdout.splitlines()
    files, steps = lines.index("files:"), lines.index("next:")
    assert [line.split()[0] for line in lines[files + 1:steps]] == [
        f"{run}/result.json", f"{run}/model.npz", f"{run}/best_eval_model.npz", f"{run}/training.png"]
    assert lines[steps + 1].split()[:3] == ["note-tune", "eval", f"model={run}/model.npz"]
    # the study command keeps this run's overrides (the same agent and env get tuned); the
    # dashboard command names the study that command creates
    tune = [line.split() for line in lines[steps + 1:] if "tuner=optuna" in line][0]
    assert tune[:4] == ["note-tune", "budget.steps=2048", "tuner=optuna", "tuner.n_trials=20"]
    dashboard = [line.split() for line in lines[steps + 1:] if " dashboard " in line][0]
    assert dashboard[:3] == ["note-tune", "dashboard", "study_dir=studies/ppo_CartPole-v1"]



@pytest.mark.slow
def test_quick_start_run_solves_cartpole(tmp_path) -> None:
    """README's quick start as written: ``note-tune`` with no overrides (PPO, torch, CartPole-v1,
    50,000 env steps; console progress, nothing online) solves, and its last lines name the files it
    wrote and the commands to run next.  About 10-40 s here, by the machine's load."""
    out = run_app([], cwd=str(tmp_path))
    (path,) = tmp_path.glob("outputs/*/*/result.json")
    result = json.loads(path.read_text())
    assert result["config"]["agent"]["name"] == "ppo" and result["env_steps"] >= 50_000
    assert result["final_eval_mean_return"] >= 475, [e["mean"] for e in result["evaluations"]]
    run = path.parent.relative_to(tmp_path)
    lines = out.stdout.splitlines()
    summary = [line for line in lines if line.startswith("evaluation ")]
    assert len(summary) == 1 and summary[0].endswith(f"-> {path}")
    files, steps = lines.index("files:"), lines.index("next:")
    named = [line.split()[0] for line in lines[files + 1:steps]]
    assert named == [f"{run}/{name}" for name in ("result.json", "model.npz", "best_eval_model.npz", "training.png")]
    assert all((tmp_path / name).stat().st_size > 0 for name in named)
    commands = [line.split()[:3] for line in lines[steps + 1:]]
    assert commands == [["note-tune", "eval", f"model={run}/model.npz"],
                        ["note-tune", "play", f"model={run}/model.npz"],
                        ["note-tune", "export", f"model={run}"],
                        ["note-tune", "tuner=optuna", "tuner.n_trials=20"],
                        ["note-tune", "dashboard", "study_dir=studies/ppo_CartPole-v1"]]

def test_dqn_loss_panel_joins_the_episodes_that_trained() -> None:
    from tuner.logs.curves import training_figure

    data = {"returns": [10.0, 12.0, 9.0, 20.0, 25.0], "losses": [None, 0.5, None, None, 0.25],
            "config": {"objective": {"last_k": 2}}, "evaluations": [{"mean": 30.0}]}
    fig = training_figure(data, "t")
    top, bottom = fig.axes
    (loss,) = bottom.get_lines()
    assert list(loss.get_xdata()) == [2, 5] and list(loss.get_ydata()) == [0.5, 0.25]  # one line, no gaps
    lines = top.get_lines()
    assert list(lines[1].get_ydata()) == [10.0, 11.0, 10.5, 14.5, 22.5]  # the mean of the last 2 by hand
    assert list(lines[2].get_ydata()) == [30.0, 30.0]  # the final evaluation


def test_multirun_jobs_each_have_their_own_result(tmp_path) -> None:
    run_app(["-m", "seed=0,1", "optimizer=adam,sgd", *TINY], cwd=str(tmp_path))
    results = sorted(tmp_path.glob("multirun/*/*/*/result.json"))
    assert len(results) == 4
    jobs = [json.loads(r.read_text())["config"] for r in results]
    assert sorted((j["seed"], j["optimizer"]["name"]) for j in jobs) == [
        (0, "adam"), (0, "sgd"), (1, "adam"), (1, "sgd")]
    assert len({str(r.parent) for r in results}) == 4
    pids = [json.loads(r.read_text())["pid"] for r in results]
    assert len(set(pids)) == 4  # every job trained in a process of its own


def test_overrides_reach_the_agent(tmp_path) -> None:
    run_app(["backend=tf", "agent=ppo", "agent.hidden_size=[32,32]", "optimizer=adamw", "optimizer.lr=3e-4",
             "seed=3", "budget.steps=512", "agent.n_steps=16", "agent.n_envs=4", "agent.n_epochs=2",
             "agent.batch=32", "logger=none"], cwd=str(tmp_path))
    result = json.loads(next(tmp_path.glob("outputs/*/*/result.json")).read_text())
    cfg = result["config"]
    assert (cfg["backend"]["name"], cfg["agent"]["name"], cfg["optimizer"]["name"], cfg["seed"]) == ("tf", "ppo", "adamw", 3)
    assert cfg["agent"]["hidden_size"] == [32, 32] and cfg["optimizer"]["lr"] == 3e-4
    assert result["env_steps"] == 512 and result["gradient_steps"] == 512 // 64 * 2 * 2


def test_run_without_a_finished_episode_reports_na(tmp_path) -> None:
    out = run_app(["agent=dqn", "budget.steps=1", "logger=none"], cwd=str(tmp_path))
    result = json.loads(next(tmp_path.glob("outputs/*/*/result.json")).read_text())
    assert result["env_steps"] == 1 and result["episodes"] == 0
    assert result["final_mean_return"] is None and result["best_mean_return"] is None
    assert "final mean return n/a" in out.stdout and "best n/a" in out.stdout and not out.stderr.strip()


@pytest.mark.parametrize("args,key", [
    (["agent.bacth=3"], "agent.bacth"),
    (["optimizer=bogus"], "optimizer"),
    (["tuner=optuna", "tuner.nope=1"], "tuner.nope"),
    (["-m", "seed=0,1", "optimizer=adam,bogus"], "optimizer"),  # every option of a group sweep is checked
])
def test_unknown_key_or_option_is_one_line_exit_2(tmp_path, args, key) -> None:
    out = run_app([*args, *TINY], cwd=str(tmp_path), check=False)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {key}:"), out.stderr
    assert "bogus" in lines[0] or "no such config key" in lines[0]
    assert not list(tmp_path.glob("**/result.json")) and not (tmp_path / "studies").exists()


def test_int_hidden_size_is_one_hidden_layer(tmp_path) -> None:
    run_app([*TINY, "agent.hidden_size=24"], cwd=str(tmp_path))
    result = json.loads(next(tmp_path.glob("outputs/*/*/result.json")).read_text())
    assert result["config"]["agent"]["hidden_size"] == [24] and result["env_steps"] == 300
