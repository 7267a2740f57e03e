"""End to end: a plain training run and a Hydra multirun, checking their result.json files."""

import json

import pytest

from tests.tuner.conftest import TINY, run_app


def test_default_run_writes_result_json(tmp_path) -> None:
    # the default run with a smaller step budget (defaults: DQN, torch, CartPole-v1, rl-zoo settings)
    out = run_app(["budget.steps=600", "agent.learning_starts=300"], cwd=str(tmp_path))
    results = list(tmp_path.glob("outputs/*/*/result.json"))
    assert len(results) == 1
    result = json.loads(results[0].read_text())
    assert result["env_steps"] == 600 and result["status"] == "complete"
    assert result["final_mean_return"] > 0 and result["best_mean_return"] >= result["final_mean_return"]
    assert result["config"]["agent"]["name"] == "dqn" and result["config"]["backend"]["name"] == "torch"
    assert result["wall_time_s"] > 0 and "final mean return" in out.stdout


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
    out = run_app(["budget.steps=1", "logger=none"], cwd=str(tmp_path))
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
